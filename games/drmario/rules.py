"""The per-frame rules of NES Dr. Mario as ``@njit`` functions over one env ``i`` of a
structure-of-arrays state (the fields of ``games/drmario/__init__.py``'s ``State``).

``frame(s, i, buttons)`` is the ground truth: one NMI (status countdown, frame counter,
controller) then one main-loop logic pass. Section numbers refer to ``SPEC.md``.
"""

import numpy as np

from vecsim.core.jit import exact
from vecsim.core.telemetry import push_event
from vecsim.games.drmario.tables import (
    BASE_SPEED, BLUE, BTN_A, BTN_B, BTN_DOWN, BTN_LEFT, BTN_RIGHT, BOTTOM, COLOR_BITS, EMPTY, LEFT, MARKED,
    MAX_SPEED_UPS, MAX_VIRUS_HEIGHT, RIGHT, SCORE_LOOPS, SINGLE, SPAWN_X, SPAWN_Y, SPEED_TABLE, THROW_PASSES,
    TOP, VIRUS, VIRUS_COLOR_RANDOM,
)

#: ``next_action`` values (the ROM's handler numbers).
FALLING, PLACED, CHECK_ATTACK, SEND_FINISHED, INC_ACTION, SEND_PILL = 0, 1, 2, 3, 5, 6
#: ``outcome`` values.
PLAYING, CLEARED, TOPPED_OUT = 0, 1, 2
#: ``outcome`` values of decision mode only: the episode frame cap was reached, or the planner
#: found no placement at a decision point.
TIMEOUT, NO_PLACEMENT = 3, 4
#: Per-frame event counters, ``s.frame_events[i, k]``, summed until the caller clears them.
EV_LOCKS, EV_SPAWNS, EV_MATCH_GROUPS, EV_MATCH_ROUNDS, EV_VIRUSES, EV_TILES, EV_DROP_PASSES, EV_SPEED_UPS = range(8)
N_FRAME_EVENTS = 8
#: Telemetry event kinds (``vecsim.core.telemetry``), stamped with ``frame_count``; the value
#: of each: spawn the new pill's id, lock the pose ``x + 8 * y + 128 * rot``, match the run's
#: length, clear the match groups of the round, virus_cleared the virus's color, cascade the
#: pieces a drop pass moved, top_out and victory 0.
TELEMETRY = ("spawn", "lock", "match", "clear", "virus_cleared", "cascade", "top_out", "victory")
TM_SPAWN, TM_LOCK, TM_MATCH, TM_CLEAR, TM_VIRUS_CLEARED, TM_CASCADE, TM_TOP_OUT, TM_VICTORY = range(8)


@exact(inline="always")
def lfsr_step(state):
    return ((((state >> 9) ^ (state >> 1)) & 1) << 15) | (state >> 1)


@exact(inline="always")
def cell(board, i, index):
    """Bottle byte at ``index`` after the ROM's 8-bit wrap; every index >= 128 reads empty."""
    k = index & 255
    if k >= 128:
        return np.int64(EMPTY)
    return np.int64(board[i, k])


@exact
def generate_reserve(reserve, i, state):
    """Fill ``reserve[i]`` (128 pill ids) from LFSR ``state``; returns the state after."""
    pill = 0
    for n in range(127, -1, -1):
        state = lfsr_step(state)
        pill = (pill + ((state >> 8) & 15)) % 9
        reserve[i, n] = pill
    return state


@exact
def add_virus(board, i, state, level, to_add):
    """One ``addVirus`` call (§3.4). Returns ``(state, placed)``: placed is 1 when a virus was
    written, 0 when the scan ran off the bottle (the draws stay consumed)."""
    max_h = MAX_VIRUS_HEIGHT[level]
    while True:
        state = lfsr_step(state)
        h = (state >> 8) & 15
        if h <= max_h:
            break
    pos = (15 - h) * 8 + (state & 7)
    color = to_add & 3
    if color == 3:
        state = lfsr_step(state)
        color = VIRUS_COLOR_RANDOM[state & 15]
    while True:
        while pos < 128 and board[i, pos] != EMPTY:
            pos += 1
        if pos >= 128:
            return state, 0
        bits = COLOR_BITS[cell(board, i, pos - 16) & 3] | COLOR_BITS[cell(board, i, pos + 16) & 3]
        if (pos & 7) >= 2:
            bits |= COLOR_BITS[board[i, pos - 2] & 3]
        if (pos & 7) <= 5:
            bits |= COLOR_BITS[board[i, pos + 2] & 3]
        if bits == 7:
            pos += 1
            continue
        while COLOR_BITS[color] & bits:
            color = 2 if color == 0 else color - 1
        board[i, pos] = VIRUS | color
        return state, 1


