"""Peers' drivers: the other libraries ``vecsim bench`` compares vecsim with, keyed by the
Gymnasium id of the env each one follows.

- EnvPool (``envpool_runner``): its version of any env id it lists, when it is installed.
- operant (``OPERANT_ENVS``): its float32 SIMD vector envs, measured in this Python where it
  imports (``OperantHere``) or in another one (``OperantProcess``, which runs this folder's
  ``serve_operant``).
- Peers of the games benchmarked per variant (a game's ``BENCH_VARIANTS``): ``VARIANT_PEERS``,
  env id -> ``VariantPeer``, each a column beside vecsim's variants; today tetris-gymnasium's
  JAX functional env for ``Tetris-v0`` (``tetris_gymnasium_runner``).

Only the measuring code imports this module (``vecsim.bench.measure`` when asked for a peer,
``vecsim bench``, the asv suite); the engine never does. Its module-level imports are the
standard library, NumPy and ``.measure`` (which keeps the same rule), so that the operant
worker can load this folder in a Python that has NumPy and operant but no vecsim.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .measure import _N_ACTION_BATCHES, ENVPOOL, OPERANT, Runner, action_batches, steps_per_second


def _versions(packages) -> dict:
    """Installed versions of ``packages`` (``None`` for each one missing)."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in packages:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


# -- EnvPool --------------------------------------------------------------------------------
def envpool_available() -> bool:
    """Whether ``import envpool`` works."""
    try:
        import envpool  # noqa: F401
    except Exception:  # an ImportError, or a broken binary wheel
        return False
    return True


def envpool_runner(env_id: str, num_envs: int, seed: int = 0) -> Runner | None:
    """EnvPool's version of the Gymnasium env ``env_id``, or ``None`` (not installed, or no such env)."""
    if not isinstance(env_id, str):
        raise TypeError(f"env_id must be a str, but got env_id={env_id!r}")
    if not envpool_available():
        return None
    import envpool

    if env_id not in envpool.list_all_envs():
        return None
    with warnings.catch_warnings():  # EnvPool builds its float32 Boxes from float64 bounds
        warnings.simplefilter("ignore", UserWarning)
        env = envpool.make_gymnasium(env_id, num_envs=num_envs, seed=seed)
        env.reset()
        actions = itertools.cycle(action_batches(env.action_space, num_envs, seed=seed))
        env.step(next(actions))
    return Runner(ENVPOOL, env_id, num_envs, lambda: env.step(next(actions)), env.close)


# -- operant --------------------------------------------------------------------------------
#: operant's vector envs, by the id of the Gymnasium env each follows (its float32 SIMD
#: kernels; one worker thread, operant's default).
OPERANT_ENVS = {"CartPole-v1": "CartPoleVecEnv", "MountainCar-v0": "MountainCarVecEnv",
                "Pendulum-v1": "PendulumVecEnv"}
#: The environment variable naming a Python to measure operant in (``open_operant``).
OPERANT_PYTHON_VAR = "VECSIM_OPERANT_PYTHON"


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


# Loads this folder as a package of its own name (no vecsim needed) so that the relative
# import of ``.measure`` works, then serves.
_SERVE = ("import importlib, importlib.util, os, sys; "
          "spec = importlib.util.spec_from_file_location('vecsim_bench_worker', sys.argv[1], "
          "submodule_search_locations=[os.path.dirname(sys.argv[1])]); "
          "pkg = importlib.util.module_from_spec(spec); sys.modules[spec.name] = pkg; spec.loader.exec_module(pkg); "
          "importlib.import_module('vecsim_bench_worker.peers').serve_operant()")


class OperantProcess:
    """operant measured in another Python, ``python``: one long-lived process running
    ``serve_operant`` from this folder (it needs NumPy and operant there, not vecsim), asked
    for one cell at a time, so its cells interleave with vecsim's in one run.

    Raises ``RuntimeError`` naming ``python`` if it cannot start it or operant does not
    import there. ``versions``: what it runs (Python, NumPy, operant).
    """

    def __init__(self, python: str, timeout: float = 120.0):
        import json
        import os
        import subprocess

        if not isinstance(python, str) or not python:
            raise TypeError(f"python must be a non-empty str (a path or command), but got python={python!r}")
        self.python = python
        self.timeout = timeout
        package_init = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__init__.py")
        try:
            self._proc = subprocess.Popen([python, "-c", _SERVE, package_init], stdin=subprocess.PIPE,
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


# -- tetris-gymnasium -----------------------------------------------------------------------
TETRIS_GYMNASIUM = "tetris-gymnasium jax"
#: tetris-gymnasium's functional env: 7 inputs (left, right, down, rotate ccw/cw, noop, hard
#: drop), no hold; its documented default board (10 x 20, padding 4, 7-bag).
_TG_N_ACTIONS = 7


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
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs must be an int >= 1, but got num_envs={num_envs!r}")
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

    return Runner(TETRIS_GYMNASIUM, "Tetris-v0", num_envs, step_all)


# -- peers of the games benchmarked per variant ---------------------------------------------
@dataclass(frozen=True)
class VariantPeer:
    """Another library's version of a game benchmarked per variant: a column of its table.

    Attributes
    ----------
    name : str
        The implementation's name, its column (``"<name> steps/s"``) and its ``impl`` in ``--json``.
    short : str
        Its name in the ratio column ``"x <compare_with> vs <short>"``.
    compare_with : str
        The game's variant it is set against (the one whose actions are most like its own).
    record_key : str
        The ``--json`` key of the versions it ran with.
    packages : tuple of str
        The distributions whose versions are recorded.
    available : callable
        ``() -> bool``: whether it is installed.
    runner : callable
        ``(num_envs, seed) -> Runner or None`` (``None`` where it is not installed).
    description : str
        The line ``vecsim bench`` prints under the table.
    missing : str
        The line printed where it is not installed.
    """

    name: str
    short: str
    compare_with: str
    record_key: str
    packages: tuple
    available: Callable[[], bool]
    runner: Callable[[int, int], Runner | None]
    description: str
    missing: str

    def versions(self) -> dict:
        """The installed versions of its ``packages`` (``None`` for each one missing)."""
        return _versions(self.packages)


#: The peers of the games benchmarked per variant, by the Gymnasium env id they follow.
VARIANT_PEERS = {
    "Tetris-v0": (
        VariantPeer(
            name=TETRIS_GYMNASIUM, short="jax", compare_with="primitive", record_key="tetris_gymnasium",
            packages=("tetris-gymnasium", "jax", "jaxlib"), available=tetris_gymnasium_available,
            runner=lambda num_envs, seed=0: tetris_gymnasium_runner(num_envs, seed),
            description=("tetris-gymnasium jax = tetris_fn.step under jax.jit(jax.vmap(...)) on CPU, random inputs "
                         "in [0, 7), each step blocked on (block_until_ready), compile excluded; no hold, no autoreset "
                         "(a finished game stays as it is)."),
            missing="tetris-gymnasium: not installed (it needs the tetris-gymnasium and jax packages), left out."),
    ),
}


def variant_peers(env_id: str) -> tuple:
    """The ``VariantPeer``s of the Gymnasium env ``env_id``, installed or not (``()`` for none)."""
    if not isinstance(env_id, str):
        raise TypeError(f"env_id must be a str, but got env_id={env_id!r}")
    return VARIANT_PEERS.get(env_id, ())
