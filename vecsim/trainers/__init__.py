"""vecsim envs inside other projects' trainers: ``sb3`` (Stable-Baselines3's ``VecEnv``) and
``train`` (the ``vecsim train`` command). Importing this package imports no trainer."""
