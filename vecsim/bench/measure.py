"""Throughput measurements shared by the ``vecsim bench`` command and the asv suite.

A *runner* owns one batch of ``num_envs`` envs and advances all of them by one step per call
of ``runner.step()``, with random actions drawn ahead of time (sampling is not timed).
Builders make runners for vecsim (``VecsimVectorEnv.step`` and ``Engine.step_no_reset``)
and for the references it is compared with: Gymnasium's own vector env where the id has a
``vector_entry_point`` (``CartPoleVectorEnv``) and Gymnasium's ``SyncVectorEnv`` over the
single env; the other libraries' drivers (EnvPool, operant, ...) are in
``vecsim.bench.peers``, which ``make_runner`` asks. ``steps_per_second`` times a runner with
``time.perf_counter``: warm-up first, then the best of a few repeats.

Games with action masks reject illegal actions, so their runners pick random *legal* actions
with ``LegalActions`` inside the timed step instead (an argmax over preallocated buffers, no
Python loop over envs).

A game that declares ``BENCH_VARIANTS`` (``vecsim.engine.game``) is timed per variant:
``variant_runner`` steps one variant's engine, and ``make_variant_runner`` also builds the
peers that ``vecsim.bench.peers.VARIANT_PEERS`` lists for the game's env id.

A step of a batch of ``N`` envs counts as ``N`` env steps (where a variant's action is a
whole decision, a step is one decision per env).

Module-level imports: the standard library and NumPy only (the operant worker of
``vecsim.bench.peers`` loads this file in a Python without vecsim).
"""

from __future__ import annotations

import itertools
import time
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
OPERANT = "operant"
IMPLEMENTATIONS = (VECSIM_STEP, VECSIM_NO_RESET, GYM_VECTOR, GYM_SYNC, ENVPOOL, OPERANT)

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
    from vecsim.engine.registry import NAMESPACE, resolve

    return f"{NAMESPACE}/{resolve(game_id).env_id}"


def reference_id(game_id: str) -> str | None:
    """The id of the Gymnasium environment a vecsim game follows, or ``None`` if there is none."""
    import gymnasium

    from vecsim.engine.registry import resolve

    env_id = resolve(game_id).env_id
    return env_id if env_id in gymnasium.registry else None


def action_batches(single_action_space, num_envs: int, count: int = _N_ACTION_BATCHES, seed: int = 0) -> list:
    """``count`` random action batches for ``num_envs`` envs, drawn from the batched space."""
    from gymnasium.vector.utils import batch_space

    space = batch_space(single_action_space, num_envs)
    space.seed(seed)
    return [space.sample() for _ in range(count)]


class LegalActions:
    """Random legal actions of a batch with action masks, with no Python loop over envs.

    Each call returns, for every env ``i``, ``argmax(keys[i] * masks[i])``: ``keys`` are random
    weights in ``[1, 255]`` drawn once per env and action (``count`` batches of them, used in
    turn), so the action is legal whenever env ``i`` has a legal action. The product goes
    into a preallocated uint8 buffer and the argmax into a preallocated int64 array (the
    returned array, overwritten by the next call): a call allocates nothing. Memory:
    ``(count + 1) * num_envs * n_actions`` bytes (23 MB for 4096 envs of 1920 actions).

    An env with no legal action gets action 0; in vecsim that is an env that just finished,
    which the next ``step`` resets (NEXT_STEP) without looking at its action.

    Parameters
    ----------
    masks : ndarray of bool, shape (num_envs, n_actions)
        The live mask buffer (``Engine.masks``), read at every call that passes no masks of
        its own (a ``VectorEnv`` step's ``info["action_mask"]``, which a ``copy=True`` step may
        write into new arrays rather than into the engine's buffer).
    count : int
        Key batches drawn ahead.
    seed : int
    """

    def __init__(self, masks: np.ndarray, count: int = 2, seed: int = 0):
        n, a = masks.shape
        rng = np.random.default_rng(seed)
        self.masks = masks
        self.keys = [rng.integers(1, 256, size=(n, a), dtype=np.uint8) for _ in range(count)]
        self.actions = np.zeros(n, dtype=np.int64)
        self._mask_bytes = masks.view(np.uint8)  # 0/1 bytes: a plain uint8 multiply, no cast from bool
        self._product = np.empty((n, a), dtype=np.uint8)
        self._next = 0

    def __call__(self, masks: np.ndarray | None = None) -> np.ndarray:
        keys = self.keys[self._next]
        self._next = (self._next + 1) % len(self.keys)
        np.multiply(keys, self._mask_bytes if masks is None else masks.view(np.uint8), out=self._product)
        self._product.argmax(axis=1, out=self.actions)
        return self.actions


