"""Shadow twins as a Gymnasium ``VectorEnv``: ``vecsim/DrMario-v0``'s decision-mode contract
(observations, actions, rewards, ``info``) over games played elsewhere.

The games are reached through a *link*, the coordinator's side of the capture and the
actuators, any object with these methods (``perception.SimulatedLink`` is one over games on
the frame-exact rules):

* ``start(seeds, which) -> (N,) float``: start the games of ``which`` (bool (N,)) at their
  level with LFSR states ``seeds[i]``; returns the external clock's time of each one's first
  frame (rows outside ``which`` are not read);
* ``send(script, which)``: give each twin of ``which`` its ``shadow.Script`` row (controller
  bytes, first frame, external times);
* ``receive() -> shadow.Evidence``: the next capture record of every game (blocking until it
  comes, in a live setup);
* ``stop(which)``: the actuators of ``which`` stop pressing (their scripts no longer hold:
  ``ShadowTwins.scripts_void``).
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

from vecsim.games.drmario.rules import EV_VIRUSES
from vecsim.games.drmario.shadow import ShadowTwins
from vecsim.games.drmario.tables import POWER_ON_CYCLE


class ShadowVectorEnv(VectorEnv):
    """``twins`` (a ``ShadowTwins`` driven by decisions) stepped through ``link`` (module
    docstring) as a Gymnasium ``VectorEnv``.

    The games run on their own clocks, so the twins reach their decisions at different times:
    ``step(actions)`` plays ``actions[i]`` (a placement, ``Discrete(512)``) on each twin waiting
    at a decision (``info["awaiting"]`` of the last call; the other twins' actions are
    ignored), sends the scripts, then takes the link's records until some twin awaits its next
    decision (or every twin has ended). It returns ``DrMario-v0``'s decision-mode observations
    ``(N, 136)`` uint8 (a twin not awaiting keeps its last one), rewards float64 (the viruses
    a twin's last placement cleared, as the twin plans it, given once, when the twin awaits
    again or ends), ``terminated`` (the game over, or the twin ended by a desync:
    ``info["terminal_reason"]`` 5), ``truncated`` (all False) and ``ShadowTwins.info`` with
    ``awaiting`` (N,) bool, ``quality`` (N,) int64 and ``records`` (records taken).

    Autoreset is ``DISABLED``: the games run elsewhere, and an ended twin stays ended until
    ``reset(options={"reset_mask": mask})`` has the link start its game again. ``reset(seed)``
    draws each game's LFSR state from the power-on cycle with ``numpy.random.default_rng(seed)``;
    ``options={"lfsr": states}`` gives them (N,). ``max_records``: records a step may take
    while no twin reaches a decision before it gives up (``RuntimeError``).
    """

    metadata = {"autoreset_mode": AutoresetMode.DISABLED}

    def __init__(self, twins: ShadowTwins, link, max_records: int = 36_000):
        if not isinstance(twins, ShadowTwins) or twins.driven_by != "decisions":
            raise ValueError(f"ShadowVectorEnv takes ShadowTwins driven_by='decisions', but got "
                             f"{twins.driven_by if isinstance(twins, ShadowTwins) else type(twins).__name__!r}")
        missing = [m for m in ("start", "send", "receive", "stop") if not callable(getattr(link, m, None))]
        if missing:
            raise ValueError(f"ShadowVectorEnv link must have start, send, receive and stop methods, but "
                             f"{type(link).__name__} lacks {', '.join(missing)}")
        if not isinstance(max_records, (int, np.integer)) or max_records < 1:
            raise ValueError(f"ShadowVectorEnv max_records must be a positive int, but got max_records={max_records!r}")
        self.twins, self.link, self.max_records = twins, link, int(max_records)
        self.num_envs = n = twins.num_twins
        self.single_observation_space = spaces.Box(0, 255, shape=(136,), dtype=np.uint8)
        self.single_action_space = spaces.Discrete(twins.action_mask.shape[1])
        self.observation_space = spaces.Box(0, 255, shape=(n, 136), dtype=np.uint8)
        self.action_space = spaces.MultiDiscrete(np.full(n, self.single_action_space.n))
        self._pending = np.zeros(n, np.float64)  # each twin's reward not yet given
        self._records = 0

    def reset(self, *, seed=None, options=None):
        n, options = self.num_envs, dict(options or {})
        which = options.pop("reset_mask", None)
        lfsr = options.pop("lfsr", None)
        if options:
            raise ValueError(f"ShadowVectorEnv.reset options are 'reset_mask' and 'lfsr', but got {sorted(options)}")
        chosen = np.ones(n, np.bool_) if which is None else np.asarray(which)
        if chosen.shape != (n,) or chosen.dtype != np.bool_:
            raise ValueError(f"ShadowVectorEnv.reset reset_mask must be a bool array of shape ({n},), but got "
                             f"shape {chosen.shape} dtype {chosen.dtype}")
        if lfsr is None:
            lfsr = POWER_ON_CYCLE[np.random.default_rng(seed).integers(POWER_ON_CYCLE.size, size=n)]
        lfsr = np.asarray(lfsr)
        if lfsr.shape != (n,) or not np.issubdtype(lfsr.dtype, np.integer):
            raise ValueError(f"ShadowVectorEnv.reset lfsr must be ints of shape ({n},), but got shape {lfsr.shape} "
                             f"dtype {lfsr.dtype}")
        lfsr = self.twins.checked_seeds(lfsr, chosen)  # before the link starts any game with them
        if chosen.any():
            start = np.asarray(self.link.start(lfsr, chosen), np.float64)
            self.twins.reset(lfsr, start, 0.0, which=chosen if which is not None else None)
        self._pending[chosen] = 0.0
        self._records = 0
        self._advance()
        return self.twins.observations, self._info()

    def step(self, actions):
        twins, n = self.twins, self.num_envs
        a = np.asarray(actions)
        if a.shape != (n,) or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"ShadowVectorEnv.step actions must be ints of shape ({n},), but got shape {a.shape} "
                             f"dtype {a.dtype}")
        waiting = twins.awaiting
        if waiting.any():
            script = twins.decide(a, waiting)  # checks each action against its twin's mask
            self._pending[waiting] += twins.plan.frame_events[waiting, EV_VIRUSES]
            self.link.send(script, waiting)
        ended_before = twins.terminal_reason != 0
        self._advance()
        terminated = twins.terminal_reason != 0
        given = twins.awaiting | (terminated & ~ended_before)
        rewards = np.where(given, self._pending, 0.0)
        self._pending[given] = 0.0
        return twins.observations, rewards, terminated, np.zeros(n, np.bool_), self._info()

    def _advance(self) -> None:
        """Take records until some twin awaits a decision or every twin has ended."""
        twins = self.twins
        for self._records in range(self.max_records + 1):
            if twins.awaiting.any() or np.all(twins.terminal_reason != 0):
                return
            if self._records == self.max_records:
                break
            void = twins.scripts_void
            twins.ingest(self.link.receive())
            stopped = twins.scripts_void & ~void
            if stopped.any():
                self.link.stop(stopped)
        raise RuntimeError(f"ShadowVectorEnv: no twin reached a decision in {self.max_records} records of the link "
                           f"(frames {twins.frame.min()}..{twins.frame.max()}): the evidence does not advance them")

    def _info(self) -> dict:
        info = {key: np.copy(value) for key, value in self.twins.info.items()}
        info["awaiting"] = self.twins.awaiting
        info["quality"] = self.twins.quality.copy()
        info["records"] = self._records
        return info
