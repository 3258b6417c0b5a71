"""``vecsim calibrate``: the batch size from which the parallel kernels win, measured and saved
per machine, thread count and threading layer, and used by ``parallel="auto"``."""

from __future__ import annotations

import json
import sys
import warnings

import numba
import pytest

import vecsim
from vecsim import cli
from vecsim.bench import calibrate as calibration
from vecsim.engine import tuning
from vecsim.engine.engine import parallel_min_envs


@pytest.fixture
def calibration_file(tmp_path, monkeypatch):
    """A calibration file of this test's own (absent at first), read by vecsim."""
    path = tmp_path / "calibration.json"
    monkeypatch.setattr(tuning, "calibration_path", lambda: path)
    monkeypatch.setenv("VECSIM_CALIBRATION", "1")
    monkeypatch.delenv("VECSIM_PARALLEL_THRESHOLD", raising=False)
    return path


def _write(path, games: dict, threads: int | None = None, layer: str | None = None) -> None:
    key = tuning.machine_key(threads)
    layer = layer or vecsim.engine.threads.threading_layer()
    path.write_text(json.dumps({"version": tuning.VERSION,
                                "machines": {key: {"layers": {layer: {"games": games}}}}}))


def test_the_threshold_is_where_parallel_wins_from_there_on():
    rows = [(1024, 10.0, 30.0), (16, 10.0, 2.0), (256, 10.0, 12.0), (64, 10.0, 9.0), (4096, 10.0, 80.0)]
    assert calibration.threshold(rows) == 256
    # Speed-ups are smoothed over neighbouring sizes (median of three): one noisy timing at the
    # largest size (MountainCarContinuous float64 on 2026-11-22) does not make it "never"...
    mcc = [(256, 10.0, 8.2), (512, 10.0, 9.9), (1024, 10.0, 10.5), (2048, 10.0, 12.3), (4096, 10.0, 12.2), (8192, 10.0, 12.0),
           (16384, 10.0, 10.4)]
    assert calibration.threshold(mcc) == 1024
    # ...but losses at two sizes in a row do, and a tie (within MARGIN) counts as a loss.
    assert calibration.threshold(mcc[:-1] + [(16384, 10.0, 9.0), (32768, 10.0, 9.0)]) is None
    assert calibration.threshold([(16, 10.0, 10.2), (32, 10.0, 10.3), (64, 10.0, 10.4)]) is None
    # The smallest size keeps its own speed-up (its neighbours would speak for it).
    assert calibration.threshold([(16, 10.0, 8.3), (32, 10.0, 16.0), (64, 10.0, 16.8)]) == 32
    # Fewer than three sizes: as measured.
    assert calibration.threshold([(16, 10.0, 11.0)]) == 16
    assert calibration.threshold([(16, 10.0, 5.0), (32, 10.0, 9.0)]) is None
    assert calibration.threshold([(32, 10.0, 12.0), (16, 10.0, 5.0)]) == 32


def test_auto_follows_the_calibrated_size_for_this_machine_and_thread_count(calibration_file):
    cartpole = vecsim.resolve("CartPole-v1")
    threads = numba.get_num_threads()
    own = parallel_min_envs(cartpole, None, "float64", threads)
    _write(calibration_file, {"vecsim.games.cartpole": {"float64": 20, "float32": None}})
    assert parallel_min_envs(cartpole, None, "float64", threads) == 20
    assert parallel_min_envs(cartpole, None, "float64", threads, calibrated=False) == own
    assert vecsim.make("CartPole-v1", 20).parallel and not vecsim.make("CartPole-v1", 19).parallel
    assert not vecsim.make("CartPole-v1", 16384, precision="float32").parallel  # None: serial always
    # Another thread count, another game: the games' own sizes.
    other = 1 if threads > 1 else 2
    assert parallel_min_envs(cartpole, None, "float64", other, calibrated=False) == \
        parallel_min_envs(cartpole, None, "float64", other)
    assert parallel_min_envs(vecsim.resolve("Pendulum-v1"), None, "float64", threads) == \
        parallel_min_envs(vecsim.resolve("Pendulum-v1"), None, "float64", threads, calibrated=False)
    # Sizes of another threading layer do not apply.
    _write(calibration_file, {"vecsim.games.cartpole": {"float64": 20}}, layer="no-such-layer")
    assert parallel_min_envs(cartpole, None, "float64", threads) == own


