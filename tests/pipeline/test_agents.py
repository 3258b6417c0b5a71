"""The example agents' parts against naive references: gradients by finite differences,
returns by their definitions, draws independent of slicing; the torch agent through the loop."""

from __future__ import annotations

import numpy as np
import pytest

from vecsim.pipeline import Pipeline
from vecsim.pipeline.agents import PPO, Reinforce, categorical, nn, returns, streams


def numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        up = f()
        x[i] = old - eps
        down = f()
        x[i] = old
        g[i] = (up - down) / (2 * eps)
    return g


def test_mlp_backward_matches_finite_differences():
    rng = np.random.default_rng(0)
    net = nn.init_mlp(rng, (3, 5, 4, 2), out_gain=1.0, dtype=np.float64)
    x = rng.standard_normal((6, 3))
    w = rng.standard_normal((6, 2))

    def loss():
        return float((nn.predict(net, x) * w).sum())

    out, acts = nn.forward(net, x)
    grads = nn.backward(net, acts, w)
    for p, g in zip(net, grads):
        np.testing.assert_allclose(g, numeric_grad(loss, p), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("masked", [False, True])
def test_logits_grad_matches_finite_differences(masked):
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((5, 4))
    mask = rng.random((5, 4)) < 0.7 if masked else None
    if masked:
        mask[:, 0] = True
    actions = np.array([0, 0, 0, 0, 0]) if masked else rng.integers(0, 4, 5)
    weights = rng.standard_normal(5)
    c = 0.3

    def loss():
        logp = categorical.log_softmax(logits, mask)
        return float((categorical.pick(logp, actions) * weights).sum() + c * categorical.entropy(logp).sum())

    d = categorical.logits_grad(categorical.log_softmax(logits, mask), actions, weights, c)
    expected = numeric_grad(loss, logits)
    if masked:
        expected[~mask] = 0.0  # masked logits are replaced, so they have no gradient
    np.testing.assert_allclose(d, expected, rtol=1e-5, atol=1e-7)


def test_masked_actions_are_never_drawn():
    rng = np.random.default_rng(2)
    mask = rng.random((2000, 40)) < 0.2
    mask[np.arange(2000), rng.integers(0, 40, 2000)] = True
    logp = categorical.log_softmax(rng.standard_normal((2000, 40)).astype(np.float32), mask)
    actions = categorical.sample(logp, rng.random(2000))
    assert mask[np.arange(2000), actions].all()


def test_draws_follow_the_probabilities():
    logp = np.log(np.tile([[0.1, 0.6, 0.3]], (100_000, 1)))
    actions = categorical.sample(logp, streams.uniforms(streams.env_keys(np.arange(100_000)), 0))
    np.testing.assert_allclose(np.bincount(actions, minlength=3) / 100_000, [0.1, 0.6, 0.3], atol=0.01)


def test_an_envs_draws_depend_only_on_its_seed_and_the_draw_count():
    whole = streams.uniforms(streams.env_keys(np.arange(10, 20)), 7)
    part = streams.uniforms(streams.env_keys(np.arange(15, 20)), 7)
    np.testing.assert_array_equal(whole[5:], part)
    assert not np.array_equal(whole, streams.uniforms(streams.env_keys(np.arange(10, 20)), 8))
    assert ((whole >= 0) & (whole < 1)).all()


def naive_returns(rewards, dones, last, gamma):
    T, n = rewards.shape
    out = np.zeros((T, n))
    for i in range(n):
        for t in range(T):
            g, k, discount = 0.0, t, 1.0
            while True:
                g += discount * rewards[k, i]
                if dones[k, i]:
                    break
                discount *= gamma
                k += 1
                if k == T:
                    g += discount * last[i]
                    break
            out[t, i] = g
    return out


def test_discounted_returns_and_gae_by_their_definitions():
    rng = np.random.default_rng(3)
    T, n, gamma = 12, 3, 0.9
    rewards, dones = rng.standard_normal((T, n)), rng.random((T, n)) < 0.2
    last = rng.standard_normal(n)
    np.testing.assert_allclose(returns.discounted_returns(rewards, dones, last, gamma),
                               naive_returns(rewards, dones, last, gamma))
    values = rng.standard_normal((T, n))
    # with lambda = 1, GAE is the discounted return minus the value
    np.testing.assert_allclose(returns.gae(rewards, dones, values, last, gamma, 1.0),
                               naive_returns(rewards, dones, last, gamma) - values)


@pytest.mark.parametrize("Agent", [Reinforce, PPO])
def test_agents_learn_through_the_loop_in_both_modes(Agent):
    agent = Agent.for_env("vecsim/CartPole-v1", hidden=(16,))
    for mode in ("synchronous", "pipelined"):
        params, opt_state = agent.init()
        with Pipeline("vecsim/CartPole-v1", 8, agent, params=params, opt_state=opt_state, steps_per_cycle=16,
                      mode=mode) as loop:
            metrics = loop.run(3)
        assert all(np.isfinite(m["policy_loss"]) for m in metrics.learner)
        assert not np.array_equal(loop.params["pi"][0], params["pi"][0])


def test_agent_arguments_are_checked():
    with pytest.raises(ValueError, match="hidden must be a tuple of ints >= 1, but got hidden=64"):
        PPO(obs_dim=4, num_actions=2, hidden=64)
    with pytest.raises(ValueError, match=r"obs_scale must be a number or an array of shape \(4,\)"):
        PPO(obs_dim=4, num_actions=2, obs_scale=np.ones(3))
    with pytest.raises(ValueError, match="gamma=1.5"):
        Reinforce(obs_dim=4, num_actions=2, gamma=1.5)


@pytest.mark.slow  # importing torch takes seconds
def test_torch_agent_through_the_same_protocol():
    torch = pytest.importorskip("torch")
    from vecsim.pipeline.agents.torch_ppo import TorchPPO

    threads = torch.get_num_threads()
    agent = TorchPPO.for_env("vecsim/Tetris-v0", env_kwargs={"action_mode": "drop", "preset": "classic"},
                             hidden=(32,), obs_scale=1 / 16)
    params, opt_state = agent.init()
    with Pipeline("vecsim/Tetris-v0", 4, agent, params=params, opt_state=opt_state, steps_per_cycle=8,
                  env_kwargs={"action_mode": "drop", "preset": "classic"}) as loop:
        metrics = loop.run(3)
    assert metrics.cycles == 3 and len(metrics.learner) == 3
    assert not torch.equal(loop.params["pi.0.weight"], params["pi.0.weight"])  # published snapshots, not the module
    assert torch.get_num_threads() == threads
