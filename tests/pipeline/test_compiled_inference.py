"""The example agents' compiled acting step against the NumPy path it replaces: the same
probabilities and values to float32 rounding, the same actions wherever a draw is not on a
boundary, masks honoured, and ``tanh32`` within one unit in the last place of tanh."""

from __future__ import annotations

import numpy as np
import pytest

from vecsim.pipeline.agents import PPO, categorical, inference, nn, streams
from vecsim.pipeline.agents.base import COMPILED_ACTING_ROWS


def test_tanh32_is_within_one_ulp_of_tanh():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(20_000) * 3, rng.uniform(-0.6, 0.6, 10_000), rng.uniform(-40, 40, 1000),
                        [0.0, -0.0, 0.5, -0.5, 9.01, 1e-30, -1e-30, 3.4e38, -3.4e38]]).astype(np.float32)
    want = np.tanh(x.astype(np.float64)).astype(np.float32)
    one_by_one = np.array([inference.tanh32(v) for v in x], dtype=np.float32)
    # a 1-unit hidden layer of weight 1 and bias 0, then a linear one: tanh32 in the MLP's loop
    one, zero = np.ones((1, 1), dtype=np.float32), np.zeros(1, dtype=np.float32)
    in_the_mlp = inference._mlp((one, one), (zero, zero), x[:, None])[:, 0]
    nonzero = x != 0  # the product's 0 * 1 + 0 loses the sign of a zero
    for got in (one_by_one, in_the_mlp):
        ulps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
        assert ulps[nonzero].max() <= 1
    assert np.signbit(one_by_one[x == 0]).tolist() == [False, True]
    assert np.isnan(inference.tanh32(np.float32(np.nan)))
    assert np.isnan(inference._mlp((one, one), (zero, zero), np.full((1, 1), np.nan, np.float32))[0, 0])


@pytest.mark.parametrize("masked", [False, True])
def test_compiled_step_matches_the_numpy_policy(masked):
    rng = np.random.default_rng(1)
    agent = PPO(obs_dim=6, num_actions=5, hidden=(32, 32), obs_scale=np.linspace(0.5, 2.0, 6).astype(np.float32))
    params, _ = agent.init()
    obs = rng.standard_normal((300, 6))
    mask = (rng.random((300, 5)) < 0.6) | (np.arange(5) == 2) if masked else None
    keys = streams.env_keys(np.arange(300))
    actions, log_probs, features = inference.sample_policy(params["pi"], obs, agent._scale_row, mask, keys, 7)
    np.testing.assert_array_equal(features, agent.features(obs))
    logp = categorical.log_softmax(nn.predict(params["pi"], features), mask)
    np.testing.assert_allclose(log_probs, categorical.pick(logp, actions), rtol=1e-5, atol=1e-6)
    expected = categorical.sample(logp, streams.uniforms(keys, 7))
    assert (actions == expected).mean() > 0.99  # a last-bit difference moves only a draw on a boundary
    if masked:
        assert mask[np.arange(300), actions].all()
    np.testing.assert_allclose(inference.predict(params["v"], features), nn.predict(params["v"], features),
                               rtol=1e-5, atol=1e-6)


