"""A contract checker for vecsim games: Gymnasium ``VectorEnv`` semantics and engine semantics.

Gymnasium ships no checker for vector environments, so this module plays a vecsim
``VectorEnv`` in lockstep with Gymnasium's own ``SyncVectorEnv`` of the same game's single
env (``gymnasium/vector/sync_vector_env.py``, Gymnasium 1.x), and an ``Engine`` against the
same reference, and asserts that everything a trainer can observe is identical: spaces,
observations, rewards, flags, ``info`` keys and ``_key`` masks, ``final_obs``, seeding,
partial resets, copy semantics, buffer reuse, and the errors raised for bad input. The
engine semantics it checks are those of ``DESIGN.md`` ("Engine semantics").

Every check raises ``AssertionError`` with a message that says what differed, where, and
the expected value. The module depends only on NumPy and Gymnasium (no test framework), so
a user can check a new game with one call:

>>> import vecsim.testing
>>> vecsim.testing.check_vector_env("vecsim/CartPole-v1")    # doctest: +SKIP
>>> vecsim.testing.check_engine("vecsim/CartPole-v1")        # doctest: +SKIP
>>> vecsim.testing.check_all_games()                          # doctest: +SKIP
"""

from __future__ import annotations

import copy as _copy
import functools
import re
from collections.abc import Callable

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space, iterate

import vecsim
from vecsim.engine.reset_mask import ResetMask
from vecsim.core.rng import MAX_SEED

__all__ = ["check_vector_env", "check_engine", "check_all_games", "sample_actions", "legal_actions"]

#: Episode limit used in a second pass so that every game truncates within a short check.
SHORT_LIMIT = 25


# -- small helpers -------------------------------------------------------------------------
def _fail(message: str):
    raise AssertionError(message)


def _first_difference(actual: np.ndarray, expected: np.ndarray):
    """Index of the first element where two same-shape arrays differ (NaN equals NaN)."""
    a = np.asarray(actual)
    b = np.asarray(expected)
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        same = (a == b) | (np.isnan(a.astype(np.complex128)) & np.isnan(b.astype(np.complex128)))
    else:
        same = a == b
    bad = np.argwhere(~np.asarray(same))
    return tuple(int(k) for k in bad[0]) if bad.size else None


