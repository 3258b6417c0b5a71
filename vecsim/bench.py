"""Throughput measurements shared by the ``vecsim bench`` command and the asv suite.

A *runner* owns one batch of ``num_envs`` envs and advances all of them by one step per call
of ``runner.step()``, with random actions drawn ahead of time (sampling is not timed).
Builders make runners for vecsim (``VecsimVectorEnv.step`` and ``Engine.step_no_reset``)
and for the references it is compared with: Gymnasium's own vector env where the id has a
``vector_entry_point`` (``CartPoleVectorEnv``), Gymnasium's ``SyncVectorEnv`` over the
single env, and EnvPool when it is installed. ``steps_per_second`` times a runner with
``time.perf_counter``: warm-up first, then the best of a few repeats.

A step of a batch of ``N`` envs counts as ``N`` env steps.
"""

from __future__ import annotations

import itertools
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

#: The batch sizes of the asv suite and of ``vecsim bench``.
NUM_ENVS = (16, 256, 4096, 16384)
#: Gymnasium's ``SyncVectorEnv`` steps its envs one by one in Python: only small batches.
SYNC_MAX_ENVS = 256
#: Implementations, in the order the table shows them.
VECSIM_STEP = "vecsim step"
VECSIM_NO_RESET = "vecsim step_no_reset"
GYM_VECTOR = "gymnasium vector"
GYM_SYNC = "gymnasium sync"
ENVPOOL = "envpool"
IMPLEMENTATIONS = (VECSIM_STEP, VECSIM_NO_RESET, GYM_VECTOR, GYM_SYNC, ENVPOOL)

_N_ACTION_BATCHES = 8


@dataclass
class Runner:
    """A batch of envs that ``step()`` advances by one step (random actions).

    Attributes
    ----------
    impl : str
        Which implementation (one of ``IMPLEMENTATIONS``).
    game_id : str
    num_envs : int
    step : callable
        Advances every env by one step.
    close : callable
        Releases the envs.
    """

    impl: str
    game_id: str
    num_envs: int
    step: Callable[[], object]
    close: Callable[[], object] = field(default=lambda: None)

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def full_id(game_id: str) -> str:
    """The namespaced Gymnasium id of a vecsim game (``"CartPole"`` -> ``"vecsim/CartPole-v1"``)."""
    from vecsim.registry import NAMESPACE, resolve

    return f"{NAMESPACE}/{resolve(game_id).env_id}"


def reference_id(game_id: str) -> str | None:
    """The id of the Gymnasium environment a vecsim game follows, or ``None`` if there is none."""
    import gymnasium

    from vecsim.registry import resolve

    env_id = resolve(game_id).env_id
    return env_id if env_id in gymnasium.registry else None


def action_batches(single_action_space, num_envs: int, count: int = _N_ACTION_BATCHES, seed: int = 0) -> list:
    """``count`` random action batches for ``num_envs`` envs, drawn from the batched space."""
    from gymnasium.vector.utils import batch_space

    space = batch_space(single_action_space, num_envs)
    space.seed(seed)
    return [space.sample() for _ in range(count)]


def vecsim_step_runner(game_id: str, num_envs: int, precision: str = "float64", copy: bool = True,
                       seed: int = 0) -> Runner:
    """``VecsimVectorEnv.step`` made by ``gymnasium.make_vec`` (NEXT_STEP autoreset)."""
    import gymnasium

    import vecsim  # noqa: F401  (registers the vecsim ids)

    env = gymnasium.make_vec(full_id(game_id), num_envs, vectorization_mode="vector_entry_point",
                             precision=precision, copy=copy)
    env.reset(seed=seed)
    actions = itertools.cycle(action_batches(env.single_action_space, num_envs, seed=seed))
    return Runner(VECSIM_STEP, game_id, num_envs, lambda: env.step(next(actions)), env.close)


def vecsim_no_reset_runner(game_id: str, num_envs: int, precision: str = "float64", seed: int = 0) -> Runner:
    """``Engine.step_no_reset`` followed by ``reset_envs`` of the envs that finished."""
    import vecsim

    engine = vecsim.make(game_id, num_envs, precision=precision)
    engine.reset(seed=seed)
    actions = itertools.cycle(action_batches(engine.single_action_space, num_envs, seed=seed))
    done = np.zeros(num_envs, dtype=np.bool_)

    def step():
        result = engine.step_no_reset(next(actions))
        np.logical_or(result.terminals, result.truncations, out=done)
        if done.any():
            engine.reset_envs(done)

    return Runner(VECSIM_NO_RESET, game_id, num_envs, step, engine.close)


def gymnasium_vector_runner(game_id: str, num_envs: int, seed: int = 0) -> Runner | None:
    """Gymnasium's own vector env (``vector_entry_point``), or ``None`` where it has none."""
    import gymnasium

    ref = reference_id(game_id)
    if ref is None or gymnasium.spec(ref).vector_entry_point is None:
        return None
    env = gymnasium.make_vec(ref, num_envs, vectorization_mode="vector_entry_point")
    env.reset(seed=seed)
    actions = itertools.cycle(action_batches(env.single_action_space, num_envs, seed=seed))
    return Runner(GYM_VECTOR, game_id, num_envs, lambda: env.step(next(actions)), env.close)