def _masks_of(engine) -> np.ndarray | None:
    """The engine's mask buffer where its game has action masks, else ``None``."""
    return engine.masks if engine.n_mask else None


def vecsim_step_runner(game_id: str, num_envs: int, precision: str = "float64", copy: bool = True,
                       seed: int = 0) -> Runner:
    """``VecsimVectorEnv.step`` made by ``gymnasium.make_vec`` (NEXT_STEP autoreset).

    Random actions drawn ahead of time; for a game with action masks, random legal actions
    chosen at each step by ``LegalActions`` (timed with the step).
    """
    import gymnasium

    import vecsim  # noqa: F401  (registers the vecsim ids)

    env = gymnasium.make_vec(full_id(game_id), num_envs, vectorization_mode="vector_entry_point",
                             precision=precision, copy=copy)
    _, info = env.reset(seed=seed)
    masks = _masks_of(env.unwrapped.engine)
    if masks is not None:
        return Runner(VECSIM_STEP, game_id, num_envs, masked_stepper(env, info, LegalActions(masks, seed=seed)),
                      env.close)
    actions = itertools.cycle(action_batches(env.single_action_space, num_envs, seed=seed))
    return Runner(VECSIM_STEP, game_id, num_envs, lambda: env.step(next(actions)), env.close)


def masked_stepper(env, info: dict, choose: LegalActions) -> Callable[[], tuple]:
    """``env.step`` of a ``VectorEnv`` with action masks on legal actions chosen from the last
    step's (or ``reset``'s ``info``'s) ``info["action_mask"]``: the step's own masks, which
    ``copy=True`` may have written into new arrays rather than into the engine's buffer."""
    last = [info["action_mask"]]

    def step():
        out = env.step(choose(last[0]))
        last[0] = out[4]["action_mask"]
        return out

    return step


def engine_actions(engine, seed: int = 0) -> Callable[[], object]:
    """A function returning the next batch of actions for ``engine``: random legal ones chosen
    at each call (``LegalActions``) for a game with action masks, else random batches drawn
    ahead of time, in turn."""
    masks = _masks_of(engine)
    if masks is not None:
        return LegalActions(masks, seed=seed)
    return itertools.cycle(action_batches(engine.single_action_space, engine.num_envs, seed=seed)).__next__


def vecsim_no_reset_runner(game_id: str, num_envs: int, precision: str = "float64", seed: int = 0) -> Runner:
    """``Engine.step_no_reset`` followed by ``reset_envs`` of the envs that finished.

    Actions as in ``vecsim_step_runner`` (random legal ones for a game with action masks).
    """
    import vecsim

    engine = vecsim.make(game_id, num_envs, precision=precision)
    engine.reset(seed=seed)
    next_actions = engine_actions(engine, seed)

    def step():
        result = engine.step_no_reset(next_actions())
        if result.num_done:
            engine.reset_envs(result.to_reset_mask())

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
    if impl in (ENVPOOL, OPERANT):
        from . import peers

        ref = reference_id(game_id)
        if ref is None:
            return None
        return (peers.envpool_runner if impl == ENVPOOL else peers.operant_env_runner)(ref, num_envs)
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
    """Steps per second of ``impl`` on a game and batch size, or ``None`` where it does not apply
    (or the batch would not fit in the memory available)."""
    try:
        runner = make_runner(impl, game_id, num_envs, precision)
    except MemoryError:
        return None
    if runner is None:
        return None
    with runner:
        return steps_per_second(runner.step, num_envs, seconds, repeats)


