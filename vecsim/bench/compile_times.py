"""Cold compile times, per game, mode, batch size and kernel (``vecsim kernels --compile-times``).

Each case runs in a new interpreter with empty caches of its own (a temporary folder as
``VECSIM_CACHE_DIR``, and for Numba's cache of the games' functions ``NUMBA_CACHE_DIR``), as a
new user's first run does: import vecsim, ``make`` the
game in one of its modes at a batch size with ``parallel="auto"`` (the default), ``reset``
and ``step`` once: that is the *first step*. The 16-env case then calls ``step_no_reset``,
``reset_envs`` and an ``EpisodeCollector`` of random actions, so that every kernel a user
meets has its row. Each row is one kernel compile reported by Numba's ``numba:compile``
events (``vecsim.engine.compile_watch``), with the function inside it whose own compile took
longest.

A game's modes are its default and every other value of each structural parameter that it
lists in ``CHOICES`` (Tetris's ``action_mode``, Dr. Mario's ``mode``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

#: Batch sizes of a case: a small batch (serial kernels) and a large one (parallel kernels).
SIZES = (16, 4096)

_CASE = r"""
import json, sys, time
start = time.perf_counter()
import numpy as np
import vecsim
from vecsim.engine.compile_watch import compile_records
from vecsim.testing import legal_actions, sample_actions
game_id, num_envs, params = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
rng = np.random.default_rng(0)
eng = vecsim.make(game_id, num_envs, **params)
eng.reset(seed=0)
eng.step(sample_actions(eng.single_action_space, num_envs, rng, mask=legal_actions(eng)))
first_step = time.perf_counter() - start
if num_envs == min(SIZES):
    eng.step_no_reset(sample_actions(eng.single_action_space, num_envs, rng, mask=legal_actions(eng)))
    eng.reset_envs(eng.terminals | eng.truncations | True)
    from vecsim.collect.collector import EpisodeCollector
    with EpisodeCollector(game_id, 2, 4, "random", seed=0, **params) as collector:
        collector.request_episodes(2)
eng.close()
records = [[r.function, r.seconds, r.top_function, r.top_seconds] for r in compile_records()]
print(json.dumps({"first_step": first_step, "records": records}))
""".replace("SIZES", repr(SIZES))


def game_modes(game_id: str) -> list[dict]:
    """The game's modes as ``make`` keyword arguments: ``{}`` (its defaults), then each other
    value of each structural parameter with listed choices."""
    import vecsim

    spec = vecsim.resolve(game_id)
    choices = getattr(spec.module, "CHOICES", {})
    defaults = spec.params_cls()
    modes = [{}]
    for name in spec.structural:
        for k, value in enumerate(choices.get(name, ())):
            if k != int(getattr(defaults, name)):
                modes.append({name: value})
    return modes


def run_case(game_id: str, num_envs: int, params: dict, timeout: float = 900.0) -> dict:
    """One case in a new interpreter with an empty kernel cache: ``{"first_step": seconds,
    "records": [[kernel, seconds, longest function, its seconds], ...]}``. Raises
    ``RuntimeError`` with the interpreter's error output if it fails."""
    with tempfile.TemporaryDirectory(prefix="vecsim-cold-") as folder:
        # Numba's own cache too (the games' functions are cached beside their sources otherwise).
        env = dict(os.environ, VECSIM_CACHE_DIR=folder, NUMBA_CACHE_DIR=os.path.join(folder, "numba"),
                   VECSIM_CALIBRATION="0")
        proc = subprocess.run([sys.executable, "-c", _CASE, game_id, str(num_envs), json.dumps(params)],
                              capture_output=True, text=True, env=env, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{game_id} {params} at {num_envs} envs failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cases(games: list[str], sizes=SIZES) -> list[tuple]:
    """``(game_id, num_envs, params)`` of every case of ``games``: each mode at each size."""
    return [(game_id, n, params) for game_id in games for params in game_modes(game_id) for n in sizes]


def run_item(item: tuple) -> dict:
    """``run_case(*item)``, for a pool of processes."""
    return run_case(*item)


def table_rows(items: list[tuple], results: list[dict]) -> list[list[str]]:
    """Rows of the table of ``items`` (``cases``) and their ``results``: per case a row with
    its first step, then a row per kernel compile, longest first."""
    rows = []
    for (game_id, n, params), result in zip(items, results):
        mode = ", ".join(f"{k}={v}" for k, v in params.items()) or "default"
        rows.append([game_id.split("/", 1)[-1], mode, str(n), "first step", f"{result['first_step']:.1f}", ""])
        for kernel, seconds, top, top_seconds in sorted(result["records"], key=lambda r: -r[1]):
            rows.append(["", "", "", kernel, f"{seconds:.1f}", f"{top} {top_seconds:.1f}"])
    return rows


HEADER = ["game", "mode", "envs", "kernel", "seconds", "longest part (s)"]
