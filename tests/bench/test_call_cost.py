"""``python -m vecsim.bench.call_cost``: one line per path and batch size, in microseconds."""

from __future__ import annotations

import re

import pytest

from vecsim.bench import call_cost


def test_it_prints_a_cost_per_call_for_every_path_and_batch_size(capsys):
    assert call_cost.main(["--num-envs", "1", "4", "--calls", "20", "--repeats", "2"]) == 0
    out = capsys.readouterr().out
    for path in call_cost.PATHS:
        for n in (1, 4):
            found = re.search(rf"CartPole-v1 {path} +num_envs={n} +([0-9.]+) us", out)
            assert found and 0 < float(found.group(1)) < 1e4, (path, n, out)


@pytest.mark.parametrize("argv, word", [(["--calls", "0"], "--calls"), (["--num-envs", "1", "-2"], "--num-envs"),
                                        (["--paths", "reset"], "--paths"),
                                        (["--game", "Nope-v0"], "--game: unknown game id 'Nope-v0'")])
def test_it_refuses_bad_arguments_by_name(argv, word, capsys):
    with pytest.raises(SystemExit):
        call_cost.main(argv)
    assert word in capsys.readouterr().err
