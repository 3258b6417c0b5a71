"""``RayEpisodeCollector`` on a local Ray cluster: the single-process collector's batches bit
for bit whatever the number of actors, the runs of a dead actor collected again, a timeout
instead of a hang, every actor released by ``close()``."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from ray_cluster import local_ray  # noqa: E402
from ray_policies import DieOnce, Hang, jitted_lean_policy, lean_policy, lean_policy_with_values  # noqa: E402

from vecsim.collect.collector import EpisodeBatch, EpisodeCollector, PolicyError  # noqa: E402
from vecsim.distributed import CollectorTimeout, RayEpisodeCollector  # noqa: E402

pytestmark = pytest.mark.slow  # a local Ray cluster for the module: Ray's processes, actors killed and hung

CARTPOLE = "CartPole-v1"
K, SEED = 120, 7
#: Three actors share the cluster's two CPUs.
SHARE = {"num_cpus": 0.5}


@pytest.fixture(scope="module", autouse=True)
def cluster():
    with local_ray() as r:
        yield r


def single(policy, n, num_workers=5, requests=1):
    with EpisodeCollector(CARTPOLE, num_workers, K, policy, SEED) as collector:
        return [collector.request_episodes(n) for _ in range(requests)]


def distributed(policy, n, num_actors, num_workers=6, requests=1, **kwargs):
    with RayEpisodeCollector(CARTPOLE, num_workers, K, policy, SEED, num_actors=num_actors,
                             actor_options=SHARE, **kwargs) as collector:
        return [collector.request_episodes(n) for _ in range(requests)]


def assert_same_batch(a: EpisodeBatch, b: EpisodeBatch) -> None:
    for name in EpisodeBatch.__slots__:
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            assert x is None and y is None, name
        else:
            assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), name


@pytest.mark.parametrize("num_actors", [1, 2, 3])
def test_random_batches_equal_the_single_process_collectors(num_actors):
    want = single("random", 17, requests=2)
    got = distributed("random", 17, num_actors, requests=2)
    for a, b in zip(want, got):
        assert_same_batch(a, b)
    assert got[1].job_ids[0] == 17  # the second request goes on with the next jobs


@pytest.mark.parametrize("policy,policy_on,num_actors", [
    (jitted_lean_policy, "actors", 2),
    (lean_policy, "actors", 3),
    (lean_policy_with_values, "driver", 2),
    (lean_policy, "driver", 3),
], ids=["njit", "callable-on-actors", "callable-on-driver-with-values", "callable-on-driver"])
def test_policy_batches_equal_the_single_process_collectors(policy, policy_on, num_actors):
    want = single(policy, 13)[0]
    got = distributed(policy, 13, num_actors, policy_on=policy_on)[0]
    assert_same_batch(want, got)
    assert got.observations.flags.writeable and got.observations.flags.owndata


def test_actors_report_their_nodes():
    with RayEpisodeCollector(CARTPOLE, 2, K, "random", SEED, num_actors=2, actor_options=SHARE) as collector:
        here = ray.get_runtime_context().get_node_id()
        assert collector.nodes == [here, here]
        assert collector.alive_actors == 2


def test_an_actor_dying_mid_batch_has_its_jobs_collected_again(tmp_path):
    want = single(lean_policy, 20)[0]
    policy = DieOnce(str(tmp_path / "died"), calls=5)
    with RayEpisodeCollector(CARTPOLE, 6, K, policy, SEED, num_actors=3, actor_options=SHARE) as collector:
        got = collector.request_episodes(20)
        assert (tmp_path / "died").exists()  # one actor did exit mid-batch
        assert collector.alive_actors == 2
        assert_same_batch(want, got)
        more = collector.request_episodes(5)  # the collector goes on with the actors left
    with EpisodeCollector(CARTPOLE, 2, K, lean_policy, SEED) as reference:
        assert_same_batch(reference.request_episodes(5, first_job=20), more)


def test_a_killed_actor_has_its_jobs_collected_again_with_the_policy_on_the_driver():
    want = single(lean_policy, 12)[0]
    with RayEpisodeCollector(CARTPOLE, 4, K, lean_policy, SEED, num_actors=2, policy_on="driver",
                             actor_options=SHARE) as collector:
        ray.kill(collector.actors[0])
        assert_same_batch(want, collector.request_episodes(12))
        assert collector.alive_actors == 1


@pytest.mark.parametrize("policy_on", ["actors", "driver"])
def test_every_actor_dead_is_an_error_naming_every_actor_and_job_lost(policy_on):
    with RayEpisodeCollector(CARTPOLE, 2, K, lean_policy, SEED, num_actors=2, actor_options=SHARE,
                             policy_on=policy_on) as collector:
        collector.request_episodes(3)
        node = collector.nodes[0]
        for actor in collector.actors:
            ray.kill(actor)
        with pytest.raises(RuntimeError) as raised:
            collector.request_episodes(64)
        assert collector.closed
    # Both actors' runs (jobs 3..34 and 35..66) were lost, whichever died last.
    message = str(raised.value)
    assert message.startswith("every actor of the collector died: actor ")
    assert f"actor 0 (node {node})" in message and f"actor 1 (node {node})" in message
    assert "; jobs 3..66 of this request were not collected" in message


@pytest.mark.parametrize("policy_on", ["actors", "driver"])
def test_an_actor_that_never_answers_is_a_timeout(policy_on):
    # On the actors, a policy that blocks; on the driver, actor 0's process stopped (SIGSTOP),
    # as a node that stops answering.
    policy = Hang() if policy_on == "actors" else lean_policy
    collector = RayEpisodeCollector(CARTPOLE, 2, K, policy, SEED, num_actors=2, policy_on=policy_on,
                                    timeout_s=3.0, actor_options=SHARE)
    if policy_on == "driver":
        os.kill(collector.pids[0], signal.SIGSTOP)
    start = time.monotonic()
    with pytest.raises(CollectorTimeout, match=r"no answer within timeout_s=3.0 s .* from actor 0 \(node .*jobs 0\.\.1"):
        collector.request_episodes(4)
    assert time.monotonic() - start < 60
    assert collector.closed
    assert_released(collector, wait_s=30)


def assert_released(collector, wait_s=0.0):
    """Every actor is gone, at once or, after a kill without close(), within ``wait_s``."""
    deadline = time.monotonic() + wait_s
    for actor in collector.actors:
        while True:
            try:
                ray.get(actor.where.remote(), timeout=60)
            except ray.exceptions.RayActorError:
                break
            assert time.monotonic() < deadline, f"actor {actor} still answers after the collector closed"
            time.sleep(0.05)


def test_close_releases_every_actor():
    collector = RayEpisodeCollector(CARTPOLE, 3, K, "random", SEED, num_actors=3, actor_options=SHARE)
    collector.request_episodes(3)
    collector.close()
    collector.close()  # idempotent
    assert_released(collector)
    with pytest.raises(RuntimeError, match="closed"):
        collector.request_episodes(3)


def test_a_policy_error_on_the_driver_leaves_the_jobs_unconsumed():
    calls = []

    def flaky(obs, masks):
        calls.append(len(obs))
        if len(calls) == 3:
            raise KeyError("boom")
        return lean_policy(obs, masks)

    with RayEpisodeCollector(CARTPOLE, 4, K, flaky, SEED, num_actors=2, policy_on="driver",
                             actor_options=SHARE) as collector:
        with pytest.raises(PolicyError, match="KeyError"):
            collector.request_episodes(6)
        assert_same_batch(single(lean_policy, 6)[0], collector.request_episodes(6))


def test_a_policy_error_on_an_actor_names_the_actor_and_chains_the_policys_exception():
    def broken(obs, masks):
        raise KeyError("no such action table")

    with RayEpisodeCollector(CARTPOLE, 2, K, broken, SEED, num_actors=1, actor_options=SHARE) as collector:
        with pytest.raises(PolicyError, match=r"KeyError.*\(on actor 0, node ") as raised:
            collector.request_episodes(2)
    assert isinstance(raised.value.__cause__, KeyError)
    assert raised.value.__cause__.args == ("no such action table",)


def test_bad_actions_from_the_driver_policy_name_the_rows():
    with RayEpisodeCollector(CARTPOLE, 2, K, lambda obs, masks: np.zeros(1, dtype=np.int64), SEED,
                             num_actors=2, policy_on="driver", actor_options=SHARE) as collector:
        with pytest.raises(ValueError, match=r"policy actions must have 2 rows .* but got shape \(1,\)"):
            collector.request_episodes(4)


def test_an_illegal_action_on_an_actor_is_the_collectors_value_error():
    with RayEpisodeCollector(CARTPOLE, 2, K, lambda obs, masks: np.full(len(obs), 5), SEED, num_actors=1,
                             actor_options=SHARE) as collector:
        with pytest.raises(ValueError, match="policy action 5 of job 0"):
            collector.request_episodes(2)


def test_bad_game_arguments_are_raised_as_on_a_single_machine():
    with pytest.raises(ValueError, match="precision"):
        RayEpisodeCollector(CARTPOLE, 2, K, "random", SEED, num_actors=2, precision="float16", actor_options=SHARE)


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(num_actors=0), ValueError, "num_actors must be >= 1, but got num_actors=0"),
    (dict(num_actors=2.0), TypeError, "num_actors must be an int"),
    (dict(num_workers=1, num_actors=2), ValueError, r"num_workers must be >= 2 \(num_actors\), but got num_workers=1"),
    (dict(max_steps=0), ValueError, "max_steps must be >= 1"),
    (dict(seed=-1), ValueError, "seed must be in"),
    (dict(policy="greedy"), ValueError, "policy must be 'random'"),
    (dict(policy=np.zeros((4, K), dtype=np.int64)), TypeError, "no action-array policy"),
    (dict(policy=3), TypeError, "policy must be 'random', an @njit policy"),
    (dict(policy_on="gpu"), ValueError, "policy_on must be one of"),
    (dict(timeout_s=0), ValueError, "timeout_s must be a finite number > 0"),
    (dict(timeout_s="60"), TypeError, "timeout_s must be a number of seconds"),
    (dict(start_timeout_s=float("inf")), ValueError, "start_timeout_s must be a finite number > 0"),
    (dict(actor_options=[("num_cpus", 1)]), TypeError, "actor_options must be a dict"),
    (dict(prefetch=True), TypeError, "no prefetch"),
    (dict(env_id="Nope-v0"), ValueError, "unknown game id 'Nope-v0'"),
])
def test_bad_arguments_are_refused_before_any_actor_starts(kwargs, error, match):
    args = dict(env_id=CARTPOLE, num_workers=2, max_steps=K, policy="random", seed=SEED)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        RayEpisodeCollector(**args)


@pytest.mark.parametrize("num_episodes,error", [(0, ValueError), (2.5, TypeError), ("3", TypeError)])
def test_bad_num_episodes_are_refused(num_episodes, error):
    with RayEpisodeCollector(CARTPOLE, 2, K, "random", SEED, num_actors=1, actor_options=SHARE) as collector:
        with pytest.raises(error, match="num_episodes"):
            collector.request_episodes(num_episodes)


def test_the_benchmark_reports_both_collectors_and_the_model(capsys):
    from vecsim.bench.distributed import main

    assert main(["collect", "--batch", "8", "--rounds", "1", "--max-steps", "50", "--workers", "4"]) == 0
    out = capsys.readouterr().out
    assert "single/Ray" in out and "steps/s (M=16)" in out
    assert ray.is_initialized()  # the module's cluster is not the benchmark's to stop