@exact(inline="always")
def pill_colors(pill):
    """(1st, 2nd) color of pill id 0..8."""
    return pill // 3, pill % 3


@exact(inline="always")
def free(board, i, index, o1, o2):
    """Cell ``index`` (wrapped) is exactly empty and is neither ``o1`` nor ``o2``."""
    k = index & 255
    return k != o1 and k != o2 and cell(board, i, k) == EMPTY


@exact
def fits(board, i, x, y, rot, o1=-1, o2=-1):
    """The ROM's fit test of the falling pill with anchor (x, y from the bottom, rot); cells
    ``o1`` and ``o2`` count as occupied (the just-locked pill, not yet on ``board``)."""
    a = (15 - y) * 8 + x
    if rot & 1:
        if y < 0:
            return False
        return free(board, i, a - 8, o1, o2) and free(board, i, a, o1, o2)
    if x < 0 or x > 6:
        return False
    return free(board, i, a, o1, o2) and free(board, i, a + 1, o1, o2)


@exact(inline="always")
def pill_cells(x, y, rot):
    """The two bottle indices a pill covers, -1 for a half above the bottle."""
    a = (15 - y) * 8 + x
    b = a - 8 if rot & 1 else a + 1
    return (a if 0 <= a < 128 else -1), (b if 0 <= b < 128 else -1)


@exact
def write_pill(board, i, x, y, rot, pill):
    """Write the pill's two halves (§1.3); a half above the bottle is dropped."""
    c1, c2 = pill_colors(pill)
    a = (15 - y) * 8 + x
    if rot & 1:
        bottom, top = (c1, c2) if rot == 1 else (c2, c1)
        if (a & 255) < 128:
            board[i, a & 255] = BOTTOM | bottom
        if ((a - 8) & 255) < 128:
            board[i, (a - 8) & 255] = TOP | top
    else:
        left, right = (c1, c2) if rot == 0 else (c2, c1)
        board[i, a] = LEFT | left
        board[i, a + 1] = RIGHT | right


@exact(inline="always")
def gravity_threshold(s, i):
    return SPEED_TABLE[BASE_SPEED[s.speed[i]] + s.speed_ups[i]]


@exact(inline="always")
def lock(s, i, telemetry=None):
    write_pill(s.board, i, s.x[i], s.y[i], s.rot[i], s.falling[i])
    s.status[i] = 15 - s.y[i]
    s.next_action[i] = PLACED
    s.placed_step[i] = 0
    s.lock_x[i], s.lock_y[i], s.lock_rot[i] = s.x[i], s.y[i], s.rot[i]
    s.frame_events[i, EV_LOCKS] += 1
    push_event(telemetry, i, TM_LOCK, s.frame_count[i], s.x[i] + 8 * s.y[i] + 128 * s.rot[i])


@exact(inline="always")
def pill_frame(board, i, x, y, rot, sc, hv, fc, held_prev, held, threshold):
    """One falling-pill pass (§5) on pill control state ``(x, y, rot, sc, hv)`` with frame
    counter ``fc`` (as this pass sees it), last frame's controller ``held_prev``, this frame's
    ``held`` and gravity threshold T. Returns ``(x, y, rot, sc, hv, locked)``; when locked, the
    pill locked at the pose it had before the X and rotate stages, which still ran."""
    pressed = held & ~held_prev & 0xFF
    locked = False
    # Y stage: soft drop on odd frames with Down the only d-pad bit, else gravity.
    drop = False
    if (fc & 1) == 1 and (held & 15) == BTN_DOWN:
        drop = True
    else:
        sc += 1
        if sc > threshold:
            drop = True
    o1 = o2 = -1
    if drop:
        sc = 0
        if y == 0 or not fits(board, i, x, y - 1, rot):
            locked = True
            o1, o2 = pill_cells(x, y, rot)  # the later stages see the pill written
        else:
            y -= 1
    # X stage: DAS charge in hv; walls skip silently, bottle contents set the charge to 15.
    move = False
    if pressed & (BTN_LEFT | BTN_RIGHT):
        hv = 0
        move = True
    elif held & (BTN_LEFT | BTN_RIGHT):
        hv += 1
        if hv >= 16:
            hv = 10
            move = True
    if move:
        if (held & BTN_RIGHT) and x != 6 + (rot & 1):
            if fits(board, i, x + 1, y, rot, o1, o2):
                x += 1
            else:
                hv = 15
        if (held & BTN_LEFT) and x != 0:
            if fits(board, i, x - 1, y, rot, o1, o2):
                x -= 1
            else:
                hv = 15
    # Rotate stage: edge-triggered A (rot - 1) then B (rot + 1); a reject restores both.
    if pressed & (BTN_A | BTN_B):
        save_rot, save_x = rot, x
        if pressed & BTN_A:
            ok, x = rotate_to(board, i, x, y, (rot - 1) & 3, held, o1, o2)
            rot = (rot - 1) & 3 if ok else save_rot
            if not ok:
                x = save_x
        if pressed & BTN_B:
            ok, x = rotate_to(board, i, x, y, (rot + 1) & 3, held, o1, o2)
            rot = (rot + 1) & 3 if ok else save_rot
            if not ok:
                x = save_x
    return x, y, rot, sc, hv, locked


