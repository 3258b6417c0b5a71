"""The ROM's numeric tables (``games/drmario/SPEC.md`` names each one's source), built once at
import as module constants the kernels read."""

import numpy as np

#: Tile types: the high nibble of a bottle byte; the low nibble is the color (0 Y, 1 R, 2 B).
TOP, BOTTOM, LEFT, RIGHT, SINGLE, MARKED, VIRUS, EMPTY = 0x40, 0x50, 0x60, 0x70, 0x80, 0xB0, 0xD0, 0xFF
YELLOW, RED, BLUE = 0, 1, 2

#: Controller bits.
BTN_RIGHT, BTN_LEFT, BTN_DOWN, BTN_UP, BTN_START, BTN_SELECT, BTN_B, BTN_A = 1, 2, 4, 8, 16, 32, 64, 128

#: (81,) int64: gravity threshold T by index ``BASE_SPEED[speed] + speed_ups``; a row falls
#: every T + 1 frames.
SPEED_TABLE = np.array([
    69, 67, 65, 63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39,
    37, 35, 33, 31, 29, 27, 25, 23, 21, 19, 18, 17, 16, 15, 14, 13,
    12, 11, 10, 9, 9, 8, 8, 7, 7, 6, 6, 5, 5, 5, 5, 5,
    5, 5, 5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 3, 3, 3, 3,
    3, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0], np.int64)
#: (3,) int64: table index of speed 0 (low), 1 (med), 2 (hi) before any speed-up.
BASE_SPEED = np.array([15, 25, 31], np.int64)
MAX_SPEED_UPS = 49

#: (25,) int64: highest virus row counted from the bottom, by level.
MAX_VIRUS_HEIGHT = np.array([9] * 15 + [10, 10, 11, 11] + [12] * 6, np.int64)
#: (16,) int64: color of a "random" virus slot by ``rng1 & 15``.
VIRUS_COLOR_RANDOM = np.array([0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0, 0, 1, 2, 1], np.int64)
#: (4,) int64: neighbour-color bit of ``byte & 3`` (3, the empty byte's, blocks nothing).
COLOR_BITS = np.array([1, 2, 4, 0], np.int64)

#: (24,) int64: score loops of the n-th virus of one lock sequence (0 means 256); entries
#: from 11 on are the ROM bytes past the table (the big-combo glitch), repeated at the end.
SCORE_LOOPS = np.array([1, 2, 4, 8, 16, 32, 32, 32, 32, 32, 32,
                        10, 3, 0, 1, 2, 4, 0, 252, 248, 244, 242, 241, 240], np.int64)

#: Throw animation: active passes from the first throw pass to the spawn pass.
THROW_PASSES = 22
SPAWN_X, SPAWN_Y = 3, 15
POWER_ON_SEED = 0x8988
LFSR_CYCLE_LENGTH = 32767


def lfsr_next(state: int) -> int:
    """One step of the 16-bit LFSR (rng0 is the high byte)."""
    return ((((state >> 9) ^ (state >> 1)) & 1) << 15) | (state >> 1)


def _power_on_cycle() -> np.ndarray:
    out = np.empty(LFSR_CYCLE_LENGTH, np.int64)
    s = POWER_ON_SEED
    for k in range(LFSR_CYCLE_LENGTH):
        out[k] = s
        s = lfsr_next(s)
    return out


#: (32767,) int64: the power-on seed's cycle, ``POWER_ON_CYCLE[k]`` = k steps after power-on.
POWER_ON_CYCLE = _power_on_cycle()
