"""``vecsim.testing``: every game passes the checker, and the checker catches broken envs."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces as gym_spaces
from gymnasium.vector import AutoresetMode

import vecsim
from vecsim.engine.engine import Engine
from vecsim.testing import check_engine, check_vector_env
from vecsim.gym.vector import VecsimVectorEnv

from conftest import game_precisions

FIRST_GAME = vecsim.game_ids()[0]


# -- every registered game passes ----------------------------------------------------------
#: Games checked under other constants than their defaults. Dr. Mario's decision mode runs an
#: exact planner search every step: thousands of them take CI tens of minutes, so these checks
#: take its frame mode, and tests/games/drmario runs them on decision mode with fewer steps.
CHECK_PARAMS = {"DrMario": dict(mode="frame")}


def _check_params(game_id: str) -> dict:
    return CHECK_PARAMS.get(vecsim.resolve(game_id).name, {})


@pytest.mark.parametrize("game_id, precision", game_precisions())
def test_vector_env_contract(game_id, precision):
    check_vector_env(game_id, num_envs=4, seed=3, precision=precision, **_check_params(game_id))


def _kernel_writes_results(game_id: str) -> bool:
    game = vecsim.resolve(game_id)
    flat = isinstance(game.observation_space(game.params_cls()), gym_spaces.Box)
    return flat and game.hints.write_obs_fills_row


#: Games whose write_obs fills whole rows of a flat observation: a copy=True VectorEnv of 512
#: envs or more steps them through Engine.step_mode_fresh (Tetris's Dict observation needs
#: flatten_obs=True for that; tests/test_tetris_scenarios.py covers it).
FRESH_GAMES = [g for g in vecsim.game_ids() if _kernel_writes_results(g)]


@pytest.mark.parametrize("fresh_game", FRESH_GAMES)
def test_vector_env_contract_with_kernel_written_results(fresh_game, monkeypatch):
    """The contract again with copy=True steps writing new arrays in the kernel, which the
    default 4 envs are too few for (vecsim.gym.vector.FRESH_MIN_ENVS)."""
    monkeypatch.setattr(vecsim.gym.vector, "FRESH_MIN_ENVS", 1)
    made = []

    def make_env(num_envs, **kwargs):
        made.append(VecsimVectorEnv(fresh_game, num_envs, **kwargs))
        return made[-1]

    check_vector_env(fresh_game, num_envs=4, seed=3, make_env=make_env, **_check_params(fresh_game))
    fresh = {(env.autoreset_mode, env.copy) for env in made if env.unwrapped._fresh and env.copy}
    # SAME_STEP steps copy when the game has events, info fields or a mask (final_info).
    rich = any(env.unwrapped._rich_info for env in made)
    want = {(AutoresetMode.NEXT_STEP, True)} | (set() if rich else {(AutoresetMode.SAME_STEP, True)})
    assert fresh == want


@pytest.mark.parametrize("game_id, precision", game_precisions())
def test_engine_semantics(game_id, precision):
    check_engine(game_id, num_envs=37, seed=5, precision=precision, **_check_params(game_id))


# -- broken envs the checker must reject ---------------------------------------------------
def _make(cls):
    return lambda num_envs, **kwargs: cls(FIRST_GAME, num_envs, **kwargs)


class WrongObservationLater(VecsimVectorEnv):
    """Perturbs one observation after a while: a physics bug that only shows up mid-episode."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._t = 0

    def step(self, actions):
        obs, rewards, terms, truncs, info = super().step(actions)
        self._t += 1
        if self._t == 40:
            obs = obs.copy()
            obs[-1, 0] = np.nextafter(obs[-1, 0], np.float32(np.inf))
        return obs, rewards, terms, truncs, info


class ReturnsViewsDespiteCopy(VecsimVectorEnv):
    """Returns the engine's buffers even with copy=True: SB3-style rollouts get corrupted."""

    def step(self, actions):
        _, _, terms, truncs, info = super().step(actions)
        return self.engine.obs, self.engine.rewards, terms, truncs, info


class ReallocatesWithoutCopy(VecsimVectorEnv):
    """With copy=False, returns a new observation array every step."""

    def step(self, actions):
        obs, *rest = super().step(actions)
        return (obs.copy(), *rest)


class DropsFinalObs(VecsimVectorEnv):
    def step(self, actions):
        obs, rewards, terms, truncs, info = super().step(actions)
        info.pop("final_obs", None)
        info.pop("_final_obs", None)
        return obs, rewards, terms, truncs, info


class SameSeedForEveryEnv(VecsimVectorEnv):
    """Seeds every env with ``seed`` instead of ``seed + i``."""

    def reset(self, *, seed=None, options=None):
        if isinstance(seed, int):
            seed = [seed] * self.num_envs
        return super().reset(seed=seed, options=options)


class StringAutoresetMetadata(VecsimVectorEnv):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.metadata = dict(self.metadata, autoreset_mode=self.autoreset_mode.value)


