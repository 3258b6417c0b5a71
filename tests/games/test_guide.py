"""The games guide (``games/README.md``) against the code it describes.

Its minimal game is ``tests/minimal_game.py`` word for word, it names every name of the
contract in ``vecsim/engine/game.py``, and the game does what the guide promises: it
registers, builds through Gymnasium and ``vecsim.make``, passes ``vecsim.testing``'s checkers
and plays deterministically. A module that breaks the contract is refused by name.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import minimal_game
import vecsim
import vecsim.testing
from vecsim.engine import game as contract
from vecsim.engine import registry

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "games" / "README.md").read_text()
WALK_ID = "vecsim/WalkToTarget-v0"


def section(title: str) -> str:
    """The text of the guide's section ``## title``, up to the next section."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", GUIDE, re.S | re.M)
    assert match, f"games/README.md has no section {title!r}"
    return match.group(1)


def copy_of_minimal_game(name: str, without: tuple = ()) -> types.ModuleType:
    """A new module ``name`` holding the minimal game's names, less those in ``without``."""
    module = types.ModuleType(name)
    for key, value in vars(minimal_game).items():
        if not key.startswith("__") and key not in without:
            setattr(module, key, value)
    return module


@pytest.fixture
def registered():
    """Unlist, after the test, every game it registered (the built-in games stay)."""
    before = set(registry.entries())
    yield
    for env_id in set(registry.entries()) - before:
        vecsim.unregister(env_id)


@pytest.fixture
def walk_id(registered):
    """``tests/minimal_game.py`` registered for one test."""
    return vecsim.register("minimal_game")


# -- the guide cannot drift from the code ----------------------------------------------------
def test_the_guides_minimal_game_is_tests_minimal_game_py_word_for_word():
    blocks = re.findall(r"^```python\n(.*?)^```", GUIDE, re.S | re.M)
    games = [block for block in blocks if "\nENV_ID = " in block]
    assert len(games) == 1, f"expected one game in the guide's code blocks, found {len(games)}"
    assert games[0] == Path(minimal_game.__file__).read_text()


@pytest.mark.parametrize("name", contract.REQUIRED)
def test_the_guide_lists_every_required_name(name):
    assert f"`{name}" in section("Required names")


def test_the_guide_lists_every_optional_name_of_the_contract():
    optional = re.findall(r"^``(\w+)", contract.__doc__.split("Optional, with the default")[1], re.M)
    assert len(optional) > 10
    missing = [name for name in optional if f"`{name}" not in section("Optional names and their defaults")]
    assert missing == []


# -- registering and building ------------------------------------------------------------------
def test_register_returns_the_gymnasium_id_of_the_games_env_id(registered):
    assert vecsim.register("minimal_game") == WALK_ID
    assert vecsim.register(minimal_game) == WALK_ID  # the same module again: a no-op
    assert WALK_ID in vecsim.game_ids()


def test_make_vec_make_and_vecsim_make_build_the_registered_game(walk_id):
    envs = gymnasium.make_vec(walk_id, num_envs=3, vectorization_mode="vector_entry_point")
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (3, 2) and obs.dtype == np.float32 and envs.observation_space.contains(obs)
    obs, rewards, terminations, truncations, _ = envs.step(np.array([0, 1, 2]))
    assert rewards.shape == terminations.shape == truncations.shape == (3,)
    envs.close()

    env = gymnasium.make(walk_id, render_mode="ansi", size=12)
    env.reset(seed=0)
    board = env.render()
    assert len(board) == 12 and board.count("@") == 1 and board.count("T") <= 1
    env.close()

    engine = vecsim.make(walk_id, num_envs=5)
    assert engine.reset(seed=0).shape == (5, 2)
    engine.close()


def test_a_line_shorter_than_two_cells_is_refused_naming_the_size(walk_id):
    with pytest.raises(ValueError, match="size"):
        vecsim.make(walk_id, num_envs=2, size=1)


# -- the checkers the guide tells authors to run -----------------------------------------------
def test_it_passes_the_vector_env_checker_in_both_precisions(walk_id):
    vecsim.testing.check_vector_env(walk_id)
    vecsim.testing.check_vector_env(walk_id, precision="float32", size=3)


def test_it_passes_the_engine_checker_in_both_precisions(walk_id):
    """The float32 checks of a game without ``step_env_fast`` (tests/conftest.py's
    ``float32_games``): its float64 step compiled with fast math and float32 rewards."""
    vecsim.testing.check_engine(walk_id, steps=100)
    vecsim.testing.check_engine(walk_id, steps=100, precision="float32", size=3)


# -- determinism -------------------------------------------------------------------------------
def play(envs, seed: int, actions: np.ndarray) -> list:
    """Every output of ``envs`` reset with ``seed`` and stepped with each row of ``actions``."""
    outputs = [envs.reset(seed=seed)[0].copy()]
    for row in actions:
        obs, rewards, terminations, truncations, _ = envs.step(row)
        outputs += [obs.copy(), rewards.copy(), terminations.copy(), truncations.copy()]
    return outputs


