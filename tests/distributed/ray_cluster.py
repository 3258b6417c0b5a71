"""A local Ray cluster for one test module, whose workers import the tests' policies."""

from __future__ import annotations

import contextlib
import pathlib

HERE = str(pathlib.Path(__file__).resolve().parent)
#: What every test cluster's workers get: this folder on their path (ray_policies).
RUNTIME_ENV = {"env_vars": {"PYTHONPATH": HERE}}


@contextlib.contextmanager
def local_ray(**init_kwargs):
    """``ray.init`` on this machine (2 CPUs, no dashboard), shut down after."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, runtime_env=RUNTIME_ENV, **init_kwargs)
    try:
        yield ray
    finally:
        ray.shutdown()
