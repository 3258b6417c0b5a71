"""The actor-learner loop: batches, seeding, the schedule of parameters, backpressure, faults."""

from __future__ import annotations

import gc
import threading
import time
import traceback

import numpy as np
import pytest

import vecsim
from vecsim.pipeline import Pipeline, default_num_actors
from vecsim.pipeline import loop as loop_module
from vecsim.pipeline.loop import THREAD_PREFIX

from pipeline_test_agents import LeanAgent, RaisingAgent

CARTPOLE = "vecsim/CartPole-v1"
TETRIS_DROP = {"action_mode": "drop", "preset": "classic"}


def actor_threads():
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]


def make(agent=None, mode="pipelined", **kwargs):
    kwargs.setdefault("steps_per_cycle", 16)
    return Pipeline(CARTPOLE, kwargs.pop("num_envs", 8), agent or LeanAgent(), params=0, mode=mode, **kwargs)


# -- construction ---------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, message", [
    ({"num_envs": 0}, "num_envs must be an int >= 1, but got num_envs=0"),
    ({"num_actors": 9}, "num_actors must be at most num_envs=8"),
    ({"num_actors": 0}, "num_actors=0"),
    ({"steps_per_cycle": 0}, "steps_per_cycle=0"),
    ({"queue_capacity": 0}, "queue_capacity=0"),
    ({"updates_per_cycle": -1}, "updates_per_cycle=-1"),
    ({"mode": "async"}, "mode='async'"),
    ({"seed": -1}, "seed=-1"),
    ({"fixed_lag": -1}, "fixed_lag=-1"),
    ({"fixed_lag": 1.5}, "fixed_lag=1.5"),
])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make(**kwargs)


def test_an_agent_without_learn_is_refused():
    class ActsOnly:
        def act(self, params, actor_state, obs, mask):
            return np.zeros(len(obs), dtype=np.int64), actor_state

    with pytest.raises(TypeError, match="agent must have a method learn"):
        make(ActsOnly())


def test_run_needs_a_positive_cycle_count():
    with make() as loop, pytest.raises(ValueError, match="num_cycles=0"):
        loop.run(0)


# -- batches --------------------------------------------------------------------------------
def test_batch_shapes_and_dtypes_cartpole():
    agent = LeanAgent()
    with make(agent, num_envs=6, num_actors=2, steps_per_cycle=5) as loop:
        loop.run(2)
    batch = agent.learned[-1]
    assert batch.observations.shape == (6, 6, 4) and batch.observations.dtype == np.float32
    assert batch.masks is None
    assert batch.actions.shape == (5, 6) and batch.actions.dtype == np.int64
    assert batch.rewards.shape == (5, 6) and batch.rewards.dtype == np.float64
    assert batch.terminated.shape == batch.truncated.shape == (5, 6)
    assert batch.final_observations.shape == (5, 6, 4)
    assert batch.env_slices == ((0, 3), (3, 6)) and batch.cycle == 1


def test_batch_of_a_masked_game_carries_the_masks():
    agent = LeanAgent()
    with Pipeline("vecsim/Tetris-v0", 4, agent, params=0, steps_per_cycle=3, env_kwargs=TETRIS_DROP) as loop:
        loop.run(1)
    batch = agent.learned[0]
    assert batch.masks.shape == (4, 4, 40) and batch.masks.dtype == np.bool_
    assert batch.observations.shape == (4, 4, 261) and batch.observations.dtype == np.uint8
    chosen = np.take_along_axis(batch.masks[:3], batch.actions[..., None], axis=2)
    assert chosen.all()


def reference_observations(num_envs, seed, steps, policy):
    """One engine over every env, stepped with ``policy(obs)``, finished envs reset on their own streams."""
    engine = vecsim.make(CARTPOLE, num_envs)
    engine.reset(seed=seed)
    out = [engine.obs.copy()]
    for _ in range(steps):
        result = engine.step_no_reset(policy(engine.obs))
        engine.reset_envs(result.to_reset_mask())
        out.append(engine.obs.copy())
    return np.stack(out)


@pytest.mark.parametrize("mode", ["pipelined", "synchronous"])
@pytest.mark.parametrize("num_actors", [1, 2, 3])
def test_env_k_plays_as_env_k_of_one_engine_seeded_seed(mode, num_actors):
    agent = LeanAgent()
    with make(agent, mode=mode, num_envs=7, num_actors=num_actors, steps_per_cycle=20, seed=5) as loop:
        loop.run(3)
    played = np.concatenate([b.observations[:-1] for b in agent.learned] + [agent.learned[-1].observations[-1:]])
    expected = reference_observations(7, 5, 60, lambda obs: LeanAgent().act(0, {"seeds": 0, "steps": 0}, obs, None)[0])
    np.testing.assert_array_equal(played, expected)


