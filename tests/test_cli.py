"""The ``vecsim`` command, run as a user runs it: in a fresh interpreter."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import matplotlib.image
import numpy as np
import pytest

import vecsim

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_vecsim(*args, module="vecsim.cli", check=True, cache_dir=None):
    """``python -m <module> args`` from the repository root; returns the finished process.
    ``cache_dir``: the kernel cache folder to use instead of the test session's, for vecsim's
    modules and Numba's cache of them alike."""
    env = dict(os.environ)
    if cache_dir is not None:
        env["VECSIM_CACHE_DIR"] = str(cache_dir)
        env.pop("NUMBA_CACHE_DIR", None)  # else Numba keeps the kernels' machine code there instead
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"vecsim {' '.join(map(str, args))} exited with {proc.returncode}:\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def table_rows(stdout: str, game: str) -> list[list[str]]:
    """The cells of the table rows of one game (rows start with its id)."""
    return [line.split() for line in stdout.splitlines() if line.split()[:1] == [game]]


def short_ids():
    return [gid.split("/", 1)[1] for gid in vecsim.game_ids()]


def test_demo_prints_a_row_per_game_and_writes_a_png(tmp_path):
    out = tmp_path / "x.png"
    proc = run_vecsim("demo", "--out", out, "--seconds", 0.2, "--num-envs", 64)
    for game in short_ids():
        rows = table_rows(proc.stdout, game)
        assert len(rows) == 1, f"no single demo row for {game} in:\n{proc.stdout}"
        assert rows[0][1] == "64"
        if hasattr(vecsim.resolve(game).module, "DEMO_AGENT"):
            name = vecsim.resolve(game).module.DEMO_AGENT[0]
            agent_rows = table_rows(proc.stdout, f"{game}:{name}")
            assert len(agent_rows) == 1 and agent_rows[0][1] == "64", proc.stdout
    assert out.is_file()
    image = matplotlib.image.imread(out)
    assert image.ndim == 3 and image.shape[2] in (3, 4)
    assert image.shape[0] > 100 and image.shape[1] > 100
    assert np.ptp(image[..., :3]) > 0, "the frame grid is blank"


def test_demo_frames_show_the_same_moment_however_long_the_timed_play():
    """The frames are drawn after a fixed number of steps from reset(seed=0), before timing:
    drawn after a timed second, a slow first Blokus run showed one piece a board."""
    from vecsim.cli.demo import DEMO_FRAME_STEPS, _run_game

    short = _run_game("vecsim/BlokusDuo-v0", 4, 0.001, 2)[2]
    long = _run_game("vecsim/BlokusDuo-v0", 4, 0.3, 2)[2]
    assert [i for i, _ in short] == [i for i, _ in long] == [0, 3]
    for (_, a), (_, b) in zip(short, long):
        assert np.array_equal(a, b)
    engine = vecsim.make("BlokusDuo-v0", 4)
    engine.reset(seed=0)
    empty = engine.render_rgb(0)
    engine.close()
    assert not np.array_equal(short[0][1], empty) and DEMO_FRAME_STEPS >= 8  # pieces on the board


def _log_a_compile_notice(item):
    import logging

    logging.getLogger("vecsim.compile").warning("compiling %s", item)
    return item


def test_a_progress_line_silences_the_compile_notices_that_would_write_over_it(caplog):
    """`vecsim demo` and `vecsim warmup` show 'compiling games' on one line rewritten in place;
    the per-kernel notices printed in the middle of it (from every process)."""
    import io
    import logging

    from vecsim.cli.common import Progress, map_in_processes

    with caplog.at_level(logging.WARNING, logger="vecsim"):
        shown = Progress(2, enabled=True, stream=io.StringIO())
        assert map_in_processes(_log_a_compile_notice, ["a", "b"], 1, shown) == ["a", "b"]
        assert caplog.records == []
        assert map_in_processes(_log_a_compile_notice, ["c"], 1, Progress(1, enabled=False)) == ["c"]
    assert [r.getMessage() for r in caplog.records] == ["compiling c"]  # no progress line: the notice shows


