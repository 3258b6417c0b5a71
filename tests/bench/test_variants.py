"""Games benchmarked per variant: a game's ``BENCH_VARIANTS``, read by ``vecsim.engine.game``,
gives ``vecsim bench`` a table of its own, with the peers ``vecsim.bench.peers`` lists for its
env id, without naming the game anywhere in ``vecsim/``."""

from __future__ import annotations

import json
import pathlib
import re

import pytest

import minimal_game
import vecsim
from vecsim.bench import measure as bench
from vecsim.bench import peers
from vecsim.engine import registry
from vecsim.engine.game import load_game

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
WALK_VARIANTS = {"short": {"size": 4}, "long": {"size": 20}}


@pytest.fixture
def walk_id(monkeypatch):
    """``tests/minimal_game.py`` with two variants (line sizes), registered for one test."""
    monkeypatch.setattr(minimal_game, "BENCH_VARIANTS", WALK_VARIANTS, raising=False)
    before = set(registry.entries())
    game_id = vecsim.register("minimal_game")
    yield game_id
    for env_id in set(registry.entries()) - before:
        vecsim.unregister(env_id)


def stand_in_peer(name: str, short: str, compare_with: str, installed: bool) -> peers.VariantPeer:
    """A peer whose step does nothing (or, not installed, that builds no runner)."""
    return peers.VariantPeer(
        name=name, short=short, compare_with=compare_with, record_key=name.replace("-", "_"), packages=("numpy",),
        available=lambda: installed,
        runner=lambda num_envs, seed=0: bench.Runner(name, "WalkToTarget-v0", num_envs, lambda: None)
        if installed else None,
        description=f"{name} = a stand-in that does nothing.", missing=f"{name}: not installed, left out.")


def test_the_reader_gives_a_games_variants_or_none():
    assert load_game("vecsim.games.cartpole").bench_variants == {}
    tetris = load_game("vecsim.games.tetris")
    assert tetris.bench_variants == {mode: {"action_mode": mode} for mode in ("primitive", "drop", "reach")}


@pytest.mark.parametrize("bad, match", [
    ([("drop", {})], "must be a non-empty dict"), ({}, "must be a non-empty dict"),
    ({"two words": {}}, "without spaces, but got 'two words'"), ({"": {}}, "without spaces, but got ''"),
    ({3: {}}, "without spaces, but got 3"), ({"drop": "action_mode=drop"}, r"BENCH_VARIANTS\['drop'\] must be a dict"),
    ({"drop": {1: 2}}, r"BENCH_VARIANTS\['drop'\] must be a dict"),
])
def test_a_malformed_bench_variants_is_refused_by_name(monkeypatch, bad, match):
    monkeypatch.setattr(minimal_game, "BENCH_VARIANTS", bad, raising=False)
    with pytest.raises(TypeError, match=f"game module 'minimal_game': .*{match}"):
        load_game("minimal_game")


def test_a_batch_enforces_its_mask_as_the_game_says():
    tetris = load_game("vecsim.games.tetris")

    def params(**given):
        return tetris.params_cls(**tetris.prepare_params(given))

    assert not tetris.enforces_mask_for(params(action_mode="primitive"))
    assert tetris.enforces_mask_for(params(action_mode="drop"))
    assert not load_game("vecsim.games.cartpole").enforces_mask_for(None)  # no enforce_mask: never called


def test_variant_runners_refuse_what_the_game_does_not_declare(walk_id):
    with pytest.raises(ValueError, match=r"variant must be one of \('short', 'long'\) .* but got variant='wide'"):
        bench.variant_runner(walk_id, "wide", 4)
    with pytest.raises(ValueError, match="'CartPole-v1' declares no BENCH_VARIANTS"):
        bench.variant_runner("CartPole-v1", "short", 4)
    with pytest.raises(ValueError, match=r"impl must be one of \['vecsim short', 'vecsim long'\], but got "
                                         r"impl='vecsim wide'"):
        bench.make_variant_runner("vecsim wide", walk_id, 4)


def test_tetris_placement_modes_step_random_legal_actions_and_primitive_mode_random_inputs(monkeypatch):
    # Drop and reach mode refuse an action outside the mask: the runner chooses legal ones at
    # each step. Primitive mode takes any input: drawn ahead of time, as before.
    made = []
    real = bench.LegalActions
    monkeypatch.setattr(bench, "LegalActions", lambda masks, seed=0: made.append(masks.shape) or real(masks, seed=seed))
    for mode, legal in (("primitive", False), ("drop", True)):
        made.clear()
        with bench.variant_runner("Tetris-v0", mode, 16) as runner:
            assert runner.impl == f"vecsim {mode}" and runner.num_envs == 16
            for _ in range(50):  # an illegal action would raise
                runner.step()
        assert bool(made) == legal, mode


