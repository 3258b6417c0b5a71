"""Competing load for benchmarks (vecsim.bench.load) and ``vecsim bench --load``: busy processes in
sessions of their own, gone afterwards however the bench ends; bad counts refused by name.
Nothing here is timed."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from vecsim.bench.load import MAX_LOAD, BusyProcesses, BusyThreads

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def busy_children_of(pid: int) -> list[int]:
    """The busy-loop processes that the process ``pid`` started (they name it on their command line)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if len(args) >= 4 and b"parent = int(sys.argv[1])" in args[2] and args[3] == str(pid).encode():
            if alive(int(entry)):
                found.append(int(entry))
    return found


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_busy_processes_run_in_sessions_of_their_own_at_nice_19_and_are_gone_afterwards():
    with BusyProcesses(2) as busy:
        pids = busy.pids
        assert len(pids) == 2 and all(alive(pid) for pid in pids)
        for pid in pids:
            assert os.getsid(pid) == pid != os.getsid(0)  # each leads a new session
            assert os.getpgid(pid) == pid
            assert os.getpriority(os.PRIO_PROCESS, pid) == 19
        assert sorted(busy_children_of(os.getpid())) == sorted(pids)
    assert busy.pids == []
    assert not any(alive(pid) for pid in pids)


def test_busy_processes_are_killed_when_the_block_raises():
    with pytest.raises(RuntimeError, match="measuring failed"):
        with BusyProcesses(1) as busy:
            pids = busy.pids
            raise RuntimeError("measuring failed")
    assert not any(alive(pid) for pid in pids)


def test_no_busy_process_and_stop_twice():
    busy = BusyProcesses(0).start()
    assert busy.pids == []
    busy.stop()
    busy.stop()


def test_busy_threads_multiply_and_stop():
    with BusyThreads(1, size=8) as busy:
        deadline = time.monotonic() + 10
        while busy.products == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
            busy._stop.set()  # the count is added when a thread stops
    assert busy.products > 0
    assert not busy._threads


@pytest.mark.parametrize("cls", [BusyProcesses, BusyThreads])
@pytest.mark.parametrize("count, error", [(-1, ValueError), (MAX_LOAD + 1, ValueError), (1.0, TypeError),
                                          (True, TypeError), ("2", TypeError)])
def test_bad_counts_are_refused_by_name(cls, count, error):
    with pytest.raises(error, match=f"count must be .*{count!r}"):
        cls(count)


def test_bad_nice_and_size_are_refused_by_name():
    with pytest.raises(ValueError, match="nice must be an int in \\[0, 19\\].*20"):
        BusyProcesses(1, nice=20)
    with pytest.raises(ValueError, match="size must be an int >= 1.*0"):
        BusyThreads(1, size=0)


def _vecsim(*args) -> list[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    return [sys.executable, "-m", "vecsim.cli", *map(str, args)], env


BENCH = ("bench", "--games", "CartPole-v1", "--num-envs", 16, "--precision", "float32", "--repeats", 1,
         "--no-progress")


@pytest.mark.parametrize("option", ["--load", "--load-threads"])
@pytest.mark.parametrize("value", ["-1", str(MAX_LOAD + 1), "two", "1.5"])
def test_bench_refuses_bad_load_counts_by_name(option, value):
    cmd, env = _vecsim("bench", option, value)
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert f"argument {option}: must be an int in [0, {MAX_LOAD}]" in proc.stderr, proc.stderr


def test_bench_with_load_reports_it_and_leaves_no_busy_process(tmp_path):
    cmd, env = _vecsim(*BENCH, "--seconds", 0.05, "--load", 2, "--load-threads", 1, "--json", tmp_path / "r.json")
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert "load: 2 busy Python processes at nice 19, each in a session of its own, and 1 thread" in out
    assert busy_children_of(proc.pid) == []
    import json

    record = json.loads((tmp_path / "r.json").read_text())
    assert record["load"] == 2 and record["load_threads"] == 1


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_bench_interrupted_by_ctrl_c_leaves_no_busy_process():
    cmd, env = _vecsim(*BENCH, "--seconds", 60, "--load", 2)
    # SIGINT at its default in the bench, as in a terminal: a test run started in the background
    # by a non-interactive shell inherits it ignored, and the bench would then never see Ctrl-C.
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)
    try:
        deadline = time.monotonic() + 300
        while len(busy_children_of(proc.pid)) < 2:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the busy processes never started"
            time.sleep(0.1)
        pids = busy_children_of(proc.pid)
        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends to the bench (not to the other sessions)
        # A loaded machine can hold the bench minutes in compiled code before Python sees the signal.
        proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0
    assert not any(alive(pid) for pid in pids)


def test_loadtable_refuses_bad_cells_and_formats_its_report():
    from vecsim.bench import loadtable

    for text in ("CartPole-v1 float16 4096", "CartPole-v1 float32", "Tetris-v0 float32 16", "CartPole-v1 float32 0"):
        with pytest.raises(ValueError, match="cell"):
            loadtable._parse_cell(text)
    measured = {"rates": {c: {"CartPole-v1 float32 4096": {"0": [2e6, 4e6, 3e6], "2": [1e6]}}
                          for c in ("default", "one-thread")},
                "layers": {"default": "omp", "one-thread": "omp, 1 thread"}, "errors": {"tbb": "no TBB"}}
    report = loadtable.format_report(measured, ["default", "one-thread"], ["CartPole-v1 float32 4096"], [0, 2])
    assert "3M (2M-4M)" in report and "1.00" in report and "tbb: not measured (no TBB)" in report


def test_loadtable_measures_a_cell_in_a_child_process():
    from vecsim.bench import loadtable

    measured = loadtable.run(["default"], ["CartPole-v1 float32 64"], ["0", "1", "1t"], rounds=1, seconds=0.02,
                             repeats=1)
    assert not measured["errors"]
    rates = measured["rates"]["default"]["CartPole-v1 float32 64"]
    assert len(rates["0"]) == len(rates["1"]) == len(rates["1t"]) == 1 and rates["1t"][0] > 0
