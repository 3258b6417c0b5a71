"""``vecsim train``'s settings for the classic-control games: RL Baselines3 Zoo's tuned
hyperparameters (its ``hyperparams/ppo.yml``, ``a2c.yml``, ``dqn.yml``, ``sac.yml``), keyed by
env id as there. A game declares its entry as ``TRAIN_PRESETS = RL_ZOO[ENV_ID]``; the keys of
an entry are the contract's (``vecsim.engine.game``)."""

RL_ZOO = {
    "CartPole-v1": {
        "ppo": dict(hyperparameters=dict(n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
                                         ent_coef=0.0, learning_rate={"linear": 1e-3}, clip_range={"linear": 0.2}),
                    num_envs=8, steps=100_000, source="rl-baselines3-zoo ppo.yml"),
        "a2c": dict(hyperparameters=dict(ent_coef=0.0), num_envs=8, steps=500_000, source="rl-baselines3-zoo a2c.yml"),
        "dqn": dict(hyperparameters=dict(learning_rate=2.3e-3, batch_size=64, buffer_size=100_000, learning_starts=1000,
                                         gamma=0.99, target_update_interval=10, train_freq=256, gradient_steps=128,
                                         exploration_fraction=0.16, exploration_final_eps=0.04,
                                         policy_kwargs=dict(net_arch=[256, 256])),
                    num_envs=1, steps=50_000, source="rl-baselines3-zoo dqn.yml"),
    },
    "MountainCar-v0": {
        "dqn": dict(hyperparameters=dict(learning_rate=4e-3, batch_size=128, buffer_size=10_000, learning_starts=1000,
                                         gamma=0.98, target_update_interval=600, train_freq=16, gradient_steps=8,
                                         exploration_fraction=0.2, exploration_final_eps=0.07,
                                         policy_kwargs=dict(net_arch=[256, 256])),
                    num_envs=1, steps=120_000, source="rl-baselines3-zoo dqn.yml"),
    },
    "Pendulum-v1": {
        "sac": dict(hyperparameters=dict(learning_rate=1e-3), num_envs=1, steps=20_000,
                    source="rl-baselines3-zoo sac.yml"),
    },
    "Acrobot-v1": {
        "dqn": dict(hyperparameters=dict(learning_rate=6.3e-4, batch_size=128, buffer_size=50_000, learning_starts=0,
                                         gamma=0.99, target_update_interval=250, train_freq=4, gradient_steps=-1,
                                         exploration_fraction=0.12, exploration_final_eps=0.1,
                                         policy_kwargs=dict(net_arch=[256, 256])),
                    num_envs=1, steps=100_000, source="rl-baselines3-zoo dqn.yml"),
    },
}
