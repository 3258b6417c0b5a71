"""Compiles are announced when long and recorded with their longest part (vecsim.engine.compile_watch)."""

from __future__ import annotations

import importlib.util
import logging
import sys
import uuid

import pytest

from vecsim.engine import compile_watch
from vecsim.engine.compile_watch import compile_records, name_module

_SOURCE = '''
from numba import njit

@njit
def inner(x):
    return x * 2 + 1

@njit
def outer(x):
    return inner(x) - 1
'''


def _fresh_module(tmp_path):
    """A new module of two jitted functions, ``outer`` calling ``inner``, never compiled yet."""
    name = f"compile_watch_probe_{uuid.uuid4().hex}"
    path = tmp_path / f"{name}.py"
    path.write_text(_SOURCE)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_a_kernel_compile_is_one_record_with_its_callees_inside(tmp_path):
    module = _fresh_module(tmp_path)
    before = len(compile_records())
    assert module.outer(3) == 6
    records = compile_records()[before:]
    assert [(r.module, r.function) for r in records] == [(module.__name__, "outer")]
    (record,) = records
    assert record.top_function in ("outer", "inner")
    assert 0 < record.top_seconds <= record.seconds
    assert record.label == module.__name__  # a module nobody named is named by itself
    module.outer(4)  # compiled already: no new record
    assert len(compile_records()) == before + 1


def test_a_long_compile_of_a_named_module_logs_one_line_naming_it(tmp_path, monkeypatch, caplog):
    module = _fresh_module(tmp_path)
    name_module(module.__name__, "vecsim/Probe-v0 (float64)", str(tmp_path))
    monkeypatch.setattr(compile_watch, "NOTICE_AFTER", 0.0)
    with caplog.at_level(logging.WARNING, logger="vecsim"):
        module.outer(3)
    lines = [r.getMessage() for r in caplog.records if r.name == "vecsim.compile"]
    assert lines == [f"vecsim: compiling outer of vecsim/Probe-v0 (float64), once: it is cached in {tmp_path}, "
                     f"and later runs load it in under a second"]


def test_a_short_compile_or_an_unnamed_module_logs_nothing(tmp_path, monkeypatch, caplog):
    named, unnamed = _fresh_module(tmp_path), _fresh_module(tmp_path)
    name_module(named.__name__, "vecsim/Probe-v0 (float64)", str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="vecsim"):
        # A threshold no compile reaches, not a compile assumed quick: a loaded machine took over 2 s.
        monkeypatch.setattr(compile_watch, "NOTICE_AFTER", 1e9)
        named.outer(3)
        monkeypatch.setattr(compile_watch, "NOTICE_AFTER", 0.0)
        unnamed.outer(3)
    assert [r for r in caplog.records if r.name == "vecsim.compile"] == []


@pytest.mark.slow  # one game compiled cold in a new process
def test_compile_times_reports_the_first_step_and_each_kernel_of_a_cold_start():
    from vecsim.bench.compile_times import HEADER, run_case, table_rows

    result = run_case("vecsim/CartPole-v1", 16, {})
    kernels = {record[0] for record in result["records"]}
    # The 16-env case meets the serial step and reset kernels and the collector's per-step kernel.
    assert {"step_serial", "reset_serial", "advance_serial"} <= kernels
    assert not any(k.endswith("_parallel") for k in kernels)
    first_step_compiles = sum(r[1] for r in result["records"] if r[0] in ("step_serial", "reset_serial"))
    assert result["first_step"] > first_step_compiles
    rows = table_rows([("vecsim/CartPole-v1", 16, {})], [result])
    assert rows[0][:4] == ["CartPole-v1", "default", "16", "first step"]
    assert len(rows) == 1 + len(result["records"]) and all(len(r) == len(HEADER) for r in rows)


def test_a_games_modes_are_its_default_and_each_other_structural_choice():
    from vecsim.bench.compile_times import game_modes

    assert game_modes("vecsim/CartPole-v1") == [{}]
    assert game_modes("vecsim/Tetris-v0") == [{}, {"action_mode": "primitive"}, {"action_mode": "reach"}]
    assert game_modes("vecsim/DrMario-v0") == [{}, {"mode": "frame"}]