class PushRight(LeanAgent):
    def act(self, params, actor_state, obs, mask):
        return np.ones(len(obs), dtype=np.int64), actor_state


def test_episodes_and_final_observations_are_recorded():
    agent = PushRight()
    with make(agent, num_envs=4, steps_per_cycle=200) as loop:
        metrics = loop.run(2)
    batch = agent.learned[0]
    ended = np.argwhere(batch.dones)
    assert len(ended) == len(batch.episode_returns) > 0
    np.testing.assert_array_equal(batch.episode_steps, ended[:, 0])
    np.testing.assert_array_equal(batch.episode_envs, ended[:, 1])
    final = batch.final_observations[batch.dones]
    assert np.all((np.abs(final[:, 2]) > 0.2) | (np.abs(final[:, 0]) > 2.4))  # the pole fell, or the cart left
    assert not batch.final_observations[~batch.dones].any()
    assert metrics.episode_returns.sum() == pytest.approx(metrics.episode_lengths.sum())  # reward 1 a step


def test_synchronous_runs_are_reproducible():
    def play():
        agent = LeanAgent()
        with make(agent, mode="synchronous", seed=3) as loop:
            metrics = loop.run(4)
        return agent.learned, metrics

    (a, ma), (b, mb) = play(), play()
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.observations, y.observations)
        np.testing.assert_array_equal(x.actions, y.actions)
    np.testing.assert_array_equal(ma.episode_returns, mb.episode_returns)


# -- actor state and parameters --------------------------------------------------------------
def test_actor_state_is_carried_across_cycles_and_runs():
    agent = LeanAgent()
    with make(agent, num_envs=4, num_actors=2, steps_per_cycle=5) as loop:
        loop.run(2)
        loop.run(1)
    steps = [[s["steps"] for s in b.initial_actor_states] for b in agent.learned]
    assert steps == [[0, 0], [5, 5], [10, 10]]
    assert [[s["steps"] for s in b.final_actor_states] for b in agent.learned] == [[5, 5], [10, 10], [15, 15]]
    np.testing.assert_array_equal(agent.learned[0].initial_actor_states[1]["seeds"], [2, 3])  # seed 0 + env index


@pytest.mark.parametrize("mode", ["pipelined", "synchronous"])
def test_actors_act_with_published_versions(mode):
    with make(mode=mode, num_actors=2) as loop:
        metrics = loop.run(6)
        assert loop.params == 6 and loop.slot.version == 6
    versions = metrics.params_versions
    assert versions.shape == (6, 2)
    assert (np.diff(versions, axis=0) >= 0).all()
    assert (metrics.params_lag >= 0).all()
    if mode == "synchronous":
        np.testing.assert_array_equal(versions[:, 0], np.arange(6))
        assert not metrics.params_lag.any()
    assert [m["version"] for m in metrics.learner] == list(range(1, 7))


@pytest.mark.parametrize("mode", ["pipelined", "synchronous"])
@pytest.mark.parametrize("lag", [0, 1, 2])
def test_a_fixed_lag_fixes_the_version_of_every_cycle(mode, lag):
    with make(mode=mode, num_actors=2, fixed_lag=lag, queue_capacity=2) as loop:
        metrics = loop.run(4)
        metrics = loop.run(3)  # a second run goes on with the same schedule
    expected = np.maximum(0, np.arange(4, 7) - lag)  # one update a cycle: version c - L
    np.testing.assert_array_equal(metrics.params_versions, np.repeat(expected[:, None], 2, axis=1))
    np.testing.assert_array_equal(metrics.params_lag, np.minimum(np.arange(4, 7), lag)[:, None] + [0, 0])


@pytest.mark.parametrize("updates, calls", [(0, 0), (3, 9), (lambda cycle: cycle, 0 + 1 + 2)])
def test_updates_per_cycle(updates, calls):
    agent = LeanAgent()
    with make(agent, updates_per_cycle=updates) as loop:
        metrics = loop.run(3)
    assert len(agent.learned) == len(metrics.learner) == calls
    assert loop.slot.version == calls


def test_a_bad_update_count_from_the_hook_is_named():
    with make(updates_per_cycle=lambda cycle: -2) as loop, pytest.raises(ValueError, match=r"returned -2"):
        loop.run(1)


