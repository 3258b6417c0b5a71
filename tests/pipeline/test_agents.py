"""The example agents' parts against naive references: gradients by finite differences,
returns by their definitions, draws independent of slicing and equal to their NumPy
definition, minibatch steps; the torch agent through the loop."""

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


def test_returns_gae_and_adam_refuse_arrays_that_do_not_fit_by_name():
    T, n = 5, 3
    rewards, dones, values, last = np.zeros((T, n)), np.zeros((T, n), bool), np.zeros((T, n)), np.zeros(n)
    for call, args, name in [
        (returns.discounted_returns, (np.zeros(T), dones, last, 0.9), "rewards"),
        (returns.discounted_returns, (rewards, dones[:-1], last, 0.9), "dones"),
        (returns.discounted_returns, (rewards, dones, np.zeros(n + 1), 0.9), "last_value"),
        (returns.gae, (rewards, dones, values[:, :-1], last, 0.9, 0.95), "values"),
        (returns.gae, (rewards, dones, values, np.zeros((1, n)), 0.9, 0.95), "last_value"),
    ]:
        with pytest.raises(ValueError, match=rf"^{name} must have shape"):
            call(*args)
    params = {"pi": nn.init_mlp(np.random.default_rng(0), (4, 7, 3), out_gain=0.01)}
    state = nn.adam_init(params)
    grads = {"pi": tuple(np.zeros(p.shape, np.float32) for p in params["pi"])}
    bad = {"pi": grads["pi"][:1] + (np.zeros(6, np.float32),) + grads["pi"][2:]}
    with pytest.raises(ValueError, match=r"gradient of a 'pi' parameter of shape \(7,\) has shape \(6,\)"):
        nn.adam_update(params, bad, state, 1e-3)
    state["v"] = bad
    with pytest.raises(ValueError, match="second moment"):
        nn.adam_update(params, grads, state, 1e-3)


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


def one_batch(agent, num_envs=8, steps_per_cycle=16):
    """A batch that ``agent`` acted, and the initial parameters and optimiser state."""
    params, opt_state = agent.init()
    batches = []

    class Recorder:
        initial_actor_state = agent.initial_actor_state
        act = agent.act

        def learn(self, params, opt_state, batch):
            batches.append(batch)
            return params, opt_state, None

    with Pipeline("vecsim/CartPole-v1", num_envs, Recorder(), params=params, steps_per_cycle=steps_per_cycle,
                  mode="synchronous") as loop:
        loop.run(1)
    return batches[0], params, opt_state


def test_a_minibatch_step_reads_only_its_samples_of_the_batch():
    agent = Reinforce.for_env("vecsim/CartPole-v1", hidden=(16,), minibatch_size=32)
    batch, params, opt_state = one_batch(agent)
    chosen = agent.step_samples(batch)
    assert len(chosen) == 32 and len(np.unique(chosen)) == 32 and chosen.max() < 16 * 8
    expected, _, metrics = agent.learn(params, opt_state, batch)
    # every other sample's observation unreadable: the step must not change
    T = batch.num_steps
    flat = batch.observations[:T].reshape(T * batch.num_envs, -1)
    others = np.setdiff1d(np.arange(len(flat)), chosen)
    flat[others] = np.nan
    got, _, _ = agent.learn(params, opt_state, batch)
    for name in ("pi", "v"):
        for a, b in zip(expected[name], got[name]):
            np.testing.assert_array_equal(a, b)
            assert np.isfinite(a).all()
    assert np.isfinite(metrics["policy_loss"])


def test_minibatches_differ_between_cycles_and_none_takes_the_whole_batch():
    agent = Reinforce.for_env("vecsim/CartPole-v1", hidden=(16,), minibatch_size=32)
    batch, _, _ = one_batch(agent)
    first = agent.step_samples(batch)
    batch.cycle += 1
    assert not np.array_equal(first, agent.step_samples(batch))
    whole = Reinforce.for_env("vecsim/CartPole-v1", hidden=(16,))
    assert whole.step_samples(batch) == slice(None)


def test_minibatch_size_is_checked():
    with pytest.raises(ValueError, match="minibatch_size must be None or an int >= 1, but got minibatch_size=0"):
        Reinforce(obs_dim=4, num_actions=2, minibatch_size=0)
    agent = Reinforce.for_env("vecsim/CartPole-v1", hidden=(16,), minibatch_size=500)
    batch, params, opt_state = one_batch(agent)
    with pytest.raises(ValueError, match=r"minibatch_size=500 is more than the 128 samples of a batch \(16 steps of 8"):
        agent.learn(params, opt_state, batch)


def test_draws_are_checked():
    keys = streams.env_keys(np.arange(4))
    with pytest.raises(TypeError, match="keys must be a \\(n,\\) uint64 array"):
        streams.uniforms(np.arange(4), 0)
    with pytest.raises(ValueError, match="counter=-1"):
        streams.uniforms(keys, -1)
    with pytest.raises(ValueError, match=r"out must be a float64 array of shape \(4,\)"):
        streams.uniforms(keys, 0, out=np.empty(3))
    with pytest.raises(ValueError, match="sample needs logp of shape"):
        categorical.sample(np.zeros(3), np.zeros(3))


