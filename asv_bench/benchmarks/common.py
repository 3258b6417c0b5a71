"""What the benchmark modules share: the parameter grid, and code for fresh interpreters.

With ``environment_type: "existing"`` asv installs nothing, so the checkout this folder
lives in is put on ``sys.path`` when vecsim is not importable; with a built environment the
installed vecsim of the commit under test is used.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

try:
    import vecsim
except ImportError:
    REPO_ROOT = str(pathlib.Path(__file__).resolve().parents[2])
    sys.path.insert(0, REPO_ROOT)
    import vecsim
else:
    REPO_ROOT = None

from vecsim.bench import measure as bench  # noqa: E402
from vecsim.bench import peers  # noqa: E402, F401  (the benchmark modules take it from here)

GAMES = tuple(vecsim.game_ids())
NUM_ENVS = bench.NUM_ENVS
LARGE_NUM_ENVS = (4096, 16384)
#: Serial kernel (16 envs) and parallel kernel (4096 envs): compiled separately.
FIRST_STEP_NUM_ENVS = (16, 4096)


def cache_setup_code(cache_dir: str) -> str:
    """Setup code for a fresh interpreter: vecsim's and Numba's caches in ``cache_dir``.

    Both must be set before Numba is imported. ``NUMBA_CACHE_DIR`` also moves the cache of
    the games' own jitted functions (else kept in ``games/__pycache__``), so an empty folder
    means a truly cold start.
    """
    lines = ["import os, sys",
             f"os.environ['VECSIM_CACHE_DIR'] = {cache_dir!r}",
             f"os.environ['NUMBA_CACHE_DIR'] = {cache_dir!r}"]
    if REPO_ROOT is not None:
        lines.append(f"sys.path.insert(0, {REPO_ROOT!r})")
    return "\n".join(lines) + "\n"


def first_step_code(game_id: str, num_envs: int) -> str:
    """Import, make the vector env, reset and take one step: what a user waits for."""
    return textwrap.dedent(f"""
        import gymnasium
        import vecsim
        env = gymnasium.make_vec({game_id!r}, {num_envs}, vectorization_mode="vector_entry_point")
        env.reset(seed=0)
        env.step(env.unwrapped.engine.zero_actions())
        env.close()
    """)


def fill_cache(cache_dir: str, game_id: str, num_envs: int) -> None:
    """Run the first step once in a fresh interpreter, leaving its compiled code in ``cache_dir``."""
    code = cache_setup_code(cache_dir) + first_step_code(game_id, num_envs)
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ))
