"""operant as a peer of ``vecsim bench``: measured in this Python or in another one.

operant is not a test dependency (its only Linux wheel is for CPython 3.8), so these tests
put a stand-in ``operant`` package on ``PYTHONPATH``: the same import path, class names,
dtypes and version metadata as operant 0.3.3, whose step refuses what the real one refuses
(int64 actions, a ``(num_envs, 1)`` Box batch). The stand-in is a NumPy toy, not CartPole.
"""

from __future__ import annotations

import ast
import pathlib
import sys
import textwrap

import pytest

from vecsim.bench import measure as bench
from vecsim.bench import peers

from test_cli import run_vecsim, table_rows

_STAND_IN = '''
import numpy as np


class _Discrete:
    def __init__(self, n):
        self.n = n


class _Box:
    def __init__(self, low, high, shape):
        self.low, self.high, self.shape = np.full(shape, low, np.float32), np.full(shape, high, np.float32), shape


class _VecEnv:
    def __init__(self, num_envs, workers=1, discrete=True, fail=False):
        self.num_envs = num_envs
        self.single_action_space = _Discrete(2) if discrete else _Box(-2.0, 2.0, (1,))
        self._dtype = np.int32 if discrete else np.float32
        self._obs = np.zeros((num_envs, 4), np.float32)
        self._fail = fail

    def reset(self, seed=None):
        return self._obs, {}

    def step(self, actions):
        if self._fail:
            raise RuntimeError("stand-in failure")
        if actions.dtype != self._dtype or actions.shape != (self.num_envs,):
            raise TypeError("argument 'actions': 'ndarray' object cannot be cast as 'ndarray'")
        self._obs[:, 0] += actions
        return self._obs, np.ones(self.num_envs, np.float32), np.zeros(self.num_envs, np.uint8), \\
            np.zeros(self.num_envs, np.uint8), {}

    def close(self):
        pass


class _Envs:
    CartPoleVecEnv = staticmethod(lambda num_envs, workers=1: _VecEnv(num_envs, workers))
    PendulumVecEnv = staticmethod(lambda num_envs, workers=1: _VecEnv(num_envs, workers, discrete=False))
    MountainCarVecEnv = staticmethod(lambda num_envs, workers=1: _VecEnv(num_envs, workers, fail=True))


envs = _Envs()
import sys as _sys
_sys.modules[__name__ + ".envs"] = envs
'''


@pytest.fixture()
def stand_in(tmp_path, monkeypatch):
    """A folder holding the stand-in ``operant`` and its metadata, on ``PYTHONPATH``."""
    package = tmp_path / "operant"
    package.mkdir()
    (package / "__init__.py").write_text(_STAND_IN)
    info = tmp_path / "operant-0.3.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: operant\nVersion: 0.3.3\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.delenv(peers.OPERANT_PYTHON_VAR, raising=False)
    return tmp_path


def test_bench_modules_stay_loadable_by_python_3_8():
    # operant's Linux wheel runs on CPython 3.8 only, and OperantProcess runs these files there.
    for module in (bench, peers):
        ast.parse(pathlib.Path(module.__file__).read_text(), feature_version=(3, 8))
    ast.parse((pathlib.Path(peers.__file__).parent / "__init__.py").read_text(), feature_version=(3, 8))


