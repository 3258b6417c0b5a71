"""Kernels loaded from the cache: one process may load kernels that different processes
compiled, and each must run its own code."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import textwrap
import types

import pytest

from vecsim.engine import fusion
from vecsim.engine.registry import resolve


def test_each_fused_function_is_named_after_what_it_fuses():
    """The factories' closures share a qualified name unless given one; Numba names their
    symbols after it, so two closures compiled in two processes could share a symbol."""
    game = resolve("vecsim/Tetris-v0").module
    names = {
        fusion.reset_and_write(game, "write_mask").py_func.__qualname__,
        fusion.reset_and_write(game, "write_mask_without_planner").py_func.__qualname__,
        fusion.step_and_write(game, "step_env", "float64").py_func.__qualname__,
        fusion.step_and_write(game, "step_env", "float64", flag_invalid=True).py_func.__qualname__,
        fusion.step_and_write(game, "step_env", "float32").py_func.__qualname__,
        fusion.step_run_and_write(game, "step_env", "float64").py_func.__qualname__,
    }
    assert len(names) == 6, names


_PLAY = textwrap.dedent("""
    import hashlib, json, sys
    import vecsim
    out = {}
    for mode in sys.argv[1:]:
        engine = vecsim.make("Tetris-v0", 4, action_mode=mode, parallel=False)
        engine.reset(seed=3)
        out[mode] = [hashlib.sha256(engine.masks.tobytes()).hexdigest(), int(engine.masks.sum())]
    print(json.dumps(out))