def test_the_same_seed_gives_the_same_trajectory(walk_id):
    actions = np.random.default_rng(0).integers(0, 3, size=(120, 6))
    runs = []
    for _ in range(2):
        envs = gymnasium.make_vec(walk_id, num_envs=6, vectorization_mode="vector_entry_point")
        runs.append(play(envs, 7, actions))
        envs.close()
    for first, second in zip(*runs):
        np.testing.assert_array_equal(first, second)


def test_env_i_of_a_batch_seeded_s_plays_as_a_single_env_seeded_s_plus_i(walk_id):
    n, seed = 4, 11
    actions = np.random.default_rng(1).integers(0, 3, size=(120, n))
    envs = gymnasium.make_vec(walk_id, num_envs=n, vectorization_mode="vector_entry_point")
    batch = play(envs, seed, actions)
    envs.close()
    assert any(t.any() for t in batch[3::4]) and any(t.any() for t in batch[4::4]), "no autoreset exercised"
    for i in range(n):
        env = gymnasium.make(walk_id)
        obs, _ = env.reset(seed=seed + i)
        np.testing.assert_array_equal(batch[0][i], obs)
        done = False
        for t, row in enumerate(actions):
            if done:  # the batch's NEXT_STEP autoreset: this step starts a new episode
                (obs, _), reward, terminated, truncated = env.reset(), 0.0, False, False
            else:
                obs, reward, terminated, truncated, _ = env.step(row[i])
            got = [out[i] for out in batch[1 + 4 * t: 5 + 4 * t]]
            np.testing.assert_array_equal(got[0], obs, err_msg=f"env {i}, step {t}")
            assert (got[1], got[2], got[3]) == (reward, terminated, truncated), f"env {i}, step {t}"
            done = terminated or truncated
        env.close()


# -- modules that break the contract -----------------------------------------------------------
@pytest.mark.parametrize("name", contract.REQUIRED)
def test_a_module_lacking_a_required_name_is_refused_naming_it(registered, monkeypatch, name):
    broken = copy_of_minimal_game("broken_game", without=(name,))
    monkeypatch.setitem(sys.modules, "broken_game", broken)
    with pytest.raises(TypeError, match=rf"\b{name}\b"):
        vecsim.register(broken)
    assert "WalkToTarget-v0" not in registry.entries()


def test_another_module_under_a_taken_env_id_is_refused_naming_the_id(walk_id, monkeypatch):
    twin = copy_of_minimal_game("twin_game")
    monkeypatch.setitem(sys.modules, "twin_game", twin)
    with pytest.raises(ValueError, match=re.escape("WalkToTarget-v0")):
        vecsim.register(twin)
    assert registry.entries()["WalkToTarget-v0"][0] == "minimal_game"


def test_a_module_that_cannot_be_imported_by_its_name_is_refused(registered):
    # The generated kernels import the game by name: a module only in memory could not run.
    with pytest.raises(TypeError, match="must be importable"):
        vecsim.register(copy_of_minimal_game("nowhere_game"))


def _plain(fn):
    return fn.py_func  # the Python function under the @exact decorator


@pytest.mark.parametrize("name, value, message", [
    ("reset_env", _plain(minimal_game.reset_env), r"reset_env must be compiled for the kernels: decorate it with "
                                                  r"@vecsim\.core\.jit\.exact"),
    ("write_obs", vecsim.core.jit.exact(lambda s, p, i: None), r"write_obs must take \(s, p, i, obs\), but takes "
                                                              r"\(s, p, i\)"),
    ("step_env", vecsim.core.jit.exact(lambda s, p, i, actions, events, rng, ring, extra: 0),
     r"step_env must take \(s, p, i, actions, events, rng\)"),
])
def test_a_contract_function_that_is_not_compiled_or_takes_other_parameters_is_refused_naming_it(
        registered, monkeypatch, name, value, message):
    broken = copy_of_minimal_game("broken_game")
    setattr(broken, name, value)
    monkeypatch.setitem(sys.modules, "broken_game", broken)
    with pytest.raises(TypeError, match=message):
        vecsim.register(broken)


def test_a_game_without_renderers_shows_its_state_as_text_and_refuses_rgb_array(registered, monkeypatch):
    plain = copy_of_minimal_game("plain_walk_game", without=("render_rgb", "render_text"))
    plain.ENV_ID = "PlainWalk-v0"
    monkeypatch.setitem(sys.modules, "plain_walk_game", plain)
    game_id = vecsim.register(plain)
    with pytest.raises(ValueError, match=r"PlainWalk-v0 has no render_rgb, so render_mode='rgb_array' cannot draw "
                                         r"it; render_mode='ansi' shows it as text"):
        gymnasium.make(game_id, render_mode="rgb_array")
    engine = vecsim.make(game_id, 2)
    engine.reset(seed=3)
    values = engine.env_values(1)
    assert engine.render_text(1) == f"pos={values['pos']} target={values['target']}"
    with pytest.raises(NotImplementedError, match="PlainWalk-v0 has no render_rgb"):
        engine.render_rgb(1)