@exact
def rotate_to(board, i, x, y, rot, held, o1, o2):
    """The ROM's rotation validation into ``rot``: extra left, then the left kick.
    Returns ``(ok, x)``."""
    if rot & 1:
        return fits(board, i, x, y, rot, o1, o2), x
    if fits(board, i, x, y, rot, o1, o2):
        if (held & BTN_LEFT) and fits(board, i, x - 1, y, rot, o1, o2):
            return True, x - 1
        return True, x
    if fits(board, i, x - 1, y, rot, o1, o2):
        return True, x - 1
    return False, x


@exact(inline="always")
def falling_pass(s, i, held_prev, held, telemetry=None):
    """§5 on env ``i``: the pill's pass; a lock writes the pill at its pre-move pose."""
    y0, x0, rot0 = s.y[i], s.x[i], s.rot[i]
    x, y, rot, sc, hv, locked = pill_frame(s.board, i, x0, y0, rot0, s.speed_counter[i], s.hor_velocity[i],
                                           s.fc[i], held_prev, held, gravity_threshold(s, i))
    if locked:
        s.x[i], s.y[i], s.rot[i] = x0, y0, rot0
        lock(s, i, telemetry)
    s.x[i], s.y[i], s.rot[i], s.speed_counter[i], s.hor_velocity[i] = x, y, rot, sc, hv


@exact
def check_drop(s, i):
    """One drop pass (§6.3); returns the number of pieces moved."""
    board = s.board
    moved = 0
    p = 127
    while p >= 0:
        if board[i, p] >= 0xF0:
            board[i, p] = EMPTY
            t = cell(board, i, p - 8)
            kind = t & 0xF0
            if t >= 0xA0 or kind == LEFT:
                pass
            elif kind == RIGHT:
                if board[i, p - 1] >= 0xF0:
                    board[i, p] = t
                    board[i, p - 1] = board[i, p - 9]
                    board[i, p - 8] = EMPTY
                    board[i, p - 9] = EMPTY
                    moved += 1
                    p -= 2
                    continue
            else:
                board[i, p] = t
                board[i, p - 8] = EMPTY
                moved += 1
        p -= 1
    return moved


@exact
def virus_destroyed(s, i):
    loops = SCORE_LOOPS[min(s.score_multiplier[i], SCORE_LOOPS.shape[0] - 1)]
    if loops == 0:
        loops = 256
    score = s.score[i] + loops * 10 * (s.speed[i] + 1)  # internal units: the display adds a 0
    if score >= 1000000:
        score = 900000 + score % 100000  # the top digit stops at 9, the others wrap
    s.score[i] = score
    s.score_multiplier[i] += 1
    s.virus_left[i] -= 1
    s.frame_events[i, EV_VIRUSES] += 1


@exact
def mark_run(s, i, start, step, n, telemetry=None):
    board = s.board
    push_event(telemetry, i, TM_MATCH, s.frame_count[i], n)
    for k in range(n):
        q = start + k * step
        v = board[i, q]
        if (v & 0xF0) == VIRUS:
            virus_destroyed(s, i)
            push_event(telemetry, i, TM_VIRUS_CLEARED, s.frame_count[i], v & 15)
        if (v & 0xF0) != MARKED:
            s.frame_events[i, EV_TILES] += 1
        board[i, q] = MARKED | (v & 15)
    s.match_flag[i] += 1
    s.frame_events[i, EV_MATCH_GROUPS] += 1