def test_a_batch_below_every_size_that_could_apply_gets_the_smallest(calibration_file, monkeypatch):
    # Answered without asking for the threading layer (which may run a parallel kernel): the
    # kernel is serial whichever size applies.
    cartpole = vecsim.resolve("CartPole-v1")
    own = parallel_min_envs(cartpole, 16, "float64", calibrated=False)
    _write(calibration_file, {"vecsim.games.cartpole": {"float64": 512, "float32": None}})
    asked = []
    monkeypatch.setattr(vecsim.engine.engine, "threading_layer", lambda: asked.append(1) or vecsim.engine.threads.threading_layer())
    assert parallel_min_envs(cartpole, 16, "float64") == min(own, 512) and not asked
    assert parallel_min_envs(cartpole, 4096, "float64") == 512 and asked


def test_the_environment_overrides_or_switches_off_the_calibration(calibration_file, monkeypatch):
    cartpole = vecsim.resolve("CartPole-v1")
    _write(calibration_file, {"vecsim.games.cartpole": {"float64": 20}})
    monkeypatch.setenv("VECSIM_PARALLEL_THRESHOLD", "7")
    assert parallel_min_envs(cartpole, None, "float64") == 7
    for bad in ("0", "-3", "many"):
        monkeypatch.setenv("VECSIM_PARALLEL_THRESHOLD", bad)
        with pytest.raises(ValueError, match=f"VECSIM_PARALLEL_THRESHOLD must be an int >= 1, but got '{bad}'"):
            parallel_min_envs(cartpole, None, "float64")
    monkeypatch.delenv("VECSIM_PARALLEL_THRESHOLD")
    monkeypatch.setenv("VECSIM_CALIBRATION", "0")
    assert parallel_min_envs(cartpole, None, "float64") == parallel_min_envs(cartpole, None, "float64",
                                                                              calibrated=False)


@pytest.mark.parametrize("text", [
    "{not json",
    json.dumps({"version": 99, "machines": {}}),
    json.dumps({"version": 1, "machines": {"k": {"layers": {"omp": {"games": {"vecsim.games.cartpole": {"float64": -3}}}}}}}),
    json.dumps({"version": 1, "machines": {"k": {"layers": {"omp": {"games": {"vecsim.games.cartpole": {"float64": True}}}}}}}),
    json.dumps({"version": 1, "machines": {"k": {"layers": {"omp": {"games": []}}}}}),
    json.dumps({"version": 1, "machines": {"k": {"games": {}}}}),
])
def test_a_malformed_file_is_ignored_with_a_warning(calibration_file, text):
    cartpole = vecsim.resolve("CartPole-v1")
    calibration_file.write_text(text)
    with pytest.warns(RuntimeWarning, match="ignoring the calibration file .*calibration.json"):
        size = parallel_min_envs(cartpole, None, "float64")
    assert size == parallel_min_envs(cartpole, None, "float64", calibrated=False)


def test_calibrate_measures_and_merges_into_the_file(calibration_file):
    _write(calibration_file, {"vecsim.games.pendulum": {"float64": 512}})
    results = vecsim.calibrate(["CartPole-v1"], ["float32"], sizes=[32, 16], seconds=0.02, repeats=1)
    result = results["vecsim/CartPole-v1"]["float32"]
    assert [size for size, _, _ in result["rows"]] == [16, 32]
    assert all(serial > 0 and parallel > 0 for _, serial, parallel in result["rows"])
    assert result["threshold"] == calibration.threshold(result["rows"])
    layer = vecsim.engine.threads.threading_layer()
    saved = json.loads(calibration_file.read_text())["machines"][tuning.machine_key()]["layers"][layer]
    assert saved["games"] == {"vecsim.games.pendulum": {"float64": 512}, "vecsim.games.cartpole": {"float32": result["threshold"]}}
    assert saved["sizes"] == [16, 32]
    assert tuning.lookup("vecsim.games.cartpole", "float32", numba.get_num_threads()) == {layer: result["threshold"]}
    # save=False leaves the file as it was; one game and one precision may be given as strings.
    before = calibration_file.read_text()
    alone = vecsim.calibrate("CartPole-v1", "float64", sizes=[16], seconds=0.02, repeats=1, save=False)
    assert list(alone) == ["vecsim/CartPole-v1"] and list(alone["vecsim/CartPole-v1"]) == ["float64"]
    assert calibration_file.read_text() == before


