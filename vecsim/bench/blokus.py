"""Random legal Blokus play in Numba on one thread: moves/s with the full mask every move.

    python -m vecsim.bench.blokus [--variant classic] [--num-envs 256] [--seconds 3]
                                        [--blokus-rl /path/to/python] [--env-level] [--sb3]
    python -m vecsim.bench.blokus --blokus-rl /path/to/python --paired 20 --seconds 1

Every move writes the acting seat's whole ``(91 * S * S,)`` bool mask (env ``i``'s row of an
``(N, A)`` batch), draws a uniform legal action from the env's own random stream, finds it by
reading the mask, and plays it; a finished game restarts. Batch-major (each round writes all
N masks, then reads them all: a batched env step), the same with packed masks (the bits set
straight from the bitboards, ``rules.write_legal_bits``: 4.5 KB a classic row instead of 36 KB)
and env-major (one env's mask stays in cache) are timed, then the parts on the positions the batch reached: the mask clear alone,
mask writing, reading a mask back, counting the moves without a mask, and the early-exit
test.

``--blokus-rl`` names a Python that has ``blokus-rl`` installed (keep it out of this project's
environment); its raw API (``PyBlokus``: observe, read ``action_mask``, step) is timed in the
same run, one game after another, for the side-by-side ratio.

``--env-level`` times the same random legal play through the Gymnasium ``VectorEnv`` of
``vecsim/Blokus-v0`` in selfplay mode (NEXT_STEP), each env's action drawn uniformly from its
whole mask as read from ``info["action_mask"]`` (``choose_legal``: the row's legal actions
counted, then the drawn one found; ``choose_legal_packed`` reads the packed mask's bits
without unpacking; the step kernel writes those bits itself, ``Engine(mask_format="packed")``,
and no bool mask): at 16 and 256 envs, ``copy=True`` (new arrays every step, what a trainer
keeping references needs) and ``copy=False`` (views read in place), the bool and the packed
mask (``mask_format="packed"``), each with 1 and 2 Numba threads (a fresh process each,
``NUMBA_NUM_THREADS``); the loop's rate and ``env.step``'s alone. blokus-rl's side reads its
whole mask every move too, as a competent user would: the 0/1 bytes viewed as ``bool``
(``np.frombuffer``, no copy; NumPy's ``nonzero`` has a fast path for ``bool``, not for
``int8``), ``flatnonzero``, then a uniform pick (docs/performance.md has its profile).

``--sb3`` times ``SB3VecEnv.step`` against the VectorEnv's at 64 selfplay envs, with and
without the masks fetched as MaskablePPO fetches them.

``--paired PAIRS`` (with ``--blokus-rl``) times only the default VectorEnv (``--num-envs``, one
thread, the loop above) against blokus-rl's loop, each in its own process waiting for its turn,
in alternating windows (``paired_windows``): on a machine whose speed drifts from minute to
minute (shared caches), the ratio of windows a second apart holds where separate runs do not.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time

import numpy as np

from vecsim.core.bits import ctz, popcount
from vecsim.core.jit import exact
from vecsim.core.rng import randint, seed_env
from vecsim.games.blokus import board, rules


@exact(inline="always")
def _word_popcounts(row):
    """Set bits of a packed row's whole 8-byte words (the tail is the caller's)."""
    nw = row.shape[0] // 8
    words = row[:nw * 8].view(np.uint64)
    n = 0
    for w in range(nw):
        n += popcount(np.int64(words[w]))
    return n


@exact(inline="always")
def _skip_words(row, k):
    """``(first byte of the 8-byte word that holds the k-th set bit, k less the bits before
    it)``; past the whole words (the tail's first byte) when they hold k bits or fewer."""
    nw = row.shape[0] // 8
    words = row[:nw * 8].view(np.uint64)
    for w in range(nw):
        c = popcount(np.int64(words[w]))
        if k < c:
            return 8 * w, k
        k -= c
    return nw * 8, k


#: Words of a bool row added at once (fewer than 256, so no byte lane of the sum carries).
_LANE_WORDS = 64
_BYTE_LANES = np.uint64(0x00FF00FF00FF00FF)
_SHORT_ONES = np.uint64(0x0001000100010001)


@exact(inline="always")
def _true_bytes(words, lo, hi):
    """Number of True in the 0/1 bytes of ``words[lo:hi]`` (``hi - lo < 256``): the words added
    as integers (each byte lane counts its Trues; the loop vectorises, unlike a popcount per
    word), then the eight lanes added."""
    acc = np.uint64(0)
    for w in range(lo, hi):
        acc += words[w]
    acc = (acc & _BYTE_LANES) + ((acc >> np.uint64(8)) & _BYTE_LANES)
    return np.int64((acc * _SHORT_ONES) >> np.uint64(48))


@exact
def _count_true(mask):
    """Number of True in a bool row (a bool is one 0/1 byte), ``_LANE_WORDS`` words at a time."""
    nw = mask.shape[0] // 8
    words = mask[:nw * 8].view(np.uint64)
    n = 0
    for lo in range(0, nw, _LANE_WORDS):
        n += _true_bytes(words, lo, min(nw, lo + _LANE_WORDS))
    for a in range(nw * 8, mask.shape[0]):
        n += mask[a]
    return n


@exact
def _nth_true(mask, k):
    """Index of the ``k``-th True (from 0) of a bool row: whole blocks of ``_LANE_WORDS`` words
    skipped by their counts, then words by their popcount, then bytes."""
    nw = mask.shape[0] // 8
    words = mask[:nw * 8].view(np.uint64)
    start = nw * 8
    for lo in range(0, nw, _LANE_WORDS):
        c = _true_bytes(words, lo, min(nw, lo + _LANE_WORDS))
        if k < c:
            for w in range(lo, nw):
                c = popcount(np.int64(words[w]))
                if k < c:
                    start = 8 * w
                    break
                k -= c
            break
        k -= c
    for a in range(start, mask.shape[0]):
        if mask[a]:
            if k == 0:
                return a
            k -= 1
    return -1


@exact
def _count_bits(packed):
    """Number of set bits of a packed row (uint8), read 8 bytes at a time."""
    n = _word_popcounts(packed)
    for j in range(packed.shape[0] // 8 * 8, packed.shape[0]):
        n += popcount(np.int64(packed[j]))
    return n


@exact
def _nth_set_bit(packed, k):
    """Index of the ``k``-th set bit (from 0) of a packed row (action ``a`` at bit ``a % 8`` of
    byte ``a // 8``), skipping 8 bytes at a time by their popcount, then whole bytes."""
    start, k = _skip_words(packed, k)
    for j in range(start, packed.shape[0]):
        byte = np.int64(packed[j])
        c = popcount(byte)
        if k < c:
            for _ in range(k):
                byte &= byte - 1
            return 8 * j + ctz(byte)
        k -= c
    return -1


@exact
def choose_legal(masks, rng, actions):
    """A uniform legal action for each row of ``masks`` (``(N, A)`` bool, C-contiguous), drawn
    from env ``i``'s stream of ``rng`` (``(N, 2)`` uint64) into ``actions`` (``(N,)`` int64):
    the row's legal actions counted (its bytes added as words, ``_true_bytes``), then the drawn
    one found by adding the row again up to it. An all-False row gets action 0."""
    for i in range(masks.shape[0]):
        n = _count_true(masks[i])
        actions[i] = _nth_true(masks[i], randint(rng, i, n)) if n > 0 else 0
    return actions


@exact
def choose_legal_packed(packed, rng, actions):
    """``choose_legal`` for packed masks (``(N, ceil(A / 8))`` uint8, ``mask_format="packed"``):
    the bits of each row counted 64 at a time, then the drawn one found, without unpacking."""
    for i in range(packed.shape[0]):
        n = _count_bits(packed[i])
        actions[i] = _nth_set_bit(packed[i], randint(rng, i, n)) if n > 0 else 0
    return actions


@exact
def _move(b, i, rng, mask):
    if b.game_over[i]:
        rules.clear_board(b, i)
    n = rules.write_legal_mask(b, i, b.to_move[i], mask)
    rules.play(b, i, _nth_true(mask, randint(rng, i, n)))


@exact
def _row_choice(row, rng, i, bits):
    """A uniform legal action of one mask row drawn from env ``i``'s stream: ``row`` bool, or
    packed (uint8) where ``bits``."""
    if bits:
        return _nth_set_bit(row, randint(rng, i, _count_bits(row)))
    return _nth_true(row, randint(rng, i, _count_true(row)))


@exact
def play_batch_major(b, rng, masks, rounds, bits):
    """``rounds`` batched steps: all masks written, then each env plays from its mask.
    ``masks``: ``(N, A)`` bool, or with ``bits`` packed ``(N, ceil(A / 8))`` uint8 whose bits
    are set straight from the bitboards (``rules.write_legal_bits``)."""
    n_envs = b.rows.shape[0]
    for _ in range(rounds):
        for i in range(n_envs):
            if b.game_over[i]:
                rules.clear_board(b, i)
            if bits:
                rules.write_legal_bits(b, i, b.to_move[i], masks[i])
            else:
                rules.write_legal_mask(b, i, b.to_move[i], masks[i])
        for i in range(n_envs):
            rules.play(b, i, _row_choice(masks[i], rng, i, bits))
    return rounds * n_envs


@exact
def play_env_major(b, rng, masks, moves):
    """``moves`` moves of each env in turn, its mask row reused while it stays in cache."""
    n_envs = b.rows.shape[0]
    for i in range(n_envs):
        for _ in range(moves):
            _move(b, i, rng, masks[i])
    return moves * n_envs


@exact
def clear_masks(b, masks, reps):
    for _ in range(reps):
        for i in range(masks.shape[0]):
            for a in range(masks.shape[1]):
                masks[i, a] = False
    return reps * masks.shape[0]


@exact
def write_masks(b, masks, reps):
    for _ in range(reps):
        for i in range(masks.shape[0]):
            rules.write_legal_mask(b, i, b.to_move[i], masks[i])
    return reps * masks.shape[0]


@exact
def read_masks(b, masks, reps):
    for _ in range(reps):
        for i in range(masks.shape[0]):
            n = _count_true(masks[i])
            b.corner[i, 0] = _nth_true(masks[i], n // 2)  # a store keeps the read alive
    return reps * masks.shape[0]


@exact
def generate_only(b, reps, early_exit):
    """Move generation with no mask: every move counted, or stop at the first (early exit)."""
    for _ in range(reps):
        for i in range(b.rows.shape[0]):
            if early_exit:
                rules.any_legal_move(b, i, b.to_move[i])
            else:
                rules.count_legal_moves(b, i, b.to_move[i])
    return reps * b.rows.shape[0]


def _timed(fn, *args, seconds):
    """Calls/s of ``fn`` (its return value counts the units), repeated for ``seconds``."""
    fn(*args)  # compile and warm up
    units, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        units += fn(*args)
    return units / (time.perf_counter() - t0)


_ENV_LEVEL = r"""
import sys, time
import gymnasium as gym
import numpy as np
import vecsim
from vecsim.core.rng import seed_env
from vecsim.bench.blokus import choose_legal, choose_legal_packed
n, seconds, copy, fmt = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == "copy", sys.argv[4]
env = gym.make_vec("vecsim/Blokus-v0", num_envs=n, vectorization_mode="vector_entry_point", copy=copy,
                   mask_format=fmt)
obs, info = env.reset(seed=0)
choose = choose_legal_packed if fmt == "packed" else choose_legal
rng, actions = np.zeros((n, 2), np.uint64), np.zeros(n, np.int64)
for i in range(n):
    seed_env(rng, i, i)
stepping = 0.0
def step():
    global obs, info, stepping
    choose(info["action_mask"], rng, actions)  # a uniform legal move per env, its whole mask read
    t = time.perf_counter()
    obs, r, term, trunc, info = env.step(actions)
    stepping += time.perf_counter() - t
for _ in range(20):
    step()
steps, stepping, t0 = 0, 0.0, time.perf_counter()
while time.perf_counter() - t0 < seconds:
    step()
    steps += 1
print(steps * n / (time.perf_counter() - t0), steps * n / stepping)
"""

#: (num_envs, copy, mask_format) of the VectorEnv rows, each timed with 1 and 2 Numba threads.
ENV_LEVEL_ROWS = tuple((n, copy, fmt) for n in (16, 256) for fmt in ("bool", "packed") for copy in (True, False))


def env_level(seconds: float) -> dict:
    """(placements/s of the loop, placements/s of ``env.step`` alone) through the VectorEnv, by
    (num_envs, copy, mask format, Numba threads), each in a fresh process."""
    import os

    out = {}
    for n, copy, fmt in ENV_LEVEL_ROWS:
        for threads in (1, 2):
            run = subprocess.run([sys.executable, "-c", _ENV_LEVEL, str(n), str(seconds), "copy" if copy else "view",
                                  fmt], capture_output=True, text=True, check=True,
                                 env=dict(os.environ, NUMBA_NUM_THREADS=str(threads)))
            loop, step = run.stdout.strip().splitlines()[-1].split()
            out[n, copy, fmt, threads] = (float(loop), float(step))
    return out


def blokus_rl(python: str, seconds: float) -> float:
    """blokus-rl's raw moves/s, timed by ``python`` (a Python that has it) in its own process."""
    out = subprocess.run([python, "-c", _BLOKUS_RL_WINDOWS], input=f"{seconds}\n", capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


# The paired run's two sides (blokus-rl's also times its plain run, as one window): each waits
# for a line (a window's seconds), plays for that long, and answers with its placements/s.
_BLOKUS_RL_WINDOWS = r"""
import sys, time
import numpy as np
from blokus_rl._blokus import PyBlokus
rng, env = np.random.default_rng(0), PyBlokus()
env.reset()
for line in sys.stdin:
    seconds, moves, t0 = float(line), 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        if env.is_over:
            env.reset()
        seat = env.agent_selection
        if env.terminations[seat]:
            env.step(None)
            continue
        legal = np.flatnonzero(np.frombuffer(env.observe(seat).action_mask, dtype=bool))
        env.step(int(legal[rng.integers(len(legal))]))
        moves += 1
    print(moves / (time.perf_counter() - t0), flush=True)
"""

_ENV_WINDOWS = r"""
import sys, time
import gymnasium as gym
import numpy as np
import vecsim
from vecsim.core.rng import seed_env
from vecsim.bench.blokus import choose_legal
n = int(sys.argv[1])
env = gym.make_vec("vecsim/Blokus-v0", num_envs=n, vectorization_mode="vector_entry_point")
obs, info = env.reset(seed=0)
rng, actions = np.zeros((n, 2), np.uint64), np.zeros(n, np.int64)
for i in range(n):
    seed_env(rng, i, i)
for line in sys.stdin:
    seconds, steps, t0 = float(line), 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        choose_legal(info["action_mask"], rng, actions)
        obs, r, term, trunc, info = env.step(actions)
        steps += 1
    print(steps * n / (time.perf_counter() - t0), flush=True)
"""


def paired_windows(ours: list, theirs: list, pairs: int, seconds: float, ours_env: dict | None = None) -> dict:
    """Alternate ``pairs`` windows of ``seconds`` between two waiting processes (``ours`` and
    ``theirs``: commands of the window protocol above), the order flipped every pair, after one
    untimed window each; returns each side's median rate and the median and quartiles of the
    pairs' ratios (ours / theirs). A machine whose speed drifts moves both sides of a pair.
    ``ours_env``: the environment of ``ours`` (default: this one's)."""
    if isinstance(pairs, bool) or not isinstance(pairs, (int, np.integer)) or pairs < 1:
        raise ValueError(f"pairs must be an int >= 1, but got pairs={pairs!r}")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ValueError(f"seconds must be a number > 0, but got seconds={seconds!r}")
    procs = [subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
             for cmd, env in ((ours, ours_env), (theirs, None))]

    def window(proc, length):
        try:
            proc.stdin.write(f"{length}\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            raise RuntimeError(f"{proc.args[0]} exited before it answered a window")
        return float(line)

    try:
        for proc in procs:
            window(proc, min(seconds, 1.0))  # compiled or loaded, and warm
        rates = [], []
        for k in range(pairs):
            for side in ((0, 1) if k % 2 == 0 else (1, 0)):
                rates[side].append(window(procs[side], seconds))
    finally:
        for proc in procs:
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()
            proc.stdout.close()
            proc.wait(30)
    ratios = np.array(rates[0]) / np.array(rates[1])
    return {"ours": float(np.median(rates[0])), "theirs": float(np.median(rates[1])),
            "ratio": float(np.median(ratios)), "quartiles": tuple(float(q) for q in np.percentile(ratios, [25, 75]))}


def _legal_keys(num_envs: int, n_actions: int):
    """A chooser of random legal actions from a bool mask (random keys, the argmax of key x mask)."""
    keys = np.random.default_rng(0).integers(1, 256, size=(num_envs, n_actions), dtype=np.uint8)
    product, actions = np.empty_like(keys), np.zeros(num_envs, np.int64)

    def choose(mask):
        np.multiply(keys, mask.view(np.uint8), out=product)
        return product.argmax(axis=1, out=actions)

    return choose


def sb3_against_vector_env(game_id: str, num_envs: int, seconds: float, rounds: int = 5) -> dict:
    """Steps/s of ``env.step`` alone at ``num_envs`` selfplay envs: the VectorEnv in NEXT_STEP
    and SAME_STEP mode, SB3VecEnv, and SB3VecEnv with the masks fetched as MaskablePPO fetches
    them (``get_action_masks``: ``env_method("action_masks")``, stacked). The same random
    legal actions (untimed) in each; rounds interleaved, the median of each."""
    import gymnasium as gym
    from sb3_contrib.common.maskable.utils import get_action_masks

    from vecsim.trainers.sb3 import SB3VecEnv

    def vector(mode):
        env = gym.make_vec(game_id, num_envs=num_envs, vectorization_mode="vector_entry_point", autoreset_mode=mode)
        env.reset(seed=0)
        return env, env.unwrapped.engine, env.step

    sb3 = SB3VecEnv(game_id, num_envs, seed=0)
    sb3.reset()

    def sb3_with_masks(actions):
        sb3.step(actions)
        get_action_masks(sb3)

    runs = {"VectorEnv NEXT_STEP": vector("next_step"), "VectorEnv SAME_STEP": vector("same_step"),
            "SB3VecEnv": (sb3, sb3.engine, sb3.step), "SB3VecEnv + MaskablePPO's masks": (sb3, sb3.engine, sb3_with_masks)}
    choose = _legal_keys(num_envs, sb3.engine.masks.shape[1])
    rates = {name: [] for name in runs}
    for _ in range(rounds):
        for name, (_, eng, step) in runs.items():
            steps, spent, t0 = 0, 0.0, time.perf_counter()
            while time.perf_counter() - t0 < seconds / rounds:
                actions = choose(eng.masks)
                t = time.perf_counter()
                step(actions)
                spent += time.perf_counter() - t
                steps += 1
            rates[name].append(steps * num_envs / spent)
    return {name: float(np.median(r)) for name, r in rates.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variant", default="classic", choices=sorted(board.VARIANTS))
    ap.add_argument("--num-envs", type=int, default=256)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--blokus-rl", metavar="PYTHON", help="a Python with blokus-rl installed")
    ap.add_argument("--env-level", action="store_true", help="also time the VectorEnv at 16/256 envs, 1/2 threads")
    ap.add_argument("--sb3", action="store_true", help="also time SB3VecEnv against the VectorEnv at 64 envs")
    ap.add_argument("--paired", type=int, default=0, metavar="PAIRS",
                    help="with --blokus-rl: the default VectorEnv (--num-envs, one thread) against blokus-rl in "
                         "PAIRS alternating windows of --seconds, each side waiting in its own process")
    args = ap.parse_args(argv)
    if args.paired < 0:
        raise ValueError(f"--paired needs PAIRS >= 0, but got --paired {args.paired}")
    if args.paired and not args.blokus_rl:
        raise ValueError("--paired times vecsim against blokus-rl: it needs --blokus-rl PYTHON")
    if args.paired and args.variant != "classic":
        raise ValueError(f"--paired times classic Blokus (blokus-rl has no other), but got --variant {args.variant}")
    if args.paired:
        import os

        got = paired_windows([sys.executable, "-c", _ENV_WINDOWS, str(args.num_envs)],
                             [args.blokus_rl, "-c", _BLOKUS_RL_WINDOWS], args.paired, args.seconds,
                             ours_env=dict(os.environ, NUMBA_NUM_THREADS="1"))
        print(f"vecsim/Blokus-v0 VectorEnv ({args.num_envs} envs, copy=True, bool mask, one thread) against "
              f"blokus-rl, {args.paired} alternating pairs of {args.seconds:g} s windows:\n"
              f"  vecsim {got['ours']:,.0f} placements/s, blokus-rl {got['theirs']:,.0f} moves/s (medians); "
              f"ratio {got['ratio']:.2f}x (quartiles {got['quartiles'][0]:.2f}-{got['quartiles'][1]:.2f})")
        return

    b = board.new_boards(args.num_envs, args.variant)
    rng = np.zeros((args.num_envs, 2), np.uint64)
    for i in range(args.num_envs):
        seed_env(rng, i, i)
    masks = np.zeros((args.num_envs, board.n_actions(b)), np.bool_)
    print(f"Blokus {args.variant}, num_envs={args.num_envs}, one thread, mask "
          f"{masks.shape[1]} bool = {masks.shape[1] / 1024:.1f} KiB a move")
    batch = _timed(play_batch_major, b, rng, masks, 8, False, seconds=args.seconds)
    print(f"  random legal play, batch-major (N masks, then N moves): {batch:12,.0f} moves/s")
    packed = np.zeros((args.num_envs, (masks.shape[1] + 7) // 8), np.uint8)
    batch_packed = _timed(play_batch_major, b, rng, packed, 8, True, seconds=args.seconds)
    print(f"  the same, packed masks (bits from the bitboards):       {batch_packed:12,.0f} moves/s")
    env = _timed(play_env_major, b, rng, masks, 8, seconds=args.seconds)
    print(f"  random legal play, env-major (mask row in cache):       {env:12,.0f} moves/s")
    # The parts, timed on the positions the games reached (every stage of a game).
    clear = _timed(clear_masks, b, masks, 1, seconds=args.seconds / 2)
    written = _timed(write_masks, b, masks, 4, seconds=args.seconds / 2)
    legal_per_mask = masks.sum() / args.num_envs
    read = _timed(read_masks, b, masks, 1, seconds=args.seconds / 2)
    counted = _timed(generate_only, b, 4, False, seconds=args.seconds / 2)
    tested = _timed(generate_only, b, 4, True, seconds=args.seconds / 2)
    for name, rate in (("clear one mask row", clear), ("write one mask (clear + generate)", written),
                       ("read one mask (count, find the middle one)", read),
                       ("generate, count only (no mask)", counted), ("any_legal_move (early exit)", tested)):
        print(f"  {name:42s} {1e6 / rate:8.2f} us")
    print(f"  (these positions: {legal_per_mask:.0f} legal moves a mask on average)")
    if args.blokus_rl:
        theirs = blokus_rl(args.blokus_rl, args.seconds)
        print(f"  blokus-rl 0.4.0 raw API (observe + mask + step):         {theirs:12,.0f} moves/s")
        print(f"  ratio vecsim / blokus-rl: batch-major {batch / theirs:.1f}x, packed {batch_packed / theirs:.1f}x, "
              f"env-major {env / theirs:.1f}x")
    if args.env_level:
        rows = env_level(args.seconds)
        if args.blokus_rl:  # again after the VectorEnv rows: their ratios use the mean of both
            again = blokus_rl(args.blokus_rl, args.seconds)
            print(f"  blokus-rl again after the VectorEnv rows: {again:,.0f} moves/s; the rows' ratios use the mean")
            theirs = (theirs + again) / 2
        print("  VectorEnv (NEXT_STEP, random legal moves from info['action_mask']), placements/s of the loop "
              "[of env.step alone]:")
        for (n, copy, fmt, threads), (loop, step) in rows.items():
            ratio = f"  ({loop / theirs:.1f}x blokus-rl)" if args.blokus_rl else ""
            print(f"    {n:4d} envs, copy={str(copy):5s} {fmt:6s} mask, {threads} thread{'s' if threads > 1 else ' '}: "
                  f"{loop:10,.0f} [{step:10,.0f}]{ratio}")
    if args.sb3:
        game_id = "vecsim/Blokus-v0" if args.variant == "classic" else "vecsim/BlokusDuo-v0"
        rates = sb3_against_vector_env(game_id, 64, 2 * args.seconds)
        base = rates["VectorEnv NEXT_STEP"]
        print(f"  {game_id} selfplay, 64 envs, env.step alone (median of 5 interleaved rounds):")
        for name, rate in rates.items():
            print(f"    {name:34s} {rate:10,.0f} steps/s  ({rate / base:.2f}x NEXT_STEP)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