def test_the_peers_of_a_game_come_from_its_env_id():
    assert [p.name for p in bench.variant_peers("Tetris-v0")] == ["tetris-gymnasium jax"]
    assert bench.variant_peers("CartPole-v1") == ()
    with pytest.raises(TypeError, match="env_id must be a str, but got env_id=None"):
        peers.variant_peers(None)
    installed = peers.tetris_gymnasium_available()
    assert bench.variant_implementations("Tetris-v0") == (
        ["vecsim primitive", "vecsim drop", "vecsim reach"] + (["tetris-gymnasium jax"] if installed else []))
    if not installed:
        assert bench.make_variant_runner("tetris-gymnasium jax", "Tetris-v0", 16) is None
        assert bench.measure_variant("tetris-gymnasium jax", "Tetris-v0", 16) is None


def test_a_users_game_with_bench_variants_gets_a_table_of_its_own(walk_id, monkeypatch, capsys, tmp_path):
    from vecsim import cli

    monkeypatch.setitem(peers.VARIANT_PEERS, "WalkToTarget-v0",
                        (stand_in_peer("walk-peer", "peer", "short", True),
                         stand_in_peer("gone-peer", "gone", "long", False)))
    out = tmp_path / "bench.json"
    assert cli.main(["bench", "--games", walk_id, "--num-envs", "16", "32", "--seconds", "0.02", "--repeats", "1",
                     "--no-progress", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("game"))
    assert re.split(r"\s{2,}", header.strip()) == [
        "game", "num_envs", "short steps/s", "long steps/s", "walk-peer steps/s", "gone-peer steps/s",
        "x short vs peer", "x long vs gone"]
    rows = [line for line in lines if line.split()[:1] == ["WalkToTarget-v0"]]
    assert [row.split()[1] for row in rows] == ["16", "32"]  # one row per num_envs, no row per precision
    for row in rows:
        cells = re.split(r"\s{2,}", row.strip())
        assert cells[-4] != "-" and cells[-3] == "not installed" and cells[-2].endswith("x") and cells[-1] == "-"
    assert "short = size=4; long = size=20" in text
    assert "walk-peer = a stand-in that does nothing." in text and "gone-peer: not installed, left out." in text
    assert "x vs gymnasium" not in text  # no table of the games timed per precision
    record = json.loads(out.read_text())
    cells = {(r["num_envs"], r["impl"], r["precision"]): r["steps_per_s"] for r in record["results"]}
    assert set(cells) == {(n, impl, precision) for n in (16, 32) for impl, precision in
                          (("vecsim short", "float64"), ("vecsim long", "float64"), ("walk-peer", None))}
    assert all(rate > 0 for rate in cells.values())
    assert set(record["walk_peer"]) == {"numpy"} and record["gone_peer"] == {"numpy": record["walk_peer"]["numpy"]}


def test_the_loadtable_takes_a_variant_where_the_game_declares_them(walk_id):
    from vecsim.bench import loadtable

    assert loadtable._parse_cell("WalkToTarget-v0 long 64") == ("WalkToTarget-v0", "long", 64)
    for text in ("WalkToTarget-v0 float32 64", "CartPole-v1 long 64"):
        with pytest.raises(ValueError, match="cell's kind"):
            loadtable._parse_cell(text)
    with loadtable._runner("WalkToTarget-v0", "long", 8) as runner:
        runner.step()
    # The defaults: the first two variants of each game that has them, the first other game in both precisions.
    assert loadtable.default_cells() == [
        "Tetris-v0 primitive 4096", "Tetris-v0 drop 4096", "WalkToTarget-v0 short 4096", "WalkToTarget-v0 long 4096",
        "CartPole-v1 float64 4096", "CartPole-v1 float32 4096", "CartPole-v1 float64 65536",
        "CartPole-v1 float32 65536"]


def test_no_code_in_vecsim_names_a_game_it_benchmarks():
    # Issue #21: the bench code asks a game's BENCH_VARIANTS and the peers registry.
    cli_modules = sorted(p.relative_to(REPO_ROOT) for p in (REPO_ROOT / "vecsim" / "cli").glob("*.py"))
    for path in (*cli_modules, "vecsim/bench/measure.py", "vecsim/bench/loadtable.py"):
        source = (REPO_ROOT / path).read_text().lower()
        assert "tetris" not in source, path
