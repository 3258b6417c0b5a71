"""``vecsim train``: a smoke run writes its model, checkpoints and per-env episode statistics;
bad input is refused in the words of the command's options; without SB3 the error says what
to install; the other subcommands never import torch."""

from __future__ import annotations

import csv
import json
import os
import pathlib
import subprocess
import sys

import pytest

from vecsim import cli

pytestmark = [pytest.mark.trainers]

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


def python(code: str) -> subprocess.CompletedProcess:
    """``python -c code`` from the repository root, with this checkout importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def usage_error(capsys, *argv) -> str:
    """The message of a command line refused with argparse's exit status 2."""
    with pytest.raises(SystemExit) as exc:
        cli.main(list(argv))
    assert exc.value.code == 2
    return capsys.readouterr().err


def vecsim(*argv) -> subprocess.CompletedProcess:
    """``python -m vecsim.cli argv``, as a user runs the command."""
    return python(f"import sys; from vecsim import cli; sys.exit(cli.main({list(map(str, argv))!r}))")


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("train") / "run"
    proc = vecsim("train", "--env", "vecsim/CartPole-v1", "--algo", "ppo", "--num-envs", "4", "--seed", "3",
                  "--smoke", "--out", out, "--checkpoint-every", "128", "--torch-threads", "1")
    assert proc.returncode == 0, proc.stderr
    assert "512/512 steps" in proc.stderr  # the progress line
    return out, proc.stdout


def test_smoke_run_writes_model_checkpoints_and_logs(smoke_run):
    out, _ = smoke_run
    assert (out / "model.zip").stat().st_size > 0
    names = sorted(p.name for p in (out / "checkpoints").glob("model_*.zip"))
    assert names == ["model_128.zip", "model_256.zip", "model_384.zip", "model_512.zip"]
    for name in ("episodes.csv", "evaluation.csv", "summary.json"):
        assert (out / name).stat().st_size > 0


