"""Instantiate the kernel templates for one game and precision, as cached modules on disk.

``templates/batch.py`` gives the engine's batched kernels; ``templates/collect.py`` the
episode-collection kernel of an in-kernel policy; ``templates/collect_step.py`` the per-step
collection kernels of ``EpisodeCollector``'s other policies.

The generated file's name carries a digest of everything its machine code depends on: the
rendered text and every file it reaches through imports, the game's package included, and
the versions of vecsim and its compiler (``vecsim.core.kernel_cache``). Numba's own cache
checks only the timestamp of the file that holds a kernel, not of the functions it calls;
with the digest in the name, a change to a game's rules gives a new file and a fresh compile
instead of stale machine code (see docs/numba-workarounds.md).

The folder is ``$VECSIM_CACHE_DIR`` if set, else ``~/.cache/vecsim``, else a folder under the
system temporary directory; passing over one is logged.
"""

from __future__ import annotations

import logging
import importlib.util
import math
import os
import pathlib
import re
import sys
import tempfile
import threading

import numpy as np
from numba.core.registry import CPUDispatcher

from vecsim.core.kernel_cache import guard_cache, source_digest
from vecsim.engine.compile_watch import name_module
from vecsim.engine.fusion import FLAG_BY_EVENTS
from vecsim.engine.game import GameSpec
from vecsim.core.symbol_call import SymbolCall

_HERE = pathlib.Path(__file__).resolve().parent
_TEMPLATE = _HERE / "templates" / "batch.py"
_COLLECT_TEMPLATE = _HERE / "templates" / "collect.py"
_COLLECT_STEP_TEMPLATE = _HERE / "templates" / "collect_step.py"
_FUSED_TEMPLATE = _HERE / "templates" / "fused.py"
_LOCK = threading.Lock()
log = logging.getLogger("vecsim")
_LOADED: dict[tuple[str, str], object] = {}


def cache_dir() -> pathlib.Path:
    """The folder that holds generated kernel modules and their Numba cache: the first of
    ``$VECSIM_CACHE_DIR``, ``~/.cache/vecsim`` and a folder under the system temporary
    directory that can be created and written. Passing over one logs a line naming it and why,
    once per folder and process: a cache silently moved elsewhere recompiles everything."""
    candidates = []
    if os.environ.get("VECSIM_CACHE_DIR"):
        candidates.append(("VECSIM_CACHE_DIR", pathlib.Path(os.environ["VECSIM_CACHE_DIR"])))
    candidates.append(("the default cache folder", pathlib.Path.home() / ".cache" / "vecsim"))
    candidates.append(("the fallback cache folder", pathlib.Path(tempfile.gettempdir()) / f"vecsim-cache-{os.getuid()}"))
    passed_over = []
    for what, path in candidates:
        try:
            path.mkdir(parents=True, exist_ok=True)
            # A probe of this process's own: with a shared name, two processes starting at
            # once (`vecsim warmup --jobs 2`) could delete each other's probe, and one would
            # fall through to the next folder and compile into a cache nobody asked for.
            fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=path)
            os.close(fd)
            os.unlink(probe)
        except OSError as error:
            passed_over.append((what, path, error))
            continue
        for skipped_what, skipped, error in passed_over:
            if skipped not in _PASSED_OVER:
                _PASSED_OVER.add(skipped)
                log.warning("vecsim: %s %s cannot be used (%s); kernels are compiled and cached in %s instead",
                            skipped_what, skipped, error.strerror or error, path)
        return path
    raise OSError("no writable cache folder among "
                  + "; ".join(f"{what} {path} ({error.strerror or error})" for what, path, error in passed_over))


_PASSED_OVER: set[pathlib.Path] = set()


def _split_template(text: str) -> tuple[str, str, str]:
    head, rest = text.split("# KERNELS BEGIN\n", 1)
    body, tail = rest.split("# KERNELS END\n", 1)
    return head, body, tail


def _function_names(game: GameSpec, precision: str, functions) -> tuple[str, str]:
    """``(step, mask)``: the names of the game's step for ``precision`` (``step_env_fast`` in
    float32 where the game has one) and of its ``write_mask``, or of the stand-ins that
    ``functions`` (``GameSpec.kernel_functions`` pairs) chose."""
    chosen = dict(functions)
    step = "step_env_fast" if precision == "float32" and game.has("step_env_fast") else "step_env"
    return chosen.get(step, step), chosen.get("write_mask", "write_mask")


