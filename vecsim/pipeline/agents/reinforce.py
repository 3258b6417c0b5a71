"""REINFORCE with a learned baseline (Williams, 1992; Sutton and Barto, 2018, section 13.4), in
NumPy: one gradient step per batch on ``-log pi(a|s) * (G - V(s))`` plus the baseline's squared
error and an entropy bonus, over the whole batch or over a random minibatch of it (a learner
whose step costs what acting a cycle costs, so that the pipeline can overlap the two).

A batch cuts episodes at the cycle's end, so the return to go ``G`` is summed to the end of the
trajectory and bootstrapped there with the baseline (and at a truncation, from the observation
the episode was cut at). The actors may act with older parameters than the learner's; the
gradient ignores that (no importance weights), which the staleness of one or two versions
that a queue of capacity one allows does not upset.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from vecsim.pipeline.agents import categorical, nn, returns
from vecsim.pipeline.agents.base import CategoricalAgent


@dataclasses.dataclass(frozen=True, eq=False)
class Reinforce(CategoricalAgent):
    """REINFORCE with a baseline, for Discrete actions (masks where the game has them).

    Parameters (beyond ``CategoricalAgent``'s)
    ----------
    ent_coef, vf_coef : float
        Weights of the entropy bonus and of the baseline's loss.
    normalize_advantages : bool
        Scale ``G - V`` to zero mean and unit variance over the samples of the step.
    minibatch_size : int, optional
        Take the step on this many samples of each batch (drawn without replacement, a new draw
        each cycle, seeded by ``seed`` and the cycle); the returns still come from the whole
        trajectory. ``None`` (default): every sample of the batch.
    """

    lr: float = 1e-3
    max_grad_norm: float = 100.0  # the baseline's squared error dominates the norm: 0.5 would starve the policy
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    normalize_advantages: bool = True
    minibatch_size: int | None = None

    def __post_init__(self):
        super().__post_init__()
        size = self.minibatch_size
        if size is not None and (not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < 1):
            raise ValueError(f"minibatch_size must be None or an int >= 1, but got minibatch_size={size!r}")

    def step_samples(self, batch) -> slice | np.ndarray:
        """The samples (indices into the flattened ``(T * n,)`` batch) of this cycle's step."""
        size = batch.num_steps * batch.num_envs
        if self.minibatch_size is None:
            return slice(None)
        if self.minibatch_size > size:
            raise ValueError(f"minibatch_size={self.minibatch_size} is more than the {size} samples of a batch "
                             f"({batch.num_steps} steps of {batch.num_envs} envs)")
        rng = np.random.default_rng([self.seed, batch.cycle])
        return np.sort(rng.choice(size, self.minibatch_size, replace=False))

    def learn(self, params, opt_state, batch):
        T, n = batch.num_steps, batch.num_envs
        rewards = returns.bootstrapped_rewards(batch, self.gamma, lambda o: self.value(params, o))
        mb = self.step_samples(batch)
        g = returns.discounted_returns(rewards, batch.dones, self.value(params, batch.observations[T]),
                                       self.gamma).reshape(-1)[mb]
        x = self.features(batch.observations[:T].reshape(T * n, -1)[mb])
        actions = batch.actions.reshape(-1)[mb]
        mask = None if batch.masks is None else batch.masks[:T].reshape(T * n, -1)[mb]
        B = len(actions)
        v, v_acts = nn.forward(params["v"], x)
        err = v[:, 0].astype(np.float64) - g
        adv = -err  # G - V(s)
        if self.normalize_advantages:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        logits, pi_acts = nn.forward(params["pi"], x)
        logp = categorical.log_softmax(logits, mask)
        d_logits = categorical.logits_grad(logp, actions, -adv / B, -self.ent_coef / B).astype(np.float32)
        d_v = (self.vf_coef * err / B).astype(np.float32)[:, None]
        grads = {"pi": nn.backward(params["pi"], pi_acts, d_logits), "v": nn.backward(params["v"], v_acts, d_v)}
        params, opt_state, norm = self._step(params, opt_state, grads)
        return params, opt_state, {"policy_loss": float(-(categorical.pick(logp, actions) * adv).mean()),
                                   "value_loss": float(0.5 * (err**2).mean()),
                                   "entropy": float(categorical.entropy(logp).mean()), "grad_norm": norm}
