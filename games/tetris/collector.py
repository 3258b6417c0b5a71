"""``BatchedTetrisCollector``: the episode collector preset for Tetris.

A thin preset over ``vecsim.EpisodeCollector`` (which works for every game): Tetris-v0 in
``drop`` mode by default, and ``policy_fn="dellacherie"`` for the in-kernel heuristic agent
(``vecsim.games.tetris.agent.policy``), the fastest path (no Python per step).
"""

from __future__ import annotations

from vecsim.collect.collector import EpisodeCollector

__all__ = ["BatchedTetrisCollector"]


class BatchedTetrisCollector(EpisodeCollector):
    """Collect ``[B, K, ...]`` batches of Tetris episodes.

    Parameters
    ----------
    num_workers : int
        Env slots (>= 1); results do not depend on it.
    max_steps : int
        ``K``, the padded episode length (>= 1).
    policy_fn : "dellacherie", "random", callable, @njit function or ndarray
        ``"dellacherie"``: the jitted heuristic agent inside the kernel. Anything else is
        passed to ``EpisodeCollector`` (a batched Python ``policy(obs, masks)``, an @njit
        ``policy(s, p, i, rng)``, an action array or ``"random"``).
    seed : int
        Job ``j`` is seeded ``seed + j``.
    action_mode : {"drop", "reach", "primitive"}
    prefetch : bool
        Double buffering, as in ``EpisodeCollector``.
    **rules
        Tetris rule keywords (``preset="classic"``, ``hold=False``...) and engine options.

    Examples
    --------
    >>> with BatchedTetrisCollector(64, 256, "dellacherie", seed=0, preset="classic") as c:
    ...     batch = c.request_episodes(128)
    >>> batch.observations.dtype
    dtype('uint8')
    """

    def __init__(self, num_workers: int, max_steps: int, policy_fn="dellacherie", seed: int = 0, *,
                 action_mode: str = "drop", prefetch: bool = False, **rules):
        if isinstance(policy_fn, str) and policy_fn == "dellacherie":
            if action_mode == "primitive":
                raise ValueError("the Dellacherie agent chooses placements: use action_mode='drop' or 'reach', "
                                 "not action_mode='primitive'")
            from vecsim.games.tetris.agent import policy as policy_fn
        super().__init__("Tetris-v0", num_workers, max_steps, policy_fn, seed, prefetch=prefetch,
                         action_mode=action_mode, **rules)
