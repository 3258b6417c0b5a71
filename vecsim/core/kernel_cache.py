"""Numba's on-disk cache made trustworthy: a fingerprint of everything a kernel can reach, and
a damaged entry treated as a miss.

**What a fingerprint covers.** Numba's cache checks only the timestamp of the file that
defines a cached function, not of the functions it calls. So each cached kernel is keyed by
a digest (``source_digest``) of every file its machine code may come from, and of the
versions of vecsim, Numba, llvmlite, NumPy and Python: a generated kernel module carries it
in its file name (``vecsim.engine.codegen``), and a hand-written ``cache=True`` function
(``vecsim.core.jit``) in its cache index's source stamp. The files are read from the code,
not kept by hand (``reachable_sources``): the imports at the top level of the module's text,
then of each module they name, transitively. A new helper module, or a user game's
``helpers/physics.py``, is covered the moment a kernel's code imports it. Followed: vecsim's
own files, a user game's package, any file outside the Python installation. Not followed:
the standard library and installed packages, which enter by their versions. Nor imports
inside functions: a jitted function cannot import, so those are Python-level code.

**Damaged entries** (``guard_cache``). Numba's own loading guards only against I/O errors: a
truncated, zero-filled or garbage index or data file raises from ``pickle`` on every later
run. Here any failure to load or save an entry is a miss: its index is removed, the kernel
compiles and saves afresh, and the first such entry of a process logs one line on the
``vecsim`` logger.
"""

from __future__ import annotations

import ast
import contextlib
import glob
import hashlib
import importlib.util
import itertools
import logging
import os
import pathlib
import re
import sys
import sysconfig
import threading
import types

try:
    import fcntl
except ImportError:  # Windows: saves are not locked
    fcntl = None

#: Parsed imports per (file, mtime, size): a process computes each file's imports once.
_IMPORTS: dict[tuple[str, int, int], tuple[tuple[str, ...], str]] = {}


def _installed_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    roots.update({sys.base_prefix, sys.prefix})
    return tuple(sorted(os.path.realpath(root) + os.sep for root in roots))


def _followed(name: str, path: pathlib.Path, own: tuple[str, ...], installed: tuple[str, ...]) -> bool:
    """Whether module ``name`` at ``path`` is the kernel's own code: a module of one of the
    packages ``own`` (wherever installed), or any Python file outside the installation."""
    if path.suffix != ".py":
        return False
    if any(name == top or name.startswith(top + ".") for top in own):
        return True
    return not str(path).startswith(installed)


def _module_file(name: str) -> pathlib.Path | None:
    """The file of module ``name``, or None where ``name`` is not a module (``numpy.float64``
    of ``from numpy import float64``) or has no file."""
    parent, _, attr = name.rpartition(".")
    if parent in sys.modules and not isinstance(getattr(sys.modules[parent], attr, sys), types.ModuleType):
        return None  # an attribute of an imported module, not a submodule: no file search
    module = sys.modules.get(name)
    origin = getattr(module, "__file__", None) if module is not None else None
    if origin is None:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError, AttributeError):
            return None
        origin = spec.origin if spec is not None and spec.has_location else None
    return pathlib.Path(origin).resolve() if origin else None


_IMPORT = re.compile(r"^[ \t]*(from[ \t]+\S+[ \t]+import[ \t]*(\([^)]*\)|[^\n]*)|import[ \t][^\n]*)", re.M)
_DEF = re.compile(r"(async[ \t]+)?def[ \t]")


def _import_statements(text: str) -> str:
    """The import statements of ``text`` outside function bodies, one per line: a line scan,
    since parsing every module a kernel reaches would cost a warm start tens of ms."""
    text = text.replace("\\\n", " ")
    statements, in_def = [], False
    for match in re.finditer(r"^(\S[^\n]*)|^([ \t]+)(?=\S)", text, re.M):
        line = match.group(1)
        if line is not None and not line.startswith(("#", "@", ")", "]", "}")):
            in_def = bool(_DEF.match(line))
        if not in_def:
            found = _IMPORT.match(text, match.start())
            if found:
                statements.append(" ".join(found.group(0).split()))
    return "\n".join(statements)


