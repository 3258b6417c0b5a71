"""The speed benchmark's frame loops step every env: serial and parallel leave the same state."""

from __future__ import annotations

import numpy as np
import pytest

from vecsim.bench import drmario as bench
from vecsim.games.drmario import BUTTONS, rules
from vecsim.games.drmario.state import allocate


@pytest.mark.slow
def test_bench_loops_step_every_env_the_same_serial_and_parallel():
    n, rounds = 70, 40  # not a whole number of runs
    inputs = BUTTONS[np.random.default_rng(0).integers(0, len(BUTTONS), size=97)]
    states = []
    for parallel in (False, True):
        s = allocate(n)
        for i in range(n):
            rules.start_level(s, i, 10, 1, 0x8988 + i, 0)
        bench._loop(parallel)(s, inputs, rounds, 10, 1)
        assert (s.frame_count == rounds).all()
        states.append(s)
    for name in states[0]._fields:
        assert np.array_equal(getattr(states[0], name), getattr(states[1], name)), name


def test_planner_profile_refuses_a_call_count_below_one():
    with pytest.raises(ValueError, match="--profile-calls"):
        bench.main(["--planner-profile", "--profile-calls", "0"])


@pytest.mark.slow
def test_planner_profile_times_every_stage_of_a_search(capsys):
    bench.main(["--planner-profile", "--planner-decisions", "2", "--profile-calls", "1"])
    out = capsys.readouterr().out
    for stage in bench.PROFILE_STAGES:
        assert f"  {stage} " in out
    nodes = int(out.split("search nodes")[1].split()[0])
    assert nodes > 1


@pytest.mark.slow
def test_planner_profile_times_searches_that_outgrow_a_new_planner(capsys):
    """Level 3 at low speed: its thirteenth decision point visits more nodes than a new
    ``Planner`` holds."""
    bench.main(["--planner-profile", "--level", "3", "--speed", "0", "--planner-decisions", "13", "--profile-calls",
                "1"])
    out = capsys.readouterr().out
    largest = int(out.split("search nodes")[1].split("max")[1].split(")")[0])
    assert largest > 1 << 15


def test_samples_below_zero_are_refused_by_name():
    with pytest.raises(ValueError, match="--samples >= 0, got -1"):
        bench.main(["--decision-only", "--samples", "-1"])


@pytest.mark.slow
def test_decision_samples_print_each_second_with_their_median_and_best(capsys):
    bench.main(["--decision-only", "--decision-envs", "2", "--seconds", "0.05", "--samples", "3"])
    out = capsys.readouterr().out.splitlines()
    line = next(x for x in out if x.startswith("  1 s samples"))
    rates = [float(v) for v in line.split("samples")[1].split("decisions/s")[0].split()]
    median, best = (float(v.strip(" ,)")) for v in (line.split("median")[1].split(",")[0], line.split("best")[1]))
    assert len(rates) == 3 and min(rates) > 0
    assert median == pytest.approx(float(np.median(rates)), rel=1e-3) and best == pytest.approx(max(rates), rel=1e-3)
    assert sum(x.startswith("  1 s samples") for x in out) == 1  # of the parallel step only
    auto = next(x for x in out if x.startswith("decision auto"))
    assert float(auto.split()[2]) > 0 and ("the serial kernel" in auto or "the parallel kernel" in auto)