def _render_reset(text: str, functions) -> str:
    """``text`` with ``RESET_ENV`` bound to the game's ``reset_env`` or the stand-in that
    ``functions`` chose (a batch whose resets never run part of the game's, such as Dr. Mario's
    frame mode and its planner, compiles without that part)."""
    return re.sub(r"\bRESET_ENV\b", dict(functions).get("reset_env", "reset_env"), text)


def _default_functions(game: GameSpec, functions):
    """``functions``, or for ``None`` the game's ``kernel_functions`` at its default constants."""
    return game.kernel_functions(game.params_cls()) if functions is None else tuple(functions)


def _render_contract_calls(text: str, game: GameSpec, mask_fn: str, functions) -> str:
    """``text`` with ``MASK_FN`` and ``ACTION_OK(p, actions, i)`` bound to the game's functions,
    or to the contract's defaults the reader chose (``GameSpec.kernel_functions``)."""
    text = re.sub(r"\bMASK_FN\b", f"_game.{mask_fn}" if game.has(mask_fn) else "no_mask", text)
    check = dict(functions).get("action_ok", "action_ok")
    if check.startswith("below_"):
        call = rf"discrete_ok(\2, \3, {int(check[len('below_'):])})"
    elif check == "finite":
        call = r"box_finite(\2, \3)"
    else:
        call = rf"_game.{check}(\1, \2, \3)"
    text = re.sub(r"\bACTION_OK\((\w+), (\w+), (\w+)\)", call, text)
    flag = dict(functions).get("invalid_action") == "flag"
    return re.sub(r"\bFLAG_INVALID\b", repr(flag), text)


def _variant_tag(functions) -> str:
    """A file-name part naming the stand-ins of ``functions`` (empty for none)."""
    return "".join(f"_{stand_in}" for _, stand_in in functions)


def _render_telemetry(text: str, telemetry: bool) -> str:
    """``text`` with the template's telemetry parts: for a batch with a telemetry ring, its two
    arrays in the step table (``tele_records``, ``tele_written``) and a ``TelemetryRing`` of them
    passed to the game's step (``vecsim.core.telemetry``); without one, nothing of them, so that
    the kernels are those of a game without telemetry."""
    if not telemetry:
        text = re.sub(r".*# TELEMETRY ONLY\n", "", text)
        return re.sub(r", TELEMETRY_(ON|VIEWS|RING|PARAM)\b", "", text)
    text = text.replace("  # TELEMETRY ONLY", "")
    text = re.sub(r"\bTELEMETRY_ON\b", "True", text)
    text = re.sub(r"\bTELEMETRY_VIEWS\b", "tele_records, tele_written", text)
    text = re.sub(r"\bTELEMETRY_PARAM\b", "ring", text)
    return re.sub(r"\bTELEMETRY_RING\b", "TelemetryRing(tele_records, tele_written, elapsed)", text)


