"""``VecsimVectorEnv``: a Gymnasium 1.x ``VectorEnv`` on the batched kernels.

Made by ``gymnasium.make_vec("vecsim/<Game>", num_envs=N,
vectorization_mode="vector_entry_point", autoreset_mode=...)`` or directly. Semantics follow
Gymnasium's ``SyncVectorEnv`` exactly: batched spaces, ``metadata["autoreset_mode"]``,
``info["_key"]`` masks, int seeds (env ``i`` gets ``seed + i``) and list seeds, and in
``DISABLED`` mode ``reset(options={"reset_mask": m})`` returning the full batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from vecsim.engine.engine import NEXT_STEP, NO_RESET, SAME_STEP, Engine, FinishedEnvError
from vecsim.engine.game import PACKED_MASK_FN
from vecsim.engine.packed_masks import MASK_FORMATS, packed_width
from vecsim.engine.registry import resolve

# From this many envs a copy=True step lets the kernel write new output arrays rather than
# copying its buffers: for smaller batches four small copies cost less than four allocations.
FRESH_MIN_ENVS = 512
# Or from this many bytes of action masks a step, where the kernels never read the masks back
# (the game's action_legal): Blokus's 36 KB a row, copied, took a third of a 256-env loop.
FRESH_MIN_MASK_BYTES = 64 * 1024

_KERNEL_MODE = {AutoresetMode.NEXT_STEP: NEXT_STEP, AutoresetMode.SAME_STEP: SAME_STEP,
                AutoresetMode.DISABLED: NO_RESET}


def _autoreset_mode(value) -> AutoresetMode:
    if isinstance(value, AutoresetMode):
        return value
    if isinstance(value, str):
        for mode in AutoresetMode:
            if value in (mode.value, mode.name, mode.name.lower()):
                return mode
    raise ValueError(f"autoreset_mode must be a gymnasium.vector.AutoresetMode, but got autoreset_mode={value!r}")


def check_reset_options(options, keys: tuple, env_id: str) -> None:
    """Refuse ``reset(options=...)`` that is not a dict or holds keys other than ``keys``: a
    Gymnasium env's own options (``low``, ``high``) would otherwise be ignored in silence."""
    if options is None:
        return
    if not isinstance(options, dict):
        raise TypeError(f"options must be a dict or None, but got {type(options).__name__}")
    unknown = sorted(map(repr, set(options) - set(keys)))
    if unknown:
        takes = f"only {', '.join(map(repr, keys))}" if keys else "no options"
        raise ValueError(f"vecsim/{env_id} reset takes {takes}, but got options with {', '.join(unknown)}; "
                         f"a game's constants (reset ranges, a level) are set by make(..., name=value) or, "
                         f"for some envs from their next reset on, by engine.reset_envs(mask, seed, name=value)")


def obs_parts(space: spaces.Dict) -> list[tuple[str, int, int, tuple]]:
    """(key, start, stop, shape) of each part of a flat ``Dict`` observation, in
    ``gymnasium.spaces.flatten`` order (every part a ``Box`` of the flat observation's dtype,
    so that a part is a view of the flat row, as ``spaces.unflatten`` gives)."""
    parts, start = [], 0
    flat_dtype = spaces.flatten_space(space).dtype
    for key, sub in space.spaces.items():
        if not isinstance(sub, spaces.Box):
            raise TypeError(f"vecsim Dict observations hold Box parts only, but {key!r} is {sub}")
        if sub.dtype != flat_dtype:
            raise TypeError(f"vecsim Dict observation part {key!r} has dtype {sub.dtype}, "
                            f"but the flat observation is {flat_dtype}")
        size = int(np.prod(sub.shape))
        parts.append((key, start, start + size, tuple(sub.shape)))
        start += size
    return parts


