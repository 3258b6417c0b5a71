"""Stepping speed of every vecsim game, and the time to a first step, cold and warm.

Every game in ``vecsim.game_ids()`` at each batch size in ``common.NUM_ENVS``; the kernels
are compiled (or loaded from the cache) in ``setup``, never inside a timed call.
"""

from __future__ import annotations

import shutil
import tempfile

# vecsim through common: it makes the checkout importable where asv installed nothing.
from .common import (FIRST_STEP_NUM_ENVS, GAMES, LARGE_NUM_ENVS, NUM_ENVS, bench, cache_setup_code, fill_cache,
                     first_step_code, peers, vecsim)


class Step:
    """``VecsimVectorEnv.step`` (NEXT_STEP autoreset, ``copy=True``) and ``Engine.step_no_reset``."""

    params = (GAMES, NUM_ENVS)
    param_names = ("game", "num_envs")

    def setup(self, game, num_envs):
        vecsim.warmup(game)
        self.step_runner = bench.vecsim_step_runner(game, num_envs)
        self.no_reset_runner = bench.vecsim_no_reset_runner(game, num_envs)
        self.step_runner.step()
        self.no_reset_runner.step()

    def teardown(self, game, num_envs):
        self.step_runner.close()
        self.no_reset_runner.close()

    def time_step(self, game, num_envs):
        self.step_runner.step()

    def time_step_no_reset(self, game, num_envs):
        self.no_reset_runner.step()

    def peakmem_step(self, game, num_envs):
        for _ in range(20):
            self.step_runner.step()

    def track_steps_per_second(self, game, num_envs):
        return bench.steps_per_second(self.step_runner.step, num_envs, seconds=0.5)

    track_steps_per_second.unit = "steps/s"

    def track_steps_per_second_no_reset(self, game, num_envs):
        return bench.steps_per_second(self.no_reset_runner.step, num_envs, seconds=0.5)

    track_steps_per_second_no_reset.unit = "steps/s"


class StepFloat32:
    """``Engine.step_no_reset`` with ``precision="float32"`` (fast-math kernels) on large batches."""

    params = (GAMES, LARGE_NUM_ENVS)
    param_names = ("game", "num_envs")

    def setup(self, game, num_envs):
        vecsim.warmup(game, precision="float32")
        self.runner = bench.vecsim_no_reset_runner(game, num_envs, precision="float32")
        self.runner.step()

    def teardown(self, game, num_envs):
        self.runner.close()

    def time_step_no_reset(self, game, num_envs):
        self.runner.step()

    def track_steps_per_second_no_reset(self, game, num_envs):
        return bench.steps_per_second(self.runner.step, num_envs, seconds=0.5)

    track_steps_per_second_no_reset.unit = "steps/s"


class StepOneThread(StepFloat32):
    """``StepFloat32`` with Numba on one thread (``numba.set_num_threads(1)`` before the engine
    is made): the serial kernels, whose step loops vectorise (until 2026-11-22 only the
    parallel kernels' did, and ``parallel="auto"`` picked them on the calling thread)."""

    def setup(self, game, num_envs):
        import numba

        self.threads = numba.get_num_threads()
        numba.set_num_threads(1)
        super().setup(game, num_envs)

    def teardown(self, game, num_envs):
        import numba

        super().teardown(game, num_envs)
        numba.set_num_threads(self.threads)


class SpeedupVsGymnasium:
    """``VecsimVectorEnv.step`` over the fastest Gymnasium vector env of the same game and size.

    Gymnasium's own vector env where it has one (``CartPoleVectorEnv``), else its
    ``SyncVectorEnv`` up to ``bench.SYNC_MAX_ENVS`` envs; skipped where neither applies.
    A ratio measured in one process, so it moves less with the machine than a raw speed.
    """

    params = (GAMES, NUM_ENVS)
    param_names = ("game", "num_envs")

    def setup(self, game, num_envs):
        theirs = bench.gymnasium_vector_runner(game, num_envs)
        if theirs is None and num_envs <= bench.SYNC_MAX_ENVS:
            theirs = bench.gymnasium_sync_runner(game, num_envs)
        if theirs is None:
            raise NotImplementedError(f"no Gymnasium reference for {game} with {num_envs} envs")
        vecsim.warmup(game)
        self.theirs = theirs
        self.ours = bench.vecsim_step_runner(game, num_envs)

    def teardown(self, game, num_envs):
        self.ours.close()
        self.theirs.close()

    def track_x_vs_gymnasium(self, game, num_envs):
        ours = bench.steps_per_second(self.ours.step, num_envs, seconds=0.5)
        theirs = bench.steps_per_second(self.theirs.step, num_envs, seconds=0.5)
        return ours / theirs

    track_x_vs_gymnasium.unit = "x"


class SpeedupVsOperant:
    """Float32 ``Engine.step_no_reset`` (and ``reset_envs``) over operant's vector env of the
    same game and size (CartPole, MountainCar, Pendulum), measured one after the other.

    operant runs in the Python named by ``VECSIM_OPERANT_PYTHON`` (its only Linux wheel is for
    CPython 3.8: see docs/performance.md#operant), else in this one where it imports; skipped where neither.
    """

    params = (tuple(g for g in GAMES if bench.reference_id(g) in peers.OPERANT_ENVS), NUM_ENVS)
    param_names = ("game", "num_envs")

    def setup(self, game, num_envs):
        try:
            operant = peers.open_operant()
        except RuntimeError as exc:
            raise NotImplementedError(str(exc)) from None
        if operant is None:
            raise NotImplementedError(f"operant is not installed here (nor {peers.OPERANT_PYTHON_VAR} set)")
        self.operant = operant
        vecsim.warmup(game, precision="float32")
        self.ours = bench.vecsim_no_reset_runner(game, num_envs, precision="float32")

    def teardown(self, game, num_envs):
        for name in ("ours", "operant"):
            obj = getattr(self, name, None)
            if obj is not None:
                obj.close()

    def track_x_no_reset_vs_operant(self, game, num_envs):
        ours = bench.steps_per_second(self.ours.step, num_envs, seconds=0.5)
        theirs = self.operant.measure(bench.reference_id(game), num_envs, seconds=0.5)
        return ours / theirs

    track_x_no_reset_vs_operant.unit = "x"


class _FirstStep:
    params = (GAMES, FIRST_STEP_NUM_ENVS)
    param_names = ("game", "num_envs")
    # Each sample is a whole fresh interpreter (seconds): few samples, no warm-up runs.
    number = 1
    repeat = (1, 3, 60.0)
    rounds = 1
    warmup_time = 0.0
    timeout = 600.0

    def setup(self, game, num_envs):
        self.tmp = tempfile.mkdtemp(prefix="vecsim-asv-")

    def teardown(self, game, num_envs):
        shutil.rmtree(self.tmp, ignore_errors=True)


class ColdFirstStep(_FirstStep):
    """Import, ``make_vec``, reset and first step with empty caches: compile time included."""

    def timeraw_cold_first_step(self, game, num_envs):
        cold = tempfile.mkdtemp(dir=self.tmp)  # a new empty cache for every sample
        return first_step_code(game, num_envs), cache_setup_code(cold)


class WarmFirstStep(_FirstStep):
    """The same with the cache filled in ``setup``: machine code loaded from disk."""

    def setup(self, game, num_envs):
        super().setup(game, num_envs)
        fill_cache(self.tmp, game, num_envs)

    def timeraw_warm_first_step(self, game, num_envs):
        return first_step_code(game, num_envs), cache_setup_code(self.tmp)
