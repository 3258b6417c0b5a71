"""What the example agents share: a categorical policy network over a game's flat observation,
the actor's per-env random streams, and a greedy evaluation through ``EpisodeCollector``."""

from __future__ import annotations

import dataclasses

import numpy as np

import vecsim
from vecsim.pipeline.agents import categorical, inference, nn, streams
from vecsim.pipeline.loop import MIN_ENVS_PER_ACTOR


# An actor's batch of fewer rows acts in one compiled call: a few microseconds of GIL a step
# instead of a dozen NumPy calls. From here on NumPy's SIMD tanh outruns the compiled one, and
# the GIL-held calls are a small share of a step. Pipeline's default gives an actor thread of its
# own only to slices of at least this many envs, so a synchronous loop and a pipelined one with
# default actors take the same path.
COMPILED_ACTING_ROWS = MIN_ENVS_PER_ACTOR


def compiled_acting(obs: np.ndarray) -> bool:
    """Whether the example agents act on ``obs`` ``(B, obs_dim)`` in one compiled call."""
    return len(obs) < COMPILED_ACTING_ROWS


def env_dims(env_id: str, **env_kwargs) -> tuple[int, int]:
    """``(obs_dim, num_actions)`` of a game with Discrete actions (from a one-env engine)."""
    engine = vecsim.make(env_id, 1, **env_kwargs)
    try:
        n = getattr(engine.single_action_space, "n", None)
        if n is None:
            raise TypeError(f"the example agents need a Discrete action space, but {env_id} has "
                            f"{engine.single_action_space}")
        return engine.obs_dim, int(n)
    finally:
        engine.close()


