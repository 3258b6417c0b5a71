"""PPO with action masks, in NumPy: the clipped surrogate of Schulman et al. (2017) with the
details of CleanRL's ``ppo.py`` (GAE, per-minibatch advantage normalisation, global gradient
clipping, Adam with eps 1e-5, orthogonal initialisation) and MaskablePPO's masking (illegal
actions get probability 0 in acting and in learning).

The actors return each action's log-probability and value as extras, so the ratio is taken
against the policy that acted, whatever version of the parameters that was.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from vecsim.pipeline.agents import categorical, nn, returns
from vecsim.pipeline.agents.base import CategoricalAgent


@dataclasses.dataclass(frozen=True, eq=False)
class PPO(CategoricalAgent):
    """PPO for Discrete actions, with masks where the game has them.

    Parameters (beyond ``CategoricalAgent``'s)
    ----------
    lam : float
        GAE's lambda.
    clip : float
        The ratio's clipping range.
    epochs, minibatches : int
        Passes over each batch, and minibatches per pass.
    ent_coef, vf_coef : float
        Weights of the entropy bonus and of the value loss.
    """

    lam: float = 0.95
    clip: float = 0.2
    epochs: int = 4
    minibatches: int = 4
    ent_coef: float = 0.0
    vf_coef: float = 0.5

    def act(self, params, actor_state, obs, mask):
        """Actions, and extras ``log_prob`` and ``value`` ``(n,)`` float32."""
        actions, log_probs, x, actor_state = self.sample_actions(params, actor_state, obs, mask)
        return actions, actor_state, {"log_prob": log_probs, "value": self.predict_value(params, x)}

    def learn(self, params, opt_state, batch):
        T, n = batch.num_steps, batch.num_envs
        rewards = returns.bootstrapped_rewards(batch, self.gamma, lambda o: self.value(params, o))
        values = batch.extras["value"].astype(np.float64)
        adv = returns.gae(rewards, batch.dones, values, self.value(params, batch.observations[T]), self.gamma,
                          self.lam)
        targets = (adv + values).reshape(-1)
        adv = adv.reshape(-1)
        x = self.features(batch.observations[:T].reshape(T * n, -1))
        actions = batch.actions.reshape(-1)
        old_logp = batch.extras["log_prob"].reshape(-1).astype(np.float64)
        masks = None if batch.masks is None else batch.masks[:T].reshape(T * n, -1)
        rng = np.random.default_rng([self.seed, batch.cycle])
        size = T * n
        bounds = np.linspace(0, size, self.minibatches + 1).astype(int)
        stats = []
        for _ in range(self.epochs):
            order = rng.permutation(size)
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                mb = order[lo:hi]
                grads, info = self._gradients(params, x[mb], actions[mb], old_logp[mb], adv[mb], targets[mb],
                                              None if masks is None else masks[mb])
                params, opt_state, info["grad_norm"] = self._step(params, opt_state, grads)
                stats.append(info)
        metrics = {k: float(np.mean([s[k] for s in stats])) for k in stats[0]}
        metrics["lr"] = self._learning_rate(opt_state)
        return params, opt_state, metrics

    def _gradients(self, params, x, actions, old_logp, adv, targets, mask):
        B = len(actions)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        logits, pi_acts = nn.forward(params["pi"], x)
        logp = categorical.log_softmax(logits, mask)
        logp_a = categorical.pick(logp, actions).astype(np.float64)
        ratio = np.exp(logp_a - old_logp)
        unclipped = ratio * adv
        clipped = np.clip(ratio, 1.0 - self.clip, 1.0 + self.clip) * adv
        # -min(unclipped, clipped): its gradient flows through the unclipped term where it is the smaller
        d_logp_a = np.where(unclipped <= clipped, -adv * ratio / B, 0.0)
        d_logits = categorical.logits_grad(logp, actions, d_logp_a, -self.ent_coef / B).astype(np.float32)
        v, v_acts = nn.forward(params["v"], x)
        err = v[:, 0].astype(np.float64) - targets
        d_v = (self.vf_coef * err / B).astype(np.float32)[:, None]
        grads = {"pi": nn.backward(params["pi"], pi_acts, d_logits), "v": nn.backward(params["v"], v_acts, d_v)}
        log_ratio = logp_a - old_logp
        info = {"policy_loss": float(-np.minimum(unclipped, clipped).mean()), "value_loss": float(0.5 * (err**2).mean()),
                "entropy": float(categorical.entropy(logp).mean()),
                "approx_kl": float(((ratio - 1.0) - log_ratio).mean()),
                "clip_fraction": float((np.abs(ratio - 1.0) > self.clip).mean())}
        return grads, info
