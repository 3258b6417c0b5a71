"""PPO with action masks in PyTorch, through the same protocol as the NumPy agents: a user's
torch network needs nothing of the pipeline's beyond ``act`` and ``learn``.

The learner owns a ``torch.nn.Module`` and its optimiser (the optimiser state), updated in
place; what it publishes as parameters is a snapshot, a dict of detached copies of the
module's tensors. Each thread that acts (or evaluates values) keeps a module of its own and
copies a snapshot into it once, when it first meets that snapshot, then runs it under
``torch.inference_mode`` (torch releases the GIL inside its kernels). Returns and
advantages come from ``vecsim.pipeline.agents.returns``, the actions from each env's stream
(``vecsim.pipeline.agents.streams``), as in the NumPy PPO. Needs ``vecsim[train]``. It never
sets torch's thread count: the caller's setting stands.
"""

from __future__ import annotations

import copy
import threading

import numpy as np
import torch
from torch import nn

from vecsim.pipeline.agents import categorical, returns, streams
from vecsim.pipeline.agents.base import env_dims


def mlp(sizes, out_gain: float) -> nn.Sequential:
    """tanh MLP, CleanRL's orthogonal initialisation."""
    layers = []
    for k, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        linear = nn.Linear(fan_in, fan_out)
        nn.init.orthogonal_(linear.weight, out_gain if k == len(sizes) - 2 else np.sqrt(2.0))
        nn.init.zeros_(linear.bias)
        layers += [linear] if k == len(sizes) - 2 else [linear, nn.Tanh()]
    return nn.Sequential(*layers)


class ActorCritic(nn.Module):
    def __init__(self, obs_dim: int, num_actions: int, hidden=(64, 64)):
        super().__init__()
        self.pi = mlp((obs_dim, *hidden, num_actions), 0.01)
        self.v = mlp((obs_dim, *hidden, 1), 1.0)

    def forward(self, x):
        return self.pi(x), self.v(x)[:, 0]


