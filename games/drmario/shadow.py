"""Shadow mode: Dr. Mario's world kernel as a digital twin of a game that runs elsewhere (an
emulator, a console seen through a capture card).

Each twin keeps two rows of the frame-exact rules (``rules.frame``):

* the *plan*, a decision-mode row that runs ahead from one decision point to the next exactly
  as simulation mode does (``decision.step_decision``, called by symbol: the same compiled
  code as ``vecsim/DrMario-v0``), so the coordinator sees the same mask, costs, ``tau`` and
  outputs at each decision;
* the *track*, a frame-mode row that replays the inputs sent to the external game frame by
  frame as evidence of those frames arrives, and keeps the observable facts of its last
  ``HISTORY`` frames to compare the evidence with.

Evidence (``Evidence``, one record per twin and call) carries an external timestamp, a
confidence and any subset of the decoded facts. The twin maps the timestamp to a frame with
its timebase (``t = a + b * frame``, fitted by weighted least squares with forgetting to the
*anchors*: records whose facts changed since the twin's last record, each paired with the
first frame at which the track shows the new facts), looks for a frame within ``window`` of it
whose facts agree, and counts the records that agree with none. ``desync_after`` of those in
a row (each at least ``min_confidence``) is a desync: a ``desync`` telemetry event, then the
twin's recovery policy. ``"soft"`` re-locks the timebase on the next record that shows a change,
at the frame of the track's history where that change first appears (the clock moved, not the
game); ``"hard"`` does that too, or, when no frame of the history explains the records (or the
twin had not locked again since its last desync), rebuilds both rows from the first
high-confidence record of a newly spawned pill (the gravity counter is 0 at every spawn, so the
board, the pill and its spawn id pin the whole state down; meanwhile ``scripts_void``);
``"end"``, or a soft resync that cannot, ends the twin with ``terminal_reason`` ``DESYNC``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from vecsim.core.jit import exact
from vecsim.core.scratch import thread_row
from vecsim.core.symbol_call import by_symbol
from vecsim.core.telemetry import push_event
from vecsim.games.drmario import decision, rules
from vecsim.games.drmario.state import SCRIPT_CAPACITY, State
from vecsim.games.drmario.tables import EMPTY, MARKED, MAX_SPEED_UPS, SPAWN_X, SPAWN_Y, VIRUS

#: The NES's NTSC frame rate (Hz): 39,375,000 / 655,171 (a 21.477 MHz crystal, 341 x 262 - 0.5 dots).
NTSC_FRAME_RATE = 39375000 / 655171
#: Frames of each twin's past kept to compare evidence with (and to re-lock on).
HISTORY = 64
#: Frames of inputs scheduled ahead of the track (a ring; a step of the plan fits many times).
SCHEDULE = 8192
#: ``terminal_reason`` of a twin ended by a desync (after ``rules``' outcomes 0..4).
DESYNC = 5
#: Recovery policies, per twin.
RECOVERIES = ("end", "soft", "hard")
END, SOFT, HARD = range(3)
#: How a twin's inputs are known, per twin: from its own decisions, or given frame by frame.
DECISIONS, INPUTS = 0, 1
#: Quality flags, bits of ``ShadowTwins.quality``.
LOCKED, TIMEBASE_STABLE, PARTIAL, DESYNC_SUSPECTED = 1, 2, 4, 8
QUALITY_FLAGS = ("locked", "timebase_stable", "partially_observed", "desync_suspected")
#: What a record disagreed on, bits of ``ShadowTwins.mismatch`` (and of a ``desync`` event's value).
MISMATCH_POSE, MISMATCH_SPAWN, MISMATCH_COLORS, MISMATCH_CELLS, MISMATCH_VIRUSES, MISMATCH_CLEARING, \
    MISMATCH_TIME = 1, 2, 4, 8, 16, 32, 64
MISMATCHES = ("pose", "spawn", "colors", "cells", "viruses", "clearing", "time")
#: Telemetry kinds: the rules' (``rules.TELEMETRY``, stamped with the track's frame count) then the
#: twin's, stamped with twin frames: ``desync`` (at the declaring record's mapped frame; value: the
#: mismatch bits), ``soft_resync`` (at the frame re-locked on; value: the frames the timebase
#: moved) and ``hard_resync`` (at the frame rebuilt at; value: the spawn id rebuilt from).
TELEMETRY = rules.TELEMETRY + ("desync", "soft_resync", "hard_resync")
TM_DESYNC, TM_SOFT_RESYNC, TM_HARD_RESYNC = range(len(rules.TELEMETRY), len(TELEMETRY))
#: Records a soft resync waits, after the desync, for one that shows a change to re-lock on.
SOFT_PATIENCE = 120
#: Records in a row that agree with the track before a twin counts as locked (again).
LOCK_AFTER = 3
#: Forgetting factor of the timebase's anchors, per anchor.
FORGET = 0.995
#: Weight of the nominal frame period in the timebase's fit, in frames squared.
PERIOD_PRIOR = 1.0e7
#: Weight of the latency given to ``reset`` against the anchors' (1 each): a guess, gone after a few.
START_WEIGHT = 0.05
#: Indices into ``Tracking.timebase``.
TB_W, TB_F, TB_T, TB_FF, TB_FT, TB_A, TB_B, TB_VAR, TB_ANCHORS = range(9)
#: Observable word of a frame: bit fields of the facts a record can carry.
_X, _Y, _ROT, _FALLING_ID, _CLEARING, _SPAWN = 0, 3, 7, 9, 13, 16
_VIRUS_SHIFT = 32  # 7 bits a color from here


class Evidence(NamedTuple):
    """One record per twin (``evidence(num_twins)`` allocates a batch); a fact marked unseen
    (``-1``, ``False``) is not compared. ``N`` twins."""

    present: np.ndarray  # (N,) bool: the twin has a record in this call
    time: np.ndarray  # (N,) float64: external timestamp of the capture, seconds
    confidence: np.ndarray  # (N,) float32: 0..1, the perception's confidence in the record
    pill_seen: np.ndarray  # (N,) bool: x, y, rot hold the falling pill's pose
    x: np.ndarray  # (N,) int64: pill anchor column 0..7
    y: np.ndarray  # (N,) int64: pill anchor row from the bottom 0..15
    rot: np.ndarray  # (N,) int64: rotation 0..3
    colors: np.ndarray  # (N, 2) int64: the pill's 1st and 2nd color (0 Y, 1 R, 2 B), -1 unseen
    spawn_id: np.ndarray  # (N,) int64: pills thrown in the level (the spawn's number), -1 unseen
    board: np.ndarray  # (N, 128) uint8: decoded bottle bytes (the ROM's tile bytes)
    cells_seen: np.ndarray  # (N, 128) bool: the cells of ``board`` this record reports
    viruses: np.ndarray  # (N, 3) int64: viruses left by color, -1 unseen
    clearing: np.ndarray  # (N,) int64: 1 while matched tiles are on the bottle, 0 not, -1 unseen


def evidence(num_twins: int) -> Evidence:
    """An ``Evidence`` batch of ``num_twins`` records, every fact unseen and no record present."""
    n = num_twins
    return Evidence(np.zeros(n, bool), np.zeros(n), np.ones(n, np.float32), np.zeros(n, bool),
                    np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64),
                    np.full((n, 2), -1, np.int64), np.full(n, -1, np.int64), np.full((n, 128), EMPTY, np.uint8),
                    np.zeros((n, 128), bool), np.full((n, 3), -1, np.int64), np.full(n, -1, np.int64))


class Tracking(NamedTuple):
    """A batch of twins' tracking state beside their two rows of rules (``N`` twins)."""

    frame: np.ndarray  # (N,) int64: frames the track has played
    plan_frame: np.ndarray  # (N,) int64: the frame the plan row stands at
    awaiting: np.ndarray  # (N,) int64: 1 while the plan waits at a decision point for ``decide``
    driven: np.ndarray  # (N,) int64: DECISIONS (``decide`` schedules the inputs) or INPUTS (``schedule_inputs``)
    decisions: np.ndarray  # (N,) int64: decision points the plan has stood at
    schedule: np.ndarray  # (N, SCHEDULE) uint8: the controller byte of frame f at f % SCHEDULE
    scheduled_to: np.ndarray  # (N,) int64: the last frame whose input is known
    history_from: np.ndarray  # (N,) int64: first frame of the history that belongs to the current track
    words: np.ndarray  # (N, HISTORY) int64: observable word of frame f at f % HISTORY
    boards: np.ndarray  # (N, HISTORY, 128) uint8: the bottle after frame f at f % HISTORY
    timebase: np.ndarray  # (N, 9) float64: the fit's sums, a, b, residual variance (frames^2), anchors
    start_time: np.ndarray  # (N,) float64: external time of frame 0 as given to ``reset``
    last_word: np.ndarray  # (N,) int64: the facts of the twin's last record that agreed (-1 none)
    last_seen: np.ndarray  # (N,) int64: bits of the facts that record carried
    streak: np.ndarray  # (N,) int64: records in a row that agreed with no frame
    agreed: np.ndarray  # (N,) int64: records in a row that agreed since the last desync
    mismatch: np.ndarray  # (N,) int64: MISMATCH_* bits of the twin's last record (0 agreed)
    offset: np.ndarray  # (N,) int64: matched frame minus mapped frame of the last record that agreed
    consistency: np.ndarray  # (N,) float64: moving average of agreement, 1 all records agreed
    quality: np.ndarray  # (N,) int64: QUALITY bits
    policy: np.ndarray  # (N,) int64: END, SOFT or HARD
    resyncing: np.ndarray  # (N,) int64: 1 while a hard resync waits for a spawn to rebuild from
    relocked: np.ndarray  # (N,) int64: 1 once the twin is locked again after its last desync (a soft resync may follow)
    soft_pending: np.ndarray  # (N,) int64: 1 while a soft resync waits for a record that shows a change
    prev_word: np.ndarray  # (N,) int64: the facts of the twin's last record, agreeing or not
    prev_seen: np.ndarray  # (N,) int64: bits of the facts it carried
    reason: np.ndarray  # (N,) int64: terminal reason (0 tracking; rules' outcomes, DESYNC)
    desyncs: np.ndarray  # (N,) int64: desyncs declared
    records: np.ndarray  # (N,) int64: records ingested


