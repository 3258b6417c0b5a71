"""``VecsimEnv``: a single ``gymnasium.Env`` on the same kernels as the vector env.

Made by ``gymnasium.make("vecsim/<Game>")``, which adds Gymnasium's ``TimeLimit`` from the
registered ``max_episode_steps``. ``env.unwrapped.state`` reads and writes the physical state
vector in the order of Gymnasium's own class, so tests and tools written for Gymnasium's
environments can set up a state the same way.
"""

from __future__ import annotations

import numpy as np
import gymnasium
from gymnasium import spaces

from vecsim.engine.engine import NO_RESET, Engine, check_seed
from vecsim.engine.registry import resolve
from vecsim.engine.reset_mask import ResetMask
from vecsim.gym.vector import check_reset_options, obs_parts, split_row


class VecsimEnv(gymnasium.Env):
    """One env of a vecsim game.

    Parameters
    ----------
    game_id : str
        A vecsim game id, e.g. ``"CartPole-v1"``.
    render_mode : {None, "rgb_array", "ansi"}
    precision : {"float64", "float32"}
    max_episode_steps : int or None
        Truncation inside the kernel. ``gymnasium.make`` leaves this ``None`` and wraps the
        env in ``TimeLimit`` instead, as for Gymnasium's own environments.
    **params
        Game constants (scalars).

    Stepping after ``terminated`` or ``truncated`` without ``reset()`` raises ``RuntimeError``
    (Gymnasium calls that undefined behaviour).
    """

    metadata = {"render_modes": ["rgb_array", "ansi"], "render_fps": 30}

    def __init__(self, game_id: str, render_mode: str | None = None, precision: str = "float64",
                 max_episode_steps: int | None = None, **params):
        game = resolve(game_id)
        game.check_render_mode(render_mode)
        self.engine = Engine(game, 1, precision=precision, max_episode_steps=max_episode_steps,
                             parallel=False, **params)
        self.engine._one_env_api = True
        self.metadata = {"render_modes": ["rgb_array", "ansi"], "render_fps": game.render_fps}
        self.render_mode = render_mode
        self.observation_space = self.engine.single_observation_space
        self.action_space = self.engine.single_action_space
        self._flat_obs = isinstance(self.observation_space, spaces.Box)
        self._obs_parts = [] if self._flat_obs else obs_parts(self.observation_space)
        self._all = ResetMask.all(1)
        self._fields = game.physical_state

    def _obs(self):
        row = self.engine.obs[0].copy()
        if self._flat_obs:
            return row
        return split_row(row, self._obs_parts)  # views of the env's own copy

    def _info(self) -> dict:
        eng = self.engine
        info = {}
        if eng.game.has_action_mask:
            info["action_mask"] = eng.action_masks()[0].copy()
        for k, name in enumerate(eng.event_names):
            info[name] = int(eng.events[0, k])
        for name, arr in eng.info_arrays.items():
            info[name] = arr[0].copy()
        return info

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Reset; with ``seed`` the episode is the one env ``i`` of a batch reset with ``seed - i`` gets."""
        check_reset_options(options, (), self.engine.game.env_id)
        if seed is not None:
            seed = check_seed(seed)  # ValueError/TypeError naming the seed, before any state changes
        super().reset(seed=seed)
        eng = self.engine
        if eng.closed:
            raise RuntimeError("this env is closed")
        if seed is None and not eng.seeded:
            # Follow Gymnasium: an unseeded first reset is random, drawn from np_random.
            seed = int(self.np_random.integers(0, 2**62))
        eng.reset_envs(self._all, seed)
        return self._obs(), self._info()

    def step(self, action):
        """Advance by ``action``; returns ``(obs, reward, terminated, truncated, info)``."""
        eng = self.engine
        if eng.closed:
            raise RuntimeError("this env is closed")
        if not eng.has_reset:
            raise RuntimeError("call reset() before step()")
        if eng.needs_reset[0]:
            raise RuntimeError("the episode has ended: call reset() before step()")
        given = np.asarray(action)
        if given.shape != self.action_space.shape:
            what = "an int" if isinstance(self.action_space, spaces.Discrete) else f"an array of shape {self.action_space.shape}"
            raise ValueError(f"action must be {what} for {self.action_space}, but got {action!r} of shape {given.shape}")
        acts = eng.coerce_actions(given[None])
        eng.step_mode_coerced(NO_RESET, acts)
        return self._obs(), float(eng.rewards[0]), bool(eng.terminals[0]), bool(eng.truncations[0]), self._info()

    def action_masks(self) -> np.ndarray:
        """Legal actions of this env, ``(n_actions,)`` bool."""
        return self.engine.action_masks()[0].copy()

    def render(self):
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; pass render_mode='rgb_array' or 'ansi'")
            return None
        if self.render_mode == "ansi":
            return self.engine.render_text(0)
        return self.engine.render_rgb(0)

    @property
    def state(self) -> np.ndarray:
        """The physical state as a new float64 array, in the order of Gymnasium's class."""
        return np.array([getattr(self.engine.state, name)[0] for name in self._fields], dtype=np.float64)

    @state.setter
    def state(self, value) -> None:
        given = np.asarray(value)
        try:
            arr = given.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"state must be numbers, but got {value!r}") from None
        if arr.shape != (len(self._fields),):
            raise ValueError(f"state must have shape ({len(self._fields)},) for fields {self._fields}, "
                             f"but got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"state must be finite, but got {arr}")
        # The dtype the caller gave, where the game's reference steps each dtype differently.
        self.engine.game.write_physical_state(self.engine.state, 0, given if given.dtype.kind == "f" else arr)
        self.engine.refresh()

    def close(self) -> None:
        self.engine.close()
        super().close()
