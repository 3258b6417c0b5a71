"""The project's jit decorators (``vecsim.core.jit``). The functions whose compilations a test
counts are ``cache=False``: loaded from an earlier run's cache, they would not compile at all."""

import numpy as np

from vecsim.core.jit import exact


@exact(cache=False)
def _add(a, b):
    return a + b


@exact(cache=False)
def _calls_with_a_constant_and_a_variable(x):
    return _add(x, 1) + _add(x, x) + _add(x, True)


def test_a_callee_given_constants_and_variables_compiles_once_per_plain_type():
    # Numba alone compiles _add for (int64, Literal[int](1)), (int64, int64) and
    # (int64, Literal[bool](True)): each compile of a planner costs seconds.
    assert _calls_with_a_constant_and_a_variable(np.int64(2)) == 3 + 4 + 3
    assert sorted(str(sig) for sig in _add.signatures) == ["(int64, bool)", "(int64, int64)"]


@exact(per_constant=True, cache=False)
def _add_per_constant(a, b):
    return a + b


@exact(cache=False)
def _calls_per_constant(x):
    return _add_per_constant(x, 1) + _add_per_constant(x, x)


def test_a_function_marked_per_constant_compiles_for_each_constant_value():
    # For a hot function whose callers' constants pick its code (the planners' search runs).
    assert _calls_per_constant(np.int64(2)) == 3 + 4
    assert sorted(str(sig) for sig in _add_per_constant.signatures) == ["(int64, Literal[int](1))", "(int64, int64)"]


@exact
def _cached(a):
    return a


def _make_closure():
    offset = 1

    @exact
    def inner(a):
        return a + offset
    return inner


def test_top_level_functions_of_a_module_file_are_cached_and_closures_and_exec_text_are_not():
    from numba.core.caching import NullCache

    assert not isinstance(_cached._cache, NullCache)
    assert isinstance(_make_closure()._cache, NullCache)
    names = {"exact": exact}
    exec("@exact\ndef typed_in(a):\n    return a\n", names)  # noqa: S102 (a notebook cell's case)
    assert isinstance(names["typed_in"]._cache, NullCache)
    assert isinstance(exact(cache=False)(_cached.py_func)._cache, NullCache)


_LIBRARY = "from vecsim.core.jit import exact\n\n\n@exact\ndef g(x):\n    return x * 2.0 + 1.0\n"
_CALLER = ("import sys; sys.path.insert(0, sys.argv[1])\n"
           "from numba.core import event\n"
           "from vecsim.core.jit import exact\n"
           "import library\n"
           "compiled = []\n"
           "class Log(event.Listener):\n"
           "    def on_start(self, ev): compiled.append(ev.data['dispatcher'].py_func.__name__)\n"
           "    def on_end(self, ev): pass\n"
           "event.register('numba:compile', Log())\n"
           "@exact(cache=False)\n"
           "def {name}(x):\n"
           "    return library.g(x) + {add}\n"
           "print({name}(1.0), sorted(compiled))\n")


def test_a_caller_compiled_in_a_later_process_loads_its_callees_from_the_cache(tmp_path):
    """What a new kernel variant in a new process gets: the game's and planner's functions
    loaded, only the kernel itself compiled."""
    import os
    import subprocess
    import sys

    (tmp_path / "library.py").write_text(_LIBRARY)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))

    def run(name, add):
        script = tmp_path / f"{name}.py"
        script.write_text(_CALLER.format(name=name, add=add))
        done = subprocess.run([sys.executable, str(script), str(tmp_path)], env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.split()

    assert run("first", 0.0) == ["3.0", "['first',", "'g']"]
    assert run("second", 10.0) == ["13.0", "['second']"]