def render_source(game: GameSpec, precision: str, discrete: bool, functions=None, tables=None,
                  telemetry: bool = False, box_width: int | None = None) -> str:
    """The source text of the kernel module for ``game`` at ``precision``; ``discrete`` says
    whether its actions are ``Discrete`` (narrowed to int32 for the step loops) or ``Box``
    (rows of ``box_width`` numbers, a width the step kernels check);
    ``functions``: the stand-ins ``GameSpec.kernel_functions`` chose for the batch; ``tables``:
    the ``table_specs`` of the arrays of each kernel's address table, by table name
    (``step_table``, ``reset_table``; see ``render_table_views``), or None to leave the
    ``# VIEWS OF`` lines as they are (a source to read, not to compile); ``telemetry``: whether
    the step passes the game a telemetry ring (``_render_telemetry``)."""
    functions = _default_functions(game, functions)
    mod = game.module
    fields = list(game.state_cls._fields)
    n_params = len(game.params_cls._fields)
    fast = precision == "float32" and game.has("step_env_fast")
    step_fn, mask_fn = _function_names(game, precision, functions)
    uses_rng = bool(game.hints.step_uses_rng)
    head, body, tail = _split_template(_TEMPLATE.read_text())
    two_pass = not fast and game.has("pre_step_fix_env")
    one_pass = not (fast or two_pass or not game.has("pre_step_env"))
    # Both step kernels call _step_share (the serial one for every env, the parallel one for a
    # thread's share): the steps and resets compile once, and the kernels hold none. Its views
    # are distinct where its loop over envs can vectorise (one env a call), else plain.
    per_call = game.hints.envs_per_call
    per_env = per_call == 1
    head = _drop_blocks(head, ["RESETS AFTER STEP"] if uses_rng else ["RESETS BEFORE STEP"])
    if not per_env:
        head = head.replace("# VIEWS OF step_table", "# PLAIN VIEWS OF step_table")
    variants = []
    for mode in ("serial", "parallel"):
        part = re.sub(r"_MODE\b", f"_{mode}", body)
        if mode == "serial":
            # A serial kernel's plain views promise LLVM nothing, so its argument needs no
            # overlap check (a parallel kernel's does: Numba marks the arrays its prange body
            # takes noalias), unless it passes the argument on to a _step_share whose views are
            # distinct.
            for table in re.findall(r"# PLAIN VIEWS OF (\w+)", part):
                if not (per_env and table == "step_table"):
                    part = re.sub(rf"# (\w+) = FIRST VIEW OF {table} OVERLAPPING \w+", r"\1 = -1", part)
        variants.append(part)
    text = _render_telemetry(head + "".join(variants) + tail, telemetry)
    # The mask checks pass the State to a game's action_legal only (vecsim.engine.fusion.action_allowed_for).
    if game.has("action_legal"):
        text = re.sub(r"\bCHECK_STATE_ARGS\b", "STATE_ARGS", text)
        text = re.sub(r"\bCHECK_STATE\b", "State(STATE_ARGS)", text)
    else:
        text = re.sub(r",\s*CHECK_STATE_ARGS\b", "", text)
        text = re.sub(r"\bCHECK_STATE\b", "None", text)
    state_args = ", ".join(f"f_{name}" for name in fields)
    param_rows = ", ".join(f"P[{k}]" for k in range(n_params))
    text = re.sub(r"\bSTATE_ARGS\b", state_args, text)
    text = re.sub(r"\bPARAM_ROWS\b", param_rows, text)
    text = re.sub(r"\bSTEP_ENV\b", step_fn, text)
    text = _render_contract_calls(text, game, mask_fn, functions)
    text = _render_reset(re.sub(r"\bWRITE_MASK\b", mask_fn, text), functions)
    if not one_pass:  # no empty parallel region
        text = _drop_blocks(text, ["PRE STEP"])
    if not two_pass:
        text = _drop_blocks(text, ["PRE STEP DRAFT"])
        text = re.sub(r"\n_draft_run = .*# DRAFT RUN .*", "", text)
    text = re.sub(r"\bSTEP_ACTIONS\b", "acts32" if discrete else "actions", text)
    if not discrete:
        text = re.sub(r"\n *acts32\[i\] = actions\[i\]  # NARROW ACTIONS.*", "", text)
    width_check = "" if discrete or box_width is None else \
        rf"\1if given_actions.shape[1] != {int(box_width)}:\n\1    return -BAD_SHAPE\n"
    text = re.sub(r"^( *)# BOX WIDTH CHECK\n", width_check, text, flags=re.M)
    text = re.sub(r"\bSTEP_USES_RNG\b", repr(uses_rng), text)
    text = _keep_one(text, "STEP PER ENV", "STEP RUNS", per_call)
    text = re.sub(r"\bSHARE_ALIGN\b", str(share_align(per_call)), text)
    text = re.sub(r"\bSHARE_MIN_ALIGN\b", str(share_min_align(per_call)), text)
    if game.hints.call_by_symbol:
        for part in ("step", "reset"):
            name, _ = fused_source(game, precision, functions, telemetry, part)
            text = re.sub(rf"\bFUSED_{part.upper()}_MODULE\b", name, text)
    else:
        text = _drop_blocks(text, ["CALLS BY SYMBOL"])
    if not game.enforces_mask:
        text = _drop_blocks(text, ["MASK CHECK"])
    text = re.sub(r"\bGAME_MODULE\b", mod.__name__, text)
    text = text.replace('"PRECISION"', repr(precision))
    return _pad_signatures(text if tables is None else render_table_views(text, tables))


#: Numba's dispatcher leaks memory on every call of a function with exactly this many
#: arguments (tests/engine/test_no_alloc.py catches it): a kernel whose signature would have
#: this many parameters gets one more (see docs/numba-workarounds.md).
LEAKY_ARG_COUNT = 20


#: The kernels whose signatures ``_pad_signatures`` checks.
_KERNEL_NAMES = r"(?:step|reset|observe|advance)_(?:serial|parallel)|collect"