@pytest.mark.parametrize("kwargs, message", [
    (dict(games=["NoSuchGame-v0"]), "NoSuchGame"),
    (dict(precisions=["float16"]), "precision must be one of .* but got 'float16'"),
    (dict(sizes=[16, 0]), "sizes must be a non-empty sequence of ints >= 1"),
    (dict(sizes=[]), "sizes must be a non-empty sequence of ints >= 1"),
    (dict(sizes=64), "sizes must be a non-empty sequence of ints >= 1, but got 64"),
    (dict(precisions="float16"), "precision must be one of .* but got 'float16'"),
    (dict(seconds=0), "seconds must be > 0, but got seconds=0"),
    (dict(seconds="1"), "seconds must be > 0, but got seconds='1'"),
    (dict(repeats=0), "repeats must be an int >= 1, but got repeats=0"),
])
def test_calibrate_rejects_bad_arguments_before_timing(calibration_file, kwargs, message):
    with pytest.raises((ValueError, KeyError), match=message):
        vecsim.calibrate(**{"games": ["CartPole-v1"], **kwargs})
    assert not calibration_file.exists()


def test_the_command_prints_declared_and_measured_sizes_and_forgets(calibration_file, capsys):
    argv = ["calibrate", "--games", "CartPole-v1", "--precision", "float64", "--sizes", "16", "32",
            "--seconds", "0.02", "--no-progress"]
    assert cli.main(argv + ["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "CartPole-v1" in out and "declared" in out and "16:" in out and "not saved (--dry-run)" in out
    assert not calibration_file.exists()
    assert cli.main(argv) == 0
    assert f"saved in {calibration_file}" in capsys.readouterr().out and calibration_file.exists()
    assert cli.main(["calibrate", "--forget"]) == 0
    assert "removed" in capsys.readouterr().out and not calibration_file.exists()
    assert cli.main(["calibrate", "--forget"]) == 0
    assert "no calibration file" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        cli.main(["calibrate", "--threads", str(numba.config.NUMBA_NUM_THREADS + 1)])
    assert exc.value.code == 2
    assert "--threads must be at most NUMBA_NUM_THREADS" in capsys.readouterr().err


def test_no_warning_without_a_file(calibration_file):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tuning.load() == {}


def test_the_collector_follows_the_calibrated_size(calibration_file):
    # Acrobot declares no sizes of the collector's own: it follows the engine's, calibrated.
    _write(calibration_file, {"vecsim.games.acrobot": {"float64": 20}})
    with vecsim.EpisodeCollector("Acrobot-v1", 32, 4, "random", seed=0) as collector:
        assert collector._parallel_min == 20
    # Never, for slots beyond the game's own size (below it, serial either way).
    _write(calibration_file, {"vecsim.games.acrobot": {"float64": None}})
    with vecsim.EpisodeCollector("Acrobot-v1", 1024, 4, "random", seed=0) as collector:
        assert collector._parallel_min == sys.maxsize
    # CartPole's collector has sizes of its own (the tuning table's collect sizes): a calibration
    # times the engine's kernels, not the collector's.
    _write(calibration_file, {"vecsim.games.cartpole": {"float64": 20}})
    with vecsim.EpisodeCollector("CartPole-v1", 32, 4, "random", seed=0) as collector:
        assert collector._parallel_min == 256


@pytest.mark.slow
def test_the_collector_looks_up_its_own_thread_count(calibration_file, tmp_path):
    # A machine with more threads than two: the collector's size is the one calibrated for
    # that count (a subprocess, for NUMBA_NUM_THREADS=3).
    import os
    import subprocess

    code = ("import json, pathlib, vecsim\n"
            "from vecsim.engine import tuning\n"
            f"path = pathlib.Path({str(tmp_path / 'three.json')!r})\n"
            "tuning.calibration_path = lambda: path\n"
            "key = tuning.machine_key()\n"
            "layers = {vecsim.engine.threads.threading_layer(): {'games': {'vecsim.games.acrobot': {'float64': 24}}}}\n"
            "path.write_text(json.dumps({'version': 1, 'machines': {key: {'layers': layers}}}))\n"
            "with vecsim.EpisodeCollector('Acrobot-v1', 32, 4, 'random', seed=0) as c:\n"
            "    print(key, '|', c._parallel_min)\n")
    env = {**os.environ, "VECSIM_CALIBRATION": "1", "NUMBA_NUM_THREADS": "3"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "3 threads" in proc.stdout and proc.stdout.split("|")[-1].strip() == "24", proc.stdout