def test_bench_prints_a_row_per_precision_with_a_ratio(tmp_path):
    out = tmp_path / "bench.json"
    proc = run_vecsim("bench", "--seconds", 0.05, "--num-envs", 16, "--games", "CartPole-v1", "--json", out)
    header = next(line for line in proc.stdout.splitlines() if line.startswith("game"))
    assert "x vs gymnasium" in header
    rows = table_rows(proc.stdout, "CartPole-v1")
    assert [row[1:3] for row in rows] == [["16", "float64"], ["16", "float32"]]
    for row in rows:
        assert row[-1].endswith("x") and float(row[-1][:-1]) > 0
    record = json.loads(out.read_text())
    impls = {(r["impl"], r["precision"]) for r in record["results"]}
    assert ("vecsim step", "float64") in impls and ("gymnasium vector", None) in impls
    assert all(r["steps_per_s"] is None or r["steps_per_s"] > 0 for r in record["results"])


def test_bench_times_a_game_with_bench_variants_per_variant_beside_its_peers(tmp_path):
    # Tetris declares its action modes as BENCH_VARIANTS; tetris-gymnasium is its peer by env id.
    from vecsim.bench import peers

    out = tmp_path / "bench.json"
    proc = run_vecsim("bench", "--seconds", 0.05, "--repeats", 1, "--num-envs", 16, "--games", "Tetris-v0",
                      "--json", out)
    header = next(line for line in proc.stdout.splitlines() if line.startswith("game"))
    assert [cell.strip() for cell in header.split("  ") if cell.strip()] == [
        "game", "num_envs", "primitive steps/s", "drop steps/s", "reach steps/s", "tetris-gymnasium jax steps/s",
        "x primitive vs jax"]
    assert "x vs gymnasium" not in proc.stdout  # no row per precision
    row, = table_rows(proc.stdout, "Tetris-v0")
    assert row[1] == "16" and all(cell != "-" for cell in row[2:5])
    installed = peers.tetris_gymnasium_available()
    assert ("tetris-gymnasium: not installed" in proc.stdout) != installed
    assert (row[-1].endswith("x") if installed else row[-3:] == ["not", "installed", "-"])
    record = json.loads(out.read_text())
    rates = {(r["impl"], r["precision"]): r["steps_per_s"] for r in record["results"]}
    assert {key for key in rates if key[0].startswith("vecsim")} == {
        ("vecsim primitive", "float64"), ("vecsim drop", "float64"), ("vecsim reach", "float64")}
    assert all(rates[key] > 0 for key in rates if key[0].startswith("vecsim"))
    assert set(record["tetris_gymnasium"]) == {"tetris-gymnasium", "jax", "jaxlib"}


def test_bench_rejects_an_unknown_game_by_name():
    proc = run_vecsim("bench", "--games", "NoSuchGame-v0", check=False)
    assert proc.returncode == 2
    assert "NoSuchGame-v0" in proc.stderr


def test_python_dash_m_vecsim_runs_the_cli():
    proc = run_vecsim("--help", module="vecsim")
    assert "demo" in proc.stdout and "bench" in proc.stdout


def _cached_kernels(cache: pathlib.Path) -> dict[str, int]:
    """Numba's cache index files under ``cache`` with their modification times (ns)."""
    return {p.name: p.stat().st_mtime_ns for p in cache.rglob("*.nbi")}


@pytest.mark.slow  # compiles a game's kernels into an empty cache
def test_warmup_fills_an_empty_cache_that_the_next_run_only_loads(tmp_path):
    # Several games in several processes: the suite's own start (tests/conftest.py) runs that.
    cache = tmp_path / "kernels"
    games = ("CartPole-v1",)
    proc = run_vecsim("warmup", "--games", *games, "--precision", "float32", "--collector", "--jobs", 2,
                      cache_dir=cache)
    for game in games:
        rows = table_rows(proc.stdout, game)
        assert len(rows) == 1 and rows[0][1] == "float32" and float(rows[0][2]) > 0, proc.stdout
    assert str(cache) in proc.stdout
    index = _cached_kernels(cache)
    for game in ("cartpole",):
        # The engine's and the collector's kernels, each serial and parallel, all in float32.
        for module, kernels in ((f"vecsim_kernels_vecsim_games_{game}_float32", ("step", "reset", "observe")),
                                (f"vecsim_collect_step_vecsim_games_{game}_float32", ("advance",))):
            for kernel in kernels:
                for kind in ("serial", "parallel"):
                    assert any(name.startswith(module) and f".{kernel}_{kind}-" in name for name in index), \
                        f"no {kernel}_{kind} of {module} among {sorted(n for n in index if game in n)}"
    assert not any("float64" in name for name in index), "compiled a precision it was not asked for"
    run_vecsim("warmup", "--games", *games, "--precision", "float32", "--collector", "--jobs", 1,
               cache_dir=cache)
    assert _cached_kernels(cache) == index, "a warm cache was compiled again"