def _top_level_imports(text: str, package: str) -> list[str]:
    """Module names the top-level code of the module text ``text`` imports (``from a import
    b`` gives ``a`` and, where ``b`` is a submodule, ``a.b``), relative imports resolved
    against ``package``."""
    try:
        nodes = ast.parse(_import_statements(text)).body
    except SyntaxError:  # a form the line scan does not know: parse the whole module
        nodes = [node for node in ast.parse(text).body]
        nodes = [n for node in nodes if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for n in ast.walk(node)]
    names: list[str] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            try:
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            except (ImportError, ValueError):
                continue
            names.append(base)
            names.extend(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def _imports_of(path: pathlib.Path, module_name: str) -> tuple[tuple[str, ...], str]:
    """(module names imported, package for relative imports) of the module file ``path``."""
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _IMPORTS:
        package = module_name if path.name == "__init__.py" else module_name.rpartition(".")[0]
        text = path.read_bytes().decode("utf-8", errors="replace")
        _IMPORTS[key] = (tuple(_top_level_imports(text, package)), package)
    return _IMPORTS[key]


def reachable_sources(source: str, package: str = "", own: tuple[str, ...] = ()) -> list[pathlib.Path]:
    """Every file of vecsim, of the packages ``own`` (a user game's top-level package) or
    outside the Python installation that the module text ``source`` imports at its top level,
    transitively, sorted. ``package`` resolves the text's relative imports."""
    installed = _installed_roots()
    own_packages = ("vecsim",) + own
    pending = list(_top_level_imports(source, package))
    seen_names: set[str] = set()
    files: set[pathlib.Path] = set()
    while pending:
        name = pending.pop()
        if name in seen_names:
            continue
        seen_names.add(name)
        top = sys.modules.get(name.partition(".")[0])
        if top is not None and top.__name__ not in own_packages and str(
                pathlib.Path(getattr(top, "__file__", None) or "/").resolve()).startswith(installed):
            continue  # an installed package (numpy, numba): hashed by version, not followed
        path = _module_file(name)
        if path is None or path in files or not _followed(name, path, own_packages, installed):
            continue
        files.add(path)
        imported, _ = _imports_of(path, name)
        pending.extend(imported)
    return sorted(files)


def source_digest(source: str, package: str = "", own: tuple[str, ...] = ()) -> str:
    """A hex digest of the module text ``source``, of every file it reaches
    (``reachable_sources`` with ``package`` and ``own``) and of the versions its machine code
    depends on."""
    import llvmlite
    import numba
    import numpy

    h = hashlib.sha256(source.encode())
    for path in reachable_sources(source, package, own):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    versions = (getattr(sys.modules.get("vecsim"), "__version__", ""), numba.__version__, llvmlite.__version__,
                numpy.__version__, sys.version)
    h.update(repr(versions).encode())
    return h.hexdigest()


#: ``module_digest`` per module name: a process hashes a module's reach once, not once per function.
_MODULE_DIGESTS: dict[str, str] = {}


def module_digest(name: str) -> str:
    """The digest of the reach of the imported module ``name`` (its package's files, vecsim's
    and any outside the Python installation), as a kernel module's is taken."""
    digest = _MODULE_DIGESTS.get(name)
    if digest is None:
        module = sys.modules[name]
        digest = source_digest(pathlib.Path(module.__file__).read_text(), name.rpartition(".")[0],
                               own=(name.partition(".")[0], "vecsim"))
        _MODULE_DIGESTS[name] = digest
    return digest


#: What ``guard_cache`` uses of Numba's ``IndexDataCacheFile``; a Numba without one keeps its own cache.
_CACHE_FILE_MEMBERS = ("_index_path", "_cache_path", "_load_index", "_save_index", "_save_data", "_data_name", "save")

log = logging.getLogger("vecsim")
_DAMAGE_NOTED = threading.Event()


def guard_cache(dispatcher, stamp_reach: bool = False) -> None:
    """Let ``dispatcher`` (``cache=True``) load its machine code from Numba's cache without
    first refreshing Numba's target context, treat a damaged entry as a miss, and where
    ``stamp_reach``, key its entries by the digest of its module's reach as well.

    Numba's ``Cache.load_overload`` refreshes the context before every load: on the first
    load of a process that imports and installs every registry of Numba's implementations,
    a large part of a warm start, though rebuilding a cached library needs none of them
    (see docs/numba-workarounds.md). It needs Numba's runtime (initialised here when it is
    not yet) and the symbols that Numba's target context installs when it is created; a
    parallel kernel starts its thread pool through its library's reload hooks. A cache miss
    compiles as usual, and Numba's compiler refreshes the context itself.

    A loaded library gets back its reload hooks (``reload_init``: the thread pool's start,
    ``vecsim.core.symbol_call``'s links), which Numba keeps only on the compile result: a
    caller that links it inherits them, so that the caller loaded from the cache in a later
    process runs them too.

    The reach's digest joins the index's source stamp (the defining file's time and size)
    on first use, when the module has finished importing. Where this Numba's cache lacks the
    private members used here, the dispatcher keeps Numba's own loading.

    Entries are saved one process at a time, each data file before the index that names it
    (``_save_entry``): Numba numbers a function's data files by the entries its index holds,
    so two processes saving two signatures of one function at once could both write
    ``.1.nbc`` and leave one signature's index entry naming the other's machine code, and a
    reader between Numba's index write and its data write could load an older version's file.
    """
    cache = getattr(dispatcher, "_cache", None)
    load = getattr(cache, "_load_overload", None)
    save = getattr(cache, "_save_overload", None)
    guard = getattr(cache, "_guard_against_spurious_io_errors", None)
    cache_file = getattr(cache, "_cache_file", None)
    if load is None or save is None or guard is None or not all(hasattr(cache_file, m) for m in _CACHE_FILE_MEMBERS):
        return
    cache_file.save = lambda key, data: _save_entry(cache_file, key, data)
    from numba.core.runtime import nrt

    stamped = threading.Event()

    def stamp():
        if stamp_reach and not stamped.is_set():
            stamped.set()
            digest = module_digest(dispatcher.py_func.__module__)
            cache_file._source_stamp = (cache_file._source_stamp, digest)

    def load_overload(sig, target_context):
        nrt.rtsys.initialize(target_context)  # returns at once after the first time
        try:
            stamp()
            with guard():
                loaded = load(sig, target_context)
            if loaded is not None:
                # Numba keeps the reload hooks on the result only: back on the library, a
                # caller compiled against it inherits them as from a freshly compiled one.
                loaded.library._reload_init.update(loaded.reload_init)
            return loaded
        except Exception as error:  # noqa: BLE001 (whatever a damaged file raises, it is a miss)
            _discard_damaged_entry(dispatcher, cache_file._index_path, error)
        return None  # a miss, or the guard swallowed an I/O error: compile instead

    def save_overload(sig, data):
        try:
            stamp()
            with guard():
                save(sig, data)
        except Exception as error:  # noqa: BLE001 (a cache that cannot be written costs a compile, not the run)
            _discard_damaged_entry(dispatcher, cache_file._index_path, error)

    cache.load_overload = load_overload
    cache.save_overload = save_overload


@contextlib.contextmanager
def _saving_in(folder: str):
    """Hold the lock of Numba's cache folder ``folder`` against other processes' saves
    (where ``fcntl`` exists: not on Windows)."""
    if fcntl is None:
        yield
        return
    with open(os.path.join(folder, ".vecsim-save.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _save_entry(cache_file, key, data) -> None:
    """Numba's ``IndexDataCacheFile.save`` under the folder's lock, the data file written
    before the index entry that names it (see ``guard_cache``).

    Data files are named by the source stamp as well as numbered
    (``f-12.py311.<stamp>.1.nbc``): a process of another version of the source (an edit during
    a run, an upgrade beside a running process) finds the index stale and numbers from 1 again,
    and under Numba's names would overwrite a file that the other version's index names. The
    other stamps' data files are removed here; a reader that still holds their index finds the
    file gone, which Numba's loading takes as a miss. So are a function's data files that no
    entry names."""
    base = cache_file._data_name_pattern.split("{number", 1)[0]  # "f-12.py311."
    tag = hashlib.sha256(repr(cache_file._source_stamp).encode()).hexdigest()[:12]
    with _saving_in(cache_file._cache_path):
        overloads = cache_file._load_index()
        name = overloads.get(key)
        if name is None:
            taken = set(overloads.values())
            name = next(f"{base}{tag}.{k}.nbc" for k in itertools.count(1) if f"{base}{tag}.{k}.nbc" not in taken)
        cache_file._save_data(name, data)
        overloads[key] = name
        cache_file._save_index(overloads)
        for stale in pathlib.Path(cache_file._cache_path).glob(f"{glob.escape(base)}*.nbc"):
            if stale.name not in overloads.values():
                stale.unlink(missing_ok=True)


def _discard_damaged_entry(dispatcher, index_path: str, error: BaseException) -> None:
    """Remove the unreadable cache index of ``dispatcher`` so that its fresh compile saves a new
    one; the first of a process logs a line naming the file and the error."""
    try:
        os.unlink(index_path)
    except OSError:
        pass
    if not _DAMAGE_NOTED.is_set():
        _DAMAGE_NOTED.set()
        log.warning("vecsim: the kernel cache entry %s of %s could not be read (%s: %s); it is compiled again "
                    "and saved afresh (later damaged entries of this process are handled alike, without notice)",
                    index_path, dispatcher.py_func.__qualname__, type(error).__name__, error)