@exact
def check_hor_match(s, i, telemetry=None):
    board = s.board
    for row in range(16):
        col = 0
        while col <= 4:
            v = board[i, row * 8 + col]
            if v >= 0xF0:
                col += 1
                continue
            color = v & 15
            n = 1
            while col + n < 8 and (board[i, row * 8 + col + n] & 15) == color:
                n += 1
            if n >= 4:
                mark_run(s, i, row * 8 + col, 1, n, telemetry)
            col += n


@exact
def check_ver_match(s, i, telemetry=None):
    board = s.board
    for col in range(8):
        row = 0
        while row <= 12:
            v = board[i, row * 8 + col]
            if v >= 0xF0:
                row += 1
                continue
            color = v & 15
            n = 1
            while (cell(board, i, (row + n) * 8 + col) & 15) == color:
                n += 1
            if n >= 4:
                mark_run(s, i, row * 8 + col, 8, n, telemetry)
            row += n


@exact
def update_field(s, i):
    board = s.board
    for p in range(127, -1, -1):
        v = board[i, p]
        kind = v & 0xF0
        if kind == MARKED:
            board[i, p] = 0xF0 | (v & 15)
        elif kind == TOP:
            if (cell(board, i, p + 8) & 0xF0) != BOTTOM:
                board[i, p] = SINGLE | (v & 15)
        elif kind == BOTTOM:
            if (cell(board, i, p - 8) & 0xF0) != TOP:
                board[i, p] = SINGLE | (v & 15)
        elif kind == LEFT:
            if (cell(board, i, p + 1) & 0xF0) != RIGHT:
                board[i, p] = SINGLE | (v & 15)
        elif kind == RIGHT:
            if (cell(board, i, p - 1) & 0xF0) != LEFT:
                board[i, p] = SINGLE | (v & 15)


@exact(inline="always")
def placed_pass(s, i, telemetry=None):
    """One step of the lock-resolution step machine (§6.1)."""
    step = s.placed_step[i]
    if step == 0:
        s.score_multiplier[i] = 0
        s.placed_step[i] = 1
    elif step == 1 or step == 2:
        s.placed_step[i] = step + 1
    elif step == 3:
        if s.status[i] == 0xFF:
            moved = check_drop(s, i)
            s.status[i] = 15
            if moved > 0:
                s.frame_events[i, EV_DROP_PASSES] += 1
                push_event(telemetry, i, TM_CASCADE, s.frame_count[i], moved)
                s.placed_step[i] = 2
            else:
                s.placed_step[i] = 4
    elif step == 4:
        s.match_flag[i] = 0
        s.placed_step[i] = 5
    elif step == 5:
        check_hor_match(s, i, telemetry)
        s.placed_step[i] = 6
    elif step == 6:
        check_ver_match(s, i, telemetry)
        s.placed_step[i] = 7
    elif step == 7:
        update_field(s, i)
        s.status[i] = 15
        if s.match_flag[i] != 0:
            s.frame_events[i, EV_MATCH_ROUNDS] += 1
            push_event(telemetry, i, TM_CLEAR, s.frame_count[i], s.match_flag[i])
            s.placed_step[i] = 1
        else:
            s.placed_step[i] = 8
    else:
        s.placed_step[i] = 0
        s.next_action[i] = CHECK_ATTACK


@exact(inline="always")
def next_pill(s, i):
    """``generateNextPill``: next becomes falling, the reserve feeds next."""
    s.falling[i] = s.next_pill[i]
    s.next_pill[i] = s.reserve[i, s.reserve_index[i]]
    s.reserve_index[i] = (s.reserve_index[i] + 1) & 127


@exact(inline="always")
def throw_pass(s, i, telemetry=None):
    """One pass of the throw animation (§6.7); the last one spawns the next pill."""
    if s.speed[i] == 0 and (s.fc[i] & 1) == 0:
        return  # low speed animates on odd frames only
    s.thrown[i] += 1
    if s.thrown[i] < THROW_PASSES:
        return
    s.thrown[i] = 0
    next_pill(s, i)
    s.pills_sent[i] += 1
    if s.pills_sent[i] % 10 == 0 and s.speed_ups[i] < MAX_SPEED_UPS:
        s.speed_ups[i] += 1
        s.frame_events[i, EV_SPEED_UPS] += 1
    s.x[i], s.y[i], s.rot[i] = SPAWN_X, SPAWN_Y, 0
    s.frame_events[i, EV_SPAWNS] += 1
    push_event(telemetry, i, TM_SPAWN, s.frame_count[i], s.falling[i])
    if s.board[i, SPAWN_X] != EMPTY or s.board[i, SPAWN_X + 1] != EMPTY:
        write_pill(s.board, i, SPAWN_X, SPAWN_Y, 0, s.falling[i])
        s.outcome[i] = TOPPED_OUT
        push_event(telemetry, i, TM_TOP_OUT, s.frame_count[i], 0)
    s.next_action[i] = SEND_FINISHED