def _drop_blocks(text: str, blocks) -> str:
    """``text`` without the sections between each of ``blocks``' BEGIN and END marker lines."""
    for block in dict.fromkeys(blocks):
        text = re.sub(rf"^ *# {block} BEGIN.*?^ *# {block} END\n", "", text, flags=re.S | re.M)
    return text


def _pad_signatures(text: str) -> str:
    padded = []

    def pad(match):
        params = [p for p in match.group(2).replace("\n", " ").split(",") if p.strip()]
        if len(params) != LEAKY_ARG_COUNT:
            return match.group(0)
        padded.append(match.group(1))
        return f"def {match.group(1)}({match.group(2)}, _pad):"

    text = re.sub(rf"def ({_KERNEL_NAMES})\((.*?)\):", pad, text, flags=re.S)
    return text + f"\n#: Kernels given an extra ``_pad`` argument (see vecsim.engine.codegen.LEAKY_ARG_COUNT).\nPADDED = {sorted(set(padded))!r}\n"


def _fingerprint(game: GameSpec, source: str) -> str:
    """The digest of the module text ``source`` and of everything its machine code can come
    from (``vecsim.core.kernel_cache.source_digest``), the game's package included. A template
    enters as the text rendered from it, so editing a collector template does not recompile
    the batched kernels."""
    name = game.module.__name__
    package = name if hasattr(game.module, "__path__") else name.rpartition(".")[0]
    if getattr(game.module, "__file__", None) is None:
        source += _fileless_module_text(game.module)
    return source_digest(source, package, own=(name.partition(".")[0],))[:16]


def _fileless_module_text(module) -> str:
    """For a game module built in memory (no file to hash): its jitted functions' bytecode, and
    an import of each module they were written in, whose files the digest then follows."""
    import marshal

    lines = []
    for key, value in sorted(vars(module).items()):
        if isinstance(value, CPUDispatcher):
            fn = value.py_func
            lines.append(f"import {fn.__module__}  # {key}: {marshal.dumps(fn.__code__).hex()}")
    return "\n" + "\n".join(lines) + "\n"


def fused_source(game: GameSpec, precision: str, functions, telemetry: bool, part: str) -> tuple[str, str]:
    """``(name, text)`` of the module of ``game``'s fused step functions (``part="step"``) or
    fused reset (``part="reset"``) for a game with ``KernelHints.call_by_symbol``: compiled once,
    cached, and called by symbol from every kernel module that renders to the same ``name``
    (templates/fused.py). The name ends in the digest of the text and of its reach, as a
    kernel module's does; the reset part's text does not depend on ``precision``."""
    drop = {"step": "RESET", "reset": "STEP"}[part]
    text = re.sub(rf"^# {drop} BEGIN.*?^# {drop} END\n", "", _FUSED_TEMPLATE.read_text(), flags=re.S | re.M)
    # Both invalid-action rules share a step: it flags where the events have the column.
    shared = repr(FLAG_BY_EVENTS) if game.enforces_mask else "False"
    text = re.sub(r"\bFLAG_SHARED\b", shared, text)
    functions = tuple(f for f in _default_functions(game, functions) if f[0] != "invalid_action")
    text = _render_telemetry(_substitute_game(text, game, precision, functions), telemetry)
    return f"vecsim_fused_{part}_{game.module.__name__.replace('.', '_')}_{_fingerprint(game, text)}", text


def _load_fused(game: GameSpec, precision: str, functions, telemetry: bool) -> None:
    """Import the fused step and reset modules that ``game``'s kernels call by symbol
    (``fused_source``), where the game has ``KernelHints.call_by_symbol``."""
    if game.hints.call_by_symbol:
        for part in ("step", "reset"):
            name, text = fused_source(game, precision, functions, telemetry, part)
            if name not in sys.modules:
                _import_generated(name, text, f"{game.env_id} ({precision})")


