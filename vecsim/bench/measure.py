"""Throughput measurements shared by the ``vecsim bench`` command and the asv suite.

A *runner* owns one batch of ``num_envs`` envs and advances all of them by one step per call
of ``runner.step()``, with random actions drawn ahead of time (sampling is not timed).
Builders make runners for vecsim (``VecsimVectorEnv.step`` and ``Engine.step_no_reset``)
and for the references it is compared with: Gymnasium's own vector env where the id has a
``vector_entry_point`` (``CartPoleVectorEnv``), Gymnasium's ``SyncVectorEnv`` over the
single env, EnvPool and operant when they are installed (operant also in another Python:
``OperantProcess``). ``steps_per_second`` times a runner with
``time.perf_counter``: warm-up first, then the best of a few repeats.

Games with action masks (Tetris-v0 in its ``drop`` and ``reach`` modes) reject illegal
actions, so their runners pick random *legal* actions with ``LegalActions`` inside the timed
step instead (an argmax over preallocated buffers, no Python loop over envs).
``tetris_runner`` times Tetris-v0 per action mode, and ``tetris_gymnasium_runner`` the JAX
Tetris of tetris-gymnasium (``jax.jit(jax.vmap(step))`` on CPU) when it is installed.

A step of a batch of ``N`` envs counts as ``N`` env steps (in Tetris's drop and reach modes
a step is one placement decision).
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
OPERANT = "operant"
IMPLEMENTATIONS = (VECSIM_STEP, VECSIM_NO_RESET, GYM_VECTOR, GYM_SYNC, ENVPOOL, OPERANT)
#: operant's vector envs, by the id of the Gymnasium env each follows (its float32 SIMD
#: kernels; one worker thread, operant's default).
OPERANT_ENVS = {"CartPole-v1": "CartPoleVecEnv", "MountainCar-v0": "MountainCarVecEnv",
                "Pendulum-v1": "PendulumVecEnv"}

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
    ``(count + 1) * num_envs * n_actions`` bytes (23 MB for Tetris's reach mode at 4096 envs).

    An env with no legal action gets action 0; in vecsim that is an env that just finished,
    which the next ``step`` resets (NEXT_STEP) without looking at its action.

    Parameters
    ----------
    masks : ndarray of bool, shape (num_envs, n_actions)
        The live mask buffer (``Engine.masks``), read at every call.
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

    def __call__(self) -> np.ndarray:
        keys = self.keys[self._next]
        self._next = (self._next + 1) % len(self.keys)
        np.multiply(keys, self._mask_bytes, out=self._product)
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
    env.reset(seed=seed)
    masks = _masks_of(env.unwrapped.engine)
    if masks is not None:
        choose = LegalActions(masks, seed=seed)
        return Runner(VECSIM_STEP, game_id, num_envs, lambda: env.step(choose()), env.close)
    actions = itertools.cycle(action_batches(env.single_action_space, num_envs, seed=seed))
    return Runner(VECSIM_STEP, game_id, num_envs, lambda: env.step(next(actions)), env.close)


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


def operant_available() -> bool:
    """Whether ``import operant`` works in this interpreter."""
    try:
        import operant  # noqa: F401
    except Exception:  # an ImportError, or a wheel built for another Python
        return False
    return True


def operant_env_runner(env_id: str, num_envs: int, seed: int = 0) -> Runner | None:
    """operant's vector env for the Gymnasium id ``env_id`` (``OPERANT_ENVS``), or ``None``.

    Needs only NumPy and operant, not vecsim: ``serve_operant`` runs it in another Python
    (operant's only Linux wheel is built for CPython 3.8). Actions: random batches drawn
    ahead of time, int32 for its Discrete envs and float32 ``(num_envs,)`` for its Box ones,
    the dtypes its step takes. operant resets a finished env inside ``step``.
    """
    if env_id not in OPERANT_ENVS or not operant_available():
        return None
    import operant.envs

    env = getattr(operant.envs, OPERANT_ENVS[env_id])(num_envs)
    env.reset(seed=seed)
    space = env.single_action_space
    rng = np.random.default_rng(seed)
    if hasattr(space, "n"):
        batches = [rng.integers(0, space.n, num_envs, dtype=np.int32) for _ in range(_N_ACTION_BATCHES)]
    else:
        low, high = float(np.min(space.low)), float(np.max(space.high))
        batches = [rng.uniform(low, high, num_envs).astype(np.float32) for _ in range(_N_ACTION_BATCHES)]
    actions = itertools.cycle(batches)
    return Runner(OPERANT, env_id, num_envs, lambda: env.step(next(actions)), env.close)


def operant_runner(game_id: str, num_envs: int, seed: int = 0) -> Runner | None:
    """operant's version of a vecsim game's reference env, in this interpreter, or ``None``."""
    ref = reference_id(game_id)
    return None if ref is None else operant_env_runner(ref, num_envs, seed)


def serve_operant(stdin=None, stdout=None) -> None:
    """The loop of an operant measuring process (``OperantProcess``), in any Python >= 3.8
    with NumPy and operant: first a line of JSON with the versions it runs, then for each
    request line ``{"env": id, "num_envs": n, "seconds": s, "repeats": r}`` one answer line,
    ``{"steps_per_s": rate}`` (``null`` where operant has no such env) or ``{"error": text}``."""
    import json
    import platform
    import sys

    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout

    def send(obj):
        stdout.write(json.dumps(obj) + "\n")
        stdout.flush()

    here = None
    try:
        here = OperantHere() if operant_available() else None
        hello = dict(here.versions) if here else {"operant": None}
    except Exception as exc:  # a broken operant install: say so rather than die silently
        hello = {"operant": None, "error": repr(exc)}
    hello.setdefault("python", platform.python_version())
    hello.setdefault("numpy", np.__version__)
    send(hello)
    for line in stdin:
        try:
            request = json.loads(line)
            rate = None if here is None else here.measure(request["env"], int(request["num_envs"]),
                                                          float(request["seconds"]), int(request["repeats"]))
            send({"steps_per_s": rate})
        except Exception as exc:
            send({"error": f"{type(exc).__name__}: {exc}"})


_SERVE = ("import importlib.util, sys; "
          "spec = importlib.util.spec_from_file_location('vecsim_bench_worker', sys.argv[1]); "
          "mod = importlib.util.module_from_spec(spec); sys.modules[spec.name] = mod; "
          "spec.loader.exec_module(mod); mod.serve_operant()")


class OperantProcess:
    """operant measured in another Python, ``python``: one long-lived process running
    ``serve_operant`` from this file (it needs NumPy and operant there, not vecsim), asked for
    one cell at a time, so its cells interleave with vecsim's in one run.

    Raises ``RuntimeError`` naming ``python`` if it cannot start it or operant does not
    import there. ``versions``: what it runs (Python, NumPy, operant).
    """

    def __init__(self, python: str, timeout: float = 120.0):
        import json
        import subprocess

        self.python = python
        self.timeout = timeout
        try:
            self._proc = subprocess.Popen([python, "-c", _SERVE, __file__], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        except OSError as exc:
            raise RuntimeError(f"cannot run the operant Python {python!r}: {exc}") from None
        hello = self._read()
        if hello is None:
            self._proc.kill()
            err = self._proc.stderr.read().strip().splitlines()
            raise RuntimeError(f"the operant Python {python!r} exited before it answered"
                               + (f": {err[-1]}" if err else ""))
        self.versions = json.loads(hello)
        if not self.versions.get("operant"):
            self.close()
            raise RuntimeError(f"operant does not import in {python!r} ({self.versions})")

    def _read(self) -> str | None:
        import threading

        box = []
        reader = threading.Thread(target=lambda: box.append(self._proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(self.timeout)
        if reader.is_alive():
            self._proc.kill()
            raise RuntimeError(f"the operant Python {self.python!r} gave no answer in {self.timeout:g} s")
        return box[0] or None

    def measure(self, env_id: str, num_envs: int, seconds: float = 1.0, repeats: int = 3) -> float | None:
        """Steps per second of operant's ``env_id`` at ``num_envs`` (``None``: no such env)."""
        import json

        _check_cell(env_id, num_envs, seconds, repeats)
        if self._proc.poll() is not None:
            raise RuntimeError(f"the operant Python {self.python!r} has exited")
        self._proc.stdin.write(json.dumps({"env": env_id, "num_envs": int(num_envs), "seconds": float(seconds),
                                           "repeats": int(repeats)}) + "\n")
        self._proc.stdin.flush()
        line = self._read()
        if line is None:
            raise RuntimeError(f"the operant Python {self.python!r} exited while measuring {env_id}")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"operant failed on {env_id} with {num_envs} envs: {answer['error']}")
        return answer["steps_per_s"]

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(10)
            except Exception:
                self._proc.kill()
        for stream in (self._proc.stdout, self._proc.stderr):
            stream.close()

    def __enter__(self) -> OperantProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _check_cell(env_id, num_envs, seconds, repeats) -> None:
    """Refuse a bad operant cell by name before it reaches operant (whose Rust may not check)."""
    if not isinstance(env_id, str):
        raise TypeError(f"env_id must be a str, but got env_id={env_id!r}")
    for name, value in (("num_envs", num_envs), ("repeats", repeats)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, but got {name}={value!r}")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float, np.number)) or not seconds > 0:
        raise ValueError(f"seconds must be a number > 0, but got seconds={seconds!r}")


class OperantHere:
    """operant measured in this Python (where it imports), with ``OperantProcess``'s methods."""

    python = None

    def __init__(self):
        import platform
        from importlib.metadata import version

        self.versions = {"python": platform.python_version(), "numpy": np.__version__,
                         "operant": version("operant")}

    def measure(self, env_id: str, num_envs: int, seconds: float = 1.0, repeats: int = 3) -> float | None:
        """Steps per second of operant's ``env_id`` at ``num_envs`` (``None``: no such env)."""
        _check_cell(env_id, num_envs, seconds, repeats)
        runner = operant_env_runner(env_id, num_envs)
        if runner is None:
            return None
        with runner:
            return steps_per_second(runner.step, num_envs, seconds, repeats)

    def close(self) -> None:
        pass

    def __enter__(self) -> OperantHere:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


#: The environment variable naming a Python to measure operant in (``open_operant``).
OPERANT_PYTHON_VAR = "VECSIM_OPERANT_PYTHON"


def open_operant(python: str | None = None):
    """operant to measure beside vecsim: an ``OperantProcess`` in ``python`` (default: the
    ``VECSIM_OPERANT_PYTHON`` environment variable), else ``OperantHere`` where operant
    imports in this Python, else ``None``. A Python that was named but cannot run operant
    raises ``RuntimeError``: it was asked for, so leaving it out quietly would mislead."""
    import os

    python = python or os.environ.get(OPERANT_PYTHON_VAR) or None
    if python:
        return OperantProcess(python)
    return OperantHere() if operant_available() else None


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
    if impl == OPERANT:
        return operant_runner(game_id, num_envs)
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


# -- Tetris ---------------------------------------------------------------------------------
#: The Tetris env, benchmarked per action mode (``vecsim bench`` and ``bench_tetris.py``).
TETRIS_ID = "Tetris-v0"
TETRIS_MODES = ("primitive", "drop", "reach")
#: Implementations of the Tetris table: vecsim per action mode, then the JAX reference.
TETRIS_VECSIM = tuple(f"vecsim {mode}" for mode in TETRIS_MODES)
TETRIS_GYMNASIUM = "tetris-gymnasium jax"
TETRIS_IMPLEMENTATIONS = TETRIS_VECSIM + (TETRIS_GYMNASIUM,)
#: tetris-gymnasium's functional env: 7 inputs (left, right, down, rotate ccw/cw, noop, hard
#: drop), no hold; its documented default board (10 x 20, padding 4, 7-bag).
_TG_N_ACTIONS = 7


def is_tetris(game_id: str) -> bool:
    """Whether ``game_id`` names vecsim's Tetris-v0 (which ``vecsim bench`` times per action mode)."""
    from vecsim.engine.registry import resolve

    return resolve(game_id).env_id == TETRIS_ID


def tetris_runner(action_mode: str, num_envs: int, seed: int = 0, **params) -> Runner:
    """``Engine.step`` (NEXT_STEP autoreset) of Tetris-v0 in one action mode.

    ``primitive``: random inputs in ``[0, 8)`` drawn ahead of time. ``drop`` and ``reach``:
    random legal placements chosen by ``LegalActions`` at every step (timed with the step,
    as an agent's choice would be), so a step is one placement decision per env. ``params``
    go to ``vecsim.make`` (rule variants, ``preset="classic"``...).
    """
    import vecsim

    if action_mode not in TETRIS_MODES:
        raise ValueError(f"action_mode must be one of {TETRIS_MODES}, but got action_mode={action_mode!r}")
    engine = vecsim.make(TETRIS_ID, num_envs, action_mode=action_mode, **params)
    engine.reset(seed=seed)
    if action_mode == "primitive":
        next_actions = itertools.cycle(action_batches(engine.single_action_space, num_envs, seed=seed)).__next__
    else:
        next_actions = LegalActions(engine.masks, seed=seed)
    return Runner(f"vecsim {action_mode}", TETRIS_ID, num_envs, lambda: engine.step(next_actions()), engine.close)


def tetris_gymnasium_available() -> bool:
    """Whether tetris-gymnasium's functional JAX env and JAX import."""
    try:
        import jax  # noqa: F401
        from tetris_gymnasium.envs import tetris_fn  # noqa: F401
    except Exception:  # an ImportError, or a broken jaxlib
        return False
    return True


def tetris_gymnasium_runner(num_envs: int, seed: int = 0, autoreset: bool = False) -> Runner | None:
    """tetris-gymnasium's JAX Tetris, ``jax.jit(jax.vmap(step))`` over ``num_envs`` states, or ``None``.

    ``step`` is ``tetris_gymnasium.envs.tetris_fn.step`` with its ``TETROMINOES`` and
    ``EnvConfig(width=10, height=20, padding=4, queue_size=7)`` (its documented defaults);
    the states come from ``jax.vmap(reset)``. Actions: random inputs in ``[0, 7)`` drawn ahead
    of time, already on the device. Each ``step()`` blocks until the new states are ready
    (``jax.block_until_ready``); the jitted function is compiled here, outside any timing.

    tetris-gymnasium's ``step`` does not reset a finished game (its state stays as it is).
    Under ``vmap`` its ``lax.cond`` becomes a select that computes both branches, so a
    finished env costs what a live one does. ``autoreset=True`` adds a reset of the finished
    envs inside the jitted step (``vmap(reset)`` and a select, as Gymnax-style wrappers do).
    """
    if not tetris_gymnasium_available():
        return None
    import functools

    import jax
    import jax.numpy as jnp
    from tetris_gymnasium.envs.tetris_fn import reset, step
    from tetris_gymnasium.functional.core import EnvConfig
    from tetris_gymnasium.functional.tetrominoes import TETROMINOES

    config = EnvConfig(width=10, height=20, padding=4, queue_size=7)
    reset_one = functools.partial(reset, TETROMINOES, config=config)
    step_one = functools.partial(step, TETROMINOES, config=config)
    _, states, _ = jax.jit(jax.vmap(reset_one))(jax.random.split(jax.random.PRNGKey(seed), num_envs))
    if autoreset:
        def step_reset_one(state, action):
            new_state, obs, reward, terminated, info = step_one(state, action)
            key, fresh, fresh_obs = reset_one(new_state.rng_key)
            fresh = fresh.replace(rng_key=key)
            new_state = jax.tree_util.tree_map(lambda a, b: jnp.where(terminated, a, b), fresh, new_state)
            return new_state, jnp.where(terminated, fresh_obs, obs), reward, terminated, info

        batch_step = jax.jit(jax.vmap(step_reset_one))
    else:
        batch_step = jax.jit(jax.vmap(step_one))
    rng = np.random.default_rng(seed)
    batches = [jax.device_put(rng.integers(0, _TG_N_ACTIONS, num_envs, dtype=np.int32))
               for _ in range(_N_ACTION_BATCHES)]
    actions = itertools.cycle(batches)
    out = jax.block_until_ready(batch_step(states, next(actions)))  # compile
    current = [out[0]]

    def step_all():
        result = jax.block_until_ready(batch_step(current[0], next(actions)))
        current[0] = result[0]

    return Runner(TETRIS_GYMNASIUM, TETRIS_ID, num_envs, step_all)


def make_tetris_runner(impl: str, num_envs: int) -> Runner | None:
    """The runner of one of ``TETRIS_IMPLEMENTATIONS``, or ``None`` (tetris-gymnasium not installed)."""
    if impl in TETRIS_VECSIM:
        return tetris_runner(impl.split()[-1], num_envs)
    if impl == TETRIS_GYMNASIUM:
        return tetris_gymnasium_runner(num_envs)
    raise ValueError(f"impl must be one of {TETRIS_IMPLEMENTATIONS}, but got impl={impl!r}")


def measure_tetris(impl: str, num_envs: int, seconds: float = 1.0, repeats: int = 3) -> float | None:
    """Steps (placement decisions in drop and reach mode) per second of a Tetris implementation,
    or ``None`` where it is not installed."""
    runner = make_tetris_runner(impl, num_envs)
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
