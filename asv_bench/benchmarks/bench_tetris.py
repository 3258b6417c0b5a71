"""Tetris-v0 per action mode: stepping speed, memory, the legal-action choice and Dellacherie's policy.

``primitive`` steps take one random input in ``[0, 8)`` (drawn ahead of time); ``drop`` and
``reach`` steps place one piece per env, a random legal placement chosen by
``bench.LegalActions`` (an argmax of random keys times the action mask, into preallocated
buffers) inside the timed step, so their steps/s are placement decisions per second. Every
step is ``Engine.step`` (NEXT_STEP autoreset), through ``bench.variant_runner`` (the modes are
Tetris's ``BENCH_VARIANTS``). The kernels are compiled (or loaded from the cache) in ``setup``,
never inside a timed call. tetris-gymnasium's driver is in ``vecsim.bench.peers``.

``TetrisParallelStep`` times the parallel kernel at 256 and 4096 envs in primitive mode.

``LockFeatures`` times the board features of a lock alone, incremental against the whole-board count.

``SpeedupVsTetrisGymnasium`` runs only where tetris-gymnasium and JAX are installed (they are
no dependency of vecsim), and ``Dellacherie`` only where ``vecsim.games.tetris.agent`` exists.
"""

from __future__ import annotations

import numpy as np

# vecsim through common: it makes the checkout importable where asv installed nothing.
from .common import bench, peers, vecsim

try:
    from vecsim.collect.tetris import dellacherie_actions
except ImportError:
    dellacherie_actions = None

GAME = bench.full_id("Tetris-v0")
#: Its action modes, as it declares them for benchmarks (BENCH_VARIANTS).
MODES = tuple(bench.bench_variants(GAME))
PLACEMENT_MODES = ("drop", "reach")
#: A small batch and a large one (below and above Tetris's parallel threshold of 64: the serial
#: kernel and the parallel one).
NUM_ENVS = (16, 4096)


class _Tetris:
    # A reach step of 4096 envs can take a tenth of a second or more on a small machine, and a cold cache
    # compiles the Tetris kernels (tens of seconds) in setup.
    timeout = 600.0

    def _close(self, *names):
        # asv runs teardown after a setup that skipped (NotImplementedError): close what exists.
        for name in names:
            obj = getattr(self, name, None)
            if obj is not None:
                obj.close()


class TetrisStep(_Tetris):
    """``Engine.step`` per action mode; steps/s are placement decisions/s in drop and reach mode."""

    params = (MODES, NUM_ENVS)
    param_names = ("action_mode", "num_envs")

    def setup(self, action_mode, num_envs):
        vecsim.warmup(GAME)
        self.runner = bench.variant_runner(GAME, action_mode, num_envs)
        self.runner.step()

    def teardown(self, action_mode, num_envs):
        self._close("runner")

    def time_step(self, action_mode, num_envs):
        self.runner.step()

    def peakmem_step(self, action_mode, num_envs):
        for _ in range(3):
            self.runner.step()

    def track_steps_per_second(self, action_mode, num_envs):
        return bench.steps_per_second(self.runner.step, num_envs, seconds=0.5)

    track_steps_per_second.unit = "steps/s"


class TetrisParallelStep(_Tetris):
    """``Engine.step`` of the parallel kernel (``parallel=True``) in primitive mode at batch sizes
    where most steps end an episode somewhere: each thread steps its share of the envs in one
    call, resetting the envs due for reset inside it, one parallel region a step. Run with
    ``NUMBA_NUM_THREADS=2`` or more to compare against ``TetrisStep``'s serial figures."""

    params = ((256, 4096, 16384),)
    param_names = ("num_envs",)

    def setup(self, num_envs):
        vecsim.warmup(GAME)
        self.runner = bench.variant_runner(GAME, "primitive", num_envs, parallel=True)
        self.runner.step()

    def teardown(self, num_envs):
        self._close("runner")

    def time_step(self, num_envs):
        self.runner.step()

    def track_steps_per_second(self, num_envs):
        return bench.steps_per_second(self.runner.step, num_envs, seconds=0.5)

    track_steps_per_second.unit = "steps/s"