def load_kernels(game: GameSpec, precision: str, discrete: bool, functions, tables: dict, telemetry: bool = False,
                 box_width: int | None = None):
    """The generated kernel module for ``game`` and ``precision`` with the stand-ins
    ``functions`` (``GameSpec.kernel_functions``) in it, its step and reset kernels rebuilding
    their arrays from address tables of the ``tables`` specs (``render_source``), with a
    telemetry ring where ``telemetry`` and the width check of ``box_width``; written once,
    then cached."""
    # The hints shape the rendered loops (envs_per_call), so a game read with others is another module.
    key = (game.module.__name__, game.hints, precision, tuple(functions), tuple(sorted(tables.items())), telemetry,
           box_width)
    with _LOCK:
        if key in _LOADED:
            return _LOADED[key]
        _load_fused(game, precision, functions, telemetry)
        source = render_source(game, precision, discrete, functions, tables, telemetry, box_width)
        tag = _variant_tag(functions) + ("_telemetry" if telemetry else "")
        name = (f"vecsim_kernels_{game.module.__name__.replace('.', '_')}_{precision}{tag}_"
                f"{_fingerprint(game, source)}")
        module = _import_generated(name, source, f"{game.env_id} ({precision})")
        _LOADED[key] = module
        return module


def load_game_module(game: GameSpec, path: pathlib.Path):
    """The module of kernels at ``path``, a file of kernels over ``game`` that nothing imports
    by name (``vecsim/collect/tetris_agent_kernels.py``), imported from a copy in the cache
    folder named with the fingerprint of everything it reaches: its ``cache=True`` kernels load from
    Numba's cache in a warm process, and a change to any function they call gives a new copy
    (Numba's own cache checks only the file of the kernel itself)."""
    key = (game.module.__name__, str(path))
    with _LOCK:
        if key in _LOADED:
            return _LOADED[key]
        text = pathlib.Path(path).read_text()
        name = f"vecsim_{game.module.__name__.replace('.', '_')}_{pathlib.Path(path).stem}_{_fingerprint(game, text)}"
        module = _import_generated(name, text, f"{game.env_id} ({pathlib.Path(path).stem})")
        _LOADED[key] = module
        return module


def _policy_location(policy) -> tuple[str, str, str]:
    """(module name, attribute, source file) of a jitted policy defined at a module's top level."""
    import inspect

    if not isinstance(policy, CPUDispatcher):
        raise TypeError(f"an in-kernel policy must be a numba @njit function, but got {type(policy).__name__}")
    module_name, name = policy.py_func.__module__, policy.py_func.__name__
    module = sys.modules.get(module_name)
    if module is None or getattr(module, name, None) is not policy or module_name == "__main__":
        raise TypeError(f"an in-kernel policy must be a top-level @njit function of an importable module "
                        f"(so its kernel can be cached), but {name!r} of {module_name!r} is not")
    return module_name, name, inspect.getfile(module)


def _substitute_game(text: str, game: GameSpec, precision: str, functions=None) -> str:
    """``text`` with the game's module, state fields, constants, step and mask functions (or
    the stand-ins ``functions`` chose) and precision."""
    functions = _default_functions(game, functions)
    mod = game.module
    fast = precision == "float32" and game.has("step_env_fast")
    pre_step = "_game.pre_step_env" if game.has("pre_step_env") and not fast else "no_pre_step"
    step_fn, mask_fn = _function_names(game, precision, functions)
    text = _render_contract_calls(text, game, mask_fn, functions)
    text = re.sub(r"\bSTATE_ARGS\b", ", ".join(f"f_{f}" for f in game.state_cls._fields), text)
    text = re.sub(r"\bPARAM_ROWS\b", ", ".join(f"P[{k}]" for k in range(len(game.params_cls._fields))), text)
    text = re.sub(r"\bSTEP_ENV\b", step_fn, text)
    text = _render_reset(re.sub(r"\bWRITE_MASK\b", mask_fn, text), functions)
    text = re.sub(r"\bPRE_STEP\b", pre_step, text)
    text = re.sub(r"\bGAME_MODULE\b", mod.__name__, text)
    return text.replace('"PRECISION"', repr(precision))


#: Columns of an address table row: the array's address, then its shape (zero-padded).
TABLE_COLUMNS = 4


def address_table(arrays) -> np.ndarray:
    """The int64 table ``(len(arrays), TABLE_COLUMNS)`` of ``arrays``' addresses and shapes,
    from which a kernel rendered with their ``table_specs`` rebuilds them (see
    ``render_table_views``). The caller must keep the arrays alive as long as the table is used.

    Why: Numba's dispatch unboxes every array argument from Python on every call, while
    views rebuilt from addresses in compiled code cost nearly nothing; for a small batch the
    unboxing would outweigh the step (see docs/numba-workarounds.md)."""
    table = np.zeros((len(arrays), TABLE_COLUMNS), dtype=np.int64)
    for k, arr in enumerate(arrays):
        if arr.ndim > TABLE_COLUMNS - 1 or not (arr.flags.c_contiguous or arr.flags.f_contiguous):
            raise ValueError(f"address table array {k} must be contiguous with at most "
                             f"{TABLE_COLUMNS - 1} dimensions, got shape {arr.shape}")
        table[k, 0] = arr.ctypes.data
        table[k, 1:1 + arr.ndim] = arr.shape
    return table


