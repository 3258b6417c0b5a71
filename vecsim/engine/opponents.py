"""Seats played out of the kernel by a Python callable (a game's ``CALLABLE_OPPONENT``).

The learner is seat 0. After each of its steps (and after a reset) the envs whose turn
belongs to another seat are stepped alone, by the ``step_envs`` kernel, with the callable's
actions for them, until every env is back at seat 0 or has finished; the other envs wait. So
a step of any front end returns only when every env is at the learner's seat: its reward,
``seat_rewards`` and events are summed over the learner's move and the opponents' moves after
it, and a finished env is reset as the autoreset mode resets it.

As with opponents played inside the kernel, the learner's move and the opponents' moves after
it are one step of the episode: one toward ``max_episode_steps``, whose truncation comes once
the opponents have played (the engine's step kernels run without a limit, ``step_envs``
leaves the count alone, and ``play`` truncates).
"""

from __future__ import annotations

import numpy as np

LEARNER = 0


def split_opponent(game, params: dict) -> tuple[dict, object]:
    """``(params, opponent)``: a callable given for the game's ``CALLABLE_OPPONENT`` field
    taken out of ``params`` (the field set to the game's choice name for it), or ``None``."""
    spec = game.callable_opponent
    if spec is None:
        bad = [k for k, v in params.items() if callable(v)]
        if bad:
            raise TypeError(f"{game.name} takes no callable parameter, but got {bad[0]}={params[bad[0]]!r}")
        return params, None
    name, choice = spec
    value = params.get(name)
    if isinstance(value, str) and value == choice:
        raise ValueError(f"{game.name} {name}={choice!r} is set by passing a function as {name}: "
                         f"{name}=f, with f(obs, mask) -> actions")
    if not callable(value):
        return params, None
    return {**params, name: choice}, value


def refuse_callable_opponent(game, params: dict, caller: str) -> None:
    """Raise ``ValueError`` naming the argument if ``params`` gives a callable for the game's
    ``CALLABLE_OPPONENT`` field: ``caller`` runs the game in kernels of its own, which step
    every seat in turn and never call Python between two moves."""
    spec = game.callable_opponent
    if spec is None or not callable(params.get(spec[0])):
        return
    name = spec[0]
    raise ValueError(f"{caller} cannot play {game.name}'s other seats by a Python callable: its kernels never "
                     f"call Python between two moves, so {name}={params[name]!r} would not play. Pass one of "
                     f"the game's in-kernel choices for {name}, or use vecsim.make, the VectorEnv or the Pipeline "
                     f"(they play a callable {name})")


class CallableOpponent:
    """The seats but seat 0 of ``engine``'s envs played by ``policy(obs, mask) -> actions``:
    ``obs`` the ``(k, obs_dim)`` flat observations (from the acting seat's point of view) and
    ``mask`` the ``(k, n_actions)`` bool legal moves of the ``k`` envs waiting on an opponent,
    in env order; the result ``k`` integer actions, each legal."""

    def __init__(self, engine, policy):
        self.engine = engine
        self.policy = policy
        self._actions = engine.zero_actions()
        # Each env's step count as the last step began (a SAME_STEP reset clears it in the kernel).
        self._steps_before = engine.elapsed.copy()

    def _actions_for(self, envs: np.ndarray) -> np.ndarray:
        eng = self.engine
        masks = eng.action_masks()[envs]  # bool whatever the engine's mask_format
        out = self.policy(eng.obs[envs], masks)
        try:
            acts = np.asarray(out)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"the opponent callable must return an array of actions, but returned "
                            f"{type(out).__name__}: {exc}") from None
        k = envs.shape[0]
        seats = eng.acting_seat
        if acts.shape != (k,):
            raise ValueError(f"the opponent callable must return shape ({k},), one action for each env it was given "
                             f"(envs {envs[:8].tolist()}{'...' if k > 8 else ''}), but returned shape {acts.shape}")
        if acts.dtype.kind not in "iu":
            raise TypeError(f"the opponent callable must return integer actions, but returned dtype {acts.dtype} "
                            f"(env {int(envs[0])}, seat {int(seats[envs[0]])})")
        n_actions = masks.shape[1]
        out_of_range = (acts < 0) | (acts >= n_actions)
        if out_of_range.any():
            j = int(np.flatnonzero(out_of_range)[0])
            raise ValueError(f"the opponent callable returned action {acts[j]} for env {int(envs[j])} "
                             f"(seat {int(seats[envs[j]])}), outside Discrete({n_actions})")
        illegal = ~masks[np.arange(k), acts]
        if illegal.any():
            j = int(np.flatnonzero(illegal)[0])
            raise ValueError(f"the opponent callable returned action {acts[j]} for env {int(envs[j])} "
                             f"(seat {int(seats[envs[j]])}), which is not a legal move there (row {j} of the "
                             f"mask it was given is False at {acts[j]}); nothing of that turn was stepped")
        return acts

    def play(self, same_step: bool, add_rewards: bool = True) -> None:
        """Step every env waiting on an opponent until none is. ``same_step``: reset the envs
        that finish as a SAME_STEP step does (the others wait for the autoreset mode's own).
        ``add_rewards``: after a step (not a reset, whose outputs are a fresh episode's): sum
        the opponents' moves into the step's reward and events, then truncate the envs whose
        episode reached ``max_episode_steps``."""
        eng = self.engine
        seat, waiting_done = eng.acting_seat, eng.needs_reset
        skip = eng.has_final.copy() if same_step else None  # reset this step: a new episode
        pending = (seat != LEARNER) & ~waiting_done
        if skip is not None:
            pending &= ~skip
        finished = np.zeros(eng.num_envs, np.bool_)
        if pending.any():
            before = (eng.rewards.copy(), eng.events.copy(), eng.seat_rewards.copy())
            rewards, events, seat_rewards = (a.copy() for a in before)
            while pending.any():
                envs = np.flatnonzero(pending)
                self._actions[envs] = self._actions_for(envs)
                eng.step_envs(pending, self._actions, counted=False)
                rewards[envs] += eng.seat_rewards[envs, LEARNER]
                events[envs] += eng.events[envs]
                seat_rewards[envs] += eng.seat_rewards[envs]
                finished[envs] |= waiting_done[envs]
                pending &= (seat != LEARNER) & ~waiting_done
            if not add_rewards:
                rewards, events, seat_rewards = before
            eng.rewards[:] = rewards
            eng.events[:] = events
            eng.seat_rewards[:] = seat_rewards
        if add_rewards and eng.max_episode_steps is not None:
            finished |= self._truncate(skip)
        if same_step and finished.any():
            eng.reset_same_step(finished)
        np.copyto(self._steps_before, eng.elapsed)

    def _truncate(self, reset_this_step) -> np.ndarray:
        """Set the truncation flags of the step that just ended from each env's step count, as
        the step kernels do (an env may be both terminated and truncated); returns the envs
        newly due for reset. ``reset_this_step``: the envs a SAME_STEP kernel reset (their
        count is the one before the step plus one), or ``None``."""
        eng = self.engine
        steps = eng.elapsed
        if reset_this_step is not None:
            steps = np.where(reset_this_step, self._steps_before.astype(np.int64) + 1, steps)
        truncated = steps >= eng.max_episode_steps
        eng.truncations[:] = truncated
        if reset_this_step is not None:
            truncated &= ~reset_this_step
        eng.needs_reset[truncated] = True
        return truncated