# --- observables -----------------------------------------------------------------------------

@exact(inline="always")
def tile_class(v):
    """A bottle byte as a perception sees it: 0 empty, 1 + color a virus, 4 + color any other tile."""
    if v >= 0xF0:
        return 0
    if (v & 0xF0) == VIRUS:
        return 1 + (v & 3)
    return 4 + (v & 3)


@exact(inline="always")
def observable_word(s, i):
    """The facts of env ``i`` a record can carry, packed (``_X`` .. ``_VIRUS_SHIFT``)."""
    vy = vr = vb = 0
    clearing = 0
    for k in range(128):
        v = s.board[i, k]
        if v == EMPTY:
            continue
        if (v & 0xF0) == VIRUS:
            c = v & 15
            if c == 0:
                vy += 1
            elif c == 1:
                vr += 1
            elif c == 2:
                vb += 1
        elif (v & 0xF0) == MARKED or v >= 0xF0:
            clearing = 1
    return (s.x[i] | (s.y[i] << _Y) | (s.rot[i] << _ROT) | (s.falling[i] << _FALLING_ID) | (clearing << _CLEARING)
            | ((s.pills_sent[i] & 0xFFFF) << _SPAWN) | (vy << _VIRUS_SHIFT) | (vr << (_VIRUS_SHIFT + 7))
            | (vb << (_VIRUS_SHIFT + 14)))


#: Field masks of the observable word.
_POSE_BITS = (7 << _X) | (15 << _Y) | (3 << _ROT)
_COLOR_BITS = 15 << _FALLING_ID
_CLEARING_BITS = 1 << _CLEARING
_SPAWN_BITS = 0xFFFF << _SPAWN
_VIRUS_BITS = ((1 << 21) - 1) << _VIRUS_SHIFT
_CELL_BITS = 1 << 60  # a marker bit: the record reported cells


@exact(inline="always")
def record_word(ev, i):
    """The facts record ``i`` carries as an observable word, and the mask of the fields it
    carries (``_CELL_BITS`` when it reports cells)."""
    word = 0
    seen = 0
    if ev.pill_seen[i]:
        word |= (ev.x[i] & 7) | ((ev.y[i] & 15) << _Y) | ((ev.rot[i] & 3) << _ROT)
        seen |= _POSE_BITS
    if ev.colors[i, 0] >= 0 and ev.colors[i, 1] >= 0:
        word |= ((ev.colors[i, 0] * 3 + ev.colors[i, 1]) & 15) << _FALLING_ID
        seen |= _COLOR_BITS
    if ev.spawn_id[i] >= 0:
        word |= (ev.spawn_id[i] & 0xFFFF) << _SPAWN
        seen |= _SPAWN_BITS
    if ev.viruses[i, 0] >= 0 and ev.viruses[i, 1] >= 0 and ev.viruses[i, 2] >= 0:
        word |= ((ev.viruses[i, 0] & 127) | ((ev.viruses[i, 1] & 127) << 7)
                 | ((ev.viruses[i, 2] & 127) << 14)) << _VIRUS_SHIFT
        seen |= _VIRUS_BITS
    if ev.clearing[i] >= 0:
        word |= (ev.clearing[i] & 1) << _CLEARING
        seen |= _CLEARING_BITS
    for k in range(128):
        if ev.cells_seen[i, k]:
            seen |= _CELL_BITS
            break
    return word, seen


@exact(inline="always")
def mismatch_bits(tr, ev, i, frame, word, seen):
    """What record ``i`` (``word``/``seen``: ``record_word``) disagrees on with the track's
    ``frame`` (kept in the history), as MISMATCH_* bits; 0 agreed."""
    slot = frame % HISTORY
    diff = (tr.words[i, slot] ^ word) & seen
    bits = 0
    if diff & _POSE_BITS:
        bits |= MISMATCH_POSE
    if diff & _SPAWN_BITS:
        bits |= MISMATCH_SPAWN
    if diff & _COLOR_BITS:
        bits |= MISMATCH_COLORS
    if diff & _VIRUS_BITS:
        bits |= MISMATCH_VIRUSES
    if diff & _CLEARING_BITS:
        bits |= MISMATCH_CLEARING
    if seen & _CELL_BITS:
        for k in range(128):
            if ev.cells_seen[i, k] and tile_class(tr.boards[i, slot, k]) != tile_class(ev.board[i, k]):
                bits |= MISMATCH_CELLS
                break
    return bits


# --- the track --------------------------------------------------------------------------------

@exact(inline="always")
def remember(track, tr, i):
    """Keep the track's current frame in the history."""
    slot = tr.frame[i] % HISTORY
    tr.words[i, slot] = observable_word(track, i)
    for k in range(128):
        tr.boards[i, slot, k] = track.board[i, k]