def table_specs(arrays, others=()) -> tuple:
    """``(dtype name, ndim, layout, apart)`` of each of ``arrays``: what a kernel must know at
    compile time to rebuild them from an ``address_table`` (C layout where an array is both).
    ``apart``: the array shares no memory with another of ``arrays`` or with ``others`` (the
    kernel's fixed array arguments), so its view may promise LLVM no overlap
    (``vecsim.engine.views.c_distinct_array_at``, where ``render_table_views`` is asked for distinct
    views), and a per-call argument is checked against it."""
    arrays = list(arrays)
    specs = []
    for k, a in enumerate(arrays):
        rest = arrays[:k] + arrays[k + 1:] + list(others)
        apart = not any(np.may_share_memory(a, b) for b in rest)
        specs.append((a.dtype.name, a.ndim, "C" if a.flags.c_contiguous else "F", apart))
    return tuple(specs)


_TABLE_VIEWS = re.compile(r"^( *)# (PLAIN )?VIEWS OF (\w+): (.*)$", re.M)
_TABLE_OVERLAPS = re.compile(r"^( *)# (\w+) = FIRST VIEW OF (\w+) OVERLAPPING (\w+)$", re.M)
_TABLE_AT = re.compile(r"^( *)# (\w+) = TABLE (\w+) AT (\w+)$", re.M)
#: Where the function of a ``# VIEWS OF`` line ends: the next top-level line, or the text's end.
_FUNCTION_END = re.compile(r"^(?=\S)|\Z", re.M)


def _specs_of(table: str, names: list, tables: dict) -> list:
    """The ``table_specs`` of ``table``, one per name, or a ValueError."""
    specs = tables.get(table)
    if specs is None or len(specs) != len(names):
        raise ValueError(f"table {table!r} has {names} ({len(names)} arrays) but specs for "
                         f"{'none' if specs is None else len(specs)}")
    return specs


def render_table_views(text: str, tables: dict) -> str:
    """``text`` with each line ``# VIEWS OF <table>: <name>, <name>, ...`` replaced by one
    assignment a name, rebuilding the array from its row of the address table ``<table>``
    (``tables[<table>]``: the arrays' ``table_specs``, row by row; ``# PLAIN VIEWS OF``: no
    view distinct, whatever the specs say), and each line
    ``# <var> = TABLE <table> AT <address>`` by the table itself, viewed at the int64
    ``address`` (a kernel given the table's address rather than the array), and each line
    ``# <var> = FIRST VIEW OF <table> OVERLAPPING <array>`` (after that table's views) by
    code setting ``<var>`` to the row of the first array apart from the others (its specs'
    last field) that shares memory with ``<array>`` (a per-call argument), or -1: the check a
    kernel makes before it touches either, since LLVM compiles it on the promise that they
    share none."""
    names_of = {}

    def views(match):
        indent, plain, table = match.group(1), bool(match.group(2)), match.group(3)
        names = [n.strip() for n in match.group(4).split(",")]
        specs = _specs_of(table, names, tables)
        names_of[table] = names
        # Only the views the function reads: an unused view still costs its typing and lowering.
        rest = match.string[match.end():]
        used = set(re.findall(r"\w+", rest[:_FUNCTION_END.search(rest).start()]))
        lines = []
        for k, (name, (dtype, ndim, layout, apart)) in enumerate(zip(names, specs)):
            if name not in used:
                continue
            shape = ", ".join(f"{table}[{k}, {d + 1}]" for d in range(ndim)) + ("," if ndim == 1 else "")
            kind = "distinct_array_at" if apart and not plain else "array_at"
            lines.append(f"{indent}{name} = {layout.lower()}_{kind}({table}[{k}, 0], ({shape}), np.{dtype})")
        return "\n".join(lines)

    def overlaps(match):
        indent, var, table, arg = match.groups()
        if table not in names_of:
            raise ValueError(f"an overlap check of {arg!r} comes before the views of table {table!r}")
        lines = [f"{indent}{var} = -1"]
        # Plain views too: a parallel kernel passes the argument into its prange body, which
        # Numba marks noalias, while the share it calls reads the table's arrays by address.
        # From the table's rows, not the views: the check needs no view the function does not read.
        for k, (dtype, ndim, _, apart) in reversed(list(enumerate(tables[table][:len(names_of[table])]))):
            if apart:
                nbytes = " * ".join([f"{table}[{k}, {d + 1}]" for d in range(ndim)] + [str(np.dtype(dtype).itemsize)])
                lines.append(f"{indent}if overlaps_span({arg}, {table}[{k}, 0], {nbytes}):")
                lines.append(f"{indent}    {var} = {k}")
        return "\n".join(lines)

    def table_at(match):
        indent, var, table, address = match.groups()
        rows = len(tables.get(table) or ())
        return f"{indent}{var} = c_array_at({address}, ({rows}, {TABLE_COLUMNS}), np.int64)"

    text = _TABLE_AT.sub(table_at, text)
    text = _TABLE_VIEWS.sub(views, text)
    return _TABLE_OVERLAPS.sub(overlaps, text)