class TorchPPO:
    """PPO in torch for Discrete actions (masks where the game has them).

    Parameters as for ``vecsim.pipeline.agents.PPO``: ``obs_dim``, ``num_actions``, ``hidden``,
    ``obs_scale``, ``lr``, ``gamma``, ``lam``, ``clip``, ``epochs``, ``minibatches``,
    ``ent_coef``, ``vf_coef``, ``max_grad_norm``, ``seed``.
    """

    def __init__(self, obs_dim: int, num_actions: int, *, hidden=(64, 64), obs_scale=1.0, lr=2.5e-4, gamma=0.99,
                 lam=0.95, clip=0.2, epochs=4, minibatches=4, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5, seed=0):
        self.obs_dim, self.num_actions, self.hidden = obs_dim, num_actions, tuple(hidden)
        self.scale = torch.as_tensor(np.asarray(obs_scale, dtype=np.float32))
        self.lr, self.gamma, self.lam, self.clip = lr, gamma, lam, clip
        self.epochs, self.minibatches, self.ent_coef, self.vf_coef = epochs, minibatches, ent_coef, vf_coef
        self.max_grad_norm, self.seed = max_grad_norm, seed
        self._template = None
        self._local = threading.local()  # each thread's module and the snapshot loaded into it

    @classmethod
    def for_env(cls, env_id: str, env_kwargs: dict | None = None, **kwargs) -> "TorchPPO":
        obs_dim, num_actions = env_dims(env_id, **(env_kwargs or {}))
        return cls(obs_dim, num_actions, **kwargs)

    def init(self, seed: int | None = None):
        """``(params, opt_state)``: a snapshot of a new ``ActorCritic``'s tensors, and
        ``{"module", "optimizer"}`` for the learner."""
        torch.manual_seed(self.seed if seed is None else seed)
        module = ActorCritic(self.obs_dim, self.num_actions, self.hidden)
        self._template = copy.deepcopy(module)
        optimizer = torch.optim.Adam(module.parameters(), lr=self.lr, eps=1e-5)
        return self.snapshot(module), {"module": module, "optimizer": optimizer}

    @staticmethod
    def snapshot(module: nn.Module) -> dict:
        return {name: t.detach().clone() for name, t in module.named_parameters()}

    def features(self, obs) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(obs, dtype=np.float32)) * self.scale

    def initial_actor_state(self, env_seeds):
        return {"keys": streams.env_keys(env_seeds), "draws": 0}

    def _module(self, params) -> nn.Module:
        """This thread's module holding ``params`` (copied in when they are new to the thread)."""
        local = self._local
        if getattr(local, "params", None) is not params:
            if self._template is None:
                raise ValueError("TorchPPO acts with the parameters of its init(): call init() first")
            if getattr(local, "module", None) is None:
                local.module = copy.deepcopy(self._template)
                local.layers = [[(m.weight, m.bias) for m in net if isinstance(m, nn.Linear)]
                                for net in (local.module.pi, local.module.v)]
            with torch.no_grad():
                for name, tensor in local.module.named_parameters():
                    tensor.copy_(params[name])
            local.params = params
        return local.module

    def _forward(self, params, x):
        """``(logits (B, A), values (B,))`` of ``ActorCritic.forward``, as ``nn.Linear`` computes
        them (``addmm``), without the modules' call overhead."""
        self._module(params)
        outputs = []
        with torch.inference_mode():
            for layers in self._local.layers:
                h = x
                for k, (weight, bias) in enumerate(layers):
                    h = torch.addmm(bias, h, weight.t())
                    if k < len(layers) - 1:
                        torch.tanh_(h)
                outputs.append(h)
        return outputs[0], outputs[1][:, 0]

    def act(self, params, actor_state, obs, mask):
        logits, value = self._forward(params, self.features(obs))
        logp = categorical.log_softmax(logits.numpy(), mask)
        actions = categorical.sample(logp, streams.uniforms(actor_state["keys"], actor_state["draws"]))
        extras = {"log_prob": categorical.pick(logp, actions), "value": value.numpy()}
        return actions, {"keys": actor_state["keys"], "draws": actor_state["draws"] + 1}, extras

    def value(self, params, obs) -> np.ndarray:
        return self._forward(params, self.features(obs))[1].numpy().astype(np.float64)

    def learn(self, params, opt_state, batch):
        module, optimizer = opt_state["module"], opt_state["optimizer"]
        T, n = batch.num_steps, batch.num_envs
        rewards = returns.bootstrapped_rewards(batch, self.gamma, lambda o: self.value(params, o))
        values = batch.extras["value"].astype(np.float64)
        adv = returns.gae(rewards, batch.dones, values, self.value(params, batch.observations[T]), self.gamma, self.lam)
        targets = torch.as_tensor((adv + values).reshape(-1), dtype=torch.float32)
        adv = torch.as_tensor(adv.reshape(-1), dtype=torch.float32)
        x = self.features(batch.observations[:T].reshape(T * n, -1))
        actions = torch.as_tensor(batch.actions.reshape(-1))
        old_logp = torch.as_tensor(batch.extras["log_prob"].reshape(-1), dtype=torch.float32)
        masks = None if batch.masks is None else torch.as_tensor(batch.masks[:T].reshape(T * n, -1))
        rng = np.random.default_rng([self.seed, batch.cycle])
        bounds = np.linspace(0, T * n, self.minibatches + 1).astype(int)
        stats = []
        for _ in range(self.epochs):
            order = torch.as_tensor(rng.permutation(T * n))
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                mb = order[lo:hi]
                logits, v = module(x[mb])
                if masks is not None:
                    logits = torch.where(masks[mb], logits, torch.tensor(categorical.MASKED_LOGIT))
                logp = torch.log_softmax(logits, dim=1)
                logp_a = logp.gather(1, actions[mb, None])[:, 0]
                a = adv[mb]
                a = (a - a.mean()) / (a.std(unbiased=False) + 1e-8)
                ratio = torch.exp(logp_a - old_logp[mb])
                pg = -torch.min(ratio * a, torch.clamp(ratio, 1 - self.clip, 1 + self.clip) * a).mean()
                entropy = -(logp.exp() * logp).sum(dim=1).mean()
                v_loss = 0.5 * ((v - targets[mb]) ** 2).mean()
                loss = pg - self.ent_coef * entropy + self.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(module.parameters(), self.max_grad_norm)
                optimizer.step()
                stats.append((pg.detach().item(), v_loss.detach().item(), entropy.detach().item()))
        pg, vl, ent = np.mean(stats, axis=0)
        return self.snapshot(module), opt_state, {"policy_loss": pg, "value_loss": vl, "entropy": ent}

    def greedy(self, params):
        def policy(obs, mask):
            logits = self._forward(params, self.features(obs))[0].numpy()
            return categorical.log_softmax(logits, mask).argmax(axis=1)
        return policy
