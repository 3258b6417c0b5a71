"""``vecsim.core.symbol_call``: a callee compiled once and called by symbol, in this process
and from cached callers loaded by another."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from vecsim.core.jit import exact
from vecsim.core.symbol_call import by_symbol

import symbol_call_funcs as funcs


def test_a_caller_calls_the_symbol_and_gets_the_callees_results():
    @exact  # not cached (a local function): its LLVM module can be read
    def sum_rows(rows, weight, out):
        n = 0
        for i in range(rows.shape[0]):
            n += funcs.weighted_sum(rows[i], weight, out, np.int64(i))
        return n

    rows = np.arange(12.0).reshape(3, 4)
    out = np.zeros(3)
    assert sum_rows(rows, 0.5, out) == 12
    np.testing.assert_array_equal(out, rows.sum(axis=1) * 0.5)
    # The caller declares the symbol and holds none of the callee's code.
    (ir,) = sum_rows.inspect_llvm().values()
    assert "declare" in ir and "@vecsim_symbol_call_" in ir
    assert not any(line.startswith("define") and "weighted_sum" in line for line in ir.splitlines())


def test_called_from_python_it_runs_the_jitted_function():
    out = np.zeros(2)
    assert funcs.weighted_sum(np.ones(3), 2.0, out, 1) == 3
    assert funcs.weighted_sum(np.ones(2), weight=0.5, out=out, i=0) == 2
    assert out.tolist() == [1.0, 6.0]


_RUN = textwrap.dedent("""
    import json, sys
    import numpy as np
    from numba.core import event
    sys.path.insert(0, sys.argv[1])
    compiled = []
    class Listener(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__name__)
        def on_end(self, ev):
            pass
    event.register("numba:compile", Listener())
    import symbol_call_funcs as funcs
    rows = np.arange(6.0).reshape(2, 3)
    out = np.zeros(2)
    n = getattr(funcs, sys.argv[2])(rows, 2.0, out)
    print(json.dumps({"n": int(n), "out": out.tolist(), "compiled": sorted(set(compiled))}))
""")


@pytest.mark.slow
def test_a_cached_caller_in_a_new_process_registers_the_symbol_before_it_runs(tmp_path):
    """A later process compiles nothing: the callers' machine code loads from the cache, and
    the callee's symbol is registered first (``SymbolLink``), or the process would die; also
    for a caller compiled against a caller loaded from the cache. Without the callee's cache
    entries, the callee compiles again under the same symbol."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    here = str(pathlib.Path(__file__).parent)

    def run(function):
        done = subprocess.run([sys.executable, "-c", _RUN, here, function], env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = run("sum_rows")
    assert first["compiled"] == ["sum_rows", "weighted_sum"]
    assert first["n"] == 6 and first["out"] == [6.0, 24.0]
    # A new caller compiled against the cached sum_rows, then loaded by a third process.
    second, third = run("sum_rows_twice"), run("sum_rows_twice")
    assert second["compiled"] == ["sum_rows_twice"]
    assert third["compiled"] == []
    # The callee's entries gone, the cached callers still find it once it has compiled again.
    removed = [path.unlink() for path in (tmp_path / "numba").rglob("*weighted_sum*")]
    assert removed
    fourth = run("sum_rows_twice")
    assert fourth["compiled"] == ["weighted_sum"]
    assert second["n"] == third["n"] == fourth["n"] == 12
    assert second["out"] == third["out"] == fourth["out"] == [6.0, 24.0]


def test_refuses_what_a_symbol_call_cannot_carry():
    with pytest.raises(TypeError, match="numba @njit function, but got function"):
        by_symbol(lambda x: x)

    @exact
    def with_default(x, y=1):
        return x + y

    with pytest.raises(TypeError, match="with_default must take plain positional arguments without defaults"):
        by_symbol(with_default)

    @exact
    def local(x):
        return x

    with pytest.raises(TypeError, match="must be a top-level function"):
        by_symbol(local)