def _assert_same(actual, expected, what: str, check_dtype: bool = True) -> None:
    """Assert exact equality of two values: arrays, dicts, tuples, object arrays, scalars."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            _fail(f"{what}: expected a dict, got {type(actual).__name__}")
        if set(actual) != set(expected):
            _fail(f"{what}: keys differ: got {sorted(actual)}, expected {sorted(expected)} "
                  f"(missing {sorted(set(expected) - set(actual))}, extra {sorted(set(actual) - set(expected))})")
        for key in expected:
            _assert_same(actual[key], expected[key], f"{what}[{key!r}]", check_dtype)
        return
    if isinstance(expected, tuple):
        if not isinstance(actual, tuple) or len(actual) != len(expected):
            _fail(f"{what}: expected a tuple of length {len(expected)}, got {actual!r}")
        for k, (a, b) in enumerate(zip(actual, expected)):
            _assert_same(a, b, f"{what}[{k}]", check_dtype)
        return
    if expected is None:
        if actual is not None:
            _fail(f"{what}: expected None, got {actual!r}")
        return
    if isinstance(expected, np.ndarray) and expected.dtype == object:
        if not isinstance(actual, np.ndarray) or actual.dtype != object or actual.shape != expected.shape:
            _fail(f"{what}: expected an object array of shape {expected.shape}, got {actual!r}")
        for k in range(expected.shape[0]):
            _assert_same(actual[k], expected[k], f"{what}[{k}]", check_dtype)
        return
    a = np.asarray(actual)
    b = np.asarray(expected)
    if a.shape != b.shape:
        _fail(f"{what}: shape {a.shape} differs from the expected {b.shape}")
    if check_dtype and a.dtype != b.dtype:
        _fail(f"{what}: dtype {a.dtype} differs from the expected {b.dtype}")
    index = _first_difference(a, b)
    if index is not None:
        got, want = a[index].tolist(), b[index].tolist()
        rows = "" if a.ndim < 2 else f" (row {index[0]} got {a[index[0]].tolist()}, expected {b[index[0]].tolist()})"
        _fail(f"{what}: differs at index {index}: got {got!r}, expected {want!r}{rows}")


def _expect_error(call: Callable[[], object], errors: tuple, fragments, what: str) -> BaseException:
    """Assert ``call()`` raises one of ``errors`` whose message contains every fragment.

    A fragment is a plain string (matched case-insensitively) or a compiled regex.
    """
    try:
        call()
    except errors as exc:
        message = str(exc)
        for fragment in fragments:
            if isinstance(fragment, re.Pattern):
                found = fragment.search(message) is not None
            else:
                found = str(fragment).lower() in message.lower()
            if not found:
                shown = fragment.pattern if isinstance(fragment, re.Pattern) else fragment
                _fail(f"{what}: the {type(exc).__name__} message does not name {shown!r}: {message!r}")
        return exc
    except Exception as exc:  # noqa: BLE001 - the wrong kind of error is what we report
        names = "/".join(e.__name__ for e in errors)
        _fail(f"{what}: expected {names}, but got {type(exc).__name__}: {exc}")
    names = "/".join(e.__name__ for e in errors)
    _fail(f"{what}: expected {names}, but the call returned normally")


def _word(value) -> re.Pattern:
    """A regex matching ``value`` as a whole number or word in a message."""
    return re.compile(rf"(?<![\w.]){re.escape(str(value))}(?![\w])")


def sample_actions(space: spaces.Space, n: int, rng: np.random.Generator, overshoot: float = 0.0,
                   mask: np.ndarray | None = None) -> np.ndarray:
    """A batch of ``n`` random actions of a single-env action space.

    Parameters
    ----------
    space : gymnasium.spaces.Discrete or gymnasium.spaces.Box
        The single-env action space.
    n : int
        Number of envs.
    rng : numpy.random.Generator
    overshoot : float
        Box actions are drawn from bounds widened by this fraction of their span on each
        side (games clip, so out-of-bounds actions are legal); infinite bounds count as +-1.

    mask : ndarray of bool, shape (n, space.n), optional
        Legal actions of each env (``Discrete`` only): each env's action is drawn uniformly
        from its legal ones (action 0 where none is legal).

    Returns
    -------
    ndarray
        ``(n,)`` int64 for ``Discrete``; ``(n, *space.shape)`` of ``space.dtype`` for ``Box``.
    """
    if isinstance(space, spaces.Discrete):
        if mask is not None:
            mask = np.asarray(mask, dtype=bool)
            if mask.shape != (n, int(space.n)):
                raise ValueError(f"mask must have shape ({n}, {int(space.n)}), but got {mask.shape}")
            keys = rng.random(mask.shape)
            keys[~mask] = -1.0
            return (int(space.start) + keys.argmax(axis=1)).astype(np.int64)
        return (int(space.start) + rng.integers(0, int(space.n), size=n)).astype(np.int64)
    if isinstance(space, spaces.Box):
        low = np.where(np.isfinite(space.low), space.low, -1.0).astype(np.float64)
        high = np.where(np.isfinite(space.high), space.high, 1.0).astype(np.float64)
        span = high - low
        values = rng.uniform(low - overshoot * span, high + overshoot * span, size=(n, *space.shape))
        return values.astype(space.dtype)
    raise TypeError(f"vecsim.testing samples Discrete and Box actions only, not {space}")


def legal_actions(target) -> np.ndarray | None:
    """The current legal-action masks of an engine or vecsim VectorEnv, or ``None`` for a game
    whose actions are always legal (or a closed target)."""
    eng = getattr(target, "engine", target)
    if not getattr(eng, "n_mask", 0) or eng.closed:
        return None
    return eng.action_masks().copy()


def _bad_action_cases(space: spaces.Space, good: np.ndarray):
    """(description, actions, exception types, message fragments) for invalid action batches."""
    n = good.shape[0]
    k = n - 1
    cases = [
        (f"actions with shape {good[:-1].shape} for {n} envs", good[:-1], (ValueError,), ["shape"]),
        (f"actions with an extra axis, shape {good[..., None].shape}", good[..., None], (ValueError,), ["shape"]),
        ("actions given as strings", np.full(good.shape, "a"), (TypeError,), ["dtype"]),
    ]
    if isinstance(space, spaces.Discrete):
        too_big = int(space.start) + int(space.n) + 7
        high = good.copy()
        high[k] = too_big
        low = good.copy()
        low[k] = int(space.start) - 1
        cases += [
            (f"discrete action {too_big} (out of range) at env {k}", high, (ValueError,), [_word(k), _word(too_big)]),
            (f"discrete action {int(space.start) - 1} (out of range) at env {k}", low, (ValueError,),
             [_word(k), str(int(space.start) - 1)]),
            ("discrete actions given as floats", good.astype(np.float64), (TypeError,), ["float64"]),
        ]
    else:
        for value in (np.nan, np.inf, -np.inf):
            for dtype in (space.dtype, np.float64):
                bad = good.astype(dtype)
                bad[k, 0] = value
                cases.append((f"continuous action {value} ({np.dtype(dtype).name}) at env {k}", bad, (ValueError,),
                              [_word(k), str(value).lstrip("-")]))
        cases.append(("continuous actions given as complex numbers", good.astype(np.complex128), (TypeError,), ["complex"]))
    return cases


def _bad_seed_cases(n: int):
    """(description, seed, exception types, message fragments) for invalid ``reset`` seeds."""
    listed = list(range(n))
    listed[n - 1] = -5
    return [
        ("a negative seed", -1, (ValueError,), ["-1"]),
        ("a float seed", 1.5, (TypeError,), ["1.5"]),
        ("a string seed", "7", (TypeError,), ["'7'"]),
        ("a seed above 2**63 - 1", 2**63, (ValueError,), [str(2**63)]),
        (f"a seed whose env {n - 1} would pass 2**63 - 1", MAX_SEED - n + 2 if n > 1 else MAX_SEED + 1, (ValueError,),
         [str(MAX_SEED - n + 2 if n > 1 else MAX_SEED + 1)]),
        (f"a list of {n + 1} seeds for {n} envs", list(range(n + 1)), (ValueError,), [str(n + 1)]),
        (f"a list of seeds with -5 at index {n - 1}", listed, (ValueError,), ["-5"]),
    ]


def _bad_mask_cases(n: int, for_engine: bool):
    """(description, mask, exception types, message fragments) for invalid reset masks."""
    cases = [
        ("a reset mask given as a list", [True] * n, (TypeError,), ["list"]),
        (f"a reset mask of shape ({n + 1},)", np.ones(n + 1, dtype=bool), (ValueError,), [str(n + 1)]),
        ("a reset mask of dtype int64", np.ones(n, dtype=np.int64), (TypeError,), ["int64"]),
        ("a 2-D reset mask", np.ones((n, 1), dtype=bool), (ValueError,), ["shape"]),
    ]
    if for_engine:
        cases.append((f"a ResetMask over {n + 1} envs", ResetMask.all(n + 1), (ValueError,), [str(n + 1)]))
    else:
        cases.append(("an all-False reset mask", np.zeros(n, dtype=bool), (ValueError,), ["true"]))
    return cases


def _flat_obs(space: spaces.Space, batch_space_: spaces.Space, obs) -> np.ndarray:
    """A batched observation as (num_envs, flat_dim), in Gymnasium's ``flatten`` order."""
    if isinstance(space, spaces.Box):
        return np.asarray(obs).reshape(np.asarray(obs).shape[0], -1)
    return np.stack([spaces.flatten(space, o) for o in iterate(batch_space_, obs)])