def split_row(row: np.ndarray, parts) -> dict[str, np.ndarray]:
    """One flat observation ``(obs_dim,)`` as a dict of views shaped as the ``Dict`` space's
    parts: what ``gymnasium.spaces.unflatten`` returns, without its per-call dispatch over the
    space tree, which would outweigh the rest of a single env's step."""
    return {key: row[start:stop].reshape(shape) for key, start, stop, shape in parts}


def split_obs(flat: np.ndarray, parts, copy: bool = True) -> dict[str, np.ndarray]:
    """A batch of flat observations ``(N, obs_dim)`` as a dict of ``(N, *shape)`` arrays
    (views when ``copy`` is False)."""
    n = flat.shape[0]
    out = {}
    for key, start, stop, shape in parts:
        part = flat[:, start:stop].reshape((n,) + shape)
        out[key] = part.copy() if copy else part
    return out


class VecsimVectorEnv(VectorEnv):
    """``num_envs`` copies of a vecsim game as a Gymnasium ``VectorEnv``.

    Parameters
    ----------
    game_id : str
        A vecsim game id, e.g. ``"CartPole-v1"``.
    num_envs : int
        Number of sub-environments (>= 1).
    autoreset_mode : gymnasium.vector.AutoresetMode
        ``NEXT_STEP`` (default), ``SAME_STEP`` (terminal observations in
        ``info["final_obs"]``) or ``DISABLED`` (reset finished envs yourself with
        ``reset(options={"reset_mask": mask})``).
    max_episode_steps : int or None
        Truncation limit (``make_vec`` passes the registered one).
    copy : bool
        ``True`` (Gymnasium's default): arrays returned by ``step``/``reset`` are new and never
        overwritten later. ``False``: they are views into buffers the next call overwrites
        (no allocation per step). With ``True``, from ``FRESH_MIN_ENVS`` envs on (or
        ``FRESH_MIN_MASK_BYTES`` of masks, for a game that checks actions against its state:
        Blokus), NEXT_STEP steps (and SAME_STEP steps of a game with nothing in its info) have
        the kernel write the returned arrays themselves rather than copy its buffers (the masks
        too, for such a game): the observation, reward, flag and mask buffers of ``self.engine``
        then keep older values (its ``reset_envs``, ``refresh`` and ``action_masks`` catch up).
    render_mode : {None, "rgb_array", "ansi"}
    flatten_obs : bool
        For games with a ``Dict`` observation: ``False`` (default) returns a dict of batched
        arrays; ``True`` makes the observation space Gymnasium's ``flatten_space`` of it and
        returns the flat ``(num_envs, obs_dim)`` array (no per-key copies; row ``i`` equals
        ``gymnasium.spaces.flatten`` of env ``i``'s observation, so it matches
        ``FlattenObservation`` on the single env).
    mask_format : {"bool", "packed"}
        For games with action masks, what ``info["action_mask"]`` holds: ``"bool"`` (default)
        the ``(num_envs, n_actions)`` bool masks; ``"packed"`` the same packed eight actions a
        byte, ``(num_envs, ceil(n_actions / 8))`` uint8, action ``a`` at bit ``a % 8`` of byte
        ``a // 8`` (``numpy.packbits(masks, axis=1, bitorder="little")``; see
        ``vecsim.engine.packed_masks``). ``action_masks()`` stays bool. A game that writes
        packed masks itself (``write_mask_packed``) then writes no bool mask at all
        (``Engine(mask_format="packed")``); for the others the bool masks are packed each step.
        ``self.engine.masks`` is packed only in the first case (``self.engine.mask_format``
        says which); ``copy`` never changes it.
    precision, parallel, buffers, **params
        As for ``vecsim.Engine``.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["rgb_array", "ansi"], "render_fps": 30}

    def __init__(self, game_id: str, num_envs: int = 1, *, autoreset_mode=AutoresetMode.NEXT_STEP,
                 max_episode_steps: int | None = None, copy: bool = True, render_mode: str | None = None,
                 flatten_obs: bool = False, mask_format: str = "bool", precision: str = "float64",
                 parallel="auto", buffers: dict | None = None, **params):
        game = resolve(game_id)
        mode = _autoreset_mode(autoreset_mode)
        game.check_render_mode(render_mode)
        if not isinstance(copy, (bool, np.bool_)):
            raise TypeError(f"copy must be a bool, but got copy={copy!r}")
        if not isinstance(flatten_obs, (bool, np.bool_)):
            raise TypeError(f"flatten_obs must be a bool, but got flatten_obs={flatten_obs!r}")
        if mask_format not in MASK_FORMATS:
            raise ValueError(f"mask_format must be one of {MASK_FORMATS}, but got mask_format={mask_format!r}")
        # A game with a packed writer gets a packed engine for mask_format="packed": no bool mask
        # is written or read.
        packs = game.has_action_mask and game.has(PACKED_MASK_FN)
        engine_masks = "packed" if packs and mask_format == "packed" else "bool"
        self.engine = Engine(game, num_envs, precision=precision, max_episode_steps=max_episode_steps,
                             parallel=parallel, buffers=buffers, mask_format=engine_masks, **params)
        self.num_envs = self.engine.num_envs
        self.autoreset_mode = mode
        self.copy = bool(copy)
        self.render_mode = render_mode
        self.metadata = {
            "autoreset_mode": mode,
            "render_modes": ["rgb_array", "ansi"],
            "render_fps": game.render_fps,
        }
        self.single_observation_space = self.engine.single_observation_space
        if flatten_obs and not isinstance(self.single_observation_space, spaces.Box):
            self.single_observation_space = spaces.flatten_space(self.single_observation_space)
        self.single_action_space = self.engine.single_action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._flat_obs = isinstance(self.single_observation_space, spaces.Box)
        self._obs_parts = [] if self._flat_obs else obs_parts(self.single_observation_space)
        self._kernel_mode = _KERNEL_MODE[mode]
        self._has_mask = game.has_action_mask
        self.mask_format = mask_format
        self._packed = mask_format == "packed"
        self._packed_width = packed_width(self.engine.n_mask)
        self._events = list(enumerate(self.engine.event_names))
        self._event_views = [self.engine.events[:, k] for k in range(len(self._events))]
        # SAME_STEP must report the terminal step's info as final_info: see _same_step_with_info.
        self._rich_info = self._has_mask or bool(self._events) or bool(self.engine.info_arrays)
        self._all_true = np.ones(self.num_envs, dtype=np.bool_)
        # With copy=True, NEXT_STEP and SAME_STEP steps let the kernel write new arrays
        # (Engine.step_mode_fresh) instead of copying the engine's buffers; the masks too where
        # the kernels never read them back and info["action_mask"] is the engine's own format.
        fresh_mode = (self.engine.fresh_outputs_ok and self._kernel_mode in (NEXT_STEP, SAME_STEP)
                      and not (self._kernel_mode == SAME_STEP and self._rich_info))
        self._fresh_masks = (fresh_mode and self.engine.fresh_masks_ok
                             and self._packed == (self.engine.mask_format == "packed"))
        self._fresh = fresh_mode and (self.num_envs >= FRESH_MIN_ENVS
                                      or (self._fresh_masks and self.engine.masks.nbytes >= FRESH_MIN_MASK_BYTES))

    # -- helpers -------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("this VectorEnv is closed")

    def _obs_out(self):
        obs = self.engine.obs
        if not self._flat_obs:
            return split_obs(obs, self._obs_parts, self.copy)
        return obs.copy(order="K") if self.copy else obs  # "K": a plain memcpy of either layout

    def _base_info(self, fresh_masks: np.ndarray | None = None) -> dict[str, Any]:
        """Masks (``fresh_masks``: those a ``step_mode_fresh`` step wrote), events and the
        game's extra outputs; with ``copy=False`` views (and one shared all-True ``_key`` array)
        that the next call overwrites."""
        if not self._rich_info:
            return {}  # nothing to report (classic control): skip the loops below
        info: dict[str, Any] = {}
        eng = self.engine
        copy = self.copy
        if fresh_masks is not None:
            info["action_mask"] = fresh_masks
            info["_action_mask"] = self._all_true.copy()
        elif self._packed and self._has_mask and eng.mask_format == "packed":
            info["action_mask"] = eng.masks.copy() if copy else eng.masks
            info["_action_mask"] = self._all_true.copy() if copy else self._all_true
        elif self._packed and self._has_mask:
            out = np.empty((self.num_envs, self._packed_width), np.uint8) if copy else None
            info["action_mask"] = eng.packed_masks(out)
            info["_action_mask"] = self._all_true.copy() if copy else self._all_true
        elif self._has_mask:
            info["action_mask"] = eng.masks.copy() if copy else eng.masks
            info["_action_mask"] = self._all_true.copy() if copy else self._all_true
        for k, name in self._events:
            info[name] = eng.events[:, k].copy() if copy else self._event_views[k]
            info[f"_{name}"] = self._all_true.copy() if copy else self._all_true
        for name, arr in eng.info_arrays.items():
            info[name] = arr.copy() if copy else arr
            info[f"_{name}"] = self._all_true.copy() if copy else self._all_true
        return info

    # -- Gymnasium API -------------------------------------------------------------------
    def reset(self, *, seed=None, options: dict | None = None):
        """Reset all sub-environments, or with ``options={"reset_mask": m}`` only those in ``m``.

        ``seed``: ``None``, an int (env ``i`` gets ``seed + i``) or a list of ``num_envs``
        ints/None. Returns ``(obs, info)`` for the whole batch.
        """
        self._check_open()
        eng = self.engine
        check_reset_options(options, ("reset_mask",), eng.game.env_id)
        if options and "reset_mask" in options:
            mask = options["reset_mask"]
            if not isinstance(mask, np.ndarray):
                raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
            if mask.shape != (self.num_envs,):
                raise ValueError(f"`options['reset_mask']` must have shape `({self.num_envs},)`, got {mask.shape}")
            if mask.dtype != np.bool_:
                raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
            if not mask.any():
                raise ValueError(
                    f"`options['reset_mask']` must contain a boolean array with at least one True value, got reset_mask={mask}"
                )
            if not eng.has_reset and not mask.all():
                raise RuntimeError("call reset() without a reset_mask before resetting some envs")
            eng.reset_envs(mask, seed)
            return self._obs_out(), self._masked_info(mask)
        eng.reset(seed)
        return self._obs_out(), self._base_info()

    def _masked_info(self, mask: np.ndarray) -> dict:
        """The info of the envs in ``mask`` only, in new arrays: each key's rows of those envs,
        zeros elsewhere, ``_key`` = the mask (Gymnasium's info of a masked reset, and its
        ``final_info``). Only the masked rows are copied: the zeros are fresh pages, so a batch
        with a large mask pays for the few envs that finished, not for the whole batch."""
        copy, self.copy = self.copy, False
        try:
            views = self._base_info()
        finally:
            self.copy = copy
        info = {}
        for key, value in views.items():
            if key.startswith("_"):
                continue
            rows = np.zeros(value.shape, value.dtype)
            rows[mask] = value[mask]
            info[key] = rows
            info[f"_{key}"] = mask.copy()
        return info

    def step(self, actions):
        """Step every sub-environment; returns ``(obs, rewards, terminations, truncations, info)``."""
        eng = self.engine
        if self.closed or not eng.has_reset:
            self._check_open()
            eng.check_started()
        if self._fresh and self.copy:
            # The kernel writes the returned arrays themselves: no copies (see Engine.step_mode_fresh).
            out = eng.step_mode_fresh(self._kernel_mode, actions, masks=self._fresh_masks)
            obs, rewards, terminals, truncations = out[:4]
            info = self._base_info(out[4] if self._fresh_masks else None)
            if not self._flat_obs:
                obs = split_obs(obs, self._obs_parts)  # contiguous parts, as copy=True's always were
            if self._kernel_mode == SAME_STEP and eng.has_final.any():
                self._add_final_obs(info)
            return obs, rewards, terminals, truncations, info
        acts = eng.quick_actions(actions)
        if self._kernel_mode == SAME_STEP and self._rich_info:
            info = self._same_step_with_info(acts)
        else:
            try:
                eng.step_mode_coerced(self._kernel_mode, acts)
            except FinishedEnvError as exc:  # DISABLED autoreset: in this API's words, not the engine's
                raise FinishedEnvError(exc.env, exc.terminated, exc.truncated,
                                       'reset it with reset(options={"reset_mask": mask}) before stepping it '
                                       '(autoreset_mode=DISABLED)') from None
            info = self._base_info()
            if self._kernel_mode == SAME_STEP and eng.has_final.any():
                self._add_final_obs(info)
        if self.copy:
            return self._obs_out(), eng.rewards.copy(), eng.terminals.copy(), eng.truncations.copy(), info
        return self._obs_out(), eng.rewards, eng.terminals, eng.truncations, info

    def _add_final_obs(self, info: dict) -> None:
        """SAME_STEP without rich info: the terminal observations the kernel kept, empty final_info."""
        done = self.engine.has_final
        info["final_obs"] = self._final_obs(self.engine.final_obs, done)
        info["_final_obs"] = done.copy()
        info["final_info"] = {}
        info["_final_info"] = done.copy()

    def _final_obs(self, rows: np.ndarray, done: np.ndarray) -> np.ndarray:
        final_obs = np.full(self.num_envs, None, dtype=object)
        for i in np.flatnonzero(done):
            row = rows[i].copy()
            final_obs[i] = row if self._flat_obs else split_row(row, self._obs_parts)
        return final_obs

    def _same_step_with_info(self, acts: np.ndarray) -> dict:
        """SAME_STEP for games whose info has content (masks, events, extra outputs): step
        without reset, keep the finished envs' terminal observation and info, then reset them
        (continuing their streams, as the kernel's SAME_STEP reset does)."""
        eng = self.engine
        eng.step_mode_coerced(NO_RESET, acts)
        done = eng.terminals | eng.truncations
        if not done.any():
            return self._base_info()
        final_obs = self._final_obs(eng.obs, done)
        final_info = self._masked_info(done)  # Gymnasium's final_info: zeros for envs that did not finish
        flags = (eng.rewards.copy(), eng.terminals.copy(), eng.truncations.copy())
        eng.reset_envs(done)
        # The step's own reward and flags stay in the returned arrays (reset cleared them).
        eng.rewards[:], eng.terminals[:], eng.truncations[:] = flags
        info = self._base_info()
        info["final_obs"] = final_obs
        info["_final_obs"] = done.copy()
        info["final_info"] = final_info
        info["_final_info"] = done.copy()
        return info

    def action_masks(self) -> np.ndarray:
        """Legal actions, ``(num_envs, n_actions)`` bool (all True for games without illegal actions)."""
        self._check_open()
        masks = self.engine.action_masks()
        return masks.copy() if self.copy and self.engine.mask_format == "bool" else masks

    def render(self):
        """A tuple of one frame per sub-environment (RGB arrays, or strings in ``"ansi"`` mode)."""
        self._check_open()
        if self.render_mode is None:
            return None
        if self.render_mode == "ansi":
            return tuple(self.engine.render_text(i) for i in range(self.num_envs))
        return tuple(self.engine.render_rgb(i) for i in range(self.num_envs))

    def close_extras(self, **kwargs) -> None:
        self.engine.close()

    def __repr__(self) -> str:
        return (f"VecsimVectorEnv({self.engine.game.env_id}, num_envs={self.num_envs}, "
                f"autoreset_mode={self.autoreset_mode.name})")
