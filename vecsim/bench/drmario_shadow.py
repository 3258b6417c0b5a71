"""Dr. Mario shadow mode: what ingesting and tracking evidence costs, per record.

    python -m vecsim.bench.drmario_shadow [--twins 1024] [--frames 1200] [--load 0]

``--twins`` twins (``driven_by="inputs"``) track the emulator capture of the attract demo, each
through its own ``Perception`` stream (2 frames of capture latency, 0-3 frames of jitter, 5% of
the frames dropped). Every frame's batch of records is made first, then ``ShadowTwins.ingest``
takes it, timed alone: wall clock and the CPU time of the calling thread (the kernel is serial:
one core). A record is one twin's evidence of one frame; tracking it plays the twin's frame on
the rules, compares the record with its window of frames and fits the timebase, and at each
decision point of the game the planner runs (the plan follows the track).

Printed: nanoseconds per record, records per second of one core, and the twins that core
tracks at the NES's 60.1 frames per second. ``--load N`` runs the same with N busy processes
beside it (``vecsim.bench.load``): the figure a coordinator gets on a shared machine.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from vecsim.bench.load import BusyProcesses, check_count
from vecsim.games.drmario.perception import CaptureFacts, Perception
from vecsim.games.drmario.shadow import NTSC_FRAME_RATE, ShadowTwins

#: The capture and the inputs that reproduce it, kept with the tests.
DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "drmario"


def track_capture(capture: CaptureFacts, twins: int, frames: int, seed: int = 0) -> dict:
    """Time ``ingest`` over the capture's first ``frames`` frames for ``twins`` twins; returns
    seconds (wall and thread CPU) and records ingested."""
    tw = ShadowTwins(twins, level=10, speed="med", driven_by="inputs")
    tw.start_from(capture.start_state(twins))
    tw.schedule_inputs(np.repeat(capture.buttons[None], twins, axis=0))
    perception = Perception(twins, seed=seed)
    wall = cpu = 0.0
    records = 0
    for f in range(1, min(frames, capture.frames) + 1):
        ev = perception.observe(capture.facts(f, twins), f)
        records += int(ev.present.sum())
        w0, c0 = time.perf_counter(), time.thread_time()
        tw.ingest(ev)
        cpu += time.thread_time() - c0
        wall += time.perf_counter() - w0
    if np.any(tw.tracking.desyncs):
        raise RuntimeError(f"a false desync in the benchmark: {np.flatnonzero(tw.tracking.desyncs)}")
    return {"wall": wall, "cpu": cpu, "records": records}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--twins", type=int, default=1024)
    ap.add_argument("--frames", type=int, default=1200, help="capture frames to track (at most 5572)")
    ap.add_argument("--load", type=int, default=0, help="busy processes beside the benchmark")
    args = ap.parse_args(argv)
    if args.twins < 1 or args.frames < 1:
        raise ValueError(f"need --twins >= 1 and --frames >= 1, got --twins {args.twins} --frames {args.frames}")
    load = check_count(args.load, "--load")
    capture = CaptureFacts(DATA / "nes_demo.json", DATA / "nes_demo_inputs.json")
    track_capture(capture, 2, 64)  # compiles (or loads) the kernels outside the timing
    if load:
        with BusyProcesses(load):
            result = track_capture(capture, args.twins, args.frames)
    else:
        result = track_capture(capture, args.twins, args.frames)
    n = result["records"]
    print(f"shadow ingest, {args.twins} twins, {n} records, load {load}:")
    for clock in ("wall", "cpu"):
        per = result[clock] / n
        print(f"  {clock:4s}: {per * 1e9:8.0f} ns/record  {1 / per:12,.0f} records/s  "
              f"{1 / per / NTSC_FRAME_RATE:10,.0f} twins at 60.1 Hz per core")


if __name__ == "__main__":
    main()