def gymnasium_sync_runner(game_id: str, num_envs: int, seed: int = 0) -> Runner | None:
    """Gymnasium's ``SyncVectorEnv`` over the reference env, or ``None`` where there is none."""
    import gymnasium

    ref = reference_id(game_id)
    if ref is None:
        return None
    env = gymnasium.make_vec(ref, num_envs, vectorization_mode="sync")
    env.reset(seed=seed)
    actions = itertools.cycle(action_batches(env.single_action_space, num_envs, seed=seed))
    return Runner(GYM_SYNC, game_id, num_envs, lambda: env.step(next(actions)), env.close)


def envpool_available() -> bool:
    """Whether ``import envpool`` works."""
    try:
        import envpool  # noqa: F401
    except Exception:  # an ImportError, or a broken binary wheel
        return False
    return True


def envpool_runner(game_id: str, num_envs: int, seed: int = 0) -> Runner | None:
    """EnvPool's version of the reference env, or ``None`` (not installed, or no such env)."""
    if not envpool_available():
        return None
    import envpool

    ref = reference_id(game_id)
    if ref is None or ref not in envpool.list_all_envs():
        return None
    with warnings.catch_warnings():  # EnvPool builds its float32 Boxes from float64 bounds
        warnings.simplefilter("ignore", UserWarning)
        env = envpool.make_gymnasium(ref, num_envs=num_envs, seed=seed)
        env.reset()
        actions = itertools.cycle(action_batches(env.action_space, num_envs, seed=seed))
        env.step(next(actions))
    return Runner(ENVPOOL, game_id, num_envs, lambda: env.step(next(actions)), env.close)


def make_runner(impl: str, game_id: str, num_envs: int, precision: str = "float64") -> Runner | None:
    """The runner of ``impl`` for a game and batch size, or ``None`` where it does not apply."""
    if impl == VECSIM_STEP:
        return vecsim_step_runner(game_id, num_envs, precision)
    if impl == VECSIM_NO_RESET:
        return vecsim_no_reset_runner(game_id, num_envs, precision)
    if impl == GYM_VECTOR:
        return gymnasium_vector_runner(game_id, num_envs)
    if impl == GYM_SYNC:
        return gymnasium_sync_runner(game_id, num_envs) if num_envs <= SYNC_MAX_ENVS else None
    if impl == ENVPOOL:
        return envpool_runner(game_id, num_envs)
    raise ValueError(f"impl must be one of {IMPLEMENTATIONS}, but got impl={impl!r}")


def steps_per_second(step: Callable[[], object], num_envs: int, seconds: float = 1.0, repeats: int = 3) -> float:
    """Env steps per second of ``step`` (which advances ``num_envs`` envs), best of ``repeats``.

    About a tenth of ``seconds`` goes to warm-up and to choosing how many calls make one
    repeat; the rest is split evenly between the repeats.
    """
    if seconds <= 0:
        raise ValueError(f"seconds must be > 0, but got seconds={seconds}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, but got repeats={repeats}")
    clock = time.perf_counter
    step()  # first call: any lazy setup outside the timing
    calls, elapsed = 1, 0.0
    while True:  # double the calls until a batch takes long enough to time reliably
        start = clock()
        for _ in range(calls):
            step()
        elapsed = clock() - start
        if elapsed >= 0.05 * seconds or calls >= 1 << 20:
            break
        calls *= 2
    calls = max(1, round(calls * 0.9 * seconds / repeats / max(elapsed, 1e-9)))
    best = float("inf")
    for _ in range(repeats):
        start = clock()
        for _ in range(calls):
            step()
        best = min(best, (clock() - start) / calls)
    return num_envs / best


def measure(impl: str, game_id: str, num_envs: int, precision: str = "float64", seconds: float = 1.0,
            repeats: int = 3) -> float | None:
    """Steps per second of ``impl`` on a game and batch size, or ``None`` where it does not apply."""
    runner = make_runner(impl, game_id, num_envs, precision)
    if runner is None:
        return None
    with runner:
        return steps_per_second(runner.step, num_envs, seconds, repeats)


def format_rate(value: float | None) -> str:
    """``12345678.0`` -> ``"12.3M"``; ``None`` -> ``"-"``."""
    if value is None:
        return "-"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def format_table(header: list[str], rows: list[list[str]]) -> str:
    """A plain-text table, first column left-aligned, the others right-aligned."""
    widths = [max(len(str(r[c])) for r in [header] + rows) for c in range(len(header))]

    def line(cells):
        return "  ".join(str(x).ljust(w) if c == 0 else str(x).rjust(w) for c, (x, w) in enumerate(zip(cells, widths)))

    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])