def test_the_operant_worker_runs_where_vecsim_does_not_import(stand_in):
    # The worker loads vecsim/bench as a package of its own: peers.py and measure.py must not
    # import vecsim at module level. Here ``import vecsim`` fails, as in operant's Python 3.8.
    import subprocess

    init = pathlib.Path(peers.__file__).parent / "__init__.py"
    code = "import sys; sys.modules['vecsim'] = None; " + peers._SERVE
    request = '{"env": "CartPole-v1", "num_envs": 16, "seconds": 0.05, "repeats": 1}\n'
    proc = subprocess.run([sys.executable, "-c", code, str(init)], input=request, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    import json

    hello, answer = map(json.loads, proc.stdout.splitlines())
    assert hello["operant"] == "0.3.3" and answer["steps_per_s"] > 0


def test_an_operant_process_measures_its_envs_and_answers_none_for_others(stand_in):
    with peers.OperantProcess(sys.executable) as proc:
        assert proc.versions["operant"] == "0.3.3"
        assert proc.versions["python"] == ".".join(map(str, sys.version_info[:3]))
        # Discrete actions go as int32 (num_envs,), Box ones as float32 (num_envs,): what
        # operant's step takes (the stand-in refuses anything else, as operant does).
        assert proc.measure("CartPole-v1", 16, 0.05, 1) > 0
        assert proc.measure("Pendulum-v1", 16, 0.05, 1) > 0
        assert proc.measure("Acrobot-v1", 16, 0.05, 1) is None
        with pytest.raises(RuntimeError, match="operant failed on MountainCar-v0 with 16 envs: .*stand-in failure"):
            proc.measure("MountainCar-v0", 16, 0.05, 1)
        assert proc.measure("CartPole-v1", 8, 0.05, 1) > 0  # still serving after an error
        # Bad cells are refused by name here, before operant sees them.
        for args, match in (((0, 0.05, 1), "num_envs must be an int >= 1.*0"),
                            ((2.5, 0.05, 1), "num_envs must be an int >= 1.*2.5"),
                            ((8, 0, 1), "seconds must be a number > 0.*0"),
                            ((8, 0.05, True), "repeats must be an int >= 1.*True")):
            with pytest.raises(ValueError, match=match):
                proc.measure("CartPole-v1", *args)
        with pytest.raises(TypeError, match="env_id must be a str"):
            proc.measure(None, 8)
        assert proc.measure("CartPole-v1", 8, 0.05, 1) > 0


def test_a_python_that_cannot_run_operant_is_an_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # no operant there
    with pytest.raises(RuntimeError, match=f"operant does not import in '{sys.executable}'"):
        peers.OperantProcess(sys.executable)
    missing = str(tmp_path / "no-python")
    with pytest.raises(RuntimeError, match=f"cannot run the operant Python '{missing}'"):
        peers.OperantProcess(missing)
    broken = tmp_path / "broken.sh"
    broken.write_text("#!/bin/sh\necho 'no such module: numpy' >&2\nexit 1\n")
    broken.chmod(0o755)
    with pytest.raises(RuntimeError, match="exited before it answered: no such module: numpy"):
        peers.OperantProcess(str(broken))


def test_open_operant_follows_the_environment_variable(stand_in, monkeypatch):
    assert peers.open_operant() is None or isinstance(peers.open_operant(), peers.OperantHere)
    monkeypatch.setenv(peers.OPERANT_PYTHON_VAR, sys.executable)
    with peers.open_operant() as proc:
        assert isinstance(proc, peers.OperantProcess) and proc.python == sys.executable


def test_bench_shows_operant_beside_vecsim(stand_in, tmp_path):
    out = tmp_path / "bench.json"
    proc = run_vecsim("bench", "--seconds", 0.05, "--repeats", 1, "--num-envs", 16, "--precision", "float32",
                      "--games", "CartPole-v1", "Acrobot-v1", "--operant-python", sys.executable, "--json", out)
    header = next(line for line in proc.stdout.splitlines() if line.startswith("game"))
    assert "operant" in header and header.endswith("x no_reset vs operant")
    cartpole, = table_rows(proc.stdout, "CartPole-v1")
    assert cartpole[2] == "float32" and cartpole[-1].endswith("x") and float(cartpole[-1][:-1]) > 0
    acrobot, = table_rows(proc.stdout, "Acrobot-v1")
    assert acrobot[-1] == "-"  # operant has no Acrobot
    assert f"in Python {sys.version_info[0]}.{sys.version_info[1]}" in proc.stdout
    import json

    record = json.loads(out.read_text())
    assert record["operant"]["operant"] == "0.3.3" and record["operant"]["python_path"] == sys.executable
    rates = {r["game"]: r["steps_per_s"] for r in record["results"] if r["impl"] == bench.OPERANT}
    assert rates["vecsim/CartPole-v1"] > 0 and rates["vecsim/Acrobot-v1"] is None


def test_bench_compares_only_float32_rows_with_operant(stand_in):
    # operant computes in float32: a float64 row (bit-exact with Gymnasium) gets no ratio.
    proc = run_vecsim("bench", "--seconds", 0.05, "--repeats", 1, "--num-envs", 16, "--games", "CartPole-v1",
                      "--operant-python", sys.executable)
    rows = {row[2]: row for row in table_rows(proc.stdout, "CartPole-v1")}
    assert rows["float64"][-1] == "-" and rows["float32"][-1].endswith("x")


def test_bench_refuses_an_operant_python_without_operant(tmp_path):
    proc = run_vecsim("bench", "--games", "CartPole-v1", "--num-envs", 16, "--operant-python",
                      tmp_path / "no-python", check=False)
    assert proc.returncode != 0
    assert "cannot run the operant Python" in proc.stderr and "no-python" in proc.stderr


def test_bench_without_operant_says_it_left_it_out(tmp_path, monkeypatch):
    monkeypatch.delenv(peers.OPERANT_PYTHON_VAR, raising=False)
    if peers.operant_available():
        pytest.skip("operant imports in this Python")
    proc = run_vecsim("bench", "--seconds", 0.05, "--repeats", 1, "--num-envs", 16, "--precision", "float32",
                      "--games", "CartPole-v1")
    assert "operant: not installed, left out" in proc.stdout
    header = next(line for line in proc.stdout.splitlines() if line.startswith("game"))
    assert "operant" not in header
