"""Jitted functions compiled once and called by symbol, not compiled into every caller.

Numba compiles a jitted callee into each of its callers: it links the callee's LLVM module
into the caller's, then optimises and emits machine code for the whole again. Along a call
chain (a kernel variant, its parallel region, the fused step, the game's step, its planner)
a large callee is optimised and emitted once per level and once per kernel variant. A
function wrapped with ``by_symbol`` is compiled once per signature; its machine code is
registered under a symbol (``llvmlite.binding.add_symbol``, as ``vecsim.core.exactmath``
does for libm's ``pow``), and its jitted callers emit a call to that symbol in Numba's own
calling convention, linking no code of it (docs/numba-workarounds.md, section 22).

A caller loaded from Numba's cache in a later process registers the symbol again before its
machine code is loaded: the call's lowering adds a ``SymbolLink`` to the caller's library's
``reload_init`` (Numba runs those before loading a cached library, as it starts the thread
pool for a cached parallel kernel), which loads or compiles the callee for the signature.
Callers of the caller inherit it when they link the caller's library.

Use it for a callee with much code that runs for a while each call (a planner's search, the
play to a game's next decision), never for a small function of a hot loop: nothing is
inlined across the call. Called from Python, the stand-in calls the jitted function. It takes
no default arguments: callers pass every argument.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import threading
from dataclasses import dataclass

from llvmlite import binding as llvm
from numba.core import cgutils, types
from numba.core.registry import CPUDispatcher
from numba.core.extending import _Intrinsic

from vecsim.core.jit import cacheable
from vecsim.core.kernel_cache import module_digest

#: Symbol -> address of every callee registered in this process.
_REGISTERED: dict[str, int] = {}
_LOCK = threading.Lock()


def _compiled(dispatcher: CPUDispatcher, args: tuple):
    """The compile result of ``dispatcher`` for ``args`` (loaded from Numba's cache where it
    is there), and the symbol its machine code is registered under. A callee that reads its
    thread's scratch row starts Numba's thread pool itself before it loads
    (``vecsim.core.scratch.thread_row``)."""
    dispatcher.compile(args)
    cres = dispatcher.overloads[args]
    symbol = _symbol(dispatcher, args, cres)
    with _LOCK:
        if symbol not in _REGISTERED:
            address = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
            llvm.add_symbol(symbol, address)
            _REGISTERED[symbol] = address
    return cres, symbol


def _symbol(dispatcher: CPUDispatcher, args: tuple, cres) -> str:
    """The callee's symbol: its module, name and argument types and the digest of its module's
    reach, the same in every process that compiles or loads the same code. Not Numba's own
    mangled name, which numbers functions in the order a process compiles them: a caller
    loaded from the cache must find its callee under the same name after the callee compiled
    anew."""
    fn = dispatcher.py_func
    if not cacheable(fn):  # a notebook cell's function: nothing of it is cached
        return "vecsim_symbol_call_" + cres.fndesc.mangled_name
    key = f"{fn.__qualname__}{args}{module_digest(fn.__module__)}".encode()
    return f"vecsim_symbol_call_{fn.__module__}.{fn.__qualname__}_{hashlib.sha256(key).hexdigest()[:20]}"


@dataclass(frozen=True)
class SymbolLink:
    """Registers the symbol of ``module.name``'s callee for the argument types ``args``: run
    by Numba before it loads a cached caller's machine code (``reload_init``)."""

    module: str
    name: str
    args: tuple

    def __call__(self) -> None:
        stand_in = getattr(importlib.import_module(self.module), self.name)
        _compiled(stand_in.dispatcher, self.args)


def by_symbol(dispatcher: CPUDispatcher):
    """The stand-in for jitted ``dispatcher`` that jitted code calls through a symbol
    (module docstring). Use it as the outer decorator of a top-level function::

        @by_symbol
        @exact
        def search(board, i, ...): ...

    The stand-in keeps ``dispatcher`` as its ``dispatcher`` attribute."""
    if not isinstance(dispatcher, CPUDispatcher):
        raise TypeError(f"by_symbol wraps a numba @njit function, but got {type(dispatcher).__name__}")
    fn = dispatcher.py_func
    params = inspect.signature(fn).parameters.values()
    if any(p.default is not p.empty or p.kind is not p.POSITIONAL_OR_KEYWORD for p in params):
        raise TypeError(f"by_symbol: {fn.__qualname__} must take plain positional arguments without defaults")
    if "<locals>" in fn.__qualname__:
        raise TypeError(f"by_symbol: {fn.__qualname__} must be a top-level function (a cached caller finds it by name)")
    link_name = (fn.__module__, fn.__name__)

    def typer(typingctx, args):
        args = tuple(types.unliteral(a) for a in args)
        cres, symbol = _compiled(dispatcher, args)
        sig = cres.signature

        def codegen(context, builder, signature, llargs):
            context.active_code_library._reload_init.add(SymbolLink(*link_name, args))
            fnty = context.call_conv.get_function_type(sig.return_type, sig.args)
            callee = cgutils.get_or_insert_function(builder.module, fnty, symbol)
            status, result = context.call_conv.call_function(builder, callee, sig.return_type, sig.args, llargs)
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return result

        return sig, codegen

    names = [p.name for p in params]
    namespace = {"typer": typer}
    # An intrinsic's typing function names each argument: written out for this function's.
    exec(f"def {fn.__name__}(typingctx, {', '.join(names)}):\n"
         f"    return typer(typingctx, ({''.join(name + ', ' for name in names)}))\n", namespace)
    stand_in = SymbolCall(dispatcher, namespace[fn.__name__])
    stand_in._register()
    return stand_in


class SymbolCall(_Intrinsic):
    """A ``by_symbol`` stand-in: a Numba intrinsic for jitted callers, the jitted function
    itself for Python callers (Numba's public ``intrinsic`` cannot be called from Python, so
    its class is extended)."""

    def __init__(self, dispatcher: CPUDispatcher, typing):
        super().__init__(dispatcher.py_func.__name__, typing)
        self.dispatcher = dispatcher
        self.__doc__ = dispatcher.py_func.__doc__

    def __call__(self, *args, **kwargs):
        return self.dispatcher(*args, **kwargs)
