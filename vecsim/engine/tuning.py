"""The tuning table: the batch size from which each game's parallel kernels win.

Two layers. ``tuning.json`` beside this module ships the sizes ``vecsim calibrate`` measured on
the reference machine, per game module and precision: ``engine`` for the engine's step kernels
with two threads or more, ``collect`` for the episode collector's (whose serial loops are
scalar, so threads pay from smaller batches), ``one_thread`` for a single Numba thread (none:
serial). A game not listed gets ``DEFAULT_PARALLEL_MIN_ENVS``. Over it, the file that
``vecsim calibrate`` writes for this machine, thread count and threading layer
(``vecsim.bench.calibrate``).

The file is ``calibration.json`` in vecsim's cache folder (``vecsim.engine.codegen.cache_dir``):
``{"version": 1, "machines": {key: {"layers": {layer: {"games": {module: {precision: size
or null}}, ...}}}}}`` where the key names the CPU, its core count and the thread count, and
``layer`` is Numba's threading layer (``omp``, ``tbb``, ``workqueue``).
``VECSIM_PARALLEL_THRESHOLD`` overrides everything; ``VECSIM_CALIBRATION=0`` makes vecsim
ignore the file (the test suite runs so, to test the games' own sizes).
"""

from __future__ import annotations

import json
import os
import pathlib
import platform
import threading
import warnings

import numba

VERSION = 1
FILE_NAME = "calibration.json"
SHIPPED_FILE = pathlib.Path(__file__).with_name("tuning.json")
#: Batch size from which the parallel kernels are used for a game the table does not list.
DEFAULT_PARALLEL_MIN_ENVS = 512
#: What the shipped table gives for each kind of kernel: ``(kind, default)``.
KINDS = {"engine": DEFAULT_PARALLEL_MIN_ENVS, "collect": None, "one_thread": None}
_SHIPPED: dict = {}


def shipped(module_name: str, precision: str, kind: str = "engine") -> int | None:
    """The shipped batch size for ``kind`` (``"engine"``, ``"collect"`` or ``"one_thread"``) of
    the game module ``module_name`` in ``precision``: an int, or None for the serial kernel
    always. A game or precision the table leaves out gets the kind's default (``collect``:
    the engine's size)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, but got kind={kind!r}")
    with _LOCK:
        if not _SHIPPED:
            _SHIPPED.update(json.loads(SHIPPED_FILE.read_text())["games"])
    sizes = _SHIPPED.get(module_name, {}).get(kind)
    if sizes is None or precision not in sizes:
        return shipped(module_name, precision, "engine") if kind == "collect" else KINDS[kind]
    return sizes[precision]

_LOCK = threading.Lock()
_CACHE: dict = {}  # path -> (mtime_ns, size, parsed file)
_FOLDERS: dict = {}  # $VECSIM_CACHE_DIR -> the cache folder it gave (cache_dir() tries writing)


def calibration_path():
    """Where the calibration file lives (``$VECSIM_CACHE_DIR`` or vecsim's cache folder)."""
    from vecsim.engine.codegen import cache_dir

    env = os.environ.get("VECSIM_CACHE_DIR")
    folder = _FOLDERS.get(env)
    if folder is None:
        folder = _FOLDERS[env] = cache_dir()
    return folder / FILE_NAME


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def machine_key(threads: int | None = None) -> str:
    """The calibration key of this machine at ``threads`` Numba threads (default: the calling
    thread's count)."""
    if threads is None:
        threads = numba.get_num_threads()
    return f"{_cpu_name()} | {os.cpu_count()} cpus | {threads} threads"


def load() -> dict:
    """The calibration file's ``machines`` mapping (``{}`` when there is none). A file that
    cannot be read or has the wrong form is ignored with a ``RuntimeWarning`` naming it (the
    games' own sizes then apply); ``vecsim calibrate`` writes it again. ``{}`` also with
    ``VECSIM_CALIBRATION=0``."""
    if os.environ.get("VECSIM_CALIBRATION", "1").strip() == "0":
        return {}
    path = calibration_path()
    try:
        stat = path.stat()
    except OSError:
        return {}
    with _LOCK:
        cached = _CACHE.get(str(path))
        if cached is not None and cached[:2] == (stat.st_mtime_ns, stat.st_size):
            return cached[2]
        try:
            data = json.loads(path.read_text())
            machines = data["machines"] if isinstance(data, dict) and data.get("version") == VERSION else None
            if not isinstance(machines, dict) or not all(_well_formed(m) for m in machines.values()):
                raise ValueError(f"not a version-{VERSION} calibration file")
        except (OSError, ValueError, KeyError) as exc:
            warnings.warn(f"ignoring the calibration file {path} ({exc}); run `vecsim calibrate` to write it again",
                          RuntimeWarning, stacklevel=3)
            machines = {}
        _CACHE[str(path)] = (stat.st_mtime_ns, stat.st_size, machines)
        return machines


def _well_formed(machine) -> bool:
    if not isinstance(machine, dict) or not isinstance(machine.get("layers"), dict):
        return False
    return all(_well_formed_layer(record) for record in machine["layers"].values())


def _well_formed_layer(record) -> bool:
    if not isinstance(record, dict) or not isinstance(record.get("games"), dict):
        return False
    for sizes in record["games"].values():
        if not isinstance(sizes, dict):
            return False
        for size in sizes.values():
            if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
                return False
    return True


def lookup(module_name: str, precision: str, threads: int) -> dict:
    """``{threading layer: size}``: the calibrated batch sizes for the game module
    ``module_name`` in ``precision`` at ``threads`` threads on this machine, one per layer it
    was calibrated on (a size of None: serial always); ``{}`` for none."""
    machines = load()
    if not machines:
        return {}
    machine = machines.get(machine_key(threads))
    if machine is None:
        return {}
    found = {}
    for layer, record in machine["layers"].items():
        sizes = record["games"].get(module_name, {})
        if precision in sizes:
            found[layer] = sizes[precision]
    return found