class ResetsEveryEnvOnMask(VecsimVectorEnv):
    """Ignores ``reset_mask`` and resets the whole batch."""

    def reset(self, *, seed=None, options=None):
        if options and "reset_mask" in options:
            options = dict(options)
            mask = options.pop("reset_mask")
            options["reset_mask"] = np.ones_like(mask)
        return super().reset(seed=seed, options=options)


class ClipsBadActions(VecsimVectorEnv):
    """Silently maps invalid actions to valid ones instead of raising."""

    def step(self, actions):
        arr = np.asarray(actions)
        if arr.shape == self.engine.zero_actions().shape and arr.dtype.kind in "iu":
            actions = np.clip(arr, 0, self.single_action_space.n - 1)
        return super().step(actions)


class UsableAfterClose(VecsimVectorEnv):
    def close_extras(self, **kwargs):
        pass

    def _check_open(self):
        pass


BROKEN_VECTOR_ENVS = [
    (WrongObservationLater, "observations: differs at index"),
    (ReturnsViewsDespiteCopy, "with copy=True, what .* returned was overwritten"),
    (ReallocatesWithoutCopy, "was reallocated"),
    (DropsFinalObs, r"keys differ.*missing \['_final_obs', 'final_obs'\]"),
    (SameSeedForEveryEnv, r"reset\(seed=3\)"),
    (StringAutoresetMetadata, "must be a gymnasium.vector.AutoresetMode"),
    (ResetsEveryEnvOnMask, "reset_mask"),
    (ClipsBadActions, "expected ValueError, but the call returned normally"),
    (UsableAfterClose, "after close"),
]


@pytest.mark.parametrize("broken, message", BROKEN_VECTOR_ENVS, ids=[c.__name__ for c, _ in BROKEN_VECTOR_ENVS])
def test_checker_rejects_broken_vector_env(broken, message):
    if broken is ClipsBadActions and not hasattr(vecsim.make(FIRST_GAME).single_action_space, "n"):
        pytest.skip("needs a discrete-action game")
    with pytest.raises(AssertionError, match=message):
        check_vector_env(FIRST_GAME, num_envs=4, seed=3, steps=120, make_env=_make(broken))


def test_checker_accepts_the_unbroken_subclass_path():
    check_vector_env(FIRST_GAME, num_envs=3, seed=1, steps=60, make_env=_make(VecsimVectorEnv))


# -- broken engines ------------------------------------------------------------------------
class ClearsFlagsOnPartialReset(Engine):
    """``reset_envs`` also clears the terminal flags of envs outside the mask."""

    def reset_envs(self, mask, seed=None):
        out = super().reset_envs(mask, seed)
        self.terminals[:] = False
        self.truncations[:] = False
        return out


class IgnoresSeedOffset(Engine):
    """``reset(seed)`` gives every env the same seed: breaks batch-size independence."""

    def reset(self, seed=None):
        if isinstance(seed, int):
            seed = [seed] * self.num_envs
        return super().reset(seed)


class ReturnsFreshResult(Engine):
    """``step_no_reset`` returns copies: breaks the zero-copy contract."""

    def step_no_reset(self, actions):
        result = super().step_no_reset(actions)
        return type(result)(result.observations.copy(), result.rewards.copy(), result.terminals.copy(),
                            result.truncations.copy(), result.masks, result.events, result.event_names)


class StepsFinishedEnvs(Engine):
    """Lets a finished env be stepped (its terminal observation is lost)."""

    def step_no_reset(self, actions):
        self.needs_reset[:] = False
        return super().step_no_reset(actions)


BROKEN_ENGINES = [
    (ClearsFlagsOnPartialReset, "after reset_envs with an empty mask|envs outside the mask"),
    (IgnoresSeedOffset, "reset"),
    (ReturnsFreshResult, "not a view of the engine's buffers"),
    (StepsFinishedEnvs, "is finished: expected ValueError"),
]


@pytest.mark.parametrize("broken, message", BROKEN_ENGINES, ids=[c.__name__ for c, _ in BROKEN_ENGINES])
def test_checker_rejects_broken_engine(broken, message):
    game = vecsim.resolve(FIRST_GAME)

    def make_engine(num_envs, **kwargs):
        kwargs.setdefault("max_episode_steps", game.module.MAX_EPISODE_STEPS)
        return broken(game, num_envs, **kwargs)

    with pytest.raises(AssertionError, match=message):
        check_engine(FIRST_GAME, num_envs=9, seed=2, steps=120, make_engine=make_engine)


def test_vector_checker_reports_autoreset_mode_and_step():
    """A failure message says which mode, limit and step went wrong."""
    with pytest.raises(AssertionError) as info:
        check_vector_env(FIRST_GAME, num_envs=4, seed=3, steps=120, make_env=_make(WrongObservationLater))
    text = str(info.value)
    assert "autoreset_mode=" in text and "step 39" in text and "max_episode_steps=" in text
    assert AutoresetMode.NEXT_STEP.name in text