def load_collect_kernel(game: GameSpec, precision: str, policy, functions=None):
    """The cached episode-collection kernel of ``game`` with the jitted ``policy`` and the
    stand-ins ``functions`` (``GameSpec.kernel_functions``) inside."""
    functions = _default_functions(game, functions)
    module_name, name, source_file = _policy_location(policy)
    key = (game.module.__name__, precision, module_name, name, tuple(functions))
    with _LOCK:
        if key in _LOADED:
            return _LOADED[key]
        mod = game.module
        text = _substitute_game(_COLLECT_TEMPLATE.read_text(), game, precision, functions)
        text = re.sub(r"\bPOLICY_MODULE\b", module_name, text)
        text = re.sub(r"\bPOLICY_NAME\b", name, text)
        text = _pad_signatures(text)
        fingerprint = _fingerprint(game, text)
        fname = (f"vecsim_collect_{mod.__name__.replace('.', '_')}_{module_name.replace('.', '_')}_{name}_"
                 f"{precision}{_variant_tag(functions)}_{fingerprint}")
        module = _import_generated(fname, text, f"{game.env_id} ({precision}, policy {name})")
        _LOADED[key] = module
        return module


#: Envs whose per-env bool flags fill one cache line.
_CACHE_LINE_ENVS = 64


def share_align(envs_per_call: int) -> int:
    """Envs a parallel step kernel's per-thread share is a multiple of, for a game stepped in
    runs of ``envs_per_call`` envs: whole runs (whole 8-env flag words where the runs are) and
    whole cache lines of the per-env flag arrays."""
    return math.lcm(envs_per_call, _CACHE_LINE_ENVS)


def share_min_align(envs_per_call: int) -> int:
    """The finer multiple of a share where ``share_align`` would leave a thread no envs: whole
    runs and whole 8-env words of the flags read 8 at a time."""
    return math.lcm(envs_per_call, 8)


def _keep_one(text: str, per_env: str, runs: str, per_call: int) -> str:
    """``text`` without the marked section a game's ``KernelHints.envs_per_call`` does not use: ``per_env``
    (one env a call, the loop in the parallel region's body) or ``runs`` (``RUN_LENGTH`` envs a
    call, with ``RUN_LENGTH`` put in)."""
    drop = runs if per_call == 1 else per_env
    text = re.sub(rf" *# {drop} BEGIN.*?# {drop} END\n", "", text, flags=re.S)
    return re.sub(r"\bRUN_LENGTH\b", str(per_call), text)


def _step_by_symbol_or_inlined(text: str, game: GameSpec, precision: str, functions) -> str:
    """A collector template's ``text`` for ``game``: with ``KernelHints.call_by_symbol``, the
    engine's fused step module imported (``FUSED_STEP_MODULE``, the same ``functions``) and the
    ``INLINED STEP`` sections and lines dropped, so the collector compiles no copy of the rules;
    otherwise the ``FUSED STEP`` sections and ``BY SYMBOL ONLY`` lines dropped."""
    if game.hints.call_by_symbol:
        text = re.sub(r"^ *# INLINED STEP BEGIN.*?# INLINED STEP END\n", "", text, flags=re.S | re.M)
        text = re.sub(r".*# INLINED STEP ONLY.*\n", "", text)
        text = re.sub(r"\bFUSED_STEP_MODULE\b", fused_source(game, precision, functions, False, "step")[0], text)
        return re.sub(r"^ *# FUSED STEP (BEGIN|END).*\n|  # BY SYMBOL ONLY.*", "", text, flags=re.M)
    text = re.sub(r"^ *# FUSED STEP BEGIN.*?# FUSED STEP END\n", "", text, flags=re.S | re.M)
    text = re.sub(r".*# BY SYMBOL ONLY.*\n", "", text)
    return re.sub(r"^ *# INLINED STEP (BEGIN|END).*\n|  # INLINED STEP ONLY.*", "", text, flags=re.M)