""")


@pytest.mark.slow
def test_kernels_compiled_by_different_processes_each_run_their_own_code(tmp_path):
    """Tetris's drop mode and reach mode reset with different masks (without and with the
    reach planner) from otherwise alike fused functions: compiled by two processes, then
    loaded by a third, drop mode first, reach mode must still plan its masks. The kernels and fused
    functions compile into an empty VECSIM_CACHE_DIR; the game's and planner's own functions may
    come from Numba's cache, as in any later process."""
    env = dict(os.environ, VECSIM_CACHE_DIR=str(tmp_path / "vecsim"))

    def play(*modes):
        done = subprocess.run([sys.executable, "-c", _PLAY, *modes], env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    drop = play("drop")["drop"]
    reach = play("reach")["reach"]
    assert reach != drop  # reach mode's actions are every reachable pose
    assert play("drop", "reach") == {"drop": drop, "reach": reach}


# --- What a kernel's fingerprint covers -------------------------------------------------------

def _jitted_callees(dispatcher, found: dict) -> None:
    """Every jitted function ``dispatcher`` can call, by the names its code reads from its
    globals, from modules in its globals and from its closure, transitively, into ``found``;
    and the plain Python functions among them that Numba compiles through an ``@overload``
    (``packed_masks.mask_allows``), outside the Python installation."""
    import sysconfig
    from numba.core.registry import CPUDispatcher

    fn = dispatcher.py_func
    names, codes = set(), [fn.__code__]
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    values = [fn.__globals__[n] for n in names if n in fn.__globals__]
    values += [cell.cell_contents for cell in fn.__closure__ or ()]
    values += [getattr(m, n) for m in list(values) if isinstance(m, types.ModuleType) for n in names if hasattr(m, n)]
    for value in values:
        if isinstance(value, CPUDispatcher) and value.py_func not in found:
            found[value.py_func] = value
            _jitted_callees(value, found)
        elif isinstance(value, types.FunctionType) and not inspect.getfile(value).startswith(
                tuple(sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib"))):
            found[value] = value


@pytest.mark.parametrize("game_id", ["CartPole-v1", "Tetris-v0", "DrMario-v0", "enforced_walk_game"])
def test_a_kernel_fingerprint_covers_the_file_of_every_function_its_kernels_call(game_id):
    """The kernels' call graph, read from the loaded modules (nothing compiles), against the
    files the fingerprint hashes: a hand-kept list once missed packed_masks.py and
    episode_rows.py, and a copy of vecsim with either changed was served the other's kernels."""
    import pathlib

    from numba.core.registry import CPUDispatcher

    import vecsim
    from vecsim.core.kernel_cache import reachable_sources

    test_game = game_id == "enforced_walk_game"  # tests/enforced_walk_game.py: a binding mask
    if test_game:
        game_id = vecsim.register(game_id)
    try:
        collector = vecsim.EpisodeCollector(game_id, 2, 4, "random", seed=0, parallel=False)
    finally:
        if test_game:
            vecsim.unregister(game_id)
    engine = collector.engine
    package = engine.game.module.__name__
    for module in (engine._kernels, collector._kernels):
        found: dict = {}
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == module.__name__:
                _jitted_callees(value, found)
        called = {pathlib.Path(inspect.getfile(fn)).resolve() for fn in found} - {pathlib.Path(module.__file__).resolve()}
        hashed = set(reachable_sources(pathlib.Path(module.__file__).read_text(), own=(package.split(".")[0],)))
        assert called and called <= hashed, sorted(map(str, called - hashed))
    assert any(p.name == "episode_rows.py" for p in called)  # the collector's rows


_USER_GAME = """
from .helpers.physics import reward_of

{walk}
"""

_PHYSICS = """
from vecsim.core.jit import exact


@exact
def reward_of(pos, target):
    return {reached} if pos == target else -abs(pos - target)
"""

_STEP_WALK = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import vecsim
    vecsim.register("walkpkg")
    engine = vecsim.make("WalkToTarget-v0", 4, size=2.0, parallel=False)
    engine.reset(seed=0)
    obs, rewards, *_ = engine.step(np.where(engine.obs[:, 1] > engine.obs[:, 0], 2, 0))
    print(rewards.tolist())
""")


@pytest.mark.slow
def test_a_user_game_gets_a_new_kernel_when_a_helper_module_of_its_package_changes(tmp_path):
    """A game whose rules sit in a subpackage next to it (``helpers/physics.py``): Numba's own
    cache and a fingerprint of the files beside the game module both miss a change there."""
    import pathlib

    walk = pathlib.Path(__file__).parents[1].joinpath("minimal_game.py").read_text()
    walk = walk.replace("return 1.0 if reached else -abs(s.pos[i] - s.target[i]), reached",
                        "return reward_of(s.pos[i], s.target[i]), reached")
    package = tmp_path / "src" / "walkpkg"
    (package / "helpers").mkdir(parents=True)
    (package / "__init__.py").write_text(_USER_GAME.format(walk=walk))
    (package / "helpers" / "__init__.py").write_text("")
    env = dict(os.environ, VECSIM_CACHE_DIR=str(tmp_path / "vecsim"), NUMBA_CACHE_DIR=str(tmp_path / "numba"))

    def rewards(reached):
        (package / "helpers" / "physics.py").write_text(_PHYSICS.format(reached=reached))
        done = subprocess.run([sys.executable, "-c", _STEP_WALK, str(tmp_path / "src")], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    assert rewards("1.0") == [1.0] * 4  # size 2: one step toward the target reaches it
    assert rewards("5.0") == [5.0] * 4


_PLAY_WALK = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import vecsim
    engine = vecsim.make(vecsim.register("minimal_game"), 3, parallel=False)
    engine.reset(seed=5)
    played = [engine.obs.tolist()]
    for t in range(6):
        obs, rewards, *_ = engine.step(np.full(3, t % 3))
        played.append([obs.tolist(), rewards.tolist()])
    print(played)
""")


@pytest.mark.slow
def test_damaged_cache_entries_are_compiled_again_with_one_notice_and_never_crash(tmp_path):
    """Truncated, zero-filled or garbage index and data files of Numba's cache, and a kernel
    module overwritten with non-UTF-8 bytes, used to raise (UnpicklingError, MemoryError,
    UnicodeDecodeError) on every later run until someone deleted the file."""
    import pathlib

    tests = pathlib.Path(__file__).parents[1]
    env = dict(os.environ, VECSIM_CACHE_DIR=str(tmp_path / "vecsim"), NUMBA_CACHE_DIR=str(tmp_path / "numba"))

    def play():
        done = subprocess.run([sys.executable, "-c", _PLAY_WALK, str(tests)], env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.strip().splitlines()[-1], done.stderr

    played, _ = play()
    damages = [lambda b: b[: len(b) // 2], lambda b: bytes(len(b)), lambda b: bytes(range(256)) * 4]
    for round_ in range(3):
        # Entries a warm run reads (not those of functions compiled only into their callers):
        # the step kernel's index and the data of the step share it calls by symbol.
        kernel, share = (next((tmp_path / "numba").rglob(f"vecsim_kernels_*.{name}-*.nbi"))
                         for name in ("step_serial", "_step_share"))
        damaged = kernel, next(share.parent.glob(share.stem + "*.nbc"))  # an index, a data file
        for path in damaged:
            path.write_bytes(damages[round_](path.read_bytes()))
        again, stderr = play()
        assert again == played
        assert stderr.count("could not be read") == 1, stderr
        assert "compiling" not in play()[1]  # saved afresh: the next run loads
    for module in (tmp_path / "vecsim").glob("vecsim_kernels_minimal_game*.py"):
        module.write_bytes(b"\xff\xfe" * 100)
    assert play()[0] == played


def test_a_cache_folder_that_cannot_be_used_is_named_once_with_where_kernels_go_instead(tmp_path, monkeypatch,
                                                                                        caplog):
    from vecsim.engine import codegen

    (tmp_path / "a_file").write_text("")
    unusable = tmp_path / "a_file" / "cache"  # under a file: cannot be created, even by root
    monkeypatch.setenv("VECSIM_CACHE_DIR", str(unusable))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(codegen, "_PASSED_OVER", set())
    with caplog.at_level("WARNING", logger="vecsim"):
        assert codegen.cache_dir() == codegen.cache_dir() == tmp_path / "home" / ".cache" / "vecsim"
    assert [r.getMessage() for r in caplog.records] == [
        f"vecsim: VECSIM_CACHE_DIR {unusable} cannot be used (Not a directory); kernels are compiled and cached "
        f"in {tmp_path / 'home' / '.cache' / 'vecsim'} instead"]


_CALL_CACHED = "import sys; sys.path.insert(0, sys.argv[1]); import cached_f; print(cached_f.f())"


def test_a_cached_function_is_compiled_again_when_a_callee_in_another_file_changes(tmp_path):
    """``@exact(cache=True)`` (the pipeline's agents use it): Numba's index checks only the
    time and size of the function's own file, so a changed callee used to be served stale."""
    (tmp_path / "cached_f.py").write_text("from vecsim.core.jit import exact\nfrom helper_g import g\n\n\n"
                                          "@exact(cache=True)\ndef f():\n    return g() + 0.5\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))

    def call(value):
        (tmp_path / "helper_g.py").write_text(f"from vecsim.core.jit import exact\n\n\n@exact\ndef g():\n    return {value}\n")
        done = subprocess.run([sys.executable, "-c", _CALL_CACHED, str(tmp_path)], env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return float(done.stdout.strip().splitlines()[-1])

    assert call(1.0) == 1.5
    assert list((tmp_path / "numba").rglob("*.nbi"))  # saved, so the next run could be served from it
    assert call(2.0) == 2.5


_SAVE_MANY = textwrap.dedent("""
    import os, sys, time
    from numba.core.caching import IndexDataCacheFile
    from vecsim.core.kernel_cache import _save_entry
    folder, who = sys.argv[1], sys.argv[2]
    cache_file = IndexDataCacheFile(folder, "f-1.py311", ("stamp", 1))
    open(os.path.join(folder, who), "w").close()
    while not all(os.path.exists(os.path.join(folder, w)) for w in "ab"):  # both ready: start together
        time.sleep(0.001)
    for k in range(SAVES):
        _save_entry(cache_file, (who, k), (who, k))
""")


def test_processes_saving_entries_of_one_function_at_once_keep_each_entry_with_its_own_data(tmp_path):
    """Numba numbers a function's data files by its index's entries: two processes saving at
    once could both write ``.1.nbc``, and one signature's entry would name the other's code."""
    from numba.core.caching import IndexDataCacheFile

    script = _SAVE_MANY.replace("SAVES", "200")
    runs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), who]) for who in ("a", "b")]
    assert [run.wait(timeout=120) for run in runs] == [0, 0]
    cache_file = IndexDataCacheFile(str(tmp_path), "f-1.py311", ("stamp", 1))
    keys = [(who, k) for who in ("a", "b") for k in range(200)]
    assert sorted(cache_file._load_index()) == sorted(keys)
    assert all(cache_file.load(key) == key for key in keys)


def test_a_save_under_another_source_stamp_never_overwrites_the_data_an_older_index_names(tmp_path):
    """Two versions of a source live at once (an edit during a run): the newer one finds the
    older index stale and saves its first entry afresh. A reader that still holds the older
    index must find its own machine code or none, never the newer version's."""
    from numba.core.caching import IndexDataCacheFile

    from vecsim.core.kernel_cache import _save_entry

    older = IndexDataCacheFile(str(tmp_path), "f-1.py311", ("stamp", 1))
    newer = IndexDataCacheFile(str(tmp_path), "f-1.py311", ("stamp", 2))
    _save_entry(older, "sig", "older code")
    held_index = older._load_index()
    _save_entry(newer, "sig", "newer code")

    try:
        assert older._load_data(held_index["sig"]) == "older code"
    except OSError:
        pass  # removed: Numba's loading takes a missing data file as a miss
    assert older.load("sig") is None  # the older version's index is gone: a miss, then a compile
    assert newer.load("sig") == "newer code"
    assert sorted(p.name for p in tmp_path.glob("*.nbc")) == [newer._load_index()["sig"]]  # no stale files left
