"""DrMario-v0: ``Engine.step`` of one NES frame per env (frame mode) and of one placement per
env (decision mode, the default); the placement planner alone.

Level 10, medium speed, random legal actions (``LegalActions``), NEXT_STEP autoreset: the
paths a learner uses. ``serial`` is the one-thread kernel,
``auto`` the engine's own choice (threads over envs from its tuned batch size). The kernels
are compiled (or loaded from the cache) in ``setup``, never inside a timed call. A decision
plays the placement's frames and the frames to the next decision point, and plans it.
``python -m vecsim.bench.drmario`` gives the same figures beside the bare kernel's.
"""

from __future__ import annotations

import numpy as np

# vecsim through common: it makes the checkout importable where asv installed nothing.
from .common import bench, vecsim

GAME = bench.full_id("DrMario-v0")
NUM_ENVS = (16, 4096)
DECISION_ENVS = (16, 64)
KERNELS = ("serial", "auto")


class _DrMarioStep:
    """``Engine.step`` of a batch in ``MODE``."""

    MODE = ""
    param_names = ("kernel", "num_envs")
    timeout = 600.0  # a cold cache compiles the Dr. Mario kernels in setup

    def setup(self, kernel, num_envs):
        vecsim.warmup(GAME)
        self.engine = vecsim.make(GAME, num_envs, mode=self.MODE, level=10, speed="med",
                                  parallel=False if kernel == "serial" else "auto")
        self.engine.reset(seed=0)
        self.next_actions = bench.engine_actions(self.engine)
        self.step()

    def step(self):
        self.engine.step(self.next_actions())

    def teardown(self, kernel, num_envs):
        engine = getattr(self, "engine", None)
        if engine is not None:
            engine.close()

    def time_step(self, kernel, num_envs):
        self.step()


class DrMarioFrameStep(_DrMarioStep):
    """Frame mode; steps/s are frames/s."""

    MODE = "frame"
    params = (KERNELS, NUM_ENVS)

    def track_frames_per_second(self, kernel, num_envs):
        return bench.steps_per_second(self.step, num_envs, seconds=0.5)

    track_frames_per_second.unit = "frames/s"


class DrMarioPlanner:
    """The placement planner at 16 decision points of level 10 medium-speed games played with
    random feasible placements (``vecsim.bench.drmario.decision_states``): ``plan`` of
    one env (mask, costs and search tree) in turn, and ``plan_envs`` of all 16 in one call
    on Numba's threads (masks and costs)."""

    timeout = 600.0

    def setup(self):
        from vecsim.bench.drmario import decision_states
        from vecsim.games.drmario.state import State
        from vecsim.planners import drmario as planner_mod
        self.planner_mod = planner_mod
        self.states = decision_states(10, 1, 16)
        self.batch = State(*(np.concatenate(fields) for fields in zip(*self.states)))
        self.envs = np.arange(len(self.states))
        self.planner, self.envs_planner = planner_mod.Planner(), planner_mod.EnvsPlanner()
        self.time_plan()
        self.time_plan_envs()

    def time_plan(self):
        for state in self.states:
            self.planner_mod.plan(state, 0, self.planner)

    def time_plan_envs(self):
        self.planner_mod.plan_envs(self.batch, self.envs, self.envs_planner)


class DrMarioDecisionStep(_DrMarioStep):
    """Decision mode; steps/s are decisions/s."""

    MODE = "decision"
    params = (KERNELS, DECISION_ENVS)

    def track_decisions_per_second(self, kernel, num_envs):
        return bench.steps_per_second(self.step, num_envs, seconds=0.5)

    track_decisions_per_second.unit = "decisions/s"


class DrMarioShadowIngest:
    """Shadow mode: ``ShadowTwins.ingest`` of twins tracking the attract-demo capture through
    their own evidence streams (``vecsim.bench.drmario_shadow``), records a second of the
    calling thread's CPU (the ingest kernel is serial: one core)."""

    params = ((256, 1024),)
    param_names = ("twins",)
    timeout = 600.0  # a cold cache compiles the shadow kernels and the planner in setup

    def setup(self, twins):
        from vecsim.bench.drmario_shadow import DATA, track_capture
        from vecsim.games.drmario.perception import CaptureFacts
        self.track = track_capture
        self.capture = CaptureFacts(DATA / "nes_demo.json", DATA / "nes_demo_inputs.json")
        track_capture(self.capture, 2, 64)

    def track_records_per_second(self, twins):
        result = self.track(self.capture, twins, 300)
        return result["records"] / result["cpu"]

    track_records_per_second.unit = "records/s"