# -- games benchmarked per variant -----------------------------------------------------------
def bench_variants(game_id: str) -> dict:
    """The variants a game is benchmarked in, its ``BENCH_VARIANTS``: variant name -> engine
    kwargs, in the game's order; ``{}`` for a game benchmarked per precision."""
    from vecsim.engine.registry import resolve

    return {name: dict(kwargs) for name, kwargs in resolve(game_id).bench_variants.items()}


def variant_impl(variant: str) -> str:
    """The implementation name of vecsim in one variant (``"drop"`` -> ``"vecsim drop"``)."""
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a str, but got variant={variant!r}")
    return f"vecsim {variant}"


def variant_precision(game_id: str, variant: str) -> str:
    """The precision a variant runs in: its own ``precision`` kwarg, else float64."""
    return _variant_kwargs(game_id, variant).get("precision", "float64")


def _variant_kwargs(game_id: str, variant: str) -> dict:
    variants = bench_variants(game_id)
    if not variants:
        raise ValueError(f"game {game_id!r} declares no BENCH_VARIANTS: it is benchmarked per precision")
    if variant not in variants:
        raise ValueError(f"variant must be one of {tuple(variants)} (the BENCH_VARIANTS of {game_id!r}), "
                         f"but got variant={variant!r}")
    return variants[variant]


def variant_runner(game_id: str, variant: str, num_envs: int, seed: int = 0, **params) -> Runner:
    """``Engine.step`` (NEXT_STEP autoreset) of a game in one of its ``BENCH_VARIANTS``.

    ``params`` go to ``vecsim.make`` after the variant's own kwargs (rule variants...). Where
    the batch refuses actions outside its mask (the game's ``enforce_mask``), a random legal
    action per env chosen by ``LegalActions`` at every step (timed with the step, as an agent's
    choice would be); elsewhere random actions from the action space drawn ahead of time.
    """
    import vecsim

    kwargs = {**_variant_kwargs(game_id, variant), **params}
    engine = vecsim.make(game_id, num_envs, **kwargs)
    engine.reset(seed=seed)
    if engine.n_mask and engine.game.enforces_mask_for(engine.params_scalar):
        next_actions = LegalActions(engine.masks, seed=seed)
    else:
        next_actions = itertools.cycle(action_batches(engine.single_action_space, num_envs, seed=seed)).__next__
    return Runner(variant_impl(variant), game_id, num_envs, lambda: engine.step(next_actions()), engine.close)


def variant_peers(game_id: str) -> tuple:
    """The peers timed beside a game's variants (``vecsim.bench.peers.VariantPeer``, by the
    game's env id), installed or not."""
    from vecsim.engine.registry import resolve

    from . import peers

    return peers.variant_peers(resolve(game_id).env_id)


def variant_implementations(game_id: str, installed_only: bool = True) -> list[str]:
    """The implementations of a game's variant table: vecsim per variant, then its peers
    (only the installed ones unless ``installed_only=False``)."""
    return ([variant_impl(v) for v in bench_variants(game_id)]
            + [p.name for p in variant_peers(game_id) if not installed_only or p.available()])


def make_variant_runner(impl: str, game_id: str, num_envs: int) -> Runner | None:
    """The runner of one of ``variant_implementations(game_id)``, or ``None`` (a peer not installed)."""
    for variant in bench_variants(game_id):
        if impl == variant_impl(variant):
            return variant_runner(game_id, variant, num_envs)
    for peer in variant_peers(game_id):
        if impl == peer.name:
            return peer.runner(num_envs, 0)
    raise ValueError(f"impl must be one of {variant_implementations(game_id, installed_only=False)}, "
                     f"but got impl={impl!r}")


def measure_variant(impl: str, game_id: str, num_envs: int, seconds: float = 1.0, repeats: int = 3) -> float | None:
    """Steps per second of one implementation of a game's variant table, or ``None`` where it
    is not installed or the batch would not fit in the memory available."""
    try:
        runner = make_variant_runner(impl, game_id, num_envs)
    except MemoryError:
        return None
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