class TetrisLegalActions(_Tetris):
    """The benchmark's own action choice alone (``bench.LegalActions``): its share of ``time_step``."""

    params = (PLACEMENT_MODES, NUM_ENVS)
    param_names = ("action_mode", "num_envs")

    def setup(self, action_mode, num_envs):
        vecsim.warmup(GAME)
        self.engine = vecsim.make(GAME, num_envs, action_mode=action_mode)
        self.engine.reset(seed=0)
        self.choose = bench.LegalActions(self.engine.masks)
        self.choose()  # first touch of its buffers

    def teardown(self, action_mode, num_envs):
        self._close("engine")

    def time_legal_actions(self, action_mode, num_envs):
        self.choose()


class SpeedupVsTetrisGymnasium(_Tetris):
    """vecsim primitive steps/s over tetris-gymnasium's ``jax.jit(jax.vmap(step))`` on CPU.

    Both with random inputs, both measured in one process, so the ratio moves less with the
    machine than a raw speed. Skipped where tetris-gymnasium or JAX is not installed.
    """

    params = (NUM_ENVS,)
    param_names = ("num_envs",)

    def setup(self, num_envs):
        if not peers.tetris_gymnasium_available():
            raise NotImplementedError("tetris-gymnasium and jax are not installed")
        vecsim.warmup(GAME)
        self.theirs = peers.tetris_gymnasium_runner(num_envs)
        self.ours = bench.variant_runner(GAME, "primitive", num_envs)

    def teardown(self, num_envs):
        self._close("ours", "theirs")

    def track_x_vs_tetris_gymnasium(self, num_envs):
        ours = bench.steps_per_second(self.ours.step, num_envs, seconds=0.5)
        theirs = bench.steps_per_second(self.theirs.step, num_envs, seconds=0.5)
        return ours / theirs

    track_x_vs_tetris_gymnasium.unit = "x"

    def track_tetris_gymnasium_steps_per_second(self, num_envs):
        return bench.steps_per_second(self.theirs.step, num_envs, seconds=0.5)

    track_tetris_gymnasium_steps_per_second.unit = "steps/s"


class Dellacherie(_Tetris):
    """Dellacherie's policy (``vecsim.collect.tetris.dellacherie_actions``) choosing every env's placement.

    ``time_actions``: the policy alone (every legal placement rated on a scratch board);
    ``time_actions_and_step`` and ``track_decisions_per_second``: the policy then
    ``Engine.step``, the loop of an agent playing. Skipped where the agent module is missing.
    """

    params = (PLACEMENT_MODES, NUM_ENVS)
    param_names = ("action_mode", "num_envs")

    def setup(self, action_mode, num_envs):
        if dellacherie_actions is None:
            raise NotImplementedError("vecsim.games.tetris.agent is not available")
        vecsim.warmup(GAME)
        self.engine = vecsim.make(GAME, num_envs, action_mode=action_mode)
        self.engine.reset(seed=0)
        self.actions = np.zeros(num_envs, dtype=np.int64)
        self.play()  # compiles (or loads) the policy's kernel

    def teardown(self, action_mode, num_envs):
        self._close("engine")

    def play(self):
        self.engine.step(dellacherie_actions(self.engine, out=self.actions))

    def time_actions(self, action_mode, num_envs):
        dellacherie_actions(self.engine, out=self.actions)

    def time_actions_and_step(self, action_mode, num_envs):
        self.play()

    def peakmem_actions_and_step(self, action_mode, num_envs):
        for _ in range(3):
            self.play()

    def track_decisions_per_second(self, action_mode, num_envs):
        return bench.steps_per_second(self.play, num_envs, seconds=0.5)

    track_decisions_per_second.unit = "steps/s"