def test_actors_block_on_a_full_queue():
    """With capacity 1, an actor is at most its queued trajectory and the one it holds ahead of the learner."""
    release = threading.Event()
    T, capacity = 4, 1

    class SlowLearner(LeanAgent):
        def learn(self, params, opt_state, batch):
            if batch.cycle == 0:
                loop_ref[0].queues[0]  # noqa: B018
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and not all(len(q) == capacity for q in loop_ref[0].queues):
                    time.sleep(0.01)
                time.sleep(0.2)  # let the actors run on as far as they can
                self.acts_when_full = self.acts
                release.set()
            return super().learn(params, opt_state, batch)

    agent = SlowLearner()
    loop_ref = [None]
    with make(agent, num_envs=4, num_actors=2, steps_per_cycle=T, queue_capacity=capacity) as loop:
        loop_ref[0] = loop
        metrics = loop.run(10)
    # cycle 0 learned, `capacity` queued, one played and waiting to be queued: per actor
    assert agent.acts_when_full == 2 * (1 + capacity + 1) * T
    assert metrics.cycles == 10 and (metrics.actor_wait_seconds > 0).all()


def spin(seconds):
    """Burn ``seconds`` of this thread's CPU."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


@pytest.mark.parametrize("mode", ["synchronous", "pipelined"])
def test_each_threads_cpu_time_is_reported(mode):
    class BusyLearner(LeanAgent):
        def learn(self, params, opt_state, batch):
            spin(0.02)
            return super().learn(params, opt_state, batch)

    class BusyActor(LeanAgent):
        def act(self, params, actor_state, obs, mask):
            if actor_state["steps"] % 16 == 0:  # the first step of each cycle (steps_per_cycle=16)
                spin(0.01)
            return super().act(params, actor_state, obs, mask)

    for agent, busy in ((BusyLearner(), "learner"), (BusyActor(), "actors")):
        with make(agent, mode=mode, num_actors=2) as loop:
            metrics = loop.run(3)
        assert metrics.actor_cpu_seconds.shape == (2,) and (metrics.actor_cpu_seconds > 0).all()
        if busy == "learner":  # 3 learn calls of 20 ms each, and acting is light
            assert 0.06 <= metrics.learner_cpu_seconds < 0.06 + metrics.actor_cpu_seconds.sum() + 0.05
        else:  # each actor spins 10 ms at the start of each of 3 cycles; none of it counts as the learner's
            assert (metrics.actor_cpu_seconds >= 0.03).all()
            assert metrics.learner_cpu_seconds < 0.03


# -- faults ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["pipelined", "synchronous"])
def test_an_exception_in_an_actor_reaches_the_caller_with_its_traceback(mode):
    loop = make(RaisingAgent("act", at=1), mode=mode, num_envs=4, num_actors=2, steps_per_cycle=8)
    with pytest.raises(ValueError, match="boom in act") as info:
        loop.run(5)
    text = "".join(traceback.format_exception(info.value))
    assert "in act" in text and "pipeline_test_agents.py" in text
    if mode == "pipelined":
        assert "raised in actor 1 of the pipeline (envs 2..3), cycle 1" in text
    assert actor_threads() == []
    with pytest.raises(RuntimeError, match="closed"):
        loop.run(1)


@pytest.mark.parametrize("mode", ["pipelined", "synchronous"])
def test_an_exception_in_the_learner_stops_the_actors(mode):
    loop = make(RaisingAgent("learn", at=2), mode=mode)
    with pytest.raises(ValueError, match="boom in learn") as info:
        loop.run(50)
    assert "raised in the pipeline's learner, cycle 2" in "".join(traceback.format_exception(info.value))
    assert actor_threads() == []
    assert loop.closed


def test_act_returning_a_wrong_shape_is_named():
    class WrongShape(LeanAgent):
        def act(self, params, actor_state, obs, mask):
            return np.zeros(len(obs) + 1, dtype=np.int64), actor_state

    with make(WrongShape(), num_envs=4, num_actors=1) as loop, pytest.raises(ValueError, match=r"shape \(5,\).*\(4,\)"):
        loop.run(1)


def test_close_during_a_run_stops_it():
    started = threading.Event()

    class Waiting(LeanAgent):
        def learn(self, params, opt_state, batch):
            started.set()
            return super().learn(params, opt_state, batch)

    loop = make(Waiting(), num_envs=4, steps_per_cycle=64)
    result = {}
    runner = threading.Thread(target=lambda: result.setdefault("metrics", loop.run(1_000_000)))
    runner.start()
    assert started.wait(30)
    closer = threading.Thread(target=loop.close)
    closer.start()
    closer.join(timeout=5)  # close() itself waits at most about a second
    assert not closer.is_alive()
    runner.join(timeout=30)
    assert not runner.is_alive()
    metrics = result["metrics"]
    assert metrics.stopped and 0 < metrics.cycles < 1_000_000
    assert actor_threads() == [] and loop.closed


@pytest.mark.parametrize("num_envs, cores, expected", [(8, 16, 1), (127, 16, 1), (128, 16, 2), (256, 3, 2),
                                                       (256, 2, 1)])
def test_two_actor_threads_by_default_only_with_enough_envs_and_a_core_each(monkeypatch, num_envs, cores, expected):
    monkeypatch.setattr(loop_module, "available_cores", lambda: cores)
    assert default_num_actors(num_envs) == expected
    with make(num_envs=num_envs, steps_per_cycle=1) as loop:
        assert loop.num_actors == len(loop.actors) == expected


def wait_until(condition, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    return condition()


def test_actors_play_ahead_between_runs_and_stop_at_close():
    agent = LeanAgent()
    T, capacity = 4, 2
    with make(agent, num_envs=6, num_actors=3, steps_per_cycle=T, queue_capacity=capacity) as loop:
        loop.run(3)
        assert len(actor_threads()) == 3
        # Each actor fills its queue and holds one more trajectory ready, then waits.
        assert wait_until(lambda: all(len(q) == capacity for q in loop.queues))
        time.sleep(0.2)
        assert agent.acts == 3 * (3 + capacity + 1) * T
        assert len(agent.learned) == 3
        metrics = loop.run(2)
        assert metrics.cycles == 2 and [b.cycle for b in agent.learned] == [0, 1, 2, 3, 4]
    assert actor_threads() == [] and loop.closed


def test_a_dropped_loop_stops_its_actors():
    loop = make(num_actors=2)
    loop.run(1)
    assert len(actor_threads()) == 2
    del loop
    gc.collect()
    assert wait_until(lambda: actor_threads() == [], seconds=5)


@pytest.mark.parametrize("mode", ["pipelined", "synchronous"])
def test_with_a_fixed_lag_short_runs_equal_one_long_run(mode):
    def play(chunks):
        agent = LeanAgent()
        with make(agent, mode=mode, num_envs=6, num_actors=2, fixed_lag=1, seed=4) as loop:
            versions = [loop.run(n).params_versions for n in chunks]
        return agent.learned, np.concatenate(versions)

    (whole, v_whole), (cut, v_cut) = play([6]), play([1, 2, 1, 2])
    assert len(whole) == len(cut) == 6
    for a, b in zip(whole, cut):
        assert a.cycle == b.cycle
        np.testing.assert_array_equal(a.observations, b.observations)
        np.testing.assert_array_equal(a.params_versions, b.params_versions)
    np.testing.assert_array_equal(v_whole, v_cut)


def test_with_a_fixed_lag_pipelined_learning_equals_synchronous_learning():
    """A real learner (REINFORCE with a baseline) in threads gives the synchronous run's bits."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from vecsim.pipeline.agents import Reinforce

    def learn(mode):
        agent = Reinforce.for_env(CARTPOLE, hidden=(16,), seed=5)
        params, opt_state = agent.init()
        with threadpoolctl.threadpool_limits(1, user_api="blas"), \
                Pipeline(CARTPOLE, 8, agent, params=params, opt_state=opt_state, num_actors=2, steps_per_cycle=16,
                         mode=mode, seed=5, fixed_lag=2, queue_capacity=3) as loop:
            metrics = loop.run(6)
        return loop.params, metrics

    (p_sync, m_sync), (p_pipe, m_pipe) = learn("synchronous"), learn("pipelined")
    for name in ("pi", "v"):
        for a, b in zip(p_sync[name], p_pipe[name]):
            np.testing.assert_array_equal(a, b)
    assert [m["policy_loss"] for m in m_sync.learner] == [m["policy_loss"] for m in m_pipe.learner]
    np.testing.assert_array_equal(m_sync.episode_returns, m_pipe.episode_returns)
    np.testing.assert_array_equal(m_sync.params_versions, m_pipe.params_versions)


@pytest.mark.parametrize("num_envs", [0, -4, 2.5, "64", None])
def test_default_num_actors_refuses_what_is_not_a_number_of_envs(num_envs):
    with pytest.raises(ValueError, match=f"num_envs must be an int >= 1, but got num_envs={num_envs!r}"):
        default_num_actors(num_envs)