@by_symbol
@exact
def advance_track(track, plan, tr, i, target, telemetry):
    """Play the track up to frame ``target`` (no further than its known inputs)."""
    end = min(target, tr.scheduled_to[i])
    while tr.frame[i] < end:
        f = tr.frame[i] + 1
        before = track.next_action[i]
        rules.frame(track, i, np.int64(tr.schedule[i, f % SCHEDULE]), telemetry)
        tr.frame[i] = f
        remember(track, tr, i)
        if tr.driven[i] == INPUTS and before != rules.FALLING and track.next_action[i] == rules.FALLING:
            follow_decision(plan, track, tr, i)


@exact(inline="always")
def follow_decision(plan, track, tr, i):
    """A twin driven by given inputs: the plan becomes the track at its new decision point,
    planned there (the outputs simulation mode has at the same point)."""
    copy_rules_row(plan, track, i)
    decision.next_decision(plan, i, np.int64(0))
    tr.plan_frame[i] = tr.frame[i]
    tr.decisions[i] += 1


@exact(inline="always")
def best_frame(tr, ev, i, word, seen, lo, hi, mapped):
    """The frame in ``[lo, hi]`` (within the history) that agrees with record ``i`` nearest to
    ``mapped``; returns ``(frame, 0)``, or ``(-1, bits)`` with the bits of the nearest
    disagreement (``MISMATCH_TIME`` when no kept frame is in range)."""
    lo = max(lo, tr.frame[i] - HISTORY + 1, tr.history_from[i])
    hi = min(hi, tr.frame[i])
    best = -1
    nearest_bits = MISMATCH_TIME
    nearest = 1 << 62
    for f in range(lo, hi + 1):
        bits = mismatch_bits(tr, ev, i, f, word, seen)
        d = abs(f - mapped)
        if bits == 0:
            if best < 0 or d < abs(best - mapped):
                best = f
        elif d < nearest:
            nearest, nearest_bits = d, bits
    if best >= 0:
        return best, 0
    return -1, nearest_bits


# --- the timebase -----------------------------------------------------------------------------

@exact(inline="always")
def timebase_solve(tb):
    """``a`` and ``b`` of ``t = a + b * frame`` from the sums, the period pulled to its prior."""
    period = tb[TB_B]
    w, sf, st, sff, sft = tb[TB_W], tb[TB_F], tb[TB_T], tb[TB_FF], tb[TB_FT]
    det = w * (sff + PERIOD_PRIOR) - sf * sf
    if w <= 0.0 or det <= 0.0:
        return
    b = (w * (sft + PERIOD_PRIOR * period) - sf * st) / det
    tb[TB_A] = (st - b * sf) / w
    tb[TB_B] = b


@exact(inline="always")
def timebase_restart(tb, frame, t, period, weight):
    """Forget every anchor: one at (``frame``, ``t``) of ``weight`` (an anchor weighs 1), the
    period ``period``."""
    tb[TB_W], tb[TB_F], tb[TB_T], tb[TB_FF], tb[TB_FT] = weight, weight * frame, weight * t, \
        weight * frame * frame, weight * frame * t
    tb[TB_A] = t - period * frame
    tb[TB_B] = period
    tb[TB_VAR] = 0.0
    tb[TB_ANCHORS] = 0.0


@exact(inline="always")
def timebase_anchor(tb, frame, t):
    """Add the anchor (``frame``, ``t``): the residual feeds the variance, then the fit."""
    residual = (t - tb[TB_A] - tb[TB_B] * frame) / tb[TB_B]
    tb[TB_VAR] = 0.9 * tb[TB_VAR] + 0.1 * residual * residual
    for k in range(5):
        tb[k] *= FORGET
    tb[TB_W] += 1.0
    tb[TB_F] += frame
    tb[TB_T] += t
    tb[TB_FF] += frame * frame
    tb[TB_FT] += frame * t
    tb[TB_ANCHORS] += 1.0
    timebase_solve(tb)


@exact(inline="always")
def mapped_frame(tb, t):
    return np.int64(np.floor((t - tb[TB_A]) / tb[TB_B] + 0.5))


# --- rebuilding and re-planning -----------------------------------------------------------------

@exact(inline="always")
def copy_rules_row(dst, src, i):
    """Env ``i``'s rules state (not decision mode's outputs) from ``src`` into ``dst``."""
    for k in range(128):
        dst.board[i, k] = src.board[i, k]
        dst.reserve[i, k] = src.reserve[i, k]
    dst.lfsr[i], dst.level[i], dst.speed[i], dst.speed_ups[i] = src.lfsr[i], src.level[i], src.speed[i], src.speed_ups[i]
    dst.speed_counter[i], dst.hor_velocity[i] = src.speed_counter[i], src.hor_velocity[i]
    dst.x[i], dst.y[i], dst.rot[i] = src.x[i], src.y[i], src.rot[i]
    dst.falling[i], dst.next_pill[i], dst.reserve_index[i] = src.falling[i], src.next_pill[i], src.reserve_index[i]
    dst.pills_sent[i], dst.fc[i], dst.held[i] = src.pills_sent[i], src.fc[i], src.held[i]
    dst.next_action[i], dst.placed_step[i], dst.status[i] = src.next_action[i], src.placed_step[i], src.status[i]
    dst.thrown[i], dst.match_flag[i], dst.score_multiplier[i] = src.thrown[i], src.match_flag[i], src.score_multiplier[i]
    dst.virus_left[i], dst.score[i], dst.outcome[i] = src.virus_left[i], src.score[i], src.outcome[i]
    dst.frame_count[i] = src.frame_count[i]
    dst.lock_x[i], dst.lock_y[i], dst.lock_rot[i] = src.lock_x[i], src.lock_y[i], src.lock_rot[i]
    for k in range(rules.N_FRAME_EVENTS):
        dst.frame_events[i, k] = 0


@exact(inline="always")
def replan_from_track(plan, track, tr, i, lead):
    """Put the plan at the track's frame, then ``lead`` frames of no input (time for the
    coordinator's answer to reach the game) and on with no input to the next decision point,
    planned there; the schedule after the track's frame is those empty frames."""
    copy_rules_row(plan, track, i)
    script = plan.search_script[thread_row()]
    for f in range(lead):
        script[f] = 0
    played = decision.play_to_decision(plan, i, lead, None)
    for f in range(1, played + 1):
        tr.schedule[i, (tr.frame[i] + f) % SCHEDULE] = 0
    tr.plan_frame[i] = tr.frame[i] + played
    tr.scheduled_to[i] = tr.plan_frame[i]
    plan.tau[i] = 0
    tr.decisions[i] += 1
    for k in range(rules.N_FRAME_EVENTS):
        plan.frame_events[i, k] = 0
    decision.next_decision(plan, i, np.int64(0))
    tr.awaiting[i] = 1 if plan.outcome[i] == rules.PLAYING else 0