def _pointer(value):
    return value.ctypes.data if isinstance(value, np.ndarray) else None


# -- the VectorEnv check -------------------------------------------------------------------
def _default_make_env(env_id: str) -> Callable:
    return functools.partial(gymnasium.make_vec, env_id, vectorization_mode="vector_entry_point")


def _make_reference(env_id: str, n: int, mode: AutoresetMode, kwargs: dict):
    return gymnasium.make_vec(env_id, n, vectorization_mode="sync",
                              vector_kwargs={"autoreset_mode": mode}, **kwargs)


def _check_vector_spaces(env, ref, n: int, mode: AutoresetMode, where: str) -> None:
    if env.num_envs != n:
        _fail(f"{where}: num_envs is {env.num_envs}, expected {n}")
    for name in ("single_observation_space", "single_action_space"):
        if getattr(env, name) != getattr(ref, name):
            _fail(f"{where}: {name} {getattr(env, name)} differs from the single env's {getattr(ref, name)}")
    for name, single in (("observation_space", env.single_observation_space),
                         ("action_space", env.single_action_space)):
        expected = batch_space(single, n)
        if getattr(env, name) != expected:
            _fail(f"{where}: {name} {getattr(env, name)} is not batch_space(single, {n}) = {expected}")
    autoreset = env.metadata.get("autoreset_mode")
    if not isinstance(autoreset, AutoresetMode):
        _fail(f"{where}: metadata['autoreset_mode'] must be a gymnasium.vector.AutoresetMode, got {autoreset!r}")
    if autoreset != mode:
        _fail(f"{where}: metadata['autoreset_mode'] is {autoreset}, but the env was made with {mode}")


def _check_step_types(env, out, precision: str, where: str) -> None:
    obs, rewards, terminations, truncations, info = out
    n = env.num_envs
    if not env.observation_space.contains(obs):
        _fail(f"{where}: observations are not in observation_space {env.observation_space}: {obs!r}")
    if not isinstance(rewards, np.ndarray) or rewards.shape != (n,):
        _fail(f"{where}: rewards must be an ndarray of shape ({n},), got {rewards!r}")
    expected = np.float64 if precision == "float64" else np.float32
    if rewards.dtype != expected:
        _fail(f"{where}: rewards must have dtype {np.dtype(expected)} in precision={precision!r}, got {rewards.dtype}")
    for name, flags in (("terminations", terminations), ("truncations", truncations)):
        if not isinstance(flags, np.ndarray) or flags.shape != (n,) or flags.dtype != np.bool_:
            _fail(f"{where}: {name} must be a bool ndarray of shape ({n},), got {flags!r}")
    _check_info_masks(info, n, where)


def _check_info_masks(info, n: int, where: str) -> None:
    if not isinstance(info, dict):
        _fail(f"{where}: info must be a dict, got {type(info).__name__}")
    for key, value in info.items():
        if key.startswith("_"):
            continue
        mask = info.get(f"_{key}")
        if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or mask.shape != (n,):
            _fail(f"{where}: info[{key!r}] needs a bool ({n},) mask info['_{key}'], got {mask!r}")
        if isinstance(value, dict):
            _check_info_masks(value, n, f"{where} info[{key!r}]")


def _check_final_obs(env, info, where: str) -> None:
    if "final_obs" not in info:
        return
    for i in np.flatnonzero(info["_final_obs"]):
        if not env.single_observation_space.contains(info["final_obs"][i]):
            _fail(f"{where}: info['final_obs'][{i}] = {info['final_obs'][i]!r} is not in "
                  f"single_observation_space {env.single_observation_space}")


class _Retained:
    """Results a ``copy=True`` env returned earlier, with private deep copies to compare against."""

    def __init__(self, keep: int = 4):
        self.keep = keep
        self.items: list[tuple[str, object, object]] = []

    def add(self, label: str, value) -> None:
        self.items.append((label, value, _copy.deepcopy(value)))
        del self.items[: -self.keep]

    def check(self, now: str) -> None:
        for label, value, snapshot in self.items:
            try:
                _assert_same(value, snapshot, label)
            except AssertionError as exc:
                _fail(f"with copy=True, what {label} returned was overwritten by {now}: {exc}")


class _Pointers:
    """Data pointers of arrays a ``copy=False`` env returns: they must not move between steps."""

    def __init__(self):
        self.seen: dict[str, int] = {}

    def check(self, named: dict, where: str) -> None:
        for name, value in named.items():
            ptr = _pointer(value)
            if ptr is None:
                continue
            first = self.seen.setdefault(name, ptr)
            if ptr != first:
                _fail(f"{where}: {name} was reallocated (data pointer {ptr:#x}, first {first:#x}); "
                      f"copy=False must return the same preallocated buffers every step")


