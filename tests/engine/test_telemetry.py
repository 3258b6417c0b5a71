"""The telemetry channel, on Tetris: the records agree with the step results, in order; a full
ring overwrites its oldest records and counts them as dropped; a reader on another thread gets
only whole records while the kernels run; and without telemetry the kernels are unchanged."""

from __future__ import annotations

import re
import threading
import types

import numpy as np
import pytest

import vecsim
from vecsim.core.telemetry import TelemetryRing, push_event, step_stamp
from vecsim.engine.abi import Capability
from vecsim.engine.codegen import fused_source, render_source
from vecsim.engine.game import load_game
from vecsim.games.tetris import EV_LINES, EV_PIECES

N = 5


def _stepped(eng, steps, read_each=False):
    """Step ``eng`` (first legal placements, finished envs reset); with ``read_each``, the
    telemetry read after each step with the step's results: ``[(events, result copy)]``."""
    log = []
    for _ in range(steps):
        result = eng.step_no_reset(eng.masks.argmax(axis=1))
        if read_each:
            log.append((eng.telemetry.read(), result.events.copy(), result.terminals.copy(), eng.obs.copy(),
                        eng.elapsed.copy()))
        eng.reset_envs(result.to_reset_mask())
    return log


def _every_record(num_envs, steps):
    """Every record of ``steps`` steps of ``num_envs`` envs seeded 4, by (env, seq): a ring too
    large to wrap."""
    eng = vecsim.make("Tetris-v0", num_envs, parallel=False, telemetry=2 * steps + 2)
    eng.reset(seed=4)
    _stepped(eng, steps)
    read = eng.telemetry.read()
    assert not read.dropped.any()
    return {(int(e), int(s)): (int(k), int(t), int(v)) for e, s, k, t, v in
            zip(read.env, read.seq, read.kind, read.stamp, read.value)}


@pytest.fixture(scope="module")
def reference():
    return _every_record(N, 60)


def test_records_agree_with_the_step_results_in_order():
    eng = vecsim.make("Tetris-v0", N, parallel=False, telemetry=16)
    assert eng.buffer_spec.capabilities & Capability.TELEMETRY
    eng.reset(seed=4)
    tops = 0
    for read, events, terminals, obs, elapsed in _stepped(eng, 60, read_each=True):
        assert not read.dropped.any()
        for i in range(N):
            expected = []
            if events[i, EV_PIECES]:
                expected.append(("lock", elapsed[i]))
                if events[i, EV_LINES]:
                    expected.append(("line_clear", elapsed[i], int(events[i, EV_LINES])))
                expected.append(("top_out", elapsed[i], 0) if terminals[i] else ("spawn", elapsed[i], int(obs[i, 0])))
            got = read.of_env(i)
            assert [g[:len(e)] for g, e in zip(got, expected)] == expected and len(got) == len(expected), i
            tops += bool(terminals[i])
        assert np.all(np.diff(read.seq[read.env == 0]) == 1)
    assert tops > 0  # the first-legal policy tops out: every kind was seen


def test_a_full_ring_keeps_the_newest_records_and_counts_the_rest_as_dropped(reference):
    eng = vecsim.make("Tetris-v0", N, parallel=False, telemetry=4)
    eng.reset(seed=4)
    _stepped(eng, 10)
    written = eng.telemetry.written.copy()
    read = eng.telemetry.read()
    assert np.array_equal(read.dropped, written - 3)  # a reader gets capacity - 1 records
    for i in range(N):
        seqs = read.seq[read.env == i]
        assert list(seqs) == list(range(written[i] - 3, written[i]))
    for e, s, k, t, v in zip(read.env, read.seq, read.kind, read.stamp, read.value):
        assert reference[int(e), int(s)] == (k, t, v)
    again = eng.telemetry.read()
    assert len(again) == 0 and not again.dropped.any()
    assert np.array_equal(eng.telemetry.dropped, written - 3) and not eng.telemetry.pending().any()


