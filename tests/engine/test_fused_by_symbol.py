"""A game with ``KernelHints.call_by_symbol``: its kernels call the fused step and reset
compiled once and cached (``vecsim.engine.codegen.fused_source``), with the results of kernels
that compile them in."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import vecsim
from vecsim.collect.collector import EpisodeCollector
from vecsim.engine.engine import Engine
from vecsim.engine.game import load_game

TESTS = pathlib.Path(__file__).resolve().parents[1]

_RUN = textwrap.dedent("""
    import json, sys
    import numpy as np
    from numba.core import event
    compiled = []
    class Listener(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)
        def on_end(self, ev):
            pass
    event.register("numba:compile", Listener())
    from vecsim.core.rng import uniform
    from rng_walk_game import reset_env, step_env, write_obs
    def index_types():  # the env index types the game's functions (and what they call) compiled for
        of_game = [sig[2] for f in (reset_env, step_env, write_obs) for sig in f.signatures]  # (s, p, i, ...)
        return sorted({str(t) for t in of_game + [sig[1] for sig in uniform.signatures]})  # (rng, i, ...)
    from vecsim.engine.engine import Engine
    from vecsim.engine.game import load_game
    if sys.argv[1] == "collector":
        import vecsim
        from vecsim.collect.collector import EpisodeCollector
        with EpisodeCollector(vecsim.register("symbol_walk_game"), 8, 40, "random", seed=5, parallel=False) as c:
            batch = c.request_episodes(12)
        print(json.dumps(dict(compiled=compiled, obs=batch.observations.tolist(), rewards=batch.rewards.tolist(),
                              index_types=index_types())))
        sys.exit()
    eng = Engine(load_game("symbol_walk_game"), 64, parallel=sys.argv[1] == "parallel")
    eng.reset(seed=3)
    for k in range(30):
        eng.step(np.full(64, k % 2))
    obs = eng.obs.tolist()
    eng.reset_envs(np.arange(64) % 3 == 0, seed=4)
    print(json.dumps(dict(compiled=compiled, obs=obs, source=eng.kernel_source(),
                          index_types=index_types())))