def test_compiled_draws_equal_their_numpy_definition():
    """Uniforms: SplitMix64 of key + counter * gamma, 53 bits; actions: the inverse CDF of exp(logp)."""
    keys = streams.env_keys(np.arange(1000))
    counter = 12345
    z = keys + np.array([counter], dtype=np.uint64) * streams.GAMMA
    np.testing.assert_array_equal(streams.uniforms(keys, counter),
                                  (streams.mix64(z) >> np.uint64(11)) * (1.0 / 2**53))
    rng = np.random.default_rng(4)
    for dtype in (np.float32, np.float64):
        logp = categorical.log_softmax(rng.standard_normal((1000, 7)).astype(dtype), rng.random((1000, 7)) < 0.7)
        u = rng.random(1000)
        cum = np.cumsum(np.exp(logp), axis=1)
        np.testing.assert_array_equal(categorical.sample(logp, u), (cum <= (u * cum[:, -1])[:, None]).sum(axis=1))


@pytest.mark.slow  # importing torch takes seconds
def test_torch_act_computes_what_the_module_computes_with_each_snapshot():
    torch = pytest.importorskip("torch")
    from vecsim.pipeline.agents.torch_ppo import TorchPPO

    agent = TorchPPO(4, 3, hidden=(16, 16))
    params, opt_state = agent.init()
    obs = np.random.default_rng(3).standard_normal((6, 4))
    state = agent.initial_actor_state(np.arange(6))
    later = {name: t + 0.25 for name, t in params.items()}  # a newer snapshot: the thread's module must reload
    for snapshot in (params, later, params):
        actions, _, extras = agent.act(snapshot, state, obs, None)
        with torch.no_grad():
            logits, value = torch.func.functional_call(opt_state["module"], snapshot,
                                                       (torch.as_tensor(obs, dtype=torch.float32),))
        logp = categorical.log_softmax(logits.numpy(), None)
        np.testing.assert_array_equal(extras["value"], value.numpy())
        np.testing.assert_array_equal(extras["log_prob"], categorical.pick(logp, actions))
        np.testing.assert_array_equal(actions, categorical.sample(logp, streams.uniforms(state["keys"], 0)))


@pytest.mark.parametrize("grad_scale", [1.0, 0.37])
def test_compiled_adam_rounds_as_numpy_2_does(grad_scale):
    rng = np.random.default_rng(5)
    params = {"pi": nn.init_mlp(rng, (4, 7, 3), out_gain=0.01)}
    state = nn.adam_init(params)
    for _ in range(3):  # a few steps, so that the moments are not zero
        grads = {"pi": tuple(rng.standard_normal(p.shape).astype(np.float32) for p in params["pi"])}
        lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-5
        t = state["t"] + 1
        step = lr * np.sqrt(1.0 - b2**t) / (1.0 - b1**t)
        want_p, want_m, want_v = [], [], []
        for p, g, m, v in zip(params["pi"], grads["pi"], state["m"]["pi"], state["v"]["pi"]):
            g = g * grad_scale if grad_scale != 1.0 else g
            m = b1 * m + (1.0 - b1) * g
            v = b2 * v + (1.0 - b2) * (g * g)
            # the update in float64, as NumPy 2 promotes a float64 step (NumPy 1 kept float32)
            update = step * m.astype(np.float64) / (np.sqrt(v) + np.float32(eps)).astype(np.float64)
            want_p.append((p.astype(np.float64) - update).astype(p.dtype))
            if np.__version__ >= "2":
                np.testing.assert_array_equal(want_p[-1], (p - (step * m / (np.sqrt(v) + eps))).astype(p.dtype))
            want_m.append(m)
            want_v.append(v)
        new_params, state = nn.adam_update(params, grads, state, lr, grad_scale=grad_scale)
        for got, want in zip(new_params["pi"] + state["m"]["pi"] + state["v"]["pi"], want_p + want_m + want_v):
            assert got.dtype == np.float32 and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
        assert all(not np.shares_memory(a, b) for a, b in zip(new_params["pi"], params["pi"]))
        params = new_params


def test_compiled_tanh_derivative_rounds_as_numpy_does():
    rng = np.random.default_rng(6)
    net = nn.init_mlp(rng, (5, 9, 8, 3), out_gain=1.0)
    x = rng.standard_normal((11, 5)).astype(np.float32)
    out, acts = nn.forward(net, x)
    d_out = rng.standard_normal(out.shape).astype(np.float32)
    grads = nn.backward(net, acts, d_out)
    d, want = d_out, [None] * len(net)
    for k in range(len(net) - 2, -1, -2):  # backward's recursion with NumPy's elementwise product
        h = acts[k // 2]
        want[k], want[k + 1] = h.T @ d, d.sum(axis=0)
        if k:
            d = (d @ net[k].T) * (1.0 - h * h)
    for got, expected in zip(grads, want):
        np.testing.assert_array_equal(got, expected)