def test_a_reader_thread_gets_whole_records_while_the_kernels_run():
    """Each record read concurrently equals the reference's record of that number, and every
    record is either read once or counted as dropped once (a batch large enough for the reads
    to overlap the kernels, which release the GIL)."""
    n, steps = 64, 200
    reference = _every_record(n, steps)
    eng = vecsim.make("Tetris-v0", n, parallel=False, telemetry=8)
    eng.reset(seed=4)
    done = threading.Event()
    reads = []

    def reader():
        while not done.is_set():
            reads.append(eng.telemetry.read())
        reads.append(eng.telemetry.read())

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        _stepped(eng, steps)
    finally:
        done.set()
        thread.join()
    seen = set()
    for read in reads:
        for e, s, k, t, v in zip(read.env, read.seq, read.kind, read.stamp, read.value):
            assert reference[int(e), int(s)] == (k, t, v)
            assert (int(e), int(s)) not in seen
            seen.add((int(e), int(s)))
    dropped = sum(read.dropped for read in reads)
    per_env = np.bincount([e for e, _ in seen], minlength=n)
    assert np.array_equal(per_env + dropped, eng.telemetry.written)
    assert np.array_equal(eng.telemetry.written, np.bincount([e for e, _ in reference], minlength=n))


def test_caller_owned_ring_arrays_are_the_ring():
    eng0 = vecsim.make("Tetris-v0", 2, parallel=False, telemetry=8)
    bufs = eng0.buffer_spec.allocate(2, names=["telemetry_records", "telemetry_written"])
    eng = vecsim.make("Tetris-v0", 2, parallel=False, telemetry=8, buffers=bufs)
    assert eng.telemetry.records is bufs["telemetry_records"] and eng.telemetry.written is bufs["telemetry_written"]
    eng.reset(seed=0)
    _stepped(eng, 3)
    assert np.array_equal(bufs["telemetry_written"], [6, 6])  # a lock and a spawn a step


def test_without_telemetry_the_kernels_are_those_of_a_game_without_it():
    """The generated source without a ring names nothing of it; with one it differs only by
    the ring's import, arrays, argument, the fused step's flag and the module of the fused step
    it calls by symbol, whose own text differs by the ring argument alone."""
    game = vecsim.resolve("Tetris-v0")
    functions = game.kernel_functions(game.params_cls())
    off = render_source(game, "float64", True, functions)
    on = render_source(game, "float64", True, functions, telemetry=True)
    assert not re.search("(?i)telemetry|tele_", off)
    (fused_off, text_off), (fused_on, text_on) = (fused_source(game, "float64", functions, ring, "step")
                                                  for ring in (False, True))
    assert fused_off in off and fused_on in on and fused_off != fused_on
    assert text_on.replace(", True)", ")").replace(", ring", "") == text_off != text_on
    on = on.replace(fused_on, fused_off)
    undone = on.replace("from vecsim.core.telemetry import TelemetryRing\n", "")
    undone = undone.replace(", TelemetryRing(tele_records, tele_written, elapsed)", "")
    undone = undone.replace(", tele_records, tele_written", "")
    undone = re.sub(r"(= step_(?:run_)?and_write\(.*), True\)$", r"\1)", undone, flags=re.M)
    assert undone == off != on
    eng = vecsim.make("Tetris-v0", 2, parallel=False)
    assert eng.telemetry is None and "telemetry_records" not in eng._step_names
    assert not re.search("(?i)telemetry|tele_", eng.kernel_source())


def test_push_event_outside_kernels_and_without_a_ring():
    ring = TelemetryRing(np.zeros((2, 3, 3), np.int64), np.zeros(2, np.int64), np.array([4, 0], np.int32))
    for k in range(4):
        push_event(ring, 0, k, step_stamp(ring, 0), 10 * k)
    assert list(ring.written) == [4, 0] and ring.records[0, 0].tolist() == [3, 5, 30]
    push_event(None, 0, 1, 2, 3)
    assert step_stamp(None, 0) == 0


def test_bad_telemetry_options_are_refused():
    with pytest.raises(ValueError, match="CartPole reports no telemetry"):
        vecsim.make("CartPole-v1", 2, telemetry=8)
    with pytest.raises(ValueError, match="telemetry must be an int >= 2.*telemetry=1"):
        vecsim.make("Tetris-v0", 2, telemetry=1)
    with pytest.raises(TypeError, match="telemetry must be an int.*telemetry='8'"):
        vecsim.make("Tetris-v0", 2, telemetry="8")


def test_a_game_declaring_telemetry_must_take_the_ring_in_its_step():
    import minimal_game as minimal

    module = types.ModuleType("telemetry_without_parameter")
    module.__dict__.update({k: v for k, v in vars(minimal).items() if not k.startswith("__")})
    module.TELEMETRY = ("reached",)
    with pytest.raises(TypeError, match="declares TELEMETRY, so its step_env must take a last parameter "
                                        "telemetry=None"):
        load_game(module)