STEP_RETURN = "return 1.0 if reached else -abs(s.pos[i] - s.target[i]), reached"


@pytest.mark.parametrize("returned, shown", [
    ("return 1.0 if reached else -abs(s.pos[i] - s.target[i])", "return 1.0 if reached else -abs(s.pos[i] - s.target[i])"),
    ("return", "return"),
    ("return 1.0, reached, 0", "return (1.0, reached, 0)"),
])
def test_a_step_function_that_cannot_return_reward_and_terminated_is_refused_before_anything_compiles(
        registered, monkeypatch, tmp_path, returned, shown):
    """Numba's own error is an 85-line TypingError inside vecsim's fused kernel."""
    name = f"bad_return_game_{len(returned)}"
    (tmp_path / f"{name}.py").write_text(Path(minimal_game.__file__).read_text().replace(STEP_RETURN, returned))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(TypeError, match=rf"'{name}': step_env must return \(reward, terminated\), as in "
                                        rf"`return reward, terminated`, but it has `{re.escape(shown)}`$"):
        vecsim.register(name)


def test_a_step_function_returning_a_name_that_holds_one_value_is_named_at_the_first_step(registered,
                                                                                           tmp_path):
    """What only typing tells: the kernel's compile fails, and the error names the function."""
    text = Path(minimal_game.__file__).read_text().replace('ENV_ID = "WalkToTarget-v0"', 'ENV_ID = "ScalarStep-v0"')
    text = text.replace(STEP_RETURN, "reward = 1.0 if reached else -abs(s.pos[i] - s.target[i])\n    return reward")
    (tmp_path / "scalar_step_game.py").write_text(text)
    try:
        engine = vecsim.make(vecsim.register(str(tmp_path / "scalar_step_game.py")), 2)
        engine.reset(seed=0)
        with pytest.raises(TypeError, match=r"^scalar_step_game\.step_env must return \(reward, terminated\), a "
                                            r"number and a bool, as in `return reward, terminated`; but it returns "
                                            r"float64$"):
            engine.step(np.zeros(2, np.int64))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("scalar_step_game", None)


def test_a_path_to_the_games_file_registers_it_as_its_import_name_does(registered, tmp_path):
    package = tmp_path / "my_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "path_game.py").write_text(Path(minimal_game.__file__).read_text().replace(
        'ENV_ID = "WalkToTarget-v0"', 'ENV_ID = "PathGame-v0"'))
    try:
        assert vecsim.register(str(package / "path_game.py")) == "vecsim/PathGame-v0"
        assert vecsim.resolve("vecsim/PathGame-v0").module.__name__ == "my_pkg.path_game"  # its package's
        with pytest.raises(ValueError, match=r"or the path of its \.py file \('my_pkg/my_game\.py'\), but got "
                                             r"'my_pkg/path_game'"):
            vecsim.register("my_pkg/path_game")
        with pytest.raises(FileNotFoundError, match="no_game.py"):
            vecsim.register(str(package / "no_game.py"))
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("my_pkg.path_game", "my_pkg"):
            sys.modules.pop(name, None)


def test_unregister_removes_the_gymnasium_id_too(walk_id):
    vecsim.unregister(walk_id)
    assert walk_id not in vecsim.game_ids() and walk_id not in gymnasium.registry
    vecsim.unregister(walk_id)  # twice is harmless
    with pytest.raises(ValueError, match="built-in"):
        vecsim.unregister("vecsim/CartPole-v1")


@pytest.mark.parametrize("name, value, message", [
    ("EVENTS", "reached", "EVENTS must be a tuple of names"),
    ("PHYSICAL_STATE", ("nowhere",), r"PHYSICAL_STATE names \['nowhere'\], which are not State fields"),
    ("SCRATCH_STATE", ("nowhere",), r"SCRATCH_STATE names \['nowhere'\], which are not State fields"),
    ("enforce_mask", vecsim.core.jit.exact(lambda p, i: True), "declares enforce_mask but no write_mask"),
    ("action_legal", vecsim.core.jit.exact(lambda s, p, i, a: True), "declares action_legal but no enforce_mask"),
])
def test_malformed_optional_names_are_refused_naming_them(registered, monkeypatch, name, value, message):
    broken = copy_of_minimal_game("malformed_game")
    setattr(broken, name, value)
    monkeypatch.setitem(sys.modules, "malformed_game", broken)
    with pytest.raises(TypeError, match=message):
        vecsim.register(broken)
