"""``vecsim bench --pipeline``: the actor-learner table, its cells and ratios."""

from __future__ import annotations

import json
import types

import numpy as np
import pytest

from vecsim import cli
from vecsim.bench import pipeline


def test_bench_pipeline_measures_every_cell_both_ways_and_reports_the_ratio(monkeypatch, tmp_path, capsys):
    calls = []

    def fake_run(impl, num_envs, mode, num_actors, cycles, steps_per_cycle=pipeline.STEPS_PER_CYCLE, learner="step"):
        calls.append((impl, num_envs, mode, num_actors, learner))
        return types.SimpleNamespace(steps_per_second=150.0 if mode == pipeline.PIPELINED else 100.0,
                                     cycles=cycles, seconds=0.03 * cycles, learn_seconds=0.02 * cycles,
                                     actor_cpu_seconds=np.array([0.027 * cycles]),
                                     learner_cpu_seconds=0.0063 * cycles), 1.25

    monkeypatch.setattr(pipeline, "run_metrics", fake_run)
    out = tmp_path / "pipeline.json"
    assert cli.main(["bench", "--pipeline", "--num-envs", "4", "--repeats", "2", "--no-progress",
                     "--json", str(out)]) == 0
    text = capsys.readouterr().out
    # three learners x two actor counts, each synchronous (on one actor) and pipelined, in two rounds
    assert len(calls) == 3 * 2 * 2 * 2
    assert {c[4] for c in calls} == set(pipeline.LEARNERS)
    assert all(c[3] == 1 for c in calls if c[2] == pipeline.SYNCHRONOUS)
    assert "1.50x" in text and "pipelined steps/s" in text
    # milliseconds per cycle acting and learning, from the synchronous runs
    assert "learning ms/cycle" in text and "20.0" in text and "10.0" in text
    assert "pipelined cores" in text and "1.25" in text
    assert "actors' cores" in text and "0.90" in text and "learner's cores" in text and "0.21" in text
    results = json.loads(out.read_text())["results"]
    assert [r["ratios"] for r in results] == [[1.5, 1.5]] * 6


def test_the_minibatch_learner_steps_on_16_samples_per_env_and_cycle():
    agent = pipeline.make_agent("numpy", "minibatch", 16)
    assert agent.minibatch_size == pipeline.MINIBATCH_STEPS * 16
    with pytest.raises(ValueError, match="impl='torch'"):
        pipeline.make_agent("torch", "minibatch", 16)


def test_acting_cost_is_cpu_time_per_step_of_acting_alone(capsys):
    assert 0 < pipeline.acting_cpu_per_step((4,), 2, cycles=1, repeats=1) < 1e5
    assert pipeline.main(["--acting-cost", "--num-envs", "2"]) == 0
    assert "CPU us per step" in capsys.readouterr().out


def test_learning_cost_is_cpu_time_of_the_learners_thread_per_cycle(capsys):
    assert 0 < pipeline.learning_cpu_per_cycle("minibatch", 2, cycles=1, repeats=1) < 1e4
    assert pipeline.main(["--learning-cost", "--num-envs", "2", "--learners", "minibatch", "none"]) == 0
    out = capsys.readouterr().out
    assert "learner's CPU ms per cycle" in out and "minibatch" in out and "none" not in out