@exact(inline="always")
def rebuild(track, tr, ev, i, frame):
    """The track rebuilt at ``frame`` from record ``i`` of a pill just spawned: its board, pose
    and spawn id (the pill is the reserve's for that id); the gravity counter is 0 at every
    spawn, the frame counter runs on from the track's, and the buttons held are the given
    input of ``frame`` (none for a twin driven by decisions: the actuator stopped at the
    desync). False (nothing changed) when the record shows colors that are not that pill's."""
    p = ev.spawn_id[i]
    if p < 1:
        return False
    falling = track.reserve[i, (p - 1) & 127]
    if ev.colors[i, 0] >= 0 and ev.colors[i, 1] >= 0 and ev.colors[i, 0] * 3 + ev.colors[i, 1] != falling:
        return False
    viruses = 0
    for k in range(128):
        v = ev.board[i, k]
        track.board[i, k] = v
        if v != EMPTY and (v & 0xF0) == VIRUS:
            viruses += 1
    track.x[i], track.y[i], track.rot[i] = ev.x[i], ev.y[i], ev.rot[i]
    track.falling[i] = falling
    track.pills_sent[i] = p
    track.next_pill[i] = track.reserve[i, p & 127]
    track.reserve_index[i] = (p + 1) & 127
    track.speed_ups[i] = min(p // 10, MAX_SPEED_UPS)
    track.speed_counter[i] = 0
    track.hor_velocity[i] = 0
    track.held[i] = tr.schedule[i, frame % SCHEDULE] if tr.driven[i] == INPUTS else 0
    track.fc[i] = (track.fc[i] + frame - tr.frame[i]) & 0xFF
    track.frame_count[i] += frame - tr.frame[i]
    track.next_action[i] = rules.SEND_FINISHED
    track.placed_step[i] = 0
    track.thrown[i] = 0
    track.status[i] = 0xFF
    track.virus_left[i] = viruses
    track.outcome[i] = rules.PLAYING if viruses > 0 else rules.CLEARED
    return True


# --- the kernels ------------------------------------------------------------------------------

@by_symbol
@exact
def ingest_one(track, plan, tr, ev, i, window, desync_after, min_confidence, hard_confidence, lead,
               telemetry):
    """Twin ``i``'s record (module docstring)."""
    if not ev.present[i] or tr.reason[i] != 0:
        return
    tr.records[i] += 1
    tb = tr.timebase[i]
    t = ev.time[i]
    word, seen = record_word(ev, i)
    partial = seen != (_POSE_BITS | _COLOR_BITS | _SPAWN_BITS | _VIRUS_BITS | _CLEARING_BITS | _CELL_BITS)
    mapped = mapped_frame(tb, t)
    if tr.resyncing[i] == 1:
        if (ev.confidence[i] >= hard_confidence and ev.pill_seen[i] and ev.x[i] == SPAWN_X and ev.y[i] == SPAWN_Y
                and ev.rot[i] == 0 and ev.spawn_id[i] != ((tr.last_word[i] & _SPAWN_BITS) >> _SPAWN)
                and full_board(ev, i)
                and rebuild(track, tr, ev, i, max(mapped, 0))):
            tr.frame[i] = max(mapped, 0)
            tr.history_from[i] = tr.frame[i]
            remember(track, tr, i)
            if tr.driven[i] == DECISIONS:
                replan_from_track(plan, track, tr, i, lead)
            tr.resyncing[i] = 0
            tr.streak[i] = 0
            tr.agreed[i] = 0
            tr.last_word[i] = word
            tr.last_seen[i] = seen
            push_event(telemetry, i, TM_HARD_RESYNC, tr.frame[i], ev.spawn_id[i])
        elif ev.spawn_id[i] >= 0:
            tr.last_word[i] = (tr.last_word[i] & ~_SPAWN_BITS) | ((ev.spawn_id[i] & 0xFFFF) << _SPAWN)
        return
    advance_track(track, plan, tr, i, mapped + window, telemetry)
    frame, bits = best_frame(tr, ev, i, word, seen, mapped - window, mapped + window, mapped)
    quality = PARTIAL if partial else 0
    if bits == 0:
        tr.streak[i] = 0
        tr.agreed[i] += 1
        tr.mismatch[i] = 0
        tr.offset[i] = frame - mapped
        tr.consistency[i] = 0.99 * tr.consistency[i] + 0.01
        # An anchor: the facts changed since the last record; their first frame in the track.
        common = seen & tr.last_seen[i] & ~_CELL_BITS
        if tr.last_word[i] >= 0 and ((word ^ tr.last_word[i]) & common) != 0:
            first = frame
            lowest = max(tr.frame[i] - HISTORY + 1, tr.history_from[i])
            while first > lowest and ((tr.words[i, (first - 1) % HISTORY] ^ word) & seen & ~_CELL_BITS) == 0:
                first -= 1
            if first > lowest:
                timebase_anchor(tb, first, t)
        tr.last_word[i] = word
        tr.last_seen[i] = seen
        if tr.agreed[i] >= LOCK_AFTER:
            quality |= LOCKED
            tr.relocked[i] = 1
    else:
        tr.mismatch[i] = bits
        tr.consistency[i] *= 0.99
        tr.agreed[i] = 0
        if ev.confidence[i] >= min_confidence:
            tr.streak[i] += 1
        quality |= DESYNC_SUSPECTED
        if tr.streak[i] == desync_after:
            tr.desyncs[i] += 1
            push_event(telemetry, i, TM_DESYNC, mapped, bits)
            # A soft resync only for a twin locked since its last desync: else the last one did
            # not hold, and the timebase is not what is wrong.
            tr.soft_pending[i] = 1 if tr.policy[i] != END and tr.relocked[i] == 1 else 0
            tr.relocked[i] = 0
            if tr.soft_pending[i] == 0:
                escalate(tr, i)
        if tr.streak[i] >= desync_after and tr.soft_pending[i] == 1:
            moved = soft_resync(track, plan, tr, ev, i, word, seen, mapped, telemetry)
            if moved == 1:
                tr.soft_pending[i] = 0
                quality &= ~DESYNC_SUSPECTED
            elif moved < 0 or tr.streak[i] > desync_after + SOFT_PATIENCE:
                tr.soft_pending[i] = 0
                escalate(tr, i)
    tr.prev_word[i] = word
    tr.prev_seen[i] = seen
    if tb[TB_ANCHORS] >= 3.0 and tb[TB_VAR] < 2.0 * 2.0:
        quality |= TIMEBASE_STABLE
    tr.quality[i] = quality
    if tr.reason[i] == 0 and track.outcome[i] != rules.PLAYING:
        tr.reason[i] = track.outcome[i]


@exact(inline="always")
def full_board(ev, i):
    for k in range(128):
        if not ev.cells_seen[i, k]:
            return False
    return True


@exact(inline="always")
def escalate(tr, i):
    """A desync the timebase does not explain: a hard resync (waiting for a spawn to rebuild
    from; a twin's own scripts are void, its actuator stops), or, by policy, the twin's end."""
    tr.awaiting[i] = 0
    if tr.policy[i] == HARD:
        tr.resyncing[i] = 1
        if tr.driven[i] == DECISIONS:  # given inputs stay: the game still gets them
            for f in range(tr.frame[i] + 1, tr.scheduled_to[i] + 1):
                tr.schedule[i, f % SCHEDULE] = 0
    else:
        tr.reason[i] = DESYNC


@exact(inline="always")
def soft_resync(track, plan, tr, ev, i, word, seen, mapped, telemetry):
    """Re-lock the timebase on record ``i``: the frame of the history (played ahead as far as
    the inputs are known) where the facts it shows first appear, for a record whose facts
    changed since the one before it (so that frame is its own). Returns 1 re-locked, 0 not yet
    (the record shows no change), -1 no frame of the history agrees."""
    advance_track(track, plan, tr, i, mapped + HISTORY // 2, telemetry)
    frame, bits = best_frame(tr, ev, i, word, seen, tr.history_from[i], tr.frame[i], mapped)
    if bits != 0:
        return -1
    common = seen & tr.prev_seen[i] & ~_CELL_BITS
    if ((word ^ tr.prev_word[i]) & common) == 0:
        return 0
    lowest = max(tr.frame[i] - HISTORY + 1, tr.history_from[i])
    while frame > lowest and ((tr.words[i, (frame - 1) % HISTORY] ^ word) & seen & ~_CELL_BITS) == 0:
        frame -= 1
    if frame == lowest:
        return 0
    tb = tr.timebase[i]
    timebase_restart(tb, frame, ev.time[i], tb[TB_B], 1.0)
    tr.streak[i] = 0
    tr.agreed[i] = 0
    tr.mismatch[i] = 0
    tr.last_word[i] = word
    tr.last_seen[i] = seen
    push_event(telemetry, i, TM_SOFT_RESYNC, frame, frame - mapped)
    return 1


@exact
def ingest_kernel(track, plan, tr, ev, window, desync_after, min_confidence, hard_confidence, lead, telemetry):
    for j in range(tr.frame.shape[0]):
        ingest_one(track, plan, tr, ev, np.int64(j), window, desync_after, min_confidence, hard_confidence, lead,
                   telemetry)


@by_symbol
@exact
def decide_one(plan, tr, i, a, script, script_start, script_length):
    """Play twin ``i``'s placement ``a`` on its plan to the next decision and schedule its
    frames: the placement's script, then no input."""
    start = tr.plan_frame[i] + 1
    length = decision.write_script(plan, i, a)
    scratch = plan.search_script[thread_row()]
    for f in range(length):
        script[i, f] = scratch[f]
        tr.schedule[i, (start + f) % SCHEDULE] = scratch[f]
    script_start[i] = start
    script_length[i] = length
    for k in range(rules.N_FRAME_EVENTS):
        plan.frame_events[i, k] = 0
    decision.step_decision(plan, i, a, np.int64(0), None)
    for f in range(length, plan.tau[i]):
        tr.schedule[i, (start + f) % SCHEDULE] = 0
    tr.plan_frame[i] += plan.tau[i]
    tr.scheduled_to[i] = tr.plan_frame[i]
    tr.decisions[i] += 1
    tr.awaiting[i] = 1 if plan.outcome[i] == rules.PLAYING else 0


@exact
def decide_kernel(plan, tr, actions, chosen, script, script_start, script_length):
    for j in range(tr.frame.shape[0]):
        if chosen[j]:
            decide_one(plan, tr, np.int64(j), np.int64(actions[j]), script, script_start, script_length)


@by_symbol
@exact
def start_one(track, plan, tr, i, lead):
    """Twin ``i``'s history at frame 0 and, driven by decisions, its plan at its first decision."""
    tr.history_from[i] = tr.frame[i]
    remember(track, tr, i)
    if tr.driven[i] == DECISIONS:
        replan_from_track(plan, track, tr, i, lead)


@exact
def start_kernel(track, plan, tr, lead, which):
    for j in range(tr.frame.shape[0]):
        if which[j]:
            start_one(track, plan, tr, np.int64(j), lead)


@exact
def schedule_inputs_kernel(tr, buttons, counts):
    """Append ``buttons[i, :counts[i]]`` to twin ``i``'s known inputs."""
    for i in range(tr.frame.shape[0]):
        for f in range(counts[i]):
            tr.scheduled_to[i] += 1
            tr.schedule[i, tr.scheduled_to[i] % SCHEDULE] = buttons[i, f]


# --- Python front end ---------------------------------------------------------------------------

_EVIDENCE_DTYPES = dict(present=np.bool_, time=np.float64, confidence=np.float32, pill_seen=np.bool_, x=np.int64,
                        y=np.int64, rot=np.int64, colors=np.int64, spawn_id=np.int64, board=np.uint8,
                        cells_seen=np.bool_, viruses=np.int64, clearing=np.int64)
_EVIDENCE_WIDTH = dict(colors=2, board=128, cells_seen=128, viruses=3)


class Script(NamedTuple):
    """The inputs of each twin's decided placement (rows of twins not decided: length 0)."""

    start_frame: np.ndarray  # (N,) int64: the frame of the script's first input
    length: np.ndarray  # (N,) int64: inputs in the script; after them, no input to the next decision
    buttons: np.ndarray  # (N, SCRIPT_CAPACITY) uint8: controller byte of frame start_frame + k at k
    times: np.ndarray  # (N, SCRIPT_CAPACITY) float64: external time to apply each, seconds (``ShadowTwins.console_time``)


class Timebase(NamedTuple):
    """Each twin's estimate of its external clock: ``capture time = start_time + latency + period * frame``."""

    latency: np.ndarray  # (N,) float64: seconds from a frame's start (``reset``'s clock) to its capture
    period: np.ndarray  # (N,) float64: seconds a frame, as the external clock counts them
    drift_ppm: np.ndarray  # (N,) float64: the period against the NTSC frame rate's, parts per million
    jitter_frames: np.ndarray  # (N,) float64: RMS residual of the anchors, frames
    anchors: np.ndarray  # (N,) int64: anchors fitted since the last (re)start


class ShadowTwins:
    """``num_twins`` digital twins of Dr. Mario games played elsewhere (module docstring).

    Parameters
    ----------
    num_twins : int
    level, speed : int or str, or one per twin
        As ``vecsim/DrMario-v0``'s (``speed``: ``"low"``, ``"med"``, ``"high"`` or 0..2).
    recovery : str or sequence of str
        ``"end"``, ``"soft"`` or ``"hard"`` (default), one for all or one per twin.
    driven_by : str
        ``"decisions"`` (default): the twins' inputs are the scripts of ``decide``'s placements;
        ``"inputs"``: they are given frame by frame (``schedule_inputs``) and the plan follows
        the track, planned at each of its decision points.
    window : int
        Frames either side of a record's mapped frame searched for agreeing facts (the
        capture's latency jitter it tolerates); default 4.
    desync_after : int
        Records in a row, each of ``min_confidence`` or more, agreeing with no frame before a
        desync is declared; default 4.
    min_confidence, hard_confidence : float
        The confidence a record needs to count towards a desync (0.5), and to rebuild a twin
        from (0.9).
    horizon : int
        A twin asks for its next decision (``awaiting``) once its track is within this many
        frames of the decision point, so that the plan runs no further ahead of the evidence
        than one placement (default 30: half a second, beyond any capture's latency).
    lead : int
        Frames of no input between a hard resync's observation and the plan's decision
        (the time a decision takes to reach the game); default 8.
    telemetry : int
        Records per twin in the telemetry ring (``TELEMETRY`` kinds); default 1024.
    buffers : dict, optional
        Caller-owned arrays for decision outputs, by ``info`` key (``"cost_to_lock"``,
        ``"tau"``, ``"pill_colors"``, ...: ``DrMario-v0``'s decision info), each C-contiguous,
        writeable, of that output's shape with ``num_twins`` rows and its dtype: the twins
        write into them, and ``info`` returns them.
    """

    def __init__(self, num_twins: int, *, level=0, speed="med", recovery="hard", driven_by: str = "decisions",
                 window: int = 4, desync_after: int = 4, min_confidence: float = 0.5, hard_confidence: float = 0.9,
                 horizon: int = 30, lead: int = 8, telemetry: int = 1024, buffers: dict | None = None):
        from vecsim.core.telemetry import Telemetry, check_capacity
        from vecsim.games import drmario
        from vecsim.games.drmario.state import allocate

        n = _positive_int("num_twins", num_twins)
        self.num_twins = n
        params = drmario.prepare_params({"level": level, "speed": speed})
        values = {"mode": 0, "level": params["level"], "speed": params["speed"], "seed": -1, "max_frames": 0}
        drmario.check_params(values)
        self._level = np.broadcast_to(np.asarray(params["level"], np.int64), (n,)).copy()
        self._speed = np.broadcast_to(np.asarray(params["speed"], np.int64), (n,)).copy()
        policy = np.broadcast_to(np.asarray(recovery, dtype=object), (n,))
        bad = [p for p in policy if p not in RECOVERIES]
        if bad:
            raise ValueError(f"ShadowTwins recovery must be one of {RECOVERIES}, but got recovery={bad[0]!r}")
        if driven_by not in ("decisions", "inputs"):
            raise ValueError(f"ShadowTwins driven_by must be 'decisions' or 'inputs', but got driven_by={driven_by!r}")
        self.driven_by = driven_by
        self.window = _positive_int("window", window, low=0)
        self.desync_after = _positive_int("desync_after", desync_after)
        self.horizon = _positive_int("horizon", horizon, low=0)
        self.lead = _positive_int("lead", lead, low=0)
        if self.lead > SCRIPT_CAPACITY:
            raise ValueError(f"ShadowTwins lead must be an int in [0, {SCRIPT_CAPACITY}], but got lead={lead!r}")
        for name, v in (("min_confidence", min_confidence), ("hard_confidence", hard_confidence)):
            if not (isinstance(v, (int, float, np.floating, np.integer)) and 0.0 <= float(v) <= 1.0):
                raise ValueError(f"ShadowTwins {name} must be a number in [0, 1], but got {name}={v!r}")
        self.min_confidence, self.hard_confidence = float(min_confidence), float(hard_confidence)
        self.track = allocate(n)
        self.plan = _with_buffers(allocate(n, decision=True), buffers)
        zeros = lambda *shape, dtype=np.int64: np.zeros((n,) + shape, dtype)  # noqa: E731
        self.tracking = Tracking(
            frame=zeros(), plan_frame=zeros(), awaiting=zeros(),
            driven=np.full(n, INPUTS if driven_by == "inputs" else DECISIONS, np.int64), decisions=zeros(),
            schedule=zeros(SCHEDULE, dtype=np.uint8), scheduled_to=zeros(), history_from=zeros(),
            words=zeros(HISTORY), boards=zeros(HISTORY, 128, dtype=np.uint8), timebase=zeros(9, dtype=np.float64),
            start_time=zeros(dtype=np.float64), last_word=np.full(n, -1, np.int64), last_seen=zeros(),
            streak=zeros(), agreed=zeros(), mismatch=zeros(), offset=zeros(), consistency=zeros(dtype=np.float64),
            quality=zeros(), policy=np.array([RECOVERIES.index(p) for p in policy], np.int64), resyncing=zeros(),
            relocked=zeros(), soft_pending=zeros(), prev_word=np.full(n, -1, np.int64), prev_seen=zeros(),
            reason=zeros(), desyncs=zeros(), records=zeros())
        capacity = check_capacity(telemetry, "ShadowTwins", TELEMETRY)
        self.telemetry = Telemetry(n, max(capacity, 2), TELEMETRY, np.zeros(n, np.int32))
        self._script = Script(zeros(), zeros(), zeros(SCRIPT_CAPACITY, dtype=np.uint8),
                              zeros(SCRIPT_CAPACITY, dtype=np.float64))
        self._started = False

    # -- starting ---------------------------------------------------------------------------
    def reset(self, seed, start_time=0.0, latency=0.0, which=None) -> None:
        """Start every twin (or those of ``which``, bool (N,)) at its level's first frame, as
        ``DrMario-v0`` does with LFSR state ``seed`` (one, or one per twin, on the power-on
        cycle); ``start_time``: the external clock's time of that frame (seconds, one or per
        twin), ``latency``: the capture latency assumed until anchors say otherwise. The other
        twins go on as they were."""
        chosen = np.ones(self.num_twins, np.bool_) if which is None else _mask("which", which, self.num_twins)
        if which is not None and not self._started and not chosen.all():
            raise RuntimeError("ShadowTwins.reset(which=...) restarts some twins of started ones; start them all first")
        seeds = self.checked_seeds(seed, chosen)
        s = self.track
        for i in np.flatnonzero(chosen):
            s.held[i] = s.hor_velocity[i] = s.fc[i] = 0
            rules.start_level(s, i, int(self._level[i]), int(self._speed[i]), int(seeds[i]), 0)
        self._start(start_time, latency, chosen)

    def checked_seeds(self, seed, which) -> np.ndarray:
        """``seed`` (one, or one per twin) as (N,) int64, each twin of ``which`` (bool (N,)) checked
        as ``DrMario-v0`` checks a seed: an LFSR state on the power-on cycle (``ValueError`` naming it)."""
        from vecsim.games import drmario

        seeds = np.broadcast_to(np.asarray(seed), (self.num_twins,))
        drmario.check_params({"mode": 0, "level": self._level, "speed": self._speed, "seed": seeds[which],
                              "max_frames": 0})
        if np.any(seeds[which] < 1):
            raise ValueError(f"ShadowTwins.reset seed must be an LFSR state on the power-on cycle, "
                             f"but got seed={int(seeds[which].min())}")
        return seeds.astype(np.int64)

    def start_from(self, state: State, start_time=0.0, latency=0.0) -> None:
        """Start every twin from row ``i`` of ``state`` (a frame-mode ``State`` of
        ``num_twins`` rows, e.g. ``replay.demo_start``), taken as frame 0."""
        if not isinstance(state, State) or state.x.shape != (self.num_twins,):
            got = type(state).__name__ if not isinstance(state, State) else f"a State of {state.x.shape[0]} rows"
            raise ValueError(f"ShadowTwins.start_from takes a drmario State of {self.num_twins} rows, but got {got}")
        _check_rules_state(state)
        copy_rules_rows(self.track, state)
        self._start(start_time, latency, np.ones(self.num_twins, np.bool_))

    def _start(self, start_time, latency, which: np.ndarray) -> None:
        n = self.num_twins
        t0 = _float_per_twin("start_time", start_time, n)
        lat = _float_per_twin("latency", latency, n)
        tr = self.tracking
        for a in (tr.frame, tr.plan_frame, tr.awaiting, tr.decisions, tr.scheduled_to, tr.history_from, tr.last_seen,
                  tr.streak, tr.agreed, tr.mismatch, tr.offset, tr.quality, tr.resyncing, tr.reason, tr.desyncs,
                  tr.records, tr.schedule, tr.prev_seen, tr.soft_pending):
            a[which] = 0
        tr.last_word[which] = -1
        tr.prev_word[which] = -1
        tr.relocked[which] = 1
        tr.consistency[which] = 1.0
        tr.start_time[which] = t0[which]
        for i in np.flatnonzero(which):
            timebase_restart(tr.timebase[i], 0.0, t0[i] + lat[i], 1.0 / NTSC_FRAME_RATE, START_WEIGHT)
        start_kernel(self.track, self.plan, tr, np.int64(0), which)
        self._started = True

    # -- the decision contract --------------------------------------------------------------
    @property
    def awaiting(self) -> np.ndarray:
        """(N,) bool: twins whose plan waits at a decision point for ``decide`` and whose
        evidence is within ``horizon`` frames of it."""
        tr = self.tracking
        return (tr.awaiting != 0) & (tr.plan_frame - tr.frame <= self.horizon)

    @property
    def action_mask(self) -> np.ndarray:
        """(N, 512) bool: the feasible placements at each twin's current decision."""
        return self.plan.cost_to_lock != decision.UNREACHABLE

    @property
    def info(self) -> dict:
        """Decision mode's outputs at each twin's current decision, as ``DrMario-v0``'s info
        (views of the plan's fields): ``cost_to_lock``, ``tau``, ``pill_colors``, ... ,
        ``action_mask``, and ``events`` (N, 8) int64, the ``DrMario-v0`` ``EVENTS`` counters
        of the step that reached the decision."""
        from vecsim.games.drmario import DECISION_INFO

        out = {key: getattr(self.plan, field) for key, field in DECISION_INFO.items()}
        out["terminal_reason"] = self.plan.outcome
        out["score"] = self.plan.score
        out["events"] = self.plan.frame_events
        out["action_mask"] = self.action_mask
        return out

    @property
    def observations(self) -> np.ndarray:
        """(N, 136) uint8: each twin's ``DrMario-v0`` observation at its current decision (the
        bottle, the pill's column, row from the top, rotation and colors, the preview's colors,
        1 while the pill is controllable)."""
        p = self.plan
        obs = np.empty((self.num_twins, 136), np.uint8)
        obs[:, :128] = p.board
        columns = (p.x, 15 - p.y, p.rot, p.falling // 3, p.falling % 3, p.next_pill // 3, p.next_pill % 3,
                   p.next_action == rules.FALLING)
        for k, column in enumerate(columns):
            obs[:, 128 + k] = column
        return obs

    def decide(self, actions, which=None) -> Script:
        """Play placement ``actions[i]`` (``DrMario-v0``'s decision actions) on each twin ``i``
        of ``which`` (bool (N,), default: every twin awaiting a decision) and schedule its
        inputs for the track. Returns the ``Script`` to send to the game (a view, rewritten by
        the next call)."""
        self._check_started("decide")
        if self.driven_by != "decisions":
            raise RuntimeError("ShadowTwins.decide needs driven_by='decisions'; these twins follow given inputs")
        n = self.num_twins
        chosen = self.awaiting if which is None else _mask("which", which, n)
        not_waiting = np.flatnonzero(chosen & ~self.awaiting)
        if not_waiting.size:
            raise ValueError(f"ShadowTwins.decide: twin {not_waiting[0]} is not at a decision point "
                             f"(terminal_reason={int(self.tracking.reason[not_waiting[0]])})")
        a = np.asarray(actions)
        if a.shape != (n,) or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"ShadowTwins.decide actions must be an int array of shape ({n},), "
                             f"but got shape {a.shape} dtype {a.dtype}")
        a = a.astype(np.int64)
        out_of_range = np.flatnonzero(chosen & ((a < 0) | (a >= self.plan.cost_to_lock.shape[1])))
        if out_of_range.size:
            raise ValueError(f"ShadowTwins.decide actions[{out_of_range[0]}]={a[out_of_range[0]]} is not a placement "
                             f"in [0, {self.plan.cost_to_lock.shape[1]})")
        rows = np.flatnonzero(chosen)
        infeasible = rows[~self.action_mask[rows, a[rows]]]
        if infeasible.size:
            raise ValueError(f"ShadowTwins.decide actions[{infeasible[0]}]={a[infeasible[0]]} is infeasible at that "
                             f"twin's decision (action_mask is False)")
        ahead = rows[self.tracking.plan_frame[rows] - self.tracking.frame[rows] > SCHEDULE // 2]
        if ahead.size:
            raise RuntimeError(f"ShadowTwins.decide: twin {ahead[0]} is "
                               f"{int(self.tracking.plan_frame[ahead[0]] - self.tracking.frame[ahead[0]])} frames "
                               f"ahead of its evidence; ingest its game's frames first")
        sc = self._script
        sc.length[:] = 0
        decide_kernel(self.plan, self.tracking, a, chosen, sc.buttons, sc.start_frame, sc.length)
        steps = np.arange(SCRIPT_CAPACITY)
        sc.times[:] = self.console_time(sc.start_frame[:, None] + steps[None, :])
        return sc

    def schedule_inputs(self, buttons, counts=None) -> None:
        """Append the next inputs of each twin's game: ``buttons`` (N, K) controller bytes
        (uint8), the first ``counts[i]`` (default K) of row ``i``; twins ``driven_by="inputs"``."""
        self._check_started("schedule_inputs")
        if self.driven_by != "inputs":
            raise RuntimeError("ShadowTwins.schedule_inputs needs driven_by='inputs'; these twins schedule their "
                               "own decisions' inputs (decide)")
        b = np.asarray(buttons)
        n = self.num_twins
        if b.ndim != 2 or b.shape[0] != n or b.dtype != np.uint8:
            raise ValueError(f"ShadowTwins.schedule_inputs buttons must be a uint8 array of shape ({n}, K), but got "
                             f"shape {b.shape} dtype {b.dtype}")
        c = np.full(n, b.shape[1], np.int64) if counts is None else np.asarray(counts)
        if c.shape != (n,) or not np.issubdtype(c.dtype, np.integer) or np.any((c < 0) | (c > b.shape[1])):
            raise ValueError(f"ShadowTwins.schedule_inputs counts must be ints in [0, {b.shape[1]}], one per twin, "
                             f"but got {c!r}")
        room = SCHEDULE - (self.tracking.scheduled_to - self.tracking.frame) - 1
        over = np.flatnonzero(c > room)
        if over.size:
            raise ValueError(f"ShadowTwins.schedule_inputs: twin {over[0]} can take {int(room[over[0]])} more inputs "
                             f"ahead of its evidence, but got {int(c[over[0]])}")
        schedule_inputs_kernel(self.tracking, np.ascontiguousarray(b), c.astype(np.int64))

    # -- evidence --------------------------------------------------------------------------
    def ingest(self, ev: Evidence) -> None:
        """Take one record per twin (``ev.present``): advance the tracks, compare, update the
        timebases, quality flags and desync state (module docstring)."""
        self._check_started("ingest")
        ingest_kernel(self.track, self.plan, self.tracking, _checked_evidence(ev, self.num_twins),
                      np.int64(self.window), np.int64(self.desync_after), self.min_confidence, self.hard_confidence,
                      np.int64(self.lead), self.telemetry.ring)

    # -- what the twins know ----------------------------------------------------------------
    @property
    def frame(self) -> np.ndarray:
        """(N,) int64: frames each twin's track has played (its own frame clock)."""
        return self.tracking.frame

    @property
    def quality(self) -> np.ndarray:
        """(N,) int64: ``QUALITY_FLAGS`` bits after each twin's last record."""
        return self.tracking.quality

    @property
    def scripts_void(self) -> np.ndarray:
        """(N,) bool: twins whose scripts no longer hold (waiting for a hard resync, or ended):
        their actuators should stop pressing."""
        return (self.tracking.resyncing != 0) | (self.tracking.reason != 0)

    @property
    def terminal_reason(self) -> np.ndarray:
        """(N,) int64: 0 tracking; the game's end (``rules``: 1 cleared, 2 topped out) once the
        track reaches it; ``DESYNC`` (5)."""
        return self.tracking.reason

    @property
    def timebase(self) -> Timebase:
        tb = self.tracking.timebase
        return Timebase(tb[:, TB_A] - self.tracking.start_time, tb[:, TB_B].copy(),
                        (tb[:, TB_B] * NTSC_FRAME_RATE - 1.0) * 1e6, np.sqrt(tb[:, TB_VAR]),
                        tb[:, TB_ANCHORS].astype(np.int64))

    def capture_time(self, frames) -> np.ndarray:
        """The external time each twin's evidence of frame ``frames[i, ...]`` is expected to carry."""
        tb = self.tracking.timebase
        f = np.asarray(frames, np.float64)
        shape = (-1,) + (1,) * (f.ndim - 1)
        return tb[:, TB_A].reshape(shape) + tb[:, TB_B].reshape(shape) * f

    def console_time(self, frames) -> np.ndarray:
        """The external time at which each twin's game runs frame ``frames[i, ...]``: its capture
        time less the estimated capture latency."""
        f = np.asarray(frames, np.float64)
        shape = (-1,) + (1,) * (f.ndim - 1)
        return self.capture_time(f) - self.timebase.latency.reshape(shape)

    def _check_started(self, what: str) -> None:
        if not self._started:
            raise RuntimeError(f"ShadowTwins.{what} before reset() or start_from()")


#: The rules' own fields of a ``State`` (``copy_rules_row`` copies them), before the event counters.
RULES_FIELDS = State._fields[:State._fields.index("frame_events")]


def copy_rules_rows(dst: State, src: State) -> None:
    """Every row's rules state (``RULES_FIELDS``) from ``src`` into ``dst``, event counters
    cleared: ``copy_rules_row`` from Python, without compiling it."""
    for name in RULES_FIELDS:
        getattr(dst, name)[:] = getattr(src, name)
    dst.frame_events[:] = 0


#: The range of each rules field a kernel indexes or branches on (``start_from`` checks them).
_RULES_RANGES = dict(reserve=(0, 8), level=(0, 24), speed=(0, 2), speed_ups=(0, 49), speed_counter=(0, 255),
                     hor_velocity=(0, 15), x=(0, 7), y=(0, 15), rot=(0, 3), falling=(0, 8), next_pill=(0, 8),
                     reserve_index=(0, 127), pills_sent=(0, 1 << 30), fc=(0, 255), held=(0, 255),
                     next_action=(0, 6), placed_step=(0, 8), status=(0, 255), thrown=(0, 255), outcome=(0, 4),
                     virus_left=(0, 128))


def _check_rules_state(state: State) -> None:
    for name, (lo, hi) in _RULES_RANGES.items():
        a = getattr(state, name)
        bad = np.flatnonzero(np.any(((a < lo) | (a > hi)).reshape(a.shape[0], -1), axis=1))
        if bad.size:
            raise ValueError(f"ShadowTwins.start_from: state.{name}[{bad[0]}] is outside [{lo}, {hi}]")


def _with_buffers(plan: State, buffers) -> State:
    """``plan`` with the caller's arrays in place of its decision outputs (``buffers`` by info
    key), each checked."""
    from vecsim.games.drmario import DECISION_INFO

    if buffers is None:
        return plan
    if not isinstance(buffers, dict):
        raise ValueError(f"ShadowTwins buffers must be a dict of arrays by info key, but got {type(buffers).__name__}")
    fields = {}
    for key, array in buffers.items():
        if key not in DECISION_INFO:
            raise ValueError(f"ShadowTwins buffers[{key!r}]: not a decision output; one of {sorted(DECISION_INFO)}")
        own = getattr(plan, DECISION_INFO[key])
        if (not isinstance(array, np.ndarray) or array.shape != own.shape or array.dtype != own.dtype
                or not array.flags.c_contiguous or not array.flags.writeable):
            got = f"shape {array.shape} dtype {array.dtype}" if isinstance(array, np.ndarray) else type(array).__name__
            raise ValueError(f"ShadowTwins buffers[{key!r}] must be a C-contiguous writeable {own.dtype} array of "
                             f"shape {own.shape}, but got {got}")
        array[...] = own
        fields[DECISION_INFO[key]] = array
    return plan._replace(**fields)


def _positive_int(name: str, value, low: int = 1) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"ShadowTwins {name} must be an int >= {low}, but got {name}={value!r}")
    return int(value)


def _float_per_twin(name: str, value, n: int) -> np.ndarray:
    v = np.asarray(value, dtype=np.float64)
    if v.ndim > 1 or (v.ndim == 1 and v.shape != (n,)) or not np.all(np.isfinite(v)):
        raise ValueError(f"ShadowTwins {name} must be a finite number or one per twin ({n}), but got {name}={value!r}")
    return np.broadcast_to(v, (n,)).copy()


def _mask(name: str, value, n: int) -> np.ndarray:
    m = np.asarray(value)
    if m.shape != (n,) or m.dtype != np.bool_:
        raise ValueError(f"ShadowTwins {name} must be a bool array of shape ({n},), but got shape {m.shape} "
                         f"dtype {m.dtype}")
    return m


def _checked_evidence(ev, n: int) -> Evidence:
    """``ev`` with each array of its documented shape and dtype, or ``ValueError`` naming it."""
    if not isinstance(ev, Evidence):
        raise ValueError(f"ShadowTwins.ingest takes an Evidence batch (shadow.evidence(n)), but got {type(ev).__name__}")
    for name, dtype in _EVIDENCE_DTYPES.items():
        a = getattr(ev, name)
        shape = (n,) if name not in _EVIDENCE_WIDTH else (n, _EVIDENCE_WIDTH[name])
        if not isinstance(a, np.ndarray) or a.shape != shape or a.dtype != dtype or not a.flags.c_contiguous:
            got = f"shape {a.shape} dtype {a.dtype}" if isinstance(a, np.ndarray) else type(a).__name__
            raise ValueError(f"Evidence.{name} must be a C-contiguous {np.dtype(dtype)} array of shape {shape}, "
                             f"but got {got}")
    present = ev.present
    if not np.all(np.isfinite(ev.time[present])):
        bad = np.flatnonzero(present & ~np.isfinite(ev.time))[0]
        raise ValueError(f"Evidence.time[{bad}]={ev.time[bad]} is not a finite timestamp")
    checks = (("x", ev.x, 0, 7), ("y", ev.y, 0, 15), ("rot", ev.rot, 0, 3))
    for name, a, lo, hi in checks:
        bad = np.flatnonzero(present & ev.pill_seen & ((a < lo) | (a > hi)))
        if bad.size:
            raise ValueError(f"Evidence.{name}[{bad[0]}]={a[bad[0]]} is outside [{lo}, {hi}]")
    for name, a, hi in (("colors", ev.colors, 2), ("viruses", ev.viruses, 127), ("clearing", ev.clearing, 1)):
        bad = np.flatnonzero(present & np.any((a.reshape(n, -1) < -1) | (a.reshape(n, -1) > hi), axis=1))
        if bad.size:
            raise ValueError(f"Evidence.{name}[{bad[0]}]={a[bad[0]]} is outside [-1, {hi}] (-1: unseen)")
    bad = np.flatnonzero(present & ((ev.spawn_id < -1) | (ev.spawn_id > 0xFFFF)))
    if bad.size:
        raise ValueError(f"Evidence.spawn_id[{bad[0]}]={ev.spawn_id[bad[0]]} is outside [-1, 65535] (-1: unseen)")
    bad = np.flatnonzero(present & ~((ev.confidence >= 0) & (ev.confidence <= 1)))
    if bad.size:
        raise ValueError(f"Evidence.confidence[{bad[0]}]={ev.confidence[bad[0]]} is outside [0, 1]")
    return ev