class LockFeatures:
    """The board features after a lock that clears no line: ``lock_features`` (from the rows and
    columns the piece changed) against ``board_features`` (the whole board), each over 4096
    mid-game boards (6-16 filled rows with holes) with a piece just dropped in. The kernels
    compile in ``setup``."""

    timeout = 300.0
    BOARDS = 4096

    def setup(self):
        import numba

        from vecsim.games.tetris.pieces import FULL_ROW, H, HEIGHT, ROW_MASKS, W, WIDTH
        from vecsim.games.tetris.rules import N_FEATURES, blocked, board_features, drop_row, lock_features

        rng = np.random.default_rng(0)
        n = self.BOARDS
        rows = np.zeros((n, H), np.uint16)
        self.before = np.zeros((n, N_FEATURES), np.int16)
        self.poses = np.zeros((n, 4), np.int64)
        k = 0
        while k < n:
            rows[k] = 0
            for y in range(int(rng.integers(8, 18)), H):
                bits = int(rng.integers(0, FULL_ROW)) | (int(rng.integers(0, FULL_ROW)) & int(rng.integers(0, FULL_ROW)))
                rows[k, y] = bits if bits != FULL_ROW else bits & ~1
            t, r = int(rng.integers(7)), int(rng.integers(4))
            x = int(rng.integers(0, W - WIDTH[t, r] + 1))
            if blocked(rows, k, t, r, 0, x):
                continue
            y = drop_row(rows, k, t, r, 0, x)
            if any((int(rows[k, y + j]) | (int(ROW_MASKS[t, r, j]) << x)) == FULL_ROW for j in range(HEIGHT[t, r])):
                continue
            board_features(rows, k, self.before)
            for j in range(HEIGHT[t, r]):
                rows[k, y + j] |= np.uint16(int(ROW_MASKS[t, r, j]) << x)
            self.poses[k] = t, r, y, x
            k += 1
        self.rows = rows
        self.feat = self.before.copy()

        @numba.njit
        def whole(rows, feat):
            for i in range(rows.shape[0]):
                board_features(rows, i, feat)

        @numba.njit
        def incremental(rows, before, feat, poses):
            for i in range(rows.shape[0]):
                for c in range(15):
                    feat[i, c] = before[i, c]
                lock_features(rows, i, feat, poses[i, 0], poses[i, 1], poses[i, 2], poses[i, 3])

        self.whole, self.incremental = whole, incremental
        whole(rows, self.feat)
        incremental(rows, self.before, self.feat, self.poses)

    def time_board_features(self):
        self.whole(self.rows, self.feat)

    def time_lock_features(self):
        self.incremental(self.rows, self.before, self.feat, self.poses)


class ReachPlanner:
    """The reach-mode search alone: ``vecsim.planners.tetris.plan_decision`` (the costs of both
    reach halves, as every reach step computes them) over 4096 boards of random reach play
    (512 envs, 8 placements each, guideline rules: gravity 1, SRS, hold), one thread.
    ``track_decisions_per_second`` is boards searched per second of the loop. The kernels compile
    in ``setup``."""

    timeout = 600.0
    ENVS, PLACEMENTS = 512, 8

    def setup(self):
        import numba

        from vecsim.games.tetris.pieces import NONE
        from vecsim.planners.tetris import SCRATCH, plan_decision

        engine = vecsim.make(GAME, self.ENVS, action_mode="reach", parallel=False)
        engine.reset(seed=0)
        rng = np.random.default_rng(0)
        rows, pieces = [], []
        for _ in range(self.PLACEMENTS):
            s = engine.state
            rows.append(s.rows.copy())
            pieces.append(np.stack([s.piece, np.where(s.hold == NONE, s.queue[:, 0], s.hold)], axis=1))
            engine.step((rng.random(engine.masks.shape) * engine.masks).argmax(axis=1))
        n_actions = engine.masks.shape[1]
        engine.close()
        self.rows = np.concatenate(rows)
        self.pieces = np.concatenate(pieces).astype(np.int64)
        n = len(self.rows)
        self.cost = np.zeros((n, n_actions), np.int16)
        self.bits = np.zeros((n, SCRATCH), np.int16)
        self.ymm = np.zeros((n, 2), np.int64)

        @numba.njit
        def decide_all(rows, pieces, cost, bits, ymm):
            for i in range(rows.shape[0]):
                plan_decision(rows, i, pieces[i, 0], pieces[i, 1], True, 2, 1, 5, cost, bits, ymm)

        self.decide_all = decide_all
        self.decide()

    def decide(self):
        self.decide_all(self.rows, self.pieces, self.cost, self.bits, self.ymm)

    def time_decisions(self):
        self.decide()

    def track_decisions_per_second(self):
        return bench.steps_per_second(self.decide, len(self.rows), seconds=0.5)

    track_decisions_per_second.unit = "decisions/s"