@exact(inline="always")
def frame(s, i, buttons, telemetry=None):
    """One NTSC frame of env ``i`` with controller byte ``buttons`` (bit0 Right, bit1 Left,
    bit2 Down, bit3 Up, bit6 B, bit7 A). Nothing runs once the game is over. ``telemetry``: a
    ``TelemetryRing`` that gets the frame's ``TELEMETRY`` events, or left out (nothing pushed)."""
    if s.status[i] != 0xFF:
        s.status[i] = (s.status[i] - 1) & 0xFF
    s.fc[i] = (s.fc[i] + 1) & 0xFF
    held_prev = s.held[i]
    s.held[i] = buttons
    if s.outcome[i] != PLAYING:
        return
    s.frame_count[i] += 1
    action = s.next_action[i]
    if action == FALLING:
        falling_pass(s, i, held_prev, buttons, telemetry)
    elif action == PLACED:
        placed_pass(s, i, telemetry)
    elif action == CHECK_ATTACK:
        s.next_action[i] = INC_ACTION
    elif action == SEND_FINISHED:
        s.next_action[i] = FALLING
    elif action == INC_ACTION:
        s.next_action[i] = SEND_PILL
    else:
        throw_pass(s, i, telemetry)
    if s.virus_left[i] == 0 and s.outcome[i] == PLAYING:
        s.outcome[i] = CLEARED
        push_event(telemetry, i, TM_VICTORY, s.frame_count[i], 0)


@exact
def place_viruses(board, i, lfsr, level):
    """The level intro's ``addVirus`` calls, one per frame, until every virus is placed.
    Returns ``(lfsr, calls)``."""
    to_add = 4 * (min(level, 20) + 1)
    calls = 0
    while to_add > 0:
        lfsr, placed = add_virus(board, i, lfsr, level, to_add)
        to_add -= placed
        calls += 1
    return lfsr, calls


@exact
def start_level(s, i, level, speed, lfsr, fc):
    """``initData_level`` and the level intro (§3): the reserve, two ``generateNextPill``
    calls, one ``addVirus`` call per intro frame. Leaves env ``i`` just before its first
    throw pass with the frame counter at ``fc`` + the intro's frames. Returns the LFSR state."""
    for k in range(128):
        s.board[i, k] = EMPTY
    s.level[i], s.speed[i] = level, speed
    s.speed_counter[i] = 0
    s.speed_ups[i] = 0
    s.next_action[i] = SEND_PILL
    s.placed_step[i] = 0
    s.thrown[i] = 0
    s.match_flag[i] = 0
    s.score_multiplier[i] = 0
    s.reserve_index[i] = 0
    s.outcome[i] = PLAYING
    s.frame_count[i] = 0
    s.score[i] = 0
    s.lock_x[i], s.lock_y[i], s.lock_rot[i] = -1, -1, -1
    for k in range(s.frame_events.shape[1]):
        s.frame_events[i, k] = 0
    lfsr = generate_reserve(s.reserve, i, lfsr)
    s.next_pill[i] = 0
    next_pill(s, i)
    next_pill(s, i)
    s.pills_sent[i] = 1
    s.x[i], s.y[i], s.rot[i] = SPAWN_X, SPAWN_Y, 0
    lfsr, calls = place_viruses(s.board, i, lfsr, level)
    s.virus_left[i] = 4 * (min(level, 20) + 1)
    s.status[i] = 0xFF
    s.fc[i] = (fc + calls + 128) & 0xFF  # the intro frames and the 128-frame wait
    s.lfsr[i] = lfsr
    return lfsr


@exact
def count_viruses(s, i, out):
    """Viruses on the bottle by color into ``out[0:3]``."""
    out[0] = out[1] = out[2] = 0
    for k in range(128):
        v = s.board[i, k]
        if (v & 0xF0) == VIRUS and (v & 15) <= BLUE:
            out[v & 15] += 1