def _compare_with_sync(env_id: str, make_env: Callable, n: int, seed: int, steps: int, mode: AutoresetMode,
                       limit, precision: str, params: dict) -> int:
    """Play ``env`` (copy=True and copy=False) in lockstep with ``SyncVectorEnv``; return episodes ended."""
    kwargs = dict(max_episode_steps=limit, precision=precision, **params)
    tag = f"{env_id} autoreset_mode={mode.name} max_episode_steps={limit} precision={precision}"
    env = make_env(n, autoreset_mode=mode, copy=True, **kwargs)
    view = make_env(n, autoreset_mode=mode, copy=False, **kwargs)
    ref = _make_reference(env_id, n, mode, kwargs)
    rng = np.random.default_rng([seed, 1])
    retained = _Retained()
    pointers = _Pointers()
    ended = 0
    bad_steps = {1, steps // 3}
    try:
        _check_vector_spaces(env, ref, n, mode, tag)
        _check_vector_spaces(view, ref, n, mode, f"{tag} copy=False")

        def reset_all(seed_arg, label):
            out = env.reset(seed=seed_arg)
            out_view = view.reset(seed=seed_arg)
            expected = ref.reset(seed=seed_arg)
            _assert_same(out, expected, f"{tag}: reset(seed={seed_arg!r}) at {label} (obs, info)")
            _assert_same(out_view, expected, f"{tag} copy=False: reset(seed={seed_arg!r}) at {label}")
            if not env.observation_space.contains(out[0]):
                _fail(f"{tag}: reset observations are not in observation_space: {out[0]!r}")
            retained.add(f"reset(seed={seed_arg!r}) at {label}", out)
            pointers.check({"observations": out_view[0]}, f"{tag} copy=False: reset at {label}")

        reset_all(seed, "the start")
        for t in range(steps):
            where = f"{tag}, step {t}"
            if t == steps // 2:
                listed = [seed + 1000 + 7 * i for i in range(n)]
                listed[0] = None  # None: that env continues its stream
                reset_all(listed, f"step {t}")
            actions = sample_actions(env.single_action_space, n, rng, overshoot=0.25 if t % 5 == 0 else 0.0,
                                     mask=legal_actions(env))
            if t in bad_steps:
                _check_rejected_actions(env, actions, where)
            out = env.step(actions.copy())
            out_view = view.step(actions.copy())
            expected = ref.step(actions.copy())
            _check_step_types(env, out, precision, where)
            _check_step_types(view, out_view, precision, f"{where} copy=False")
            _assert_same(out[0], expected[0], f"{where}: observations")
            _assert_same(np.asarray(out[1], dtype=np.float64), expected[1], f"{where}: rewards")
            _assert_same(out[2], expected[2], f"{where}: terminations")
            _assert_same(out[3], expected[3], f"{where}: truncations")
            _assert_same(out[4], expected[4], f"{where}: info")
            _assert_same(out_view, out, f"{where}: the copy=False env's step result vs copy=True's")
            _check_final_obs(env, out[4], where)
            pointers.check({"observations": out_view[0], "rewards": out_view[1], "terminations": out_view[2],
                            "truncations": out_view[3]}, f"{where} copy=False")
            retained.check(f"step {t}")
            retained.add(f"step {t}", out)
            done = expected[2] | expected[3]
            ended += int(done.sum())
            if mode == AutoresetMode.DISABLED and done.any():
                out_view = _disabled_partial_reset(env, view, ref, done, actions, rng, seed + 2000 + t, where, retained)
                pointers.check({"observations": out_view[0]}, f"{where} copy=False, masked reset")
    finally:
        for e in (env, view, ref):
            e.close()
    return ended


def _check_rejected_actions(env, good: np.ndarray, where: str) -> None:
    """Bad action batches raise clear errors (state is checked by the lockstep that follows)."""
    for desc, actions, errors, fragments in _bad_action_cases(env.single_action_space, good):
        _expect_error(lambda: env.step(actions), errors, fragments, f"{where}: step with {desc}")


def _disabled_partial_reset(env, view, ref, done, actions, rng, seed_r: int, where: str, retained) -> tuple:
    """Check the DISABLED-mode errors, then reset the finished envs (and maybe one more) in all three."""
    n = done.shape[0]
    first = int(np.flatnonzero(done)[0])
    _expect_error(lambda: env.step(actions), (ValueError,), [_word(first)],
                  f"{where}: AutoresetMode.DISABLED step while env {first} is finished")
    for desc, mask, errors, fragments in _bad_mask_cases(n, for_engine=False):
        _expect_error(lambda: env.reset(options={"reset_mask": mask}), errors, fragments,
                      f"{where}: reset(options={{'reset_mask': ...}}) with {desc}")
    mask = done.copy()
    if n > 1 and rng.random() < 0.5:
        mask[rng.integers(0, n)] = True  # also restart an env that is still running
    choice = rng.integers(0, 3)
    seed_arg = None if choice == 0 else seed_r if choice == 1 else [seed_r + 3 * i for i in range(n)]
    label = f"reset(seed={seed_arg!r}, options={{'reset_mask': {mask.astype(int).tolist()}}})"
    out = env.reset(seed=seed_arg, options={"reset_mask": mask.copy()})
    out_view = view.reset(seed=seed_arg, options={"reset_mask": mask.copy()})
    expected = ref.reset(seed=seed_arg, options={"reset_mask": mask.copy()})
    _assert_same(out, expected, f"{where}: {label} (full-batch obs, info)")
    _assert_same(out_view, expected, f"{where} copy=False: {label}")
    retained.add(f"{where}: {label}", out)
    return out_view


def check_vector_env(env_id: str, num_envs: int = 4, seed: int = 0, *, steps: int = 300,
                     precision: str = "float64", short_limit: int | None = SHORT_LIMIT,
                     make_env: Callable | None = None, **params) -> None:
    """Assert the Gymnasium ``VectorEnv`` contract for one registered vecsim game.

    For each ``AutoresetMode`` (and both the registered episode limit and ``short_limit``),
    the env is played for ``steps`` steps of random actions in lockstep with
    ``gymnasium.make_vec(env_id, num_envs, vectorization_mode="sync")`` (Gymnasium's
    ``SyncVectorEnv`` of the single env, seeded identically), and everything returned must be
    identical: observations, rewards, terminations, truncations, ``info`` keys and ``_key``
    masks, ``final_obs`` (SAME_STEP), full-batch results of ``reset_mask`` partial resets
    (DISABLED), int seeds (env ``i`` gets ``seed + i``) and list seeds. Also checked: batched
    spaces, ``metadata["autoreset_mode"]``, dtypes and shapes, observations in the space,
    ``copy=True`` results never overwritten later, ``copy=False`` buffers never reallocated,
    clear errors for bad actions, seeds and reset masks with the state left intact, and
    ``RuntimeError`` after ``close()``.

    Parameters
    ----------
    env_id : str
        A registered id, e.g. ``"vecsim/CartPole-v1"``.
    num_envs : int
        Batch size of the checked env.
    seed : int
        Seed of the resets and of the random actions.
    steps : int
        Steps per autoreset mode and episode limit.
    precision : {"float64", "float32"}
        Passed to both the checked env and the reference single envs.
    short_limit : int or None
        A second pass with this ``max_episode_steps`` so truncation is exercised (``None``:
        registered limit only).
    make_env : callable, optional
        ``make_env(num_envs, **kwargs) -> VectorEnv`` builds the env under test, where
        ``kwargs`` holds ``autoreset_mode``, ``copy``, ``max_episode_steps``, ``precision``
        and ``params``. Default: ``gymnasium.make_vec(env_id, vectorization_mode=
        "vector_entry_point", ...)``.
    **params
        Game constants passed to every env (scalars).

    Raises
    ------
    AssertionError
        Naming the mode, step, quantity and index that differ from the reference.
    """
    make_env = make_env or _default_make_env(env_id)
    limits = [gymnasium.spec(env_id).max_episode_steps]
    if short_limit is not None and short_limit not in limits:
        limits.append(short_limit)
    for limit in limits:
        for mode in AutoresetMode:
            ended = _compare_with_sync(env_id, make_env, num_envs, seed, steps, mode, limit, precision, params)
            if limit == short_limit and ended == 0 and steps >= short_limit:
                _fail(f"{env_id}: no episode ended in {steps} steps with max_episode_steps={limit} "
                      f"({mode.name}); the autoreset paths were not exercised")
    _check_vector_errors(env_id, make_env, num_envs, seed, precision, params)


def _check_vector_errors(env_id: str, make_env: Callable, n: int, seed: int, precision: str, params: dict) -> None:
    """Bad seeds and use after ``close()``; rejected resets leave the env as it was."""
    kwargs = dict(precision=precision, **params)
    env = make_env(n, autoreset_mode=AutoresetMode.NEXT_STEP, copy=True, **kwargs)
    twin = make_env(n, autoreset_mode=AutoresetMode.NEXT_STEP, copy=True, **kwargs)
    rng = np.random.default_rng([seed, 2])
    where = f"{env_id} precision={precision}"
    try:
        env.reset(seed=seed)
        twin.reset(seed=seed)
        for desc, bad_seed, errors, fragments in _bad_seed_cases(n):
            _expect_error(lambda: env.reset(seed=bad_seed), errors, fragments, f"{where}: reset with {desc}")
        for t in range(20):
            actions = sample_actions(env.single_action_space, n, rng, mask=legal_actions(env))
            _assert_same(env.step(actions), twin.step(actions),
                         f"{where}: step {t} after rejected resets vs an env that saw none")
        env.close()
        env.close()  # idempotent
        actions = sample_actions(env.single_action_space, n, rng, mask=legal_actions(env))
        _expect_error(lambda: env.step(actions), (RuntimeError,), ["close"], f"{where}: step after close()")
        _expect_error(lambda: env.reset(seed=seed), (RuntimeError,), ["close"], f"{where}: reset after close()")
    finally:
        env.close()
        twin.close()


# -- the Engine check ----------------------------------------------------------------------
def _engine_snapshot(eng) -> dict:
    named = {"obs": eng.obs, "rewards": eng.rewards, "terminals": eng.terminals, "truncations": eng.truncations,
             "masks": eng.masks, "events": eng.events, "elapsed": eng.elapsed, "rng": eng.rng}
    for name, arr in zip(eng.state._fields, eng.state):
        if name not in eng.game.scratch_state:  # a thread's, not an env's: nothing to compare
            named[f"state.{name}"] = arr
    return {name: np.array(arr, copy=True) for name, arr in named.items()}


def _assert_snapshot(eng, before: dict, what: str, rows=None) -> None:
    now = _engine_snapshot(eng)
    for name, old in before.items():
        new = now[name]
        if rows is not None:
            new, old = new[rows], old[rows]
        _assert_same(new, old, f"{what}: engine {name}")


def _engine_pointers(eng) -> dict:
    named = {"obs": eng.obs, "rewards": eng.rewards, "terminals": eng.terminals, "truncations": eng.truncations,
             "masks": eng.masks, "events": eng.events, "result.observations": eng.result.observations,
             "result.rewards": eng.result.rewards, "result.terminals": eng.result.terminals,
             "result.truncations": eng.result.truncations, "result.masks": eng.result.masks,
             "result.events": eng.result.events}
    for name, arr in zip(eng.state._fields, eng.state):
        named[f"state.{name}"] = arr
    return {name: arr.ctypes.data for name, arr in named.items()}


def _check_result(eng, result, pointers: dict, where: str) -> None:
    if result.observations.ctypes.data != pointers["obs"] or result.rewards.ctypes.data != pointers["rewards"]:
        _fail(f"{where}: step_no_reset returned a StepResult that is not a view of the engine's buffers")
    now = _engine_pointers(eng)
    for name, ptr in pointers.items():
        if now[name] != ptr:
            _fail(f"{where}: engine buffer {name} was reallocated (data pointer {now[name]:#x}, first {ptr:#x})")
    done = result.terminals | result.truncations
    if result.to_reset_mask() != ResetMask.from_bools(done):
        _fail(f"{where}: StepResult.to_reset_mask() {result.to_reset_mask()} differs from terminals | truncations")


def _check_engine_layout(eng, ref, where: str) -> None:
    n = eng.num_envs
    single = ref.single_observation_space
    flat = single if isinstance(single, spaces.Box) else spaces.flatten_space(single)
    dim = int(np.prod(flat.shape))
    expect = {"obs": ((n, dim), flat.dtype), "rewards": ((n,), np.dtype(eng.precision)),
              "terminals": ((n,), np.dtype(bool)), "truncations": ((n,), np.dtype(bool)),
              "events": ((n, len(eng.event_names)), np.dtype(np.int64))}
    for name, (shape, dtype) in expect.items():
        arr = getattr(eng, name)
        if arr.shape != shape or arr.dtype != dtype:
            _fail(f"{where}: engine {name} has shape {arr.shape} and dtype {arr.dtype}, "
                  f"expected {shape} and {dtype}")
    if eng.single_observation_space != single or eng.single_action_space != ref.single_action_space:
        _fail(f"{where}: engine spaces {eng.single_observation_space}, {eng.single_action_space} differ from the "
              f"single env's {single}, {ref.single_action_space}")
    if eng.masks.ndim != 2 or eng.masks.shape[0] != n or eng.masks.dtype != np.bool_:
        _fail(f"{where}: engine masks must be bool (num_envs, n_actions), got {eng.masks.dtype} {eng.masks.shape}")
    if eng.supports_no_reset() is not True:
        _fail(f"{where}: supports_no_reset() must be True")
    zero = eng.zero_actions()
    if not batch_space(eng.single_action_space, n).contains(zero):
        _fail(f"{where}: zero_actions() {zero!r} is not a valid batch of actions")


def _engine_vs_sync(env_id: str, make_engine: Callable, n: int, seed: int, steps: int, limit, precision: str,
                    params: dict) -> int:
    """``step_no_reset``/``reset_envs`` in lockstep with a DISABLED ``SyncVectorEnv``."""
    tag = f"{env_id} engine max_episode_steps={limit} precision={precision}"
    eng = make_engine(n, max_episode_steps=limit, precision=precision, **params)
    ref = _make_reference(env_id, n, AutoresetMode.DISABLED, dict(max_episode_steps=limit, precision=precision, **params))
    single, batched = ref.single_observation_space, ref.observation_space
    rng = np.random.default_rng([seed, 3])
    ended = 0
    try:
        _check_engine_layout(eng, ref, tag)
        actions = eng.zero_actions()
        _expect_error(lambda: eng.step_no_reset(actions), (RuntimeError,), ["reset"], f"{tag}: step before reset()")
        pointers = _engine_pointers(eng)
        obs = eng.reset(seed=seed)
        if obs.ctypes.data != pointers["obs"]:
            _fail(f"{tag}: reset() must return the engine's observation buffer (a view)")
        _assert_same(obs, _flat_obs(single, batched, ref.reset(seed=seed)[0]), f"{tag}: reset(seed={seed})")
        for t in range(steps):
            where = f"{tag}, step {t}"
            if t == steps // 2:
                listed = [seed + 500 + 11 * i for i in range(n)]
                listed[-1] = None
                _assert_same(eng.reset(seed=listed), _flat_obs(single, batched, ref.reset(seed=listed)[0]),
                             f"{where}: reset(seed={listed})")
            actions = sample_actions(eng.single_action_space, n, rng, overshoot=0.25 if t % 5 == 0 else 0.0,
                                     mask=legal_actions(eng))
            result = eng.step_no_reset(actions.copy())
            r_obs, r_rew, r_term, r_trunc, _ = ref.step(actions.copy())
            _check_result(eng, result, pointers, where)
            _assert_same(result.observations, _flat_obs(single, batched, r_obs), f"{where}: step_no_reset observations")
            _assert_same(result.rewards.astype(np.float64), r_rew, f"{where}: step_no_reset rewards")
            _assert_same(result.terminals, r_term, f"{where}: step_no_reset terminals")
            _assert_same(result.truncations, r_trunc, f"{where}: step_no_reset truncations")
            done = r_term | r_trunc
            ended += int(done.sum())
            if done.any():
                _check_terminal_rows_survive(eng, done, actions, where)
                _engine_partial_reset(eng, ref, done, rng, seed + 3000 + t, where)
    finally:
        eng.close()
        ref.close()
    return ended


def _check_terminal_rows_survive(eng, done: np.ndarray, actions: np.ndarray, where: str) -> None:
    """Terminal observations and flags stay exact until the env is reset."""
    first = int(np.flatnonzero(done)[0])
    before = _engine_snapshot(eng)
    _expect_error(lambda: eng.step_no_reset(actions), (ValueError,), [_word(first)],
                  f"{where}: step_no_reset while env {first} is finished")
    _assert_snapshot(eng, before, f"{where}: after a rejected step_no_reset")
    for desc, mask, errors, fragments in _bad_mask_cases(eng.num_envs, for_engine=True):
        _expect_error(lambda: eng.reset_envs(mask), errors, fragments, f"{where}: reset_envs with {desc}")
    _assert_snapshot(eng, before, f"{where}: after rejected reset_envs calls")
    eng.reset_envs(np.zeros(eng.num_envs, dtype=bool))
    eng.reset_envs(ResetMask(eng.num_envs), seed=1)
    _assert_snapshot(eng, before, f"{where}: after reset_envs with an empty mask")
    eng.refresh()
    _assert_snapshot(eng, before, f"{where}: after refresh()")


def _engine_partial_reset(eng, ref, done: np.ndarray, rng, seed_r: int, where: str) -> None:
    n = done.shape[0]
    mask = done.copy()
    if n > 1 and rng.random() < 0.5:
        mask[rng.integers(0, n)] = True
    before = _engine_snapshot(eng)
    choice = rng.integers(0, 3)
    seed_arg = None if choice == 0 else seed_r if choice == 1 else [seed_r + 5 * i for i in range(n)]
    as_bits = bool(rng.integers(0, 2))
    obs = eng.reset_envs(ResetMask.from_bools(mask) if as_bits else mask.copy(), seed_arg)
    r_obs, _ = ref.reset(seed=seed_arg, options={"reset_mask": mask.copy()})
    label = f"reset_envs({'ResetMask' if as_bits else 'bool array'} {mask.astype(int).tolist()}, seed={seed_arg!r})"
    if obs.ctypes.data != eng.obs.ctypes.data:
        _fail(f"{where}: {label} must return the engine's observation buffer")
    _assert_same(obs, _flat_obs(ref.single_observation_space, ref.observation_space, r_obs), f"{where}: {label}")
    if eng.terminals[mask].any() or eng.truncations[mask].any():
        _fail(f"{where}: {label} left terminal or truncation flags set on reset envs")
    keep = np.flatnonzero(~mask)
    _assert_snapshot(eng, before, f"{where}: envs outside the mask after {label}", rows=keep)


def _engine_consistency(env_id: str, make_engine: Callable, n: int, seed: int, steps: int, limit, precision: str,
                        params: dict) -> None:
    """Serial vs parallel kernels and batch-size independence: bit-identical trajectories."""
    tag = f"{env_id} engine max_episode_steps={limit} precision={precision}"
    kwargs = dict(max_episode_steps=limit, precision=precision, **params)
    k = max(1, n // 3) if n > 1 else 0
    serial = make_engine(n, parallel=False, **kwargs)
    parallel = make_engine(n, parallel=True, **kwargs)
    tail = make_engine(n - k, parallel=True, **kwargs) if k else None
    engines = [e for e in (serial, parallel, tail) if e is not None]
    rng = np.random.default_rng([seed, 4])
    pointers = [_engine_pointers(e) for e in engines]

    def compare(where):
        for e, ptrs in zip(engines, pointers):
            now = _engine_pointers(e)
            moved = [name for name in ptrs if now[name] != ptrs[name]]
            if moved:
                _fail(f"{where}: engine buffers {moved} were reallocated")
        a, b = _engine_snapshot(serial), _engine_snapshot(parallel)
        for name in a:
            _assert_same(b[name], a[name], f"{where}: parallel=True vs parallel=False, {name}")
        if tail is not None:
            c = _engine_snapshot(tail)
            for name in a:
                _assert_same(c[name], a[name][k:],
                             f"{where}: a batch of {n - k} seeded {seed + k} vs envs {k}: of a batch of {n} "
                             f"seeded {seed}, {name}")

    try:
        serial.reset(seed=seed)
        parallel.reset(seed=seed)
        if tail is not None:
            tail.reset(seed=seed + k)
        compare(f"{tag}: reset")
        for t in range(steps):
            where = f"{tag}, step {t}"
            actions = sample_actions(serial.single_action_space, n, rng, mask=legal_actions(serial))
            if t < steps // 2:  # Gymnasium's NEXT_STEP autoreset inside the kernel
                for e in engines:
                    e.step(actions[n - e.num_envs:])
                compare(f"{where} (step)")
                if t == steps // 2 - 1:
                    done = serial.terminals | serial.truncations
                    for e in engines:
                        e.reset_envs(done[n - e.num_envs:])
            else:
                for e in engines:
                    e.step_no_reset(actions[n - e.num_envs:])
                compare(f"{where} (step_no_reset)")
                done = serial.terminals | serial.truncations
                if done.any():
                    seed_r = seed + 4000 + t
                    listed = [seed_r + 2 * i for i in range(n)]
                    use_list = t % 2 == 0
                    for e in engines:
                        lo = n - e.num_envs
                        e.reset_envs(done[lo:], listed[lo:] if use_list else seed_r + lo)
                    compare(f"{where} (reset_envs)")
    finally:
        for e in engines:
            e.close()


def _check_engine_errors(env_id: str, make_engine: Callable, n: int, seed: int, precision: str,
                         params: dict) -> None:
    """Bad actions, seeds and use after close: clear errors, state untouched."""
    where = f"{env_id} engine precision={precision}"
    eng = make_engine(n, precision=precision, **params)
    rng = np.random.default_rng([seed, 5])
    try:
        eng.reset(seed=seed)
        good = sample_actions(eng.single_action_space, n, rng, mask=legal_actions(eng))
        before = _engine_snapshot(eng)
        for desc, actions, errors, fragments in _bad_action_cases(eng.single_action_space, good):
            for method in ("step_no_reset", "step"):
                _expect_error(lambda: getattr(eng, method)(actions), errors, fragments, f"{where}: {method} with {desc}")
                _assert_snapshot(eng, before, f"{where}: after a rejected {method} with {desc}")
        for desc, bad_seed, errors, fragments in _bad_seed_cases(n):
            _expect_error(lambda: eng.reset(seed=bad_seed), errors, fragments, f"{where}: reset with {desc}")
            _expect_error(lambda: eng.reset_envs(np.ones(n, dtype=bool), bad_seed), errors, fragments,
                          f"{where}: reset_envs with {desc}")
            _assert_snapshot(eng, before, f"{where}: after a rejected reset with {desc}")
        eng.close()
        eng.close()  # idempotent
        calls = {"reset": lambda: eng.reset(seed=seed), "step": lambda: eng.step(good),
                 "step_no_reset": lambda: eng.step_no_reset(good),
                 "reset_envs": lambda: eng.reset_envs(np.ones(n, dtype=bool)), "refresh": eng.refresh}
        for name, call in calls.items():
            _expect_error(call, (RuntimeError,), ["closed"], f"{where}: {name} after close()")
    finally:
        eng.close()


def check_engine(env_id: str, num_envs: int = 37, seed: int = 0, *, steps: int = 300, precision: str = "float64",
                 short_limit: int | None = SHORT_LIMIT, make_engine: Callable | None = None, **params) -> None:
    """Assert the engine semantics of ``DESIGN.md`` for one registered vecsim game.

    Checked: ``step_no_reset`` observations, rewards and flags equal Gymnasium's
    ``SyncVectorEnv`` of the single env in ``DISABLED`` mode, step by step; terminal rows
    survive a rejected step, empty ``reset_envs`` calls and ``refresh()`` until the env is
    reset; ``reset_envs`` (bool array or ``ResetMask``, seed ``None``/int/list) resets
    exactly the masked envs as a masked Gymnasium reset does; ``StepResult`` is a view of
    buffers that are never reallocated; serial and parallel kernels and a slice of the batch
    vs a smaller batch seeded ``seed + k`` give bit-identical trajectories; bad actions,
    seeds and masks raise ``ValueError``/``TypeError`` naming the value and leave every state
    array untouched; every call after ``close()`` raises ``RuntimeError``.

    Parameters
    ----------
    env_id : str
        A registered id, e.g. ``"vecsim/CartPole-v1"``.
    num_envs : int
        Batch size; an odd size above 32 also exercises vectorised-loop remainders.
    seed : int
        Seed of the resets and of the random actions.
    steps : int
        Steps per pass.
    precision : {"float64", "float32"}
    short_limit : int or None
        A second pass with this ``max_episode_steps`` (``None``: registered limit only).
    make_engine : callable, optional
        ``make_engine(num_envs, **kwargs) -> Engine``; ``kwargs`` may hold ``parallel``,
        ``precision``, ``max_episode_steps`` and ``params``. Default: ``vecsim.make(env_id, ...)``.
    **params
        Game constants (scalars).

    Raises
    ------
    AssertionError
        Naming the step, quantity and index that differ from the reference.
    """
    make_engine = make_engine or functools.partial(vecsim.make, env_id)
    limits = [gymnasium.spec(env_id).max_episode_steps]
    if short_limit is not None and short_limit not in limits:
        limits.append(short_limit)
    for limit in limits:
        ended = _engine_vs_sync(env_id, make_engine, num_envs, seed, steps, limit, precision, params)
        if limit == short_limit and ended == 0 and steps >= short_limit:
            _fail(f"{env_id}: no episode ended in {steps} steps with max_episode_steps={limit}")
    # The shortest limit ends the most episodes, so it exercises every reset path.
    _engine_consistency(env_id, make_engine, num_envs, seed, steps, limits[-1], precision, params)
    _check_engine_errors(env_id, make_engine, num_envs, seed, precision, params)


def check_all_games(num_envs: int = 4, seed: int = 0, *, steps: int = 300,
                    precisions=("float64", "float32")) -> list[str]:
    """Run ``check_engine`` and ``check_vector_env`` on every registered game.

    Returns the ids checked. Raises ``AssertionError`` at the first violation.
    """
    ids = vecsim.game_ids()
    for env_id in ids:
        for precision in precisions:
            check_engine(env_id, seed=seed, steps=steps, precision=precision)
            check_vector_env(env_id, num_envs=num_envs, seed=seed, steps=steps, precision=precision)
    return ids