""")


def _walk(game: str, parallel: bool) -> np.ndarray:
    eng = Engine(load_game(game), 64, parallel=parallel)
    eng.reset(seed=3)
    for k in range(30):
        eng.step(np.full(64, k % 2))
    return eng.obs.copy()


def test_a_later_process_compiles_its_kernels_and_loads_the_games_step_from_the_cache(tmp_path):
    """The serial kernels' process compiles the fused step and reset once; the parallel
    kernels' process, and an episode collector's, on the same cache, compile only their
    kernels (the collector steps its runs of slots with the engine's fused run). All play as
    the game without the hint, whose kernels compile them in. (The kernels and fused functions
    compile into an empty VECSIM_CACHE_DIR; the game's and vecsim's own functions may come from
    Numba's cache, as in any later process.)"""
    env = dict(os.environ, VECSIM_CACHE_DIR=str(tmp_path / "kernels"),
               PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    runs = {}
    for kind in ("serial", "parallel", "collector"):
        done = subprocess.run([sys.executable, "-c", _RUN, kind], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        runs[kind] = json.loads(done.stdout.strip().splitlines()[-1])

    def fused(kind):  # the wrappers and the closures of vecsim.engine.fusion they call
        return [name for name in runs[kind]["compiled"]
                if name.partition(".")[0] in ("step_and_write", "step_run", "step_run_and_write", "reset_and_write")]

    assert "from vecsim_fused_step_" in runs["serial"]["source"]
    assert {"step_and_write", "reset_and_write"} <= set(fused("serial"))
    assert "step_parallel" in runs["parallel"]["compiled"] and fused("parallel") == []
    assert "advance_serial" in runs["collector"]["compiled"] and fused("collector") == []
    # Resets, steps and the collector's slots give the game's functions the env index as one
    # type, so each compiles once (Blokus's rules compiled twice when resets passed int64).
    assert runs["serial"]["index_types"] == runs["collector"]["index_types"] == ["uint64"]
    assert set(runs["parallel"]["index_types"]) <= {"uint64"}
    linked = _walk("rng_walk_game", False)
    np.testing.assert_array_equal(runs["serial"]["obs"], linked)
    np.testing.assert_array_equal(runs["parallel"]["obs"], linked)
    linked_id = vecsim.register("rng_walk_game")
    try:
        with EpisodeCollector(linked_id, 8, 40, "random", seed=5, parallel=False) as collector:
            batch = collector.request_episodes(12)
    finally:
        vecsim.unregister(linked_id)
    np.testing.assert_array_equal(runs["collector"]["obs"], batch.observations)
    np.testing.assert_array_equal(runs["collector"]["rewards"], batch.rewards)
    # The contract's stand-ins the collector called (no_pre_step, no_mask) take the game's State:
    # a cache index of theirs would name every game, unreadable where one of them is not importable.
    assert not list((tmp_path / "numba").rglob("contract.no_*.nbi"))


def test_scalar_and_per_env_constants_share_one_compile():
    """The kernels of a game with the hint read its constants per env from the start, so that a
    batch with per-env constants runs the kernels (and the rules) a scalar batch compiled; a
    game without the hint keeps kernels that read scalars, for its vectorised loops."""
    game = load_game("symbol_walk_game")
    drift = np.where(np.arange(8) % 2 == 0, 0.1, 0.3)
    scalar = Engine(game, 8, parallel=False)
    per_env = Engine(game, 8, parallel=False, drift=drift)
    assert scalar.kernel_params.shape == per_env.kernel_params.shape == (len(game.params_cls._fields), 8)
    assert per_env._kernels is scalar._kernels
    walks = []
    for eng in (scalar, per_env, Engine(game, 8, parallel=False, drift=0.3)):
        eng.reset(seed=5)
        for _ in range(10):
            eng.step(np.ones(8, np.int64))
        walks.append(eng.obs.copy())
    np.testing.assert_array_equal(walks[1][0::2], walks[0][0::2])
    np.testing.assert_array_equal(walks[1][1::2], walks[2][1::2])
    assert not np.array_equal(walks[0][1::2], walks[2][1::2])
    assert Engine(load_game("rng_walk_game"), 8, parallel=False).kernel_params.ndim == 1


def _fused_step_module(eng) -> str:
    return re.search(r"^from (vecsim_fused_step_\w+) import", eng.kernel_source(), flags=re.M).group(1)


def test_raise_and_flag_batches_call_one_fused_step():
    """``invalid_action="raise"`` and ``"flag"`` kernels call the same fused step (one compile of
    the rules): it flags where the events have the ``invalid_action`` column, and a raising
    batch, whose actions are checked before the step, has none."""
    game = load_game("enforced_symbol_walk_game")
    strict = Engine(game, 4, parallel=False)
    lenient = Engine(game, 4, parallel=False, invalid_action="flag")
    assert _fused_step_module(strict) == _fused_step_module(lenient)
    for eng in (strict, lenient):
        eng.reset(seed=2)
    for _ in range(100):  # right while it is legal, until env 0 stands at the right edge
        right = np.where(lenient.masks[:, 2], 2, 1)
        if not lenient.masks[0, 2] or lenient.needs_reset.any():
            break
        strict.step(right)
        lenient.step(right)
    assert not lenient.masks[0, 2] and not lenient.needs_reset.any()
    legal = np.where(lenient.masks[:, 2], 2, 1)
    illegal = np.concatenate([[2], legal[1:]])
    before = lenient.obs[0].copy()
    lenient.step(illegal)
    flags = lenient.events[:, lenient.event_names.index("invalid_action")]
    np.testing.assert_array_equal(flags, [1, 0, 0, 0])
    np.testing.assert_array_equal(lenient.obs[0], before)
    assert lenient.rewards[0] == 0 and not lenient.terminals[0]
    strict.step(legal)
    np.testing.assert_array_equal(strict.obs[1:], lenient.obs[1:])
    with pytest.raises(ValueError, match="env 0"):
        strict.step(illegal)