def test_smoke_run_logs_every_training_episode_with_its_env(smoke_run):
    out, _ = smoke_run
    with open(out / "episodes.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows and set(rows[0]) == {"timestep", "env", "r", "l", "t"}
    assert {int(r["env"]) for r in rows} <= set(range(4))
    assert all(float(r["r"]) == int(r["l"]) for r in rows)  # CartPole: +1 per step
    assert [int(r["timestep"]) for r in rows] == sorted(int(r["timestep"]) for r in rows)


def test_smoke_summary_holds_per_env_and_aggregated_statistics(smoke_run):
    out, _ = smoke_run
    summary = json.loads((out / "summary.json").read_text())
    assert summary["env_id"] == "vecsim/CartPole-v1" and summary["algo"] == "ppo"
    assert summary["steps"] >= 512 and summary["num_envs"] == 4 and summary["seed"] == 3
    assert summary["preset"] == "rl-baselines3-zoo ppo.yml"
    per_env = summary["training_per_env"]
    assert [d["env"] for d in per_env] == [0, 1, 2, 3]
    total = summary["training"]
    assert total["episodes"] == sum(d["episodes"] for d in per_env) > 0
    assert total["min_return"] <= total["mean_return"] <= total["max_return"]
    assert summary["evaluation"]["episodes"] == 2 and summary["evaluation"]["deterministic"]
    assert summary["random_play"]["episodes"] == 2
    assert summary["checkpoints"] == [f"checkpoints/model_{n}.zip" for n in (128, 256, 384, 512)]


def test_smoke_report_prints_per_env_rows_and_evaluation(smoke_run):
    _, stdout = smoke_run
    lines = stdout.splitlines()
    assert [line.split()[0] for line in lines if line.split()[:1] in (["0"], ["1"], ["2"], ["3"], ["all"])] == \
        ["0", "1", "2", "3", "all"]
    assert any(line.startswith("evaluation (deterministic): 2 episodes") for line in lines)
    assert any(line.startswith("random play: 2 episodes") for line in lines)


def test_saved_model_loads_and_acts(smoke_run):
    from stable_baselines3 import PPO

    out, _ = smoke_run
    model = PPO.load(out / "model.zip", device="cpu")
    action, _ = model.predict([0.0, 0.0, 0.0, 0.0], deterministic=True)
    assert int(action) in (0, 1)


def test_tetris_smoke_run_counts_lines_per_env(tmp_path):
    proc = vecsim("train", "--env", "Tetris-v0", "--algo", "maskable-ppo", "--num-envs", "4", "--smoke",
                  "--param", "action_mode=drop", "--param", "preset=classic", "--out", tmp_path, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["params"] == {"action_mode": "drop", "preset": "classic"}
    assert summary["training"]["episodes"] > 0
    assert "lines_total" in summary["training"] and "lines_total" in summary["training_per_env"][0]
    assert summary["evaluation"]["episodes"] == 2 and "lines_per_episode" in summary["random_play"]
    with open(tmp_path / "episodes.csv") as f:
        assert "lines" in next(csv.reader(f))
    assert "lines total" in proc.stdout and "lines per episode" in proc.stdout


def test_unknown_algo_is_refused_by_name(capsys):
    err = usage_error(capsys, "train", "--env", "CartPole-v1", "--algo", "trpo")
    assert "--algo" in err and "'trpo'" in err and "maskable-ppo" in err


def test_maskable_ppo_needs_a_game_with_masks(capsys):
    err = usage_error(capsys, "train", "--env", "CartPole-v1", "--algo", "maskable-ppo", "--smoke")
    assert "--algo maskable-ppo needs a game with action masks" in err and "vecsim/CartPole-v1" in err


def test_sac_needs_continuous_actions(capsys):
    err = usage_error(capsys, "train", "--env", "CartPole-v1", "--algo", "sac", "--smoke")
    assert "--algo sac needs continuous (Box) actions" in err and "Discrete(2)" in err


def test_dqn_needs_discrete_actions(capsys):
    err = usage_error(capsys, "train", "--env", "Pendulum-v1", "--algo", "dqn", "--smoke")
    assert "--algo dqn needs discrete actions" in err


def test_ppo_on_a_game_that_refuses_illegal_actions_names_the_remedies(capsys):
    err = usage_error(capsys, "train", "--env", "Tetris-v0", "--algo", "ppo", "--smoke")
    assert "--algo maskable-ppo" in err and "--param invalid_action=flag" in err


def test_unknown_env_and_bad_param_are_refused(capsys):
    assert "--env" in usage_error(capsys, "train", "--env", "NoSuchGame-v9", "--smoke")
    assert "--param" in usage_error(capsys, "train", "--env", "CartPole-v1", "--param", "gravity", "--smoke")
    assert "--steps" in usage_error(capsys, "train", "--env", "CartPole-v1", "--steps", "0")


def test_train_function_refuses_bad_values_by_option_name():
    from vecsim.trainers import train

    with pytest.raises(ValueError, match="--algo must be one of"):
        train.train("CartPole-v1", "trpo")
    with pytest.raises(ValueError, match="--num-envs must be an int >= 1"):
        train.train("CartPole-v1", "ppo", num_envs=0)
    with pytest.raises(ValueError, match="--eval-episodes must be an int >= 0"):
        train.train("CartPole-v1", "ppo", eval_episodes=-1)


def test_without_sb3_the_error_names_the_install_command():
    proc = python("import sys; sys.modules['stable_baselines3'] = None\n"
                  "from vecsim import cli\n"
                  "cli.main(['train', '--env', 'CartPole-v1', '--smoke'])")
    assert proc.returncode == 1
    assert 'pip install "vecsim[train]"' in proc.stderr and "stable_baselines3" in proc.stderr


def test_other_commands_never_import_torch():
    proc = python("import sys\n"
                  "from vecsim import cli\n"
                  "cli.main(['kernels', 'CartPole-v1'])\n"
                  "cli.build_parser().parse_args(['train', '--env', 'CartPole-v1'])\n"
                  "import vecsim.trainers.train\n"
                  "loaded = [m for m in ('torch', 'stable_baselines3', 'sb3_contrib') if m in sys.modules]\n"
                  "assert not loaded, loaded")
    assert proc.returncode == 0, proc.stderr


def test_bench_sb3_reports_adapter_and_training_rates(tmp_path):
    record = tmp_path / "sb3.json"
    proc = vecsim("bench", "--sb3", "--num-envs", "4", "--seconds", "0.05", "--repeats", "1", "--train-steps", "256",
                  "--torch-threads", "1", "--no-progress", "--json", record)
    assert proc.returncode == 0, proc.stderr
    assert "x SB3VecEnv vs DummyVecEnv" in proc.stdout
    data = json.loads(record.read_text())
    impls = {row["impl"] for row in data["stepping"]}
    assert impls == {"vecsim step", "vecsim step SAME_STEP", "SB3VecEnv step", "SB3 DummyVecEnv (gymnasium)"}
    assert all(row["steps_per_s"] > 0 and row["num_envs"] == 4 for row in data["stepping"])
    assert set(data["training"]["steps_per_s"]) == {"SB3VecEnv step", "SB3 DummyVecEnv (gymnasium)"}
