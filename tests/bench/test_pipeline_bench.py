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

    def fake_run(impl, num_envs, mode, num_actors, cycles, steps_per_cycle=pipeline.STEPS_PER_CYCLE, learner="step",
                 minibatch=None):
        calls.append((impl, num_envs, mode, num_actors, learner))
        return types.SimpleNamespace(steps_per_second=150.0 if mode == pipeline.PIPELINED else 100.0,
                                     cycles=cycles, seconds=0.03 * cycles, learn_seconds=0.02 * cycles,
                                     actor_cpu_seconds=np.array([0.027 * cycles]),
                                     learner_cpu_seconds=0.0063 * cycles), 1.25

    monkeypatch.setattr(pipeline, "run_metrics", fake_run)
    monkeypatch.setattr(pipeline, "balanced_minibatch_size", lambda num_envs: 7 * num_envs)
    out = tmp_path / "pipeline.json"
    assert cli.main(["bench", "--pipeline", "--num-envs", "4", "--repeats", "2", "--no-progress",
                     "--json", str(out)]) == 0
    text = capsys.readouterr().out
    # four learners x two actor counts, each synchronous (on one actor) and pipelined, in two rounds
    assert len(calls) == 4 * 2 * 2 * 2
    assert {c[4] for c in calls} == set(pipeline.LEARNERS)
    assert all(c[3] == 1 for c in calls if c[2] == pipeline.SYNCHRONOUS)
    assert "1.50x" in text and "pipelined steps/s" in text
    # milliseconds per cycle acting and learning, from the synchronous runs
    assert "learning ms/cycle" in text and "20.0" in text and "10.0" in text
    assert "pipelined cores" in text and "1.25" in text
    assert "actors' cores" in text and "0.90" in text and "learner's cores" in text and "0.21" in text
    results = json.loads(out.read_text())["results"]
    assert [r["ratios"] for r in results] == [[1.5, 1.5]] * 8
    assert "minibatch (64)" in text and "balanced (28)" in text  # the samples of a gradient step


def test_the_minibatch_learner_steps_on_16_samples_per_env_and_cycle():
    agent = pipeline.make_agent("numpy", "minibatch", 16)
    assert agent.minibatch_size == pipeline.MINIBATCH_STEPS * 16
    with pytest.raises(ValueError, match="impl='torch'"):
        pipeline.make_agent("torch", "minibatch", 16)


@pytest.mark.parametrize("acting_ms, expected", [(15.0, 325), (1.0, 16), (1e4, 100 * 16)])
def test_the_balanced_learner_takes_the_samples_whose_learning_costs_what_acting_costs(monkeypatch, acting_ms,
                                                                                     expected):
    """Learning costs 2 ms a cycle plus 0.04 ms a sample, acting ``acting_ms`` a cycle."""
    def fake_run(impl, num_envs, mode, num_actors, cycles, learner, minibatch):
        assert (impl, mode, learner) == ("numpy", pipeline.SYNCHRONOUS, "balanced")
        learn = cycles * (2.0 + 0.04 * minibatch) / 1e3
        return types.SimpleNamespace(cycles=cycles, learn_seconds=learn, seconds=learn + cycles * acting_ms / 1e3), 1.0

    monkeypatch.setattr(pipeline, "run_metrics", fake_run)
    # (15 - 2) / 0.04 = 325 samples; else clamped to [num_envs, 100 * num_envs]
    size = pipeline.balanced_minibatch_size(16)
    assert size == expected
    assert pipeline.make_agent("numpy", "balanced", 16, minibatch=size).minibatch_size == size
    with pytest.raises(ValueError, match="the balanced learner is NumPy's Reinforce, but got impl='torch'"):
        pipeline.make_agent("torch", "balanced", 16)


def test_acting_cost_is_cpu_time_per_step_of_acting_alone(capsys):
    assert 0 < pipeline.acting_cpu_per_step((4,), 2, cycles=1, repeats=1) < 1e5
    assert pipeline.main(["--acting-cost", "--num-envs", "2"]) == 0
    assert "CPU us per step" in capsys.readouterr().out


def test_learning_cost_is_cpu_time_of_the_learners_thread_per_cycle(capsys):
    assert 0 < pipeline.learning_cpu_per_cycle("minibatch", 2, cycles=1, repeats=1) < 1e4
    assert pipeline.main(["--learning-cost", "--num-envs", "2", "--learners", "minibatch", "none"]) == 0
    out = capsys.readouterr().out
    assert "learner's CPU ms per cycle" in out and "minibatch" in out and "none" not in out
