"""``SB3VecEnv``: any vecsim env as a Stable-Baselines3 ``VecEnv``.

SB3 takes no Gymnasium ``VectorEnv``; it steps a ``VecEnv`` whose finished envs are reset in
the same step, with the last observation of the episode in ``infos[i]["terminal_observation"]``.
The adapter gets exactly that from the kernels: it steps the engine in its same-step mode, in
which a finished env is reset inside the step kernel, so a terminal observation is the real
one and the returned observation the real first one of the next episode (no ghost steps).

By default it also does what SB3's ``Monitor`` does for each env (``infos[i]["episode"]``
with the episode's return ``r``, length ``l``, seconds since the adapter started ``t``, and the
total of each of the game's event counters, e.g. Tetris's ``lines``), so
``env_is_wrapped(Monitor)`` is True: SB3's logs and ``evaluate_policy`` count episodes without
a wrapper. ``VecNormalize``, ``VecFrameStack`` and (with ``monitor=False``) ``VecMonitor`` work
on top.

Every step returns new arrays: SB3 keeps the previous step's observations while it computes the
next (a buffer overwritten in place would silently corrupt its rollouts).
"""

from __future__ import annotations

import sys
import time
import weakref
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from vecsim.extras import require

require("stable_baselines3", "train", "vecsim.trainers.sb3")
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import VecEnv  # noqa: E402

from vecsim.engine.engine import NO_RESET, SAME_STEP, check_seed  # noqa: E402
from vecsim.gym.vector import FRESH_MIN_ENVS, VecsimVectorEnv, obs_parts, split_obs, split_row

def _held_refs() -> int | None:
    """``sys.getrefcount`` of an array that only an attribute references, seen as ``_only_ours``
    sees it; ``None`` off CPython, whose reference counts alone say when nobody else holds it."""
    if sys.implementation.name != "cpython":
        return None
    holder = type("Holder", (), {})()
    holder.array = np.zeros(1)
    held = holder.array  # as _mask_copy holds it: an attribute, a local, then two calls deep
    return _probe(held)


def _probe(array: np.ndarray) -> int:
    return _refs(array)


def _refs(array: np.ndarray) -> int:
    return sys.getrefcount(array)


def _only_ours(array: np.ndarray) -> bool:
    """Whether nothing but the adapter references ``array`` (a view of it, a row, references
    it too), so that writing into it cannot change what a caller holds."""
    return _HELD_REFS is not None and _refs(array) <= _HELD_REFS and not weakref.getweakrefcount(array)


_HELD_REFS = _held_refs()

#: Attributes that ``get_attr`` reads once per env (the same value for every env).
_SHARED_ATTRS = ("render_mode", "observation_space", "action_space", "spec", "metadata", "np_random_seed")