def test_warmup_rejects_bad_arguments():
    for args, text in ((("--games", "NoSuchGame-v0"), "NoSuchGame-v0"), (("--precision", "float16"), "float16"),
                       (("--jobs", "0"), "--jobs"),
                       (("--games", "Tetris-v0", "--param", "action_mode"), "NAME=VALUE"),
                       (("--games", "CartPole-v1", "--param", "action_mode=reach"), "'action_mode'"),
                       (("--games", "Tetris-v0", "--param", "action_mode=bogus"), "'bogus'")):
        proc = run_vecsim("warmup", *args, check=False)
        assert proc.returncode == 2 and text in proc.stderr, (args, proc.stderr)


def test_warmup_param_values_parse_as_numbers_or_names():
    from vecsim.cli.common import UsageError, game_params

    assert game_params(["action_mode=reach", "queue=3", "gravity=2", "hold=1.0"], ["vecsim/Tetris-v0"]) == {
        "action_mode": "reach", "queue": 3, "gravity": 2, "hold": 1.0}
    assert game_params(["gravity=9.5"], ["vecsim/CartPole-v1"]) == {"gravity": 9.5}
    with pytest.raises(UsageError, match="gravity must be an integer in"):
        game_params(["gravity=0.5"], ["vecsim/Tetris-v0"])
    assert game_params(None, ["vecsim/Tetris-v0"]) == {}
    with pytest.raises(UsageError, match=r"--param: CartPole got unknown parameter\(s\) \['queue'\]"):
        game_params(["queue=3"], ["vecsim/Tetris-v0", "vecsim/CartPole-v1"])
    with pytest.raises(UsageError, match="action_mode must be one of .* but got action_mode='bogus'"):
        game_params(["action_mode=bogus"], ["vecsim/Tetris-v0"])
    with pytest.raises(UsageError, match="queue must be an integer in"):
        game_params(["queue=9"], ["vecsim/Tetris-v0"])


def test_compiles_start_longest_first_and_results_keep_item_order(monkeypatch):
    # The demo compiles every game in two processes: a long compile (Dr. Mario's, then
    # Tetris's) submitted last began only when the classic games were done, and the other
    # process then idled for its whole compile. The pool runs jobs in submission order.
    import concurrent.futures

    from vecsim.cli import common

    submitted = []

    class InlinePool:  # runs each job at submission, recording the order
        def __init__(self, jobs, mp_context=None, initializer=None):
            pass

        def submit(self, fn, item):
            submitted.append(item)
            future = concurrent.futures.Future()
            future.set_result(fn(item))
            return future

        def shutdown(self, cancel_futures=False):
            pass

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", InlinePool)
    games = vecsim.game_ids()
    weights = {game: common.compile_weight(game) for game in games}
    heaviest = sorted(games, key=lambda g: -weights[g])
    assert heaviest[:2] == ["vecsim/DrMario-v0", "vecsim/Tetris-v0"]  # docs/performance.md's longest compiles
    results = common.map_in_processes(str.upper, games, 2, weight=weights.get)
    assert submitted == heaviest
    assert results == [game.upper() for game in games]
    # Without weights, in the given order; one job runs in this process.
    submitted.clear()
    assert common.map_in_processes(str.upper, games, 2) == [game.upper() for game in games] and submitted == games
    assert common.map_in_processes(str.upper, games, 1) == [game.upper() for game in games]


def test_kernels_prints_the_generated_module_of_a_game(capsys):
    from vecsim import cli

    assert cli.main(["kernels", "CartPole-v1"]) == 0
    source = capsys.readouterr().out
    assert "import vecsim.games.cartpole as _game" in source
    assert "def step_serial(" in source and "def step_parallel(" in source
    # CartPole declares no action_ok: the check its Discrete(2) space implies is rendered in.
    assert "discrete_ok(actions, i, 2)" in source


def test_kernels_takes_the_parameters_the_kernels_depend_on(capsys):
    from vecsim import cli

    cli.main(["kernels", "Tetris-v0"])
    drop = capsys.readouterr().out
    cli.main(["kernels", "Tetris-v0", "--param", "action_mode=reach"])
    reach = capsys.readouterr().out
    assert "_game.write_mask_without_planner(" in drop and "_game.write_mask(" in reach


def test_kernels_refuses_an_unknown_game_by_name():
    proc = run_vecsim("kernels", "NoSuchGame-v0", check=False)
    assert proc.returncode == 2 and "unknown game id 'NoSuchGame-v0'" in proc.stderr
