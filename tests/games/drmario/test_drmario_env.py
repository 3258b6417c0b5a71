"""vecsim/DrMario-v0 in frame mode: keyword params, validation, observation, rendering."""

import gymnasium
import numpy as np
import pytest

import vecsim  # noqa: F401 (registers the ids)
from vecsim.games.drmario import BUTTONS
from vecsim.games.drmario.tables import BTN_A, BTN_B, BTN_DOWN, BTN_LEFT, BTN_RIGHT

GAME = "vecsim/DrMario-v0"


def test_actions_are_the_documented_controller_bytes():
    dpad, rotation = (0, BTN_LEFT, BTN_RIGHT, BTN_DOWN), (0, BTN_A, BTN_B, BTN_A | BTN_B)
    assert BUTTONS.tolist() == [d | r for d in dpad for r in rotation]


@pytest.mark.parametrize("bad,match", [
    (dict(level=25), "level must be an integer in \\[0, 24\\]"),
    (dict(level=1.5), "level"),
    (dict(speed="fast"), "speed must be one of"),
    (dict(speed=3), "speed"),
    (dict(seed=0), "seed must be -1 \\(a random one\\) or an LFSR state on the NES's power-on cycle"),
    (dict(seed=1), "but got seed=1$"),  # off the cycle: 1 -> 0, where a level 2 reset never ended
    (dict(mode="turbo"), "mode must be one of"),
])
def test_bad_params_name_the_value(bad, match):
    with pytest.raises(ValueError, match=match):
        gymnasium.make(GAME, **bad).reset(seed=0)


def test_a_seed_is_accepted_exactly_when_it_lies_on_the_power_on_cycle():
    from vecsim.games.drmario import check_params, prepare_params
    from vecsim.games.drmario.tables import POWER_ON_CYCLE, lfsr_next

    on_cycle = set(POWER_ON_CYCLE.tolist())
    assert lfsr_next(POWER_ON_CYCLE[-1]) == POWER_ON_CYCLE[0]  # a cycle, 32767 states long
    defaults = prepare_params(dict(vecsim.resolve(GAME).params_cls()._asdict()))
    for seed in range(1, 1 << 16, 7):  # every seventh state: both kinds, each many times
        try:
            check_params(dict(defaults, seed=seed))
            accepted = True
        except ValueError as exc:
            assert f"seed={seed}" in str(exc)
            accepted = False
        assert accepted == (seed in on_cycle), seed


def test_level_speed_and_seed_set_the_start():
    env = gymnasium.make(GAME, mode="frame", level=10, speed="high", seed=0x8988, render_mode="ansi")
    obs, info = env.reset(seed=5)
    board = obs[:128]
    assert int(np.sum((board & 0xF0) == 0xD0)) == 44
    other, _ = gymnasium.make(GAME, mode="frame", level=10, speed="low", seed=0x8988).reset(seed=9)
    assert np.array_equal(other[:128], board)  # the LFSR seed alone sets the viruses
    text = env.render()
    assert "viruses 44" in text and text.count("\n") == 16


def test_play_until_the_pill_locks_and_render_rgb():
    env = gymnasium.make(GAME, mode="frame", level=0, speed="high", render_mode="rgb_array")
    obs, info = env.reset(seed=1)
    locks = 0
    for _ in range(400):
        obs, reward, term, trunc, info = env.step(12)  # Down (d-pad 3), no rotation
        locks += info["locks"]
        if term:
            break
    assert locks >= 2
    img = env.render()
    assert img.dtype == np.uint8 and img.shape == (152, 80, 3)


def test_frame_mode_kernels_reset_without_the_planner():
    """Frame mode never plans, so its kernels take the reset stand-in that does not reach the
    planner (``kernel_functions``): a third of decision mode's compile, not all of it."""
    frame = vecsim.make(GAME, 2, mode="frame", parallel=False).kernel_source()
    decision = vecsim.make(GAME, 2, parallel=False).kernel_source()
    assert 'reset_and_write(_game, "write_mask", "reset_frame_env")' in frame
    assert 'reset_and_write(_game, "write_decision_mask", "reset_env")' in decision
