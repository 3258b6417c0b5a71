"""Peers given as commands (``vecsim bench --peer-command NAME=COMMAND``): parsing, the output
protocol, and the ratio column, with a Python one-liner as the peer."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from test_cli import run_vecsim, table_rows

from vecsim.bench.command_peer import CommandPeer, parse_peer_command, parse_peer_commands, parse_rate

PYTHON = shlex.quote(sys.executable)


def fake_peer(expression: str, name: str = "fake") -> str:
    """A ``NAME=COMMAND`` spec whose command prints ``expression`` (placeholders filled in)."""
    return f"{name}={PYTHON} -c {shlex.quote(f'print({expression})')}"


def test_a_spec_splits_into_name_and_words_with_placeholders_kept():
    peer = parse_peer_command("puffer-c=./driver {num_envs} '{seconds}' --threads={threads}")
    assert peer == CommandPeer("puffer-c", ("./driver", "{num_envs}", "{seconds}", "--threads={threads}"))
    assert peer.argv(4096, 2, 0.5) == ["./driver", "4096", "0.5", "--threads=2"]


def test_literal_braces_are_doubled():
    peer = parse_peer_command("p=echo {{x}} {num_envs}")
    assert peer.argv(16, 1, 1.0) == ["echo", "{x}", "16"]


@pytest.mark.parametrize("spec, words", [
    ("no-equals-sign", "no '='"),
    ("=./driver {num_envs}", "NAME=''"),
    ("bad name=./driver {num_envs}", "NAME='bad name'"),
    ("p=", "COMMAND is empty"),
    ("p=./driver '{num_envs}", "cannot split"),
    ("p=./driver {num_envs} {steps}", "unknown placeholder {steps}"),
    ("p=./driver {0} {num_envs}", "unknown placeholder {0}"),
    ("p=./driver {num_envs", "bad braces"),
    ("p=./driver 16 {seconds}", "must contain {num_envs}"),
])
def test_bad_specs_are_refused_by_name(spec, words):
    with pytest.raises(ValueError, match=words.replace("{", r"\{").replace("}", r"\}").replace("'", "'")):
        parse_peer_command(spec)


def test_a_name_given_twice_is_refused():
    with pytest.raises(ValueError, match="'p' is given twice"):
        parse_peer_commands(["p=a {num_envs}", "p=b {num_envs}"])


def test_a_spec_must_be_a_string():
    with pytest.raises(TypeError, match="NAME=COMMAND"):
        parse_peer_command(3)


@pytest.mark.parametrize("stdout, rate", [
    ("12345.5\n", 12345.5),
    ("building envs\n6.5e6 steps/s\n\n", 6.5e6),
])
def test_the_rate_is_the_first_word_of_the_last_line(stdout, rate):
    assert parse_rate(stdout) == rate


@pytest.mark.parametrize("stdout, words", [
    ("", "printed nothing"),
    ("steps/s: 5\n", "must start with its steps/s"),
    ("0\n", "finite number > 0"),
    ("nan\n", "finite number > 0"),
    ("-3\n", "finite number > 0"),
])
def test_a_missing_or_bad_rate_is_refused_naming_the_peer(stdout, words):
    with pytest.raises(RuntimeError, match=f"peer c: .*{words}"):
        parse_rate(stdout, "c")


def test_measure_runs_the_command_with_the_placeholders_filled_in():
    peer = parse_peer_command(fake_peer("{num_envs} * 1000 + {threads} + {seconds}"))
    assert peer.measure(16, 2, 0.25) == 16000 + 2 + 0.25


@pytest.mark.parametrize("spec, words", [
    ("p=/no/such/driver {num_envs}", "command not found"),
    (f"p={PYTHON} -c 'import sys; sys.exit(3)' {{num_envs}}", "exited with status 3"),
])
def test_a_failing_command_is_reported_by_name(spec, words):
    with pytest.raises(RuntimeError, match=f"peer p: .*{words}"):
        parse_peer_command(spec).measure(16, 1, 0.1)


def test_bench_prints_the_ratio_against_a_command_peer(tmp_path):
    out = tmp_path / "bench.json"
    proc = run_vecsim("bench", "--seconds", 0.06, "--repeats", 2, "--num-envs", 16, 64, "--games", "CartPole-v1",
                      "--precision", "float64", "--json", out, "--peer-command", fake_peer("{num_envs} * 1000.0"),
                      "--peer-vs", "step_no_reset")
    header = next(line for line in proc.stdout.splitlines() if "fake steps/s" in line)
    assert header.split() == ["game", "num_envs", "vecsim", "step_no_reset", "steps/s", "fake", "steps/s", "x",
                              "step_no_reset", "vs", "fake"]
    rows = [row for row in table_rows(proc.stdout, "CartPole-v1") if len(row) == 5]
    record = json.loads(out.read_text())
    rates = {(r["num_envs"], r["impl"]): r["steps_per_s"] for r in record["results"]}
    assert [row[1] for row in rows] == ["16", "64"]
    for row in rows:
        n = int(row[1])
        assert rates[n, "fake"] == n * 1000.0
        assert row[-1] == f"{rates[n, 'vecsim step_no_reset'] / (n * 1000.0):.2f}x"
    assert record["peer_commands"]["fake"].startswith(sys.executable)
    assert "interleaved" in proc.stdout


@pytest.mark.parametrize("args, words", [
    (["--games", "CartPole-v1", "--peer-command", "p=./driver 16"], "--peer-command: peer p: COMMAND './driver 16' "
                                                                     "must contain {num_envs}"),
    (["--games", "CartPole-v1", "Pendulum-v1", "--peer-command", "p=d {num_envs}"], "exactly one in --games"),
    (["--games", "CartPole-v1", "--peer-command", "p=d {num_envs}", "--peer-vs", "primitive"],
     "--peer-vs must be one of step, step_no_reset"),
    (["--games", "CartPole-v1", "--peer-vs", "step"], "--peer-vs needs --peer-command"),
])
def test_bench_refuses_bad_peer_options_by_name(args, words):
    proc = run_vecsim("bench", "--seconds", 0.05, "--num-envs", 16, *args, check=False)
    assert proc.returncode != 0
    assert words in proc.stderr
