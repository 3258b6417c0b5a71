"""The ``vecsim`` command, run as a user runs it: in a fresh interpreter."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import matplotlib.image
import numpy as np

import vecsim

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_vecsim(*args, module="vecsim.cli", check=True):
    """``python -m <module> args`` from the repository root; returns the finished process."""
    env = dict(os.environ)
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


def test_bench_rejects_an_unknown_game_by_name():
    proc = run_vecsim("bench", "--games", "NoSuchGame-v0", check=False)
    assert proc.returncode == 2
    assert "NoSuchGame-v0" in proc.stderr


def test_python_dash_m_vecsim_runs_the_cli():
    proc = run_vecsim("--help", module="vecsim")
    assert "demo" in proc.stdout and "bench" in proc.stdout