class SB3VecEnv(VecEnv):
    """``num_envs`` envs of a vecsim game as one Stable-Baselines3 ``VecEnv``.

    Parameters
    ----------
    env_id : str
        A vecsim id, e.g. ``"vecsim/CartPole-v1"`` or ``"CartPole-v1"``.
    num_envs : int
        Number of envs (>= 1).
    seed : int or None
        The first ``reset`` seeds env ``i`` with ``seed + i`` (as SB3's ``make_vec_env``);
        ``None`` draws a random seed. ``seed()`` sets it again for the next ``reset``.
    monitor : bool
        ``True`` (default): episode statistics in ``infos[i]["episode"]``, as under SB3's
        ``Monitor``. ``False``: none (for ``VecMonitor`` on top, which otherwise warns that
        it replaces them).
    **kwargs
        What ``gymnasium.make_vec`` passes to vecsim's ``VectorEnv``: ``max_episode_steps``,
        ``precision``, ``parallel``, ``render_mode``, ``flatten_obs`` and game parameters (e.g.
        Tetris's ``action_mode="drop"``). ``autoreset_mode`` and ``copy`` are the adapter's own.

    Observations are ``(num_envs, *obs_shape)`` arrays of the game's dtype (a dict of them for
    a ``Dict`` space, which SB3's ``MultiInputPolicy`` takes), rewards ``(num_envs,)`` float32 (as
    ``DummyVecEnv``'s),
    dones ``(num_envs,)`` bool, infos a list of ``num_envs`` dicts. ``env_method("action_masks")``
    gives each env's legal actions, ``(n_actions,)`` bool, after the step's resets (what
    sb3-contrib's ``MaskablePPO`` asks for). Actions are anything ``VecEnv.step`` is given:
    ``(num_envs,)`` integers of any integer dtype for ``Discrete``, ``(num_envs, *shape)``
    floats for ``Box``.
    """

    def __init__(self, env_id: str, num_envs: int = 1, *, seed: int | None = None, monitor: bool = True,
                 **kwargs):
        for own in ("autoreset_mode", "copy", "vectorization_mode"):
            if own in kwargs:
                raise TypeError(f"SB3VecEnv sets {own} itself (SB3 resets finished envs in the same step); "
                                f"remove {own}={kwargs[own]!r}")
        if not isinstance(env_id, str):
            raise TypeError(f"env_id must be a vecsim env id (str), but got env_id={env_id!r}")
        if not isinstance(monitor, (bool, np.bool_)):
            raise TypeError(f"monitor must be a bool, but got monitor={monitor!r}")
        self.monitor = bool(monitor)
        full_id = env_id if "/" in env_id else f"vecsim/{env_id}"
        if not full_id.startswith("vecsim/"):
            raise ValueError(f"SB3VecEnv takes a vecsim env id ('vecsim/...'), but got env_id={env_id!r}")
        vec = gymnasium.make_vec(full_id, num_envs=num_envs, vectorization_mode="vector_entry_point",
                                 autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
        self.vector_env: VecsimVectorEnv = vec
        self.engine = vec.engine
        self._flat = isinstance(vec.single_observation_space, spaces.Box)
        self._parts = [] if self._flat else obs_parts(vec.single_observation_space)
        self._fresh = self.engine.fresh_outputs_ok and vec.num_envs >= FRESH_MIN_ENVS
        self._discrete = isinstance(vec.single_action_space, spaces.Discrete)
        self._event_names = self.engine.event_names
        self._rich_reset_info = bool(self.engine.n_mask or self._event_names or self.engine.info_arrays)
        self._returns = np.zeros(vec.num_envs)
        self._steps = 0  # steps since the last reset(); an episode's length is counted from its first
        self._first_step = np.zeros(vec.num_envs, dtype=np.int64)
        self._event_totals = np.zeros((vec.num_envs, len(self._event_names)), dtype=np.int64)
        self._start = time.time()
        self._no_infos = [{}] * vec.num_envs
        self._actions = None
        self._masks_held = None  # _mask_copy's array
        super().__init__(vec.num_envs, vec.single_observation_space, vec.single_action_space)
        if seed is not None:
            self.seed(seed)

    # -- the VecEnv API ------------------------------------------------------------------
    def reset(self):
        """Reset every env, with the seeds of ``seed()`` and options of ``set_options()`` if
        given since the last reset; returns the observations."""
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        options = self._batch_options()
        self.vector_env.reset(seed=seeds, options=options)
        self._reset_seeds()
        self._reset_options()
        self._returns[:] = 0
        self._steps = 0
        self._first_step[:] = 0
        self._event_totals[:] = 0
        self._actions = None
        for i in range(self.num_envs):
            self.reset_infos[i] = self._reset_info(i)
        return self._observations(self.engine.obs, copy=True)

    def step_async(self, actions: np.ndarray) -> None:
        """Check and keep ``actions`` for ``step_wait`` (``ValueError``/``TypeError`` naming a bad one)."""
        self.engine.check_open()
        self.engine.check_started()
        self._actions = self.engine.coerce_actions(actions)

    def step_wait(self):
        """Step every env, resetting the finished ones; returns ``(obs, rewards, dones, infos)``."""
        if self._actions is None:
            raise RuntimeError("step_wait() needs a step_async(actions) first")
        eng = self.engine
        acts, self._actions = self._actions, None
        finals = None
        if eng.info_arrays:
            # The extra outputs are state that a reset rewrites (a game's final scores): read
            # the terminal step's before resetting, as DummyVecEnv reads env.step's info.
            eng.step_mode_coerced(NO_RESET, acts)
            rewards, terminals, truncations = eng.rewards.copy(), eng.terminals.copy(), eng.truncations.copy()
            dones = terminals | truncations
            infos = self._step_infos()
            if dones.any():
                finals = eng.obs[dones]
                eng.reset_envs(dones)
            obs = eng.obs.copy()
        else:
            if self._fresh:
                obs, rewards, terminals, truncations = eng.step_mode_fresh(SAME_STEP, acts)
            else:
                eng.step_mode_coerced(SAME_STEP, acts)
                obs, rewards, terminals, truncations = eng.obs.copy(), eng.rewards, eng.terminals, eng.truncations
            dones = terminals | truncations
            infos = self._step_infos()
        self._steps += 1
        if self.monitor:
            self._returns += rewards
            if self._event_names:
                self._event_totals += eng.events
        if dones.any():
            self._finish(np.flatnonzero(dones), infos, terminals, truncations, finals)
        return self._observations(obs, copy=False), rewards.astype(np.float32), dones, infos

    def _finish(self, done: np.ndarray, infos: list, terminals: np.ndarray, truncations: np.ndarray,
                finals: np.ndarray | None = None) -> None:
        """Fill the infos of the envs in ``done`` (indices), which finished in this step and were
        reset by it; ``finals``: their terminal observations (else the kernel's ``final_obs``)."""
        envs = done.tolist()
        if finals is None:
            finals = self.engine.final_obs[done]  # one copy; each info holds a view of its row
        timeouts = (truncations[done] & ~terminals[done]).tolist()
        for k, i in enumerate(envs):
            info = infos[i]
            info["terminal_observation"] = finals[k] if self._flat else split_row(finals[k], self._parts)
            info["TimeLimit.truncated"] = timeouts[k]
            self.reset_infos[i] = self._reset_info(i)
        if not self.monitor:
            return
        returns = self._returns[done].tolist()
        lengths = (self._steps - self._first_step[done]).tolist()
        seconds = round(time.time() - self._start, 6)
        for k, i in enumerate(envs):
            infos[i]["episode"] = {"r": returns[k], "l": lengths[k], "t": seconds}
        self._returns[done] = 0
        self._first_step[done] = self._steps
        if self._event_names:
            for k, (i, totals) in enumerate(zip(envs, self._event_totals[done].tolist())):
                infos[i]["episode"].update(zip(self._event_names, totals))
            self._event_totals[done] = 0

    def close(self) -> None:
        self.vector_env.close()

    def get_images(self):
        """One RGB frame per env (``render_mode="rgb_array"``)."""
        if self.render_mode != "rgb_array":
            raise ValueError(f"get_images needs render_mode='rgb_array', but this env has render_mode={self.render_mode!r}")
        return [self.engine.render_rgb(i) for i in range(self.num_envs)]

    # -- per-env attributes and methods --------------------------------------------------
    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        """``attr_name`` of each env in ``indices``. The envs share ``render_mode``, their spaces,
        ``spec`` and ``metadata``; ``action_masks`` is each env's bound mask method; a game
        parameter (e.g. ``"gravity"``) is each env's value. ``AttributeError`` otherwise."""
        envs = self._indices(indices)
        if attr_name == "action_masks" and self._discrete:
            return [self._env_method_mask(i) for i in envs]
        if attr_name in _SHARED_ATTRS:
            value = self._shared_attr(attr_name)
            return [value for _ in envs]
        params = tuple(self.engine.game.params_cls._fields)
        if attr_name in params:
            return [getattr(self.engine.params_of(i), attr_name) for i in envs]
        raise AttributeError(f"vecsim env {self.engine.game.env_id} has no attribute {attr_name!r} "
                             f"(get_attr knows {', '.join(_SHARED_ATTRS + ('action_masks',) + tuple(params))})")

    def _shared_attr(self, name: str):
        vec = self.vector_env
        if name == "observation_space":
            return vec.single_observation_space
        if name == "action_space":
            return vec.single_action_space
        if name == "np_random_seed":
            return None
        return getattr(vec, name)

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        """Not supported: a vecsim env's parameters are fixed when it is made. Raises
        ``AttributeError`` naming the attribute (make a new ``SB3VecEnv`` with it instead)."""
        self._indices(indices)
        raise AttributeError(f"SB3VecEnv cannot set {attr_name!r} on running envs; pass it when making the env "
                             f"(SB3VecEnv({self.engine.game.env_id!r}, ..., {attr_name}=...))")

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        """``method_name(*args, **kwargs)`` for each env in ``indices``: ``action_masks`` (the
        env's legal actions after the last step's resets, ``(n_actions,)`` bool) and ``render``
        (a frame of the env in its ``render_mode``). ``AttributeError`` for any other method."""
        envs = self._indices(indices)
        if method_name == "action_masks" and self._discrete:
            if method_args or method_kwargs:
                raise TypeError("action_masks() takes no arguments")
            masks = self.engine.action_masks()  # a view: the one copy below holds the rows returned
            return list(masks[envs]) if indices is not None else list(self._mask_copy(masks))
        if method_name == "render":
            if method_args or method_kwargs:
                raise TypeError("render() takes no arguments")
            return [self._render_one(i) for i in envs]
        raise AttributeError(f"vecsim env {self.engine.game.env_id} has no method {method_name!r} "
                             f""
                             f"(env_method knows {'action_masks and ' if self._discrete else ''}render)")

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        """True for SB3's ``Monitor`` (and its bases) where the adapter records its episode
        statistics (``monitor=True``), else False."""
        envs = self._indices(indices)
        wrapped = self.monitor and isinstance(wrapper_class, type) and issubclass(Monitor, wrapper_class)
        return [wrapped for _ in envs]

    # -- helpers -------------------------------------------------------------------------
    def _observations(self, flat: np.ndarray, copy: bool):
        if self._flat:
            return flat.copy() if copy else flat
        return split_obs(flat, self._parts, copy=True)

    def _step_infos(self) -> list[dict]:
        """Each env's info as vecsim's single env gives it, less the action mask (which
        ``env_method("action_masks")`` gives): the step's event counters and extra outputs."""
        eng = self.engine
        if not self._event_names and not eng.info_arrays:
            return list(map(dict.copy, self._no_infos))  # new dicts, faster than a comprehension
        names = self._event_names
        infos = [dict(zip(names, row)) for row in eng.events.tolist()]
        for name, arr in eng.info_arrays.items():
            rows = arr.copy()  # one copy; each env's info holds a view of its row
            for i, info in enumerate(infos):
                info[name] = rows[i]
        return infos

    def _reset_info(self, i: int) -> dict:
        """What vecsim's single env returns as the info of a ``reset``: the legal actions, the
        event counters (zero: nothing happened yet) and the extra outputs of env ``i``."""
        eng = self.engine
        if not self._rich_reset_info:
            return {}
        info = {"action_mask": eng.action_masks()[i].copy()} if eng.n_mask else {}
        info.update(dict.fromkeys(self._event_names, 0))
        for name, arr in eng.info_arrays.items():
            info[name] = arr[i].copy()
        return info

    def _mask_copy(self, masks: np.ndarray) -> np.ndarray:
        """A copy of ``masks`` in an array that nobody else references: the one of the last
        call when the rows it returned are all gone (as when MaskablePPO has stacked them),
        else a new one. Reusing it spares a large allocation a step, which the allocator
        serves with fresh pages from the system every time."""
        held = self._masks_held
        if held is None or held.shape != masks.shape or not _only_ours(held):
            held = self._masks_held = np.empty_like(masks)
        np.copyto(held, masks)
        return held

    def _env_method_mask(self, i: int):
        return lambda: self.engine.action_masks()[i].copy()

    def _render_one(self, i: int):
        if self.render_mode == "ansi":
            return self.engine.render_text(i)
        if self.render_mode == "rgb_array":
            return self.engine.render_rgb(i)
        return None

    def _indices(self, indices) -> list[int]:
        """``indices`` (None, an int or a sequence of ints) as a list of env indices, or
        ``IndexError``/``TypeError`` naming the bad one."""
        if indices is None:
            return list(range(self.num_envs))
        items = [indices] if isinstance(indices, (int, np.integer)) else indices
        try:
            return [self.engine.env_index(i) for i in items]
        except TypeError:
            raise TypeError(f"indices must be None, an int or a sequence of ints, but got indices={indices!r}") from None

    def _batch_options(self):
        """The options of ``set_options`` as one dict for the batch's reset, or ``None``."""
        first = self._options[0]
        if any(opt != first for opt in self._options[1:]):
            raise ValueError("vecsim resets its envs together, with one options dict; set_options got "
                             f"different options per env: {self._options!r}")
        return dict(first) if first else None

    def seed(self, seed: int | None = None):
        """Seed env ``i`` with ``seed + i`` at the next ``reset`` (a random seed for ``None``)."""
        if seed is not None:
            seed = check_seed(seed, span=self.num_envs)
        return super().seed(seed)

    def set_options(self, options=None) -> None:
        """Options for the next ``reset``: one dict for every env, or a list of ``num_envs`` dicts."""
        if options is not None and not isinstance(options, (dict, list, tuple)):
            raise TypeError(f"options must be a dict, a list of dicts or None, but got options={options!r}")
        if isinstance(options, (list, tuple)):
            if len(options) != self.num_envs or not all(isinstance(o, dict) for o in options):
                raise ValueError(f"options as a list must hold {self.num_envs} dicts (one per env), "
                                 f"but got options={options!r}")
            if "reset_mask" in options[0]:
                raise ValueError("options cannot hold 'reset_mask': SB3VecEnv resets finished envs itself")
        elif isinstance(options, dict) and "reset_mask" in options:
            raise ValueError("options cannot hold 'reset_mask': SB3VecEnv resets finished envs itself")
        super().set_options(options)

    def __repr__(self) -> str:
        return f"SB3VecEnv({self.engine.game.env_id!r}, num_envs={self.num_envs})"