def render_collect_step_source(game: GameSpec, precision: str, discrete: bool, functions=None) -> str:
    """The source text of the per-step collection kernels of ``game`` at ``precision`` for its
    ``Discrete`` (``discrete=True``) or ``Box`` actions, with the stand-ins ``functions``."""
    functions = _default_functions(game, functions)
    head, body, tail = _split_template(_COLLECT_STEP_TEMPLATE.read_text())
    variants = []
    for mode in ("serial", "parallel"):
        part = re.sub(r"\bOPTS_MODE\b", f"OPTS_{mode.upper()}", body)
        variants.append(re.sub(r"_MODE\b", f"_{mode}", part))
    text = _step_by_symbol_or_inlined(_substitute_game(head + "".join(variants) + tail, game, precision, functions),
                                      game, precision, functions)
    if game.hints.call_by_symbol:  # the engine's fused step steps the slots: one compile of the rules for both
        for section in ("PER SLOT", "SLOT RUNS"):
            text = re.sub(rf"^ *# {section} BEGIN.*?# {section} END\n", "", text, flags=re.S | re.M)
        text = _keep_one(text, "FUSED PER SLOT", "FUSED RUNS", game.hints.envs_per_call)
        text = re.sub(r"\bSTEP_ACTIONS\b", "acts32" if discrete else "actions", text)
    else:
        for section in ("FUSED PER SLOT", "FUSED RUNS"):
            text = re.sub(rf" *# {section} BEGIN.*?# {section} END\n", "", text, flags=re.S)
        text = _keep_one(text, "PER SLOT", "SLOT RUNS", game.hints.envs_per_call)
    if not (discrete and game.hints.call_by_symbol):  # only the engine's fused step reads narrowed actions
        text = re.sub(r"\n *acts32\[w\] = actions\[w\]  # NARROW ACTIONS.*", "", text)
    return _pad_signatures(re.sub(r"_KIND\b", f"_{'discrete' if discrete else 'box'}", text))


def load_collect_step_kernels(game: GameSpec, precision: str, discrete: bool, functions=None):
    """The cached per-step collection kernels of ``game`` (``advance_serial`` and
    ``advance_parallel``) for its ``Discrete`` (``discrete=True``) or ``Box`` actions, with
    the stand-ins ``functions`` (``GameSpec.kernel_functions``)."""
    functions = _default_functions(game, functions)
    kind = "discrete" if discrete else "box"
    key = (game.module.__name__, game.hints, precision, "collect_step", kind, tuple(functions))
    with _LOCK:
        if key in _LOADED:
            return _LOADED[key]
        _load_fused(game, precision, functions, False)
        text = render_collect_step_source(game, precision, discrete, functions)
        name = (f"vecsim_collect_step_{game.module.__name__.replace('.', '_')}_{precision}_{kind}"
                f"{_variant_tag(functions)}_"
                f"{_fingerprint(game, text)}")
        module = _import_generated(name, text, f"{game.env_id} ({precision}, collector)")
        _LOADED[key] = module
        return module


def _import_generated(name: str, source: str, label: str):
    """The module ``name`` of ``source``, written to the cache folder and imported; ``label``
    names its kernels in the notice of a long compile (``vecsim.engine.compile_watch``)."""
    folder = cache_dir()
    path = folder / f"{name}.py"
    # Compared as bytes: a file overwritten with anything else (even non-UTF-8 bytes) is rewritten.
    if not path.exists() or path.read_bytes() != source.encode():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(source.encode())
        os.replace(tmp, path)  # atomic: concurrent processes never see half a file
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    name_module(name, label, str(folder))
    spec.loader.exec_module(module)
    for value in vars(module).values():
        if isinstance(value, SymbolCall):
            value = value.dispatcher
        if isinstance(value, CPUDispatcher):
            guard_cache(value)
    return module
