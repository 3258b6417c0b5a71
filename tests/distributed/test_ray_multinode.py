"""``RayEpisodeCollector`` on a simulated three-node cluster (``ray.cluster_utils.Cluster``):
one actor per node, the single-process collector's batches bit for bit, and a node removed
between batches has its actor's jobs collected on the nodes left."""

from __future__ import annotations

import numpy as np
import pytest

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow  # a simulated cluster: Ray's processes, tens of seconds
from ray.cluster_utils import Cluster  # noqa: E402

from ray_cluster import RUNTIME_ENV  # noqa: E402
from ray_policies import jitted_lean_policy  # noqa: E402

from vecsim.collect.collector import EpisodeBatch, EpisodeCollector  # noqa: E402
from vecsim.distributed import RayEpisodeCollector  # noqa: E402

CARTPOLE = "CartPole-v1"
K, SEED = 150, 3


@pytest.fixture(scope="module")
def cluster():
    """A head and two worker nodes of one CPU each, on this machine."""
    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    workers = [nodes.add_node(num_cpus=1) for _ in range(2)]
    ray.init(address=nodes.address, runtime_env=RUNTIME_ENV)
    nodes.wait_for_nodes()
    yield nodes, workers
    ray.shutdown()
    nodes.shutdown()


def assert_same_batch(a: EpisodeBatch, b: EpisodeBatch) -> None:
    for name in EpisodeBatch.__slots__:
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None and y is None) or (x.dtype == y.dtype and np.array_equal(x, y)), name


def test_one_actor_per_node_and_a_removed_node_changes_no_batch(cluster):
    nodes, workers = cluster
    with EpisodeCollector(CARTPOLE, 4, K, jitted_lean_policy, SEED) as reference:
        want = [reference.request_episodes(n) for n in (9, 7)]
    with RayEpisodeCollector(CARTPOLE, 6, K, jitted_lean_policy, SEED, num_actors=3) as collector:
        assert len(set(collector.nodes)) == 3  # one actor on each node (num_cpus=1 each)
        assert_same_batch(want[0], collector.request_episodes(9))
        doomed = workers[0].node_id
        nodes.remove_node(workers[0])
        assert_same_batch(want[1], collector.request_episodes(7))
        assert collector.alive_actors == 2
        assert doomed in collector.nodes