@dataclasses.dataclass(frozen=True, eq=False)
class CategoricalAgent:
    """A policy network ``pi`` (logits) and a value network ``v`` over scaled observations.

    Parameters
    ----------
    obs_dim, num_actions : int
        The game's flat observation size and its number of Discrete actions.
    hidden : tuple of int
        Hidden layer widths of the policy network (tanh).
    value_hidden : tuple of int, optional
        Those of the value network (default: ``hidden``).
    obs_scale : float or ndarray of shape (obs_dim,)
        The networks read ``obs * obs_scale`` as float32.
    lr : float
        Adam's learning rate.
    lr_decay_updates : int, optional
        Decay the learning rate linearly to 0 over this many Adam steps (default: constant).
    gamma : float
        Discount.
    max_grad_norm : float
        The global norm gradients are clipped to.
    seed : int
        Seeds the initial weights (``init``) and the learner's minibatch order.
    """

    obs_dim: int
    num_actions: int
    hidden: tuple = (64, 64)
    value_hidden: tuple | None = None
    obs_scale: object = 1.0
    lr: float = 2.5e-4
    lr_decay_updates: int | None = None
    gamma: float = 0.99
    max_grad_norm: float = 0.5
    seed: int = 0

    def __post_init__(self):
        for name in ("obs_dim", "num_actions"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, but got {name}={value!r}")
        for name in ("hidden", "value_hidden"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, tuple)
                                      or not all(isinstance(w, (int, np.integer)) and w >= 1 for w in value)):
                raise ValueError(f"{name} must be a tuple of ints >= 1, but got {name}={value!r}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], but got gamma={self.gamma!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, but got lr={self.lr!r}")
        scale = np.asarray(self.obs_scale, dtype=np.float32)
        if scale.shape not in ((), (self.obs_dim,)):
            raise ValueError(f"obs_scale must be a number or an array of shape ({self.obs_dim},), "
                             f"but got shape {scale.shape}")
        object.__setattr__(self, "_scale", scale)
        object.__setattr__(self, "_scaled", bool(scale.ndim or scale != 1.0))
        object.__setattr__(self, "_scale_row", np.ascontiguousarray(np.broadcast_to(scale, (self.obs_dim,))))

    @classmethod
    def for_env(cls, env_id: str, env_kwargs: dict | None = None, **kwargs):
        """An agent sized for ``env_id`` (built with ``env_kwargs``, as the pipeline's engines are)."""
        obs_dim, num_actions = env_dims(env_id, **(env_kwargs or {}))
        return cls(obs_dim=obs_dim, num_actions=num_actions, **kwargs)

    # -- parameters ------------------------------------------------------------------------
    def init(self, seed: int | None = None) -> tuple[dict, dict]:
        """Initial ``(params, opt_state)``: ``params = {"pi": net, "v": net}`` (``vecsim.pipeline.agents.nn``)."""
        rng = np.random.default_rng(self.seed if seed is None else seed)
        value_hidden = self.hidden if self.value_hidden is None else self.value_hidden
        params = {"pi": nn.init_mlp(rng, (self.obs_dim, *self.hidden, self.num_actions), 0.01),
                  "v": nn.init_mlp(rng, (self.obs_dim, *value_hidden, 1), 1.0)}
        return params, nn.adam_init(params)

    def features(self, obs: np.ndarray) -> np.ndarray:
        """``obs`` ``(B, obs_dim)`` as the networks read it: float32, scaled."""
        x = np.asarray(obs, dtype=np.float32)
        return x * self._scale if self._scaled else x

    def value(self, params: dict, obs: np.ndarray) -> np.ndarray:
        """``V(obs)``, ``(B,)``."""
        return nn.predict(params["v"], self.features(obs))[:, 0]

    def _learning_rate(self, opt_state: dict) -> float:
        if self.lr_decay_updates is None:
            return self.lr
        return self.lr * max(0.0, 1.0 - opt_state["t"] / self.lr_decay_updates)

    def _step(self, params: dict, opt_state: dict, grads: dict) -> tuple[dict, dict, float]:
        norm = nn.global_norm(grads)
        params, opt_state = nn.adam_update(params, grads, opt_state, self._learning_rate(opt_state),
                                           grad_scale=nn.clip_scale(norm, self.max_grad_norm))
        return params, opt_state, norm

    # -- acting ----------------------------------------------------------------------------
    def initial_actor_state(self, env_seeds: np.ndarray) -> dict:
        """``{"keys": (n,) uint64, "draws": int}``: each env's stream of the agent's draws."""
        return {"keys": streams.env_keys(env_seeds), "draws": 0}

    def policy_log_probs(self, params: dict, obs: np.ndarray, mask) -> np.ndarray:
        return categorical.log_softmax(nn.predict(params["pi"], self.features(obs)), mask)

    def sample_actions(self, params: dict, actor_state: dict, obs: np.ndarray, mask, with_log_probs: bool = True):
        """``(actions (B,) int64, log_probs (B,) float32, features (B, obs_dim) float32, next
        actor_state)``: actions drawn from the policy with each env's own stream (``log_probs``
        ``None`` where not asked for and not computed on the way). Below
        ``COMPILED_ACTING_ROWS`` rows in one compiled call that releases the GIL
        (``vecsim.pipeline.agents.inference``), from there on with NumPy (``nn``, ``categorical``)."""
        keys, draws = actor_state["keys"], actor_state["draws"]
        if compiled_acting(obs):
            actions, log_probs, features = inference.sample_policy(params["pi"], obs, self._scale_row, mask, keys,
                                                                   draws)
        else:
            features = self.features(obs)
            logp = categorical.log_softmax(nn.predict(params["pi"], features), mask)
            actions = categorical.sample(logp, streams.uniforms(keys, draws))
            log_probs = categorical.pick(logp, actions) if with_log_probs else None
        return actions, log_probs, features, {"keys": keys, "draws": draws + 1}

    def predict_value(self, params: dict, features: np.ndarray) -> np.ndarray:
        """``V`` ``(B,)`` float32 of ``features`` ``(B, obs_dim)`` float32, by the path
        ``sample_actions`` took for as many rows."""
        if compiled_acting(features):
            return inference.predict(params["v"], features)[:, 0]
        return nn.predict(params["v"], features)[:, 0]

    def act(self, params: dict, actor_state: dict, obs: np.ndarray, mask):
        """Actions drawn from the policy with each env's own stream."""
        actions, _, _, actor_state = self.sample_actions(params, actor_state, obs, mask, with_log_probs=False)
        return actions, actor_state

    def greedy(self, params: dict):
        """``policy(obs, mask) -> actions``: the most probable legal action (for evaluation)."""
        def policy(obs, mask):
            return self.policy_log_probs(params, obs, mask).argmax(axis=1)
        return policy


def evaluate(agent: CategoricalAgent, params: dict, env_id: str, num_episodes: int = 32, max_steps: int = 500,
             seed: int = 10_000, env_kwargs: dict | None = None):
    """Returns and lengths of ``num_episodes`` episodes played greedily (episode ``j`` seeded
    ``seed + j``, cut at ``max_steps``), through ``vecsim.EpisodeCollector``."""
    with vecsim.EpisodeCollector(env_id, min(num_episodes, 64), max_steps, agent.greedy(params), seed=seed,
                                 **(env_kwargs or {})) as collector:
        batch = collector.request_episodes(num_episodes)
        return batch.rewards.sum(axis=1), batch.lengths.copy()
