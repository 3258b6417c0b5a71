"""Shared fixtures: every test that takes ``game_id`` runs once per registered vecsim game.

Numba compiles a game's kernels once per process (and loads them from vecsim's cache in
later processes), so module-scoped engines keep the suite fast on a small CI machine.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import vecsim
from vecsim.testing import legal_actions, sample_actions

# A calibration file in the cache folder (``vecsim calibrate``) would change which kernels
# "auto" picks; the suite tests the games' own sizes, and its subprocesses inherit this.
# tests/test_calibration.py turns it back on where it tests the file.
os.environ["VECSIM_CALIBRATION"] = "0"


def pytest_sessionstart(session):
    """Before the workers of a whole-suite run start (no paths given, workers asked for): every
    game's default kernels compiled into the cache by ``vecsim warmup``, a process a worker, so
    that no two workers compile the same kernels at once and the tests' own interpreters (the
    CLI's, the notebooks', the subprocess checks') load them. On a warm cache it only loads them."""
    config = session.config
    workers = getattr(config.option, "numprocesses", None)
    whole_suite = config.args_source == pytest.Config.ArgsSource.TESTPATHS
    if os.environ.get("PYTEST_XDIST_WORKER") or not whole_suite or not isinstance(workers, int) or workers < 1:
        return
    jobs = min(workers, config.option.maxprocesses or workers)
    done = subprocess.run([sys.executable, "-m", "vecsim", "warmup", "--jobs", str(jobs), "--no-progress"],
                          capture_output=True, text=True)
    if done.returncode != 0:  # the tests will meet the same error, and report it where it belongs
        print(f"vecsim warmup failed before the suite:\n{done.stderr[-2000:]}", file=sys.stderr)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under pytest-xdist (the suite's default, ``-n auto --dist loadfile``), a test file runs on
    one worker, so its module-scoped fixtures (engines, training runs) are made once; the Ray
    tests share one worker, as each of their files starts a local cluster; and each notebook's
    tests go together, the notebooks spread over the workers (one trains for minutes)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FileOrRayScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid):
            path = super()._split_scope(nodeid)
            if path.startswith("tests/distributed/"):
                return "tests/distributed"
            notebook = re.search(r"\[(\w+\.ipynb)\]$", nodeid)
            return f"{path}[{notebook.group(1)}]" if path == "tests/test_notebooks.py" and notebook else path

    return FileOrRayScheduling(config, log)


def pytest_generate_tests(metafunc):
    given = {name.strip() for mark in metafunc.definition.iter_markers("parametrize")
             for name in (mark.args[0].split(",") if isinstance(mark.args[0], str) else mark.args[0])}
    if "game_id" in metafunc.fixturenames and "game_id" not in given:
        metafunc.parametrize("game_id", vecsim.game_ids(), scope="module")


def float32_games() -> list[str]:
    """The games whose float32 kernels are worth their own compile in a test: those with a
    ``step_env_fast`` (other code than their float64 step). A game without one gets float32
    kernels of its float64 step compiled with fast math and float32 rewards: the same plumbing
    for every such game, proven on the cheapest, ``tests/minimal_game.py``, by both checkers
    (tests/games/test_guide.py)."""
    return [g for g in vecsim.game_ids() if vecsim.resolve(g).has("step_env_fast")]


def game_precisions() -> list[tuple[str, str]]:
    """``(game_id, precision)``: every game in float64, the ``float32_games`` in float32 too; for
    ``@pytest.mark.parametrize("game_id, precision", game_precisions())``."""
    f32 = set(float32_games())
    return [(g, p) for g in vecsim.game_ids() for p in ("float64", "float32") if p == "float64" or g in f32]


def lenient(game_id) -> dict:
    """Constructor arguments under which any well-formed action may be stepped: games with
    masks are told to flag illegal actions instead of rejecting them (for tests that replay
    precomputed random actions)."""
    return {"invalid_action": "flag"} if vecsim.resolve(game_id).enforces_mask else {}


def first_legal_actions(eng):
    """Each env's first legal action (zeros for a game without masks): a batch that any game
    steps, where zeros may be outside a binding mask (Blokus Duo, Tetris's reach mode)."""
    acts = eng.zero_actions()
    if eng.n_mask:
        acts[:] = eng.masks.argmax(axis=1)
    return acts


#: Games whose starting state is the same for every seed (Blokus: an empty board): their
#: seeding is seen in the random streams (``eng.rng``), not in the first observation.
FIXED_START = ("Blokus", "BlokusDuo")


def start_of(eng):
    """What a reset's seed shows: the observation, or the streams of a ``FIXED_START`` game."""
    return (eng.rng if eng.game.name in FIXED_START else eng.obs).copy()


@pytest.fixture(scope="module")
def engine(game_id):
    """A reset float64 engine of 8 envs of ``game_id``, shared by one test module."""
    eng = vecsim.make(game_id, 8)
    eng.reset(seed=123)
    yield eng
    eng.close()


@pytest.fixture
def rng():
    return np.random.default_rng(20240601)


@pytest.fixture(scope="session")
def actions_for():
    """``actions_for(engine_or_env, rng)``: a batch of random valid actions (legal ones for
    games with action masks)."""

    def make(target, rng, overshoot=0.0):
        return sample_actions(target.single_action_space, target.num_envs, rng, overshoot, mask=legal_actions(target))

    return make


def snapshot(eng) -> dict:
    """Copies of every array that makes up an engine's state and outputs (thread scratch, which
    holds nothing from one step to the next, left out: Dr. Mario's is hundreds of MB)."""
    named = {"obs": eng.obs, "rewards": eng.rewards, "terminals": eng.terminals,
             "truncations": eng.truncations, "masks": eng.masks, "events": eng.events,
             "elapsed": eng.elapsed, "rng": eng.rng, "needs_reset": eng.needs_reset}
    named.update({f"state.{k}": v for k, v in zip(eng.state._fields, eng.state) if k not in eng.game.scratch_state})
    return {k: np.array(v, copy=True) for k, v in named.items()}


@pytest.fixture(scope="session")
def engine_snapshot():
    """``engine_snapshot(eng)``: a dict of copies of every state and output array."""
    return snapshot


@pytest.fixture(scope="session")
def assert_unchanged():
    """``assert_unchanged(eng, before)``: every array equals the snapshot ``before``."""

    def check(eng, before, what="engine"):
        after = snapshot(eng)
        for name, old in before.items():
            np.testing.assert_array_equal(after[name], old, err_msg=f"{what}: {name} changed")

    return check


@pytest.fixture(scope="session", autouse=True)
def sb3_log_folder(tmp_path_factory):
    """SB3's ``learn`` makes a log folder in the system's temp folder on every call unless
    ``SB3_LOGDIR`` names one: keep them in pytest's own temp folder, which it prunes."""
    folder = tmp_path_factory.mktemp("sb3-logs")
    old = os.environ.get("SB3_LOGDIR")
    os.environ["SB3_LOGDIR"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("SB3_LOGDIR", None)
    else:
        os.environ["SB3_LOGDIR"] = old
