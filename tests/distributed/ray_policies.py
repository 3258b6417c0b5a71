"""Policies for the Ray collector's tests, importable by the actors (the tests' folder is on
their path through the driver's)."""

from __future__ import annotations

import os
import pathlib
import time

import numpy as np
from numba import njit


def lean_policy(obs, masks):
    """Deterministic, state-dependent CartPole policy: push toward the pole's lean."""
    return (obs[:, 2] + 0.3 * obs[:, 3] > 0).astype(np.int64)


def lean_policy_with_values(obs, masks):
    """``lean_policy`` with log-probs and values that are functions of the observation."""
    return lean_policy(obs, masks), obs[:, 0].astype(np.float64), obs[:, 1] * 3.0


@njit
def jitted_lean_policy(s, p, i, rng):
    """``lean_policy`` inside the kernel."""
    return np.int64(np.float32(s.theta[i]) + np.float32(0.3) * np.float32(s.theta_dot[i]) > 0)


class DieOnce:
    """``lean_policy``, except that the first actor to call it after ``calls`` calls of its own
    exits on the spot (a crash mid-batch); ``marker`` records that one did."""

    def __init__(self, marker: str, calls: int = 5):
        self.marker = marker
        self.calls = calls
        self.seen = 0

    def __call__(self, obs, masks):
        self.seen += 1
        if self.seen > self.calls:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                pass
            else:
                os.close(fd)
                os._exit(1)
        return lean_policy(obs, masks)


class Hang:
    """A policy that never answers on its first call (a node that stops responding)."""

    def __call__(self, obs, masks):
        time.sleep(3600)


def marker_path(tmp: pathlib.Path) -> str:
    return str(tmp / "died")