def test_compiled_step_checks_its_arrays():
    agent = PPO(obs_dim=4, num_actions=2, hidden=(8,))
    params, _ = agent.init()
    keys = streams.env_keys(np.arange(3))
    with pytest.raises(ValueError, match=r"obs must have shape \(B, 4\)"):
        inference.sample_policy(params["pi"], np.zeros((3, 5)), agent._scale_row, None, keys, 0)
    with pytest.raises(ValueError, match=r"keys must have shape \(2,\)"):
        inference.sample_policy(params["pi"], np.zeros((2, 4)), agent._scale_row, None, keys, 0)
    obs = np.zeros((3, 4))
    with pytest.raises(ValueError, match=r"mask must have shape \(3, 2\).*\(3, 1\)"):
        inference.sample_policy(params["pi"], obs, agent._scale_row, np.ones((3, 1), bool), keys, 0)
    with pytest.raises(ValueError, match=r"mask must have shape \(3, 2\).*\(2, 2\)"):
        inference.sample_policy(params["pi"], obs, agent._scale_row, np.ones((2, 2), bool), keys, 0)
    w0, b0, w1, b1 = params["pi"]
    with pytest.raises(ValueError, match="layer 1 of the network"):
        inference.sample_policy((w0, b0, w1[:-1], b1), obs, agent._scale_row, None, keys, 0)
    with pytest.raises(ValueError, match="layer 0 of the network"):
        inference.sample_policy((w0, b0[:-1], w1, b1), obs, agent._scale_row, None, keys, 0)
    with pytest.raises(ValueError, match=r"network must be \(W0, b0"):
        inference.sample_policy((w0, b0, w1), obs, agent._scale_row, None, keys, 0)
    with pytest.raises(ValueError, match=r"features must have shape \(B, 8\)"):
        inference.predict((w1, b1), np.zeros((3, 4), np.float32))


def test_ppo_acts_with_the_compiled_step():
    agent = PPO(obs_dim=4, num_actions=2, hidden=(8,))
    params, _ = agent.init()
    obs = np.random.default_rng(2).standard_normal((5, 4))
    state = agent.initial_actor_state(np.arange(5))
    actions, new_state, extras = agent.act(params, state, obs, None)
    want_actions, want_logp, features = inference.sample_policy(params["pi"], obs, agent._scale_row, None,
                                                                state["keys"], 0)
    np.testing.assert_array_equal(actions, want_actions)
    np.testing.assert_array_equal(extras["log_prob"], want_logp)
    np.testing.assert_array_equal(extras["value"], inference.predict(params["v"], features)[:, 0])
    assert new_state["draws"] == 1 and extras["log_prob"].dtype == np.float32


@pytest.mark.parametrize("rows", [COMPILED_ACTING_ROWS - 1, COMPILED_ACTING_ROWS])
def test_ppo_acts_compiled_below_the_threshold_and_with_numpy_from_there_on(rows):
    agent = PPO(obs_dim=4, num_actions=3, hidden=(8, 8))
    params, _ = agent.init()
    obs = np.random.default_rng(4).standard_normal((rows, 4))
    state = agent.initial_actor_state(np.arange(rows))
    actions, _, extras = agent.act(params, state, obs, None)
    x = agent.features(obs)
    if rows < COMPILED_ACTING_ROWS:
        want_actions, want_logp, _ = inference.sample_policy(params["pi"], obs, agent._scale_row, None, state["keys"], 0)
        want_value = inference.predict(params["v"], x)[:, 0]
    else:
        logp = categorical.log_softmax(nn.predict(params["pi"], x), None)
        want_actions = categorical.sample(logp, streams.uniforms(state["keys"], 0))
        want_logp, want_value = categorical.pick(logp, want_actions), nn.predict(params["v"], x)[:, 0]
    np.testing.assert_array_equal(actions, want_actions)
    np.testing.assert_array_equal(extras["log_prob"], want_logp)
    np.testing.assert_array_equal(extras["value"], want_value)
    assert extras["log_prob"].dtype == extras["value"].dtype == np.float32


def test_a_thread_reuses_a_networks_conversion_and_acts_with_each_new_network():
    agent = PPO(obs_dim=4, num_actions=3, hidden=(8,))
    params, _ = agent.init()
    assert inference._layers(params["pi"]) is inference._layers(params["pi"])
    obs = np.random.default_rng(5).standard_normal((6, 4))
    state = agent.initial_actor_state(np.arange(6))
    later = {name: tuple(p + np.float32(0.5) for p in net) for name, net in params.items()}
    for snapshot in (params, later, params, later):
        _, _, extras = agent.act(snapshot, state, obs, None)
        x = agent.features(obs)
        np.testing.assert_allclose(extras["value"], nn.predict(snapshot["v"], x)[:, 0], rtol=1e-5, atol=1e-6)
