"""A perception stand-in for shadow mode (``shadow.py``): games that run "elsewhere" and the
evidence a capture card and a decoder would make of them, with the imperfections and faults a
twin must live with.

* ``ExternalGames``: N games on the frame-exact rules, each fed the inputs its actuator was
  given frame by frame, and open to faults (``teleport_pill``, ``flip_cell``, ``skip_spawn``).
* ``CaptureFacts``: the facts of the emulator capture of the attract demo
  (``tests/data/drmario/nes_demo.json``), frame by frame, from the capture's own records.
* ``Perception``: turns a frame's true facts into an ``Evidence`` batch: a timestamp on the
  external clock (capture latency, latency jitter, clock drift, clock jumps), dropped frames,
  missed detections and wrong colors, each drawn from its own seeded stream.
* ``run_decisions``: the loop of a coordinator, its twins and their games, frame by frame.
* ``SimulatedLink``: ``ExternalGames`` seen through a ``Perception``, as the link of
  ``shadow_env.ShadowVectorEnv``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from vecsim.games.drmario import rules
from vecsim.games.drmario.replay import demo_start, frames
from vecsim.games.drmario.shadow import NTSC_FRAME_RATE, RULES_FIELDS, Evidence, ShadowTwins, evidence
from vecsim.games.drmario.state import allocate
from vecsim.games.drmario.tables import EMPTY, MARKED, SPAWN_X, SPAWN_Y, VIRUS


class Facts(NamedTuple):
    """The true facts of N games after one frame (what a perfect decoder reports)."""

    x: np.ndarray  # (N,) int64
    y: np.ndarray  # (N,) int64: from the bottom
    rot: np.ndarray  # (N,) int64
    colors: np.ndarray  # (N, 2) int64: -1 where the source does not know them
    spawn_id: np.ndarray  # (N,) int64: -1 where the source does not know it
    board: np.ndarray  # (N, 128) uint8
    viruses: np.ndarray  # (N, 3) int64
    clearing: np.ndarray  # (N,) int64


def board_facts(board: np.ndarray):
    """Viruses by color (N, 3) and the clearing flag (N,) of bottles ``board`` (N, 128)."""
    kind = board & 0xF0
    virus = (kind == VIRUS) & (board != EMPTY)
    viruses = np.stack([np.sum(virus & ((board & 15) == c), axis=1) for c in range(3)], axis=1).astype(np.int64)
    clearing = np.any((board != EMPTY) & ((kind == MARKED) | (board >= 0xF0)), axis=1).astype(np.int64)
    return viruses, clearing


def facts_of(s) -> Facts:
    """The true facts of every row of a drmario ``State``."""
    viruses, clearing = board_facts(s.board)
    colors = np.stack([s.falling // 3, s.falling % 3], axis=1)
    return Facts(s.x.copy(), s.y.copy(), s.rot.copy(), colors, s.pills_sent.copy(), s.board.copy(), viruses, clearing)


class ExternalGames:
    """``n`` games "elsewhere": a frame-mode ``State`` stepped one frame at a time with the
    inputs scheduled for each frame (``press``), and faults injected on purpose."""

    def __init__(self, state):
        self.state = state
        self.frame = 0
        self.n = state.x.shape[0]
        self._inputs: dict[int, np.ndarray] = {}

    @classmethod
    def levels(cls, seeds, level, speed) -> "ExternalGames":
        """Games at their level's first frame, as ``ShadowTwins.reset(seeds)`` starts its twins
        (``seeds``: LFSR states on the power-on cycle, one per game; ``level``, ``speed`` as
        ``DrMario-v0``'s, checked by its ``check_params``)."""
        from vecsim.games import drmario

        seeds = np.asarray(seeds)
        if seeds.ndim != 1 or seeds.size == 0:
            raise ValueError(f"ExternalGames.levels takes one seed per game (a 1-d array), but got shape {seeds.shape}")
        drmario.check_params({"mode": 0, "level": level, "speed": speed, "seed": seeds, "max_frames": 0})
        if np.any(seeds < 1):
            raise ValueError(f"ExternalGames.levels seed must be an LFSR state on the power-on cycle, "
                             f"but got seed={int(seeds.min())}")
        seeds = seeds.astype(np.int64)
        s = allocate(seeds.shape[0])
        lv = np.broadcast_to(np.asarray(level, np.int64), seeds.shape)
        sp = np.broadcast_to(np.asarray(speed, np.int64), seeds.shape)
        for i in range(seeds.shape[0]):
            rules.start_level(s, i, int(lv[i]), int(sp[i]), int(seeds[i]), 0)
        return cls(s)

    def press(self, i: int, start_frame: int, buttons: np.ndarray) -> None:
        """Game ``i`` gets controller byte ``buttons[k]`` on frame ``start_frame + k``, and no
        input after them: a script replaces whatever was queued from its first frame on."""
        self.cancel(i, start_frame)
        for k, b in enumerate(buttons):
            self._inputs.setdefault(start_frame + k, np.zeros(self.n, np.int64))[i] = b

    def cancel(self, i: int, from_frame: int) -> None:
        """Drop game ``i``'s queued inputs from frame ``from_frame`` on."""
        for f, row in self._inputs.items():
            if f >= from_frame:
                row[i] = 0

    def step(self) -> None:
        """Every game plays its next frame."""
        self.frame += 1
        frames(self.state, self._inputs.pop(self.frame, np.zeros(self.n, np.int64)))

    # -- faults -------------------------------------------------------------------------------
    def teleport_pill(self, i: int) -> bool:
        """Move game ``i``'s falling pill one column sideways (where it fits); False if it
        has no falling pill or no room."""
        s = self.state
        if s.next_action[i] != rules.FALLING:
            return False
        for dx in (1, -1):
            x = s.x[i] + dx
            if 0 <= x <= 6 + (s.rot[i] & 1) and rules.fits(s.board, i, x, s.y[i], s.rot[i]):
                s.x[i] += dx
                return True
        return False

    def flip_cell(self, i: int, rng: np.random.Generator) -> bool:
        """Give one of game ``i``'s viruses another color; False if it has none."""
        s = self.state
        cells = np.flatnonzero((s.board[i] & 0xF0) == VIRUS)
        if cells.size == 0:
            return False
        k = rng.choice(cells)
        s.board[i, k] = VIRUS | ((int(s.board[i, k] & 3) + 1) % 3)
        return True

    def skip_spawn(self, i: int) -> bool:
        """Game ``i`` skips a pill of its reserve: the preview moves on and the spawn count
        with it; False unless its pill is falling (between spawns)."""
        s = self.state
        if s.next_action[i] != rules.FALLING:
            return False
        s.next_pill[i] = s.reserve[i, s.reserve_index[i]]
        s.reserve_index[i] = (s.reserve_index[i] + 1) & 127
        s.pills_sent[i] += 1
        return True


class CaptureFacts:
    """The facts of ``nes_demo.json``'s frames from its own records (pose, bottle; the spawn
    id counted from the pose's returns to the spawn pose; no colors), and the start state and
    inputs that reproduce it (``tests/data/drmario/nes_demo_inputs.json``)."""

    FIRST_PASS = 129  # capture frame of the first main-loop pass

    def __init__(self, capture_path: Path, inputs_path: Path):
        capture = json.loads(Path(capture_path).read_text())
        inputs = json.loads(Path(inputs_path).read_text())
        board = np.frombuffer(bytes.fromhex(capture["initial_board"]), np.uint8).copy()
        self.start_board = board.copy()
        self.start_held, self.start_charge = int(inputs["held"]), int(inputs["hor_velocity"])
        self.buttons = np.frombuffer(bytes.fromhex(inputs["buttons"]), np.uint8).copy()
        rows = []
        # The first pill spawns where the pose registers already are: its spawn id (2, the
        # counter is 1 after the level's setup) shows from its first move on.
        x, y, rot, spawn = SPAWN_X, SPAWN_Y, 0, -1
        for record in capture["frames"]:
            nx, ny, nrot = record.get("pc", x), record.get("pr", y), record.get("po", rot)
            if (nx, ny, nrot) != (x, y, rot) and spawn < 0:
                spawn = 2
            elif (nx, ny, nrot) == (SPAWN_X, SPAWN_Y, 0) and (x, y, rot) != (nx, ny, nrot):
                spawn += 1
            x, y, rot = nx, ny, nrot
            for index, _, new in record.get("bc", []):
                board[index] = new
            if record["f"] >= self.FIRST_PASS:
                rows.append((x, y, rot, spawn, board.copy()))
        self.x, self.y, self.rot, self.spawn_id = (np.array([r[k] for r in rows], np.int64) for k in range(4))
        self.board = np.stack([r[4] for r in rows])
        self.viruses, self.clearing = board_facts(self.board)
        self.frames = len(rows)  # frame k of the twin (k >= 1) is row k - 1

    def start_state(self, n: int = 1):
        """``n`` rows of the demo's state before its first pass, with the held buttons and
        charge the inputs start from."""
        s = demo_start(self.start_board, n)
        s.held[:], s.hor_velocity[:] = self.start_held, self.start_charge
        return s

    def facts(self, frame: int, n: int = 1) -> Facts:
        """The facts after twin frame ``frame`` (1 .. ``frames``), the same for ``n`` twins."""
        k = frame - 1
        rep = lambda a: np.repeat(a[k][None], n, axis=0)  # noqa: E731
        return Facts(rep(self.x), rep(self.y), rep(self.rot), np.full((n, 2), -1, np.int64), rep(self.spawn_id),
                     rep(self.board), rep(self.viruses), rep(self.clearing))


@dataclass
class Perception:
    """What a capture and a decoder make of ``n`` games' true facts, frame by frame.

    A frame ``f``'s record is stamped ``start_time + f * period * (1 + drift_ppm / 1e6) +
    latency + jitter`` (``jitter`` a whole number of frames in ``[0, jitter_frames]``), plus
    ``clock_jump`` seconds from frame ``jump_frame`` on; it is dropped with probability
    ``drop``; each fact is missed with probability ``miss`` (not reported); each reported
    pill or cell color is wrong with probability ``wrong_color`` (the record's confidence then
    ``wrong_confidence``)."""

    n: int
    seed: int = 0
    latency_frames: float = 2.0
    jitter_frames: int = 3
    drop: float = 0.05
    miss: float = 0.0
    wrong_color: float = 0.0
    wrong_confidence: float = 0.4
    drift_ppm: float = 0.0
    start_time: float = 0.0
    clock_jump: np.ndarray = None  # (n,) seconds added from jump_frame on
    jump_frame: np.ndarray = None  # (n,) frames
    rng: np.random.Generator = field(init=False)
    batch: Evidence = field(init=False)

    def __post_init__(self):
        self.rng = np.random.default_rng(self.seed)
        self.batch = evidence(self.n)
        self.batch.cells_seen[:] = True
        if self.clock_jump is None:
            self.clock_jump = np.zeros(self.n)
        if self.jump_frame is None:
            self.jump_frame = np.full(self.n, np.iinfo(np.int64).max)

    def observe(self, facts: Facts, frame: int) -> Evidence:
        """The batch of records of frame ``frame`` (a view, rewritten by the next call)."""
        n, rng, ev = self.n, self.rng, self.batch
        period = (1.0 / NTSC_FRAME_RATE) * (1.0 + self.drift_ppm * 1e-6)
        jitter = rng.integers(0, self.jitter_frames + 1, n) if self.jitter_frames else np.zeros(n, np.int64)
        ev.time[:] = (self.start_time + frame * period + (self.latency_frames + jitter) / NTSC_FRAME_RATE
                      + np.where(frame >= self.jump_frame, self.clock_jump, 0.0))
        ev.present[:] = rng.random(n) >= self.drop
        seen = lambda: rng.random(n) >= self.miss  # noqa: E731
        ev.pill_seen[:] = seen()
        ev.x[:], ev.y[:], ev.rot[:] = facts.x, facts.y, facts.rot
        ev.colors[:] = np.where(seen()[:, None], facts.colors, -1)
        ev.spawn_id[:] = np.where(seen(), facts.spawn_id, -1)
        ev.viruses[:] = np.where(seen()[:, None], facts.viruses, -1)
        ev.clearing[:] = np.where(seen(), facts.clearing, -1)
        ev.board[:] = facts.board
        ev.cells_seen[:] = seen()[:, None]
        ev.confidence[:] = 1.0
        if self.wrong_color > 0:
            wrong = rng.random(n) < self.wrong_color
            for i in np.flatnonzero(wrong):
                tiles = np.flatnonzero(ev.board[i] != EMPTY)
                if tiles.size and rng.random() < 0.5:
                    k = rng.choice(tiles)
                    ev.board[i, k] = (ev.board[i, k] & 0xF0) | ((int(ev.board[i, k] & 3) + 1) % 3)
                elif ev.colors[i, 0] >= 0:
                    ev.colors[i, 0] = (ev.colors[i, 0] + 1) % 3
            ev.confidence[wrong] = self.wrong_confidence
        return ev


class SimulatedLink:
    """A link for ``shadow_env.ShadowVectorEnv`` (its ``start``, ``send``, ``receive`` and
    ``stop``) over ``ExternalGames`` at ``level`` and ``speed`` seen through ``perception``:
    every ``receive`` plays each game one frame and returns the records of that frame. A game
    restarted at the link's frame ``F`` counts its frames from there, and its scripts' frames
    with it."""

    def __init__(self, perception: "Perception", level=0, speed=1):
        self.perception, self.level, self.speed = perception, level, speed
        self.games = None
        self.first = np.zeros(perception.n, np.int64)  # the link's frame at each game's (re)start

    def start(self, seeds, which) -> np.ndarray:
        n, rows = self.perception.n, np.flatnonzero(which)
        if self.games is None and rows.size != n:
            raise RuntimeError("SimulatedLink.start: the first start starts every game")
        level, speed = (np.broadcast_to(np.asarray(v), (n,))[rows] for v in (self.level, self.speed))
        fresh = ExternalGames.levels(np.asarray(seeds)[rows], level, speed)  # checks seeds, level and speed
        first_start = self.games is None
        if first_start:
            self.games = fresh
        for k, i in enumerate(rows):
            if not first_start:  # the first start's games are the fresh ones already
                for name in RULES_FIELDS:
                    getattr(self.games.state, name)[i] = getattr(fresh.state, name)[k]
            self.games.cancel(i, self.games.frame + 1)
            self.first[i] = self.games.frame
        period = (1.0 / NTSC_FRAME_RATE) * (1.0 + self.perception.drift_ppm * 1e-6)
        return np.full(n, self.perception.start_time) + self.first * period

    def send(self, script, which) -> None:
        for i in np.flatnonzero(which):
            self.games.press(i, int(self.first[i] + script.start_frame[i]), script.buttons[i, :script.length[i]])

    def receive(self):
        self.games.step()
        facts = facts_of(self.games.state)
        return self.perception.observe(facts, self.games.frame)

    def stop(self, which) -> None:
        for i in np.flatnonzero(which):
            self.games.cancel(i, self.games.frame + 1)


FAULTS = ("teleport", "flip", "skip", "jump")


class Fault(NamedTuple):
    """A fault injected on purpose into game ``twin`` at the first frame from ``frame`` on
    where it applies: ``"teleport"`` (``ExternalGames.teleport_pill``), ``"flip"``
    (``flip_cell``), ``"skip"`` (``skip_spawn``) or ``"jump"`` (the capture clock jumps by
    ``seconds``)."""

    kind: str
    twin: int
    frame: int
    seconds: float = 0.0


class DecisionRun(NamedTuple):
    """What ``run_decisions`` saw."""

    decisions: list  # per twin: (action, its row of ``ShadowTwins.info`` and "obs") at each of its decisions
    frames: int  # frames played
    injected: np.ndarray  # (len(faults),) int64: the frame each fault was injected before, -1 never
    detected: list  # per twin: the game frames after which a desync was declared
    events: list  # per twin: the twin's own telemetry (``shadow.TELEMETRY`` from "desync"), (name, frame, value)


def run_decisions(twins: ShadowTwins, games: ExternalGames, perception: Perception, choose, max_frames: int,
                  faults=(), seed: int = 0) -> DecisionRun:
    """Coordinator, twins and games, frame by frame for at most ``max_frames`` frames or until
    every twin ends: each twin awaiting a decision gets ``choose(info, i)``'s placement, its
    script goes to its game's actuator, every game plays a frame, the perception records it
    and the twins ingest the records. ``faults``: ``Fault``s, each injected before the first
    frame from its ``frame`` on where it applies (``seed``: the flipped cells' stream). It reads
    the twins' telemetry as it goes: their own events (desync, resyncs) are in ``events``."""
    from vecsim.games.drmario.shadow import TM_DESYNC

    n = twins.num_twins
    decisions = [[] for _ in range(n)]
    events = [[] for _ in range(n)]
    detected = [[] for _ in range(n)]
    injected = np.full(len(faults), -1, np.int64)
    rng = np.random.default_rng(seed)
    for f in range(1, max_frames + 1):
        waiting = twins.awaiting
        if waiting.any():
            info = twins.info
            obs = twins.observations
            actions = np.zeros(n, np.int64)
            for i in np.flatnonzero(waiting):
                actions[i] = choose(info, i)
                row = {key: np.copy(value[i]) for key, value in info.items()}
                row["obs"] = obs[i]
                decisions[i].append((int(actions[i]), row))
            script = twins.decide(actions, waiting)
            for i in np.flatnonzero(waiting):
                games.press(i, int(script.start_frame[i]), script.buttons[i, :script.length[i]])
        for k, fault in enumerate(faults):
            if injected[k] < 0 and f >= fault.frame and _inject(fault, games, perception, f, rng):
                injected[k] = f
        games.step()
        desyncs = twins.tracking.desyncs.copy()
        void = twins.scripts_void
        twins.ingest(perception.observe(facts_of(games.state), f))
        for i in np.flatnonzero(twins.tracking.desyncs != desyncs):
            detected[i].append(f)
        for i in np.flatnonzero(twins.scripts_void & ~void):
            games.cancel(i, f + 1)  # the actuator stops
        if f % 256 == 0 or f == max_frames:
            _take_events(twins, events, TM_DESYNC)
        if np.all(twins.terminal_reason != 0):
            break
    _take_events(twins, events, TM_DESYNC)
    return DecisionRun(decisions, f, injected, detected, events)


def _inject(fault: Fault, games: ExternalGames, perception: Perception, frame: int, rng) -> bool:
    i = fault.twin
    if fault.kind == "jump":
        perception.clock_jump[i], perception.jump_frame[i] = fault.seconds, frame
        return True
    if fault.kind == "teleport":
        return games.teleport_pill(i)
    if fault.kind == "flip":
        return games.flip_cell(i, rng)
    if fault.kind == "skip":
        return games.skip_spawn(i)
    raise ValueError(f"Fault kind must be one of {FAULTS}, but got kind={fault.kind!r}")


def _take_events(twins: ShadowTwins, events: list, first_kind: int) -> None:
    got = twins.telemetry.read()
    for i, kind, stamp, value in zip(got.env, got.kind, got.stamp, got.value):
        if kind >= first_kind:
            events[i].append((got.names[kind], int(stamp), int(value)))


def run_capture(twins: ShadowTwins, capture: CaptureFacts, perception: Perception, faults=(),
                frames: int | None = None) -> DecisionRun:
    """Twins driven by the capture's inputs (``driven_by="inputs"``, started with
    ``capture.start_state`` and ``capture.buttons`` scheduled) track the capture frame by
    frame, through ``perception``. ``faults`` change what the twins are shown from their frame
    on: ``"teleport"`` the pill one column over until the next spawn, ``"flip"`` the color of a
    virus while the capture still has it, ``"skip"`` the spawn ids (one more), ``"jump"`` the
    clock. Returns a ``DecisionRun`` with no decisions."""
    from vecsim.games.drmario.shadow import TM_DESYNC

    n = twins.num_twins
    last = capture.frames if frames is None else min(frames, capture.frames)
    events = [[] for _ in range(n)]
    detected = [[] for _ in range(n)]
    injected = np.full(len(faults), -1, np.int64)
    flipped = {}  # twin -> (cell, the capture's byte there, the byte shown)
    for f in range(1, last + 1):
        facts = capture.facts(f, n)
        for k, fault in enumerate(faults):
            i = fault.twin
            if f < fault.frame:
                continue
            if fault.kind == "jump" and injected[k] < 0:
                perception.clock_jump[i], perception.jump_frame[i] = fault.seconds, f
            elif fault.kind == "skip":
                facts.spawn_id[i] += 1
            elif fault.kind == "teleport":
                if injected[k] >= 0 and facts.spawn_id[i] != capture.spawn_id[injected[k] - 1]:
                    continue  # the next pill
                facts.x[i] = facts.x[i] + 1 if facts.x[i] < 6 else facts.x[i] - 1
            elif fault.kind == "flip":
                if i not in flipped:
                    cells = np.flatnonzero((facts.board[i] & 0xF0) == VIRUS)
                    if cells.size == 0:
                        continue
                    cell = int(cells[0])
                    flipped[i] = (cell, facts.board[i, cell], VIRUS | ((int(facts.board[i, cell] & 3) + 1) % 3))
                cell, byte, shown = flipped[i]
                if facts.board[i, cell] == byte:
                    facts.board[i, cell] = shown
                    facts.viruses[i], facts.clearing[i] = (a[0] for a in board_facts(facts.board[i][None]))
            if injected[k] < 0:
                injected[k] = f
        desyncs = twins.tracking.desyncs.copy()
        twins.ingest(perception.observe(facts, f))
        for i in np.flatnonzero(twins.tracking.desyncs != desyncs):
            detected[i].append(f)
        if f % 256 == 0:
            _take_events(twins, events, TM_DESYNC)
    _take_events(twins, events, TM_DESYNC)
    return DecisionRun([[] for _ in range(n)], last, injected, detected, events)
