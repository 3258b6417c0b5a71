"""``StepResult``: the views returned by ``Engine.step_no_reset``."""

from __future__ import annotations

import numpy as np

from vecsim.engine.reset_mask import ResetMask


class StepResult:
    """Outputs of one ``step_no_reset``, as views into the engine's buffers.

    The arrays are overwritten by the engine's next ``step``, ``step_no_reset``, ``reset``
    or ``reset_envs``: copy what you keep. Terminal observations and flags are exact: they
    describe the step that ended the episode and are not touched until you reset the env.

    Attributes
    ----------
    observations : ndarray, shape (num_envs, obs_dim)
        Flat observations, the game's observation dtype.
    rewards : ndarray of float64 (float32 with precision="float32"), shape (num_envs,)
    terminals : ndarray of bool, shape (num_envs,)
    truncations : ndarray of bool, shape (num_envs,)
    masks : ndarray of bool, shape (num_envs, n_actions)
        Legal-action masks; shape (num_envs, 0) for games whose actions are always legal.
    events : ndarray of int64, shape (num_envs, n_events)
        Per-step event counters named by ``event_names``.
    extras : dict of str to ndarray
        The game's extra per-env outputs (e.g. Tetris's ``placement_cost``, (num_envs, n_actions)
        int16), as views.
    num_done : int
        Number of envs that finished in this step (``terminated | truncated``), counted by the
        step kernel (after ``Engine.step_no_reset``; -1 otherwise).
    done_mask : ResetMask or None
        Those envs as packed bits, written by the step kernel (``None`` when the last call
        was not ``step_no_reset``); what ``to_reset_mask`` returns.
    """

    __slots__ = ("observations", "rewards", "terminals", "truncations", "masks", "events", "event_names", "extras",
                 "num_done", "done_mask")

    def __init__(self, observations, rewards, terminals, truncations, masks, events, event_names=(), extras=None):
        self.observations = observations
        self.rewards = rewards
        self.terminals = terminals
        self.truncations = truncations
        self.masks = masks
        self.events = events
        self.event_names = tuple(event_names)
        self.extras = dict(extras or {})
        self.num_done = -1
        self.done_mask = None

    @property
    def num_envs(self) -> int:
        return self.rewards.shape[0]

    def _index(self, i) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"env index must be an int, got {i!r}")
        if not 0 <= i < self.num_envs:
            raise IndexError(f"env index {i} is out of range for num_envs={self.num_envs}")
        return int(i)

    def obs(self, i: int) -> np.ndarray:
        """Observation of env ``i`` (a view)."""
        return self.observations[self._index(i)]

    def is_terminal(self, i: int) -> bool:
        return bool(self.terminals[self._index(i)])

    def is_truncated(self, i: int) -> bool:
        return bool(self.truncations[self._index(i)])

    def is_done(self, i: int) -> bool:
        i = self._index(i)
        return bool(self.terminals[i] or self.truncations[i])

    def to_reset_mask(self) -> ResetMask:
        """The envs that terminated or were truncated by this step.

        After ``Engine.step_no_reset`` this is the mask the step kernel packed (no work in
        Python, no allocation): like the arrays, it is overwritten by the next step, so copy
        it (``ResetMask(m.num_envs, m.words)``) to keep it. It stays the step's mask after
        ``reset_envs``, which clears the flags.
        """
        if self.done_mask is not None:
            return self.done_mask
        return ResetMask.from_done_flags(self.terminals, self.truncations)

    def __repr__(self) -> str:
        done = int(np.count_nonzero(self.terminals | self.truncations))
        return f"StepResult(num_envs={self.num_envs}, done={done})"
