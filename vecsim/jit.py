"""The one place that sets Numba compilation options for the whole project.

Every kernel in ``vecsim``, ``games`` and ``planners`` is compiled through the decorators
defined here, so cache, GIL and floating-point policy are uniform:

* ``cache=True`` on the batched kernels only (``kernel_options``): a warm process loads their
  machine code from disk, callees included. Per-env game functions and helpers are not
  cached on their own: Numba's cache does not notice when a callee changes, so a cached
  callee could go stale; the kernel module's file name carries a hash of every source it
  depends on instead (see ``vecsim._codegen``).
* ``nogil=True``: kernels release the GIL, so stepping can overlap inference in threads.
* ``error_model="numpy"``: division by zero gives ``inf``/``nan`` as NumPy does, with no
  per-division Python exception check.
* ``_nrt=False``: no reference counting. A per-env function that reads an array out of
  the ``State`` tuple would otherwise increment and decrement its reference count for every
  env (measured: 5-30x slower, and atomic contention between threads). The price: kernels
  never allocate; scratch space lives in the game's ``State``. That is also the rule "no
  allocation per step".
* ``exact`` kernels use no fast-math flag at all: the float64 physics must match
  Gymnasium bit for bit, and FMA contraction or reassociation would change the last bit.
* ``fast`` kernels (``precision="float32"``) use ``FAST_MATH``. It keeps NaN/Inf semantics
  (no ``nnan``/``ninf``) and leaves out ``contract`` and ``reassoc`` because those let the
  vectorised loop body and its scalar remainder round differently, which would make an
  env's result depend on where a thread's chunk of the batch begins.
"""

from __future__ import annotations

import threading

import numba
import numpy as np
from numba import njit, prange, types
from numba.extending import intrinsic

FAST_MATH = frozenset({"nsz", "arcp", "afn"})

_COMMON = dict(cache=False, nogil=True, error_model="numpy", boundscheck=False, _nrt=False)
EXACT_OPTIONS = dict(_COMMON, fastmath=False)
FAST_OPTIONS = dict(_COMMON, fastmath=set(FAST_MATH))


def exact(fn=None, **extra):
    """Compile ``fn`` with the bit-exact options (usable as ``@exact`` or ``@exact(...)``)."""
    if fn is None:
        return lambda f: njit(**dict(EXACT_OPTIONS, **extra))(f)
    return njit(**EXACT_OPTIONS)(fn)


def fast(fn=None, **extra):
    """Compile ``fn`` with the fast float32 options (usable as ``@fast`` or ``@fast(...)``)."""
    if fn is None:
        return lambda f: njit(**dict(FAST_OPTIONS, **extra))(f)
    return njit(**FAST_OPTIONS)(fn)


def kernel_options(precision: str, parallel: bool) -> dict:
    """Options for a batched kernel of the given precision, serial or parallel."""
    base = FAST_OPTIONS if precision == "float32" else EXACT_OPTIONS
    return dict(base, parallel=parallel, cache=True)


_FUSED: dict = {}
_FUSED_LOCK = threading.Lock()


def _inline_copy(fn, opts: dict):
    """A copy of the njit function ``fn`` compiled with ``opts`` and ``inline="always"``."""
    return njit(**dict(opts, inline="always"))(fn.py_func)


def _float_semantics(opts: dict) -> tuple:
    fm = opts.get("fastmath", False)
    return (frozenset(fm) if isinstance(fm, (set, frozenset)) else bool(fm), opts.get("error_model", "python"))


def inline_if_same_semantics(fn, opts: dict):
    """A copy of the njit function ``fn`` that Numba inlines into callers compiled with
    ``opts``, or ``fn`` itself when its fast-math flags or error model differ from ``opts``'.

    Inlined code is compiled with its caller's flags, so a policy written ``@exact`` inside a
    ``precision="float32"`` kernel would otherwise silently compute with fast math."""
    if _float_semantics(fn.targetoptions) != _float_semantics(opts):
        return fn
    opts = {k: v for k, v in fn.targetoptions.items() if k != "nopython"}  # njit's own
    return njit(**dict(opts, cache=False, inline="always"))(fn.py_func)


def step_parts(game_module, step_name: str, precision: str, mask_name: str = "write_mask"):
    """``(step, write_obs, write_mask)`` of a game for ``step_and_write`` and
    ``step_run_and_write``: copies of its step (``step_name``) and mask (``mask_name``: its
    ``write_mask`` or the stand-in its ``kernel_functions`` chose) that Numba inlines into
    their caller, and its ``write_obs`` (one per game, step, mask and precision)."""
    key = (game_module.__name__, step_name, mask_name, precision, "parts")
    with _FUSED_LOCK:
        if key not in _FUSED:
            opts = dict(kernel_options(precision, False), cache=False)
            _FUSED[key] = (_inline_copy(getattr(game_module, step_name), opts), game_module.write_obs,
                           _inline_copy(getattr(game_module, mask_name), opts))
        return _FUSED[key]


def step_and_write(game_module, step_name: str, precision: str, mask_name: str = "write_mask"):
    """The njit function ``f(s, p, i, actions, events, rng, obs, masks) -> (reward, terminated)``
    of a game: its step (``step_name``: ``"step_env"`` or ``"step_env_fast"``), then
    ``write_obs`` and its mask (``mask_name``, as for ``step_parts``) of env ``i``, in one call.

    The batched kernels call it once per env instead of calling the three functions: every
    call passes each ``State`` array's pointer, shape and strides by value, which for a game
    of many arrays costs more than a small function's work (Tetris, 25 arrays: about 60 ns a
    call, against 30 ns for its drop-mode mask). The step and the mask are inlined into this
    function rather than into a kernel's prange body, where inlining them changed the parallel
    kernel's results (Numba 0.68). One function per game, step, mask and precision, shared by every
    kernel module; not cached on its own (kernels embed it, and their file names hash the
    game's sources)."""
    step, write_obs, mask = step_parts(game_module, step_name, precision, mask_name)  # takes _FUSED_LOCK itself
    key = (game_module.__name__, step_name, mask_name, precision)
    with _FUSED_LOCK:
        if key not in _FUSED:
            opts = dict(kernel_options(precision, False), cache=False)

            @njit(**opts)
            def fused(s, p, i, actions, events, rng, obs, masks):
                reward, terminated = step(s, p, i, actions, events, rng)
                write_obs(s, p, i, obs)
                mask(s, p, i, masks)
                return reward, terminated

            _FUSED[key] = fused
        return _FUSED[key]


def pre_step_draft_run(game_module, precision: str):
    """The njit function ``f(s, p, lo, hi, actions)``: a game's ``pre_step_draft_env`` for
    envs ``lo`` to ``hi - 1``, inlined into the loop by Numba so that LLVM vectorises it.

    The batched step kernels call it once (serial) or once a run of envs (parallel) instead of
    calling the draft per env: LLVM declines to inline a draft as large as
    ``games._exactmath.cos_wide`` into a kernel's loop, and Numba's own inlining into a
    ``prange`` body dropped its stores (Numba 0.68). The loop reads and writes few arrays, so
    LLVM's run-time overlap check stays cheap. One function per game and precision."""
    key = (game_module.__name__, "pre_step_draft_run", precision)
    with _FUSED_LOCK:
        if key not in _FUSED:
            opts = dict(kernel_options(precision, False), cache=False)
            draft = _inline_copy(game_module.pre_step_draft_env, opts)

            @njit(**opts)
            def run(s, p, lo, hi, actions):
                for i in range(lo, hi):
                    draft(s, p, np.uint64(i), actions)

            _FUSED[key] = run
        return _FUSED[key]


#: Where an episode's step count saturates (``elapsed`` is int32).
MAX_ELAPSED = 2**31 - 1


def step_run_and_write(game_module, step_name: str, precision: str, mask_name: str = "write_mask"):
    """The njit function ``f(s, p, lo, hi, skip_due, max_steps, actions, events, rng, obs,
    masks, elapsed, rewards, term, trunc, needs_reset, was_done)`` of a game: one step of each
    env ``lo <= i < hi`` as the step kernels make it (the game's step, ``write_obs``,
    ``write_mask``, then the step count, reward and flags), skipping the envs with
    ``was_done[i]`` when ``skip_due``.

    The kernels of a game with ``ENVS_PER_CALL > 1`` call it once per run of that many envs
    instead of calling ``step_and_write`` once per env: the ``State`` arrays are passed once
    a run. The same step, observation and mask as ``step_and_write``'s, inlined here, so
    the same results."""
    # The step and mask themselves are inlined into the loop, not an inlined step_and_write:
    # Numba copies an inlined function's IR at each site, and an inlined function that
    # itself inlines the step would be copied whole once more (5 s more to compile Tetris).
    step, write_obs, mask = step_parts(game_module, step_name, precision, mask_name)  # takes _FUSED_LOCK itself
    key = (game_module.__name__, step_name, mask_name, precision, "run")
    with _FUSED_LOCK:
        if key not in _FUSED:
            opts = dict(kernel_options(precision, False), cache=False)

            @njit(**opts)
            def run(s, p, lo, hi, skip_due, max_steps, actions, events, rng, obs, masks, elapsed, rewards, term,
                    trunc, needs_reset, was_done):
                for i in range(lo, hi):
                    if skip_due and was_done[i]:
                        continue
                    reward, terminated = step(s, p, i, actions, events, rng)  # as step_and_write
                    write_obs(s, p, i, obs)
                    mask(s, p, i, masks)
                    # As the per-env loop of vecsim/_batch_template.py writes them (kept in its
                    # prange body there, where the loop vectorises): change both together.
                    t = min(elapsed[i] + 1, MAX_ELAPSED)
                    elapsed[i] = t
                    truncated = max_steps > 0 and t >= max_steps
                    rewards[i] = reward
                    term[i] = terminated
                    trunc[i] = truncated
                    needs_reset[i] = terminated | truncated

            _FUSED[key] = run
        return _FUSED[key]


def reset_and_write(game_module, mask_name: str = "write_mask"):
    """The njit function ``f(s, p, i, rng, events, rewards, elapsed, term, trunc, needs_reset,
    has_final, obs, masks, final_obs, same_step)`` of a game: its ``reset_env`` of env ``i``,
    then ``write_obs`` and its mask (``mask_name``, as for ``step_parts``).

    With ``same_step`` False, the outputs of a fresh episode (no reward, flags or events,
    step 0). With ``same_step`` True (Gymnasium's SAME_STEP autoreset), env ``i``'s
    observation first goes to ``final_obs`` and the step's reward, flags and events stay,
    with ``has_final`` set; ``final_obs`` is not touched otherwise.

    One call per reset env instead of four, for the reason given in ``step_and_write`` (for
    CartPole's six arrays the saving was within this machine's noise; games with many State
    arrays gain more), and one place for a fresh episode's outputs instead of three copies in
    the kernel template. One function for both kinds of reset: the step kernel's SAME_STEP
    pass once called the game's functions itself, which compiled them once more (about 5 of
    the 18 s to Tetris's first step). Compiled with the exact options whatever the precision:
    resets draw in float64 either way."""
    key = (game_module.__name__, "reset_env", mask_name, "exact")
    with _FUSED_LOCK:
        if key not in _FUSED:
            opts = dict(EXACT_OPTIONS, cache=False)
            reset = _inline_copy(game_module.reset_env, opts)
            write_obs = _inline_copy(game_module.write_obs, opts)
            mask = _inline_copy(getattr(game_module, mask_name), opts)

            @njit(**opts)
            def fused(s, p, i, rng, events, rewards, elapsed, term, trunc, needs_reset, has_final, obs, masks,
                      final_obs, same_step):
                if same_step:
                    write_obs(s, p, i, final_obs)
                reset(s, p, i, rng)
                if not same_step:
                    for k in range(events.shape[1]):
                        events[i, k] = 0
                    rewards[i] = 0.0
                    term[i] = False
                    trunc[i] = False
                elapsed[i] = 0
                needs_reset[i] = False
                has_final[i] = same_step
                write_obs(s, p, i, obs)
                mask(s, p, i, masks)

            _FUSED[key] = fused
        return _FUSED[key]


@njit(**kernel_options("float64", True))
def _first_launch(out):
    for i in prange(out.shape[0]):
        out[i] = i


def threading_layer() -> str:
    """The threading layer of Numba's parallel kernels in this process (``"omp"``, ``"tbb"``
    or ``"workqueue"``), known only once a parallel kernel has run: this runs a trivial one
    (cached) when none has."""
    try:
        return numba.threading_layer()
    except ValueError:  # no parallel kernel has run yet
        from vecsim._codegen import _load_without_refresh  # imports this module

        _load_without_refresh(_first_launch)  # a warm start loads it as it loads the kernels
        _first_launch(np.zeros(2))
        return numba.threading_layer()


_DISTINCT_FN = "vecsim_distinct_pointer"


def _distinct_pointer(builder, address):
    """``address`` as a pointer that LLVM tells apart from every other pointer of the function.

    It is the result of a call to a small function of this module whose return value is
    marked ``noalias`` and which is never inlined (once inlined, the mark would be gone): to
    LLVM, a fresh allocation. That is what lets it vectorise a loop over such arrays with no
    run-time overlap check. A fresh allocation that never escapes is also invisible to the
    caller once the function returns, and LLVM deletes the stores into it; so the pointer
    escapes at once, into an empty ``asm sideeffect`` (no instruction: LLVM cannot see
    inside, so it must assume the pointer is kept). Loads and stores through it are then
    kept, and it still aliases no other distinct pointer or argument (LLVM's rule for
    identified function-local objects does not ask about escapes).
    """
    from llvmlite import ir

    module = builder.module
    ptr = ir.IntType(8).as_pointer()
    fn = module.globals.get(_DISTINCT_FN)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ptr, [address.type]), _DISTINCT_FN)
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        fn.return_value.add_attribute("noalias")
        body = ir.IRBuilder(fn.append_basic_block())
        body.ret(body.inttoptr(fn.args[0], ptr))
    pointer = builder.call(fn, [address])
    builder.call(ir.InlineAsm(ir.FunctionType(ir.VoidType(), [ptr]), "", "r", side_effect=True), [pointer])
    return pointer


def _array_at(layout: str, distinct: bool):
    """An intrinsic ``f(address, shape, dtype)``: the ``layout``-contiguous array of ``dtype``
    and ``shape`` (a tuple of ints) whose data begins at the integer ``address``; with
    ``distinct``, one that LLVM may assume shares no memory with any other array the
    function sees (see ``c_distinct_array_at``)."""

    @intrinsic
    def array_at(typingctx, address, shape, dtype):
        if not (isinstance(address, types.Integer) and isinstance(shape, types.BaseTuple)
                and all(isinstance(d, types.Integer) for d in shape) and isinstance(dtype, types.NumberClass)):
            return None
        ndim = len(shape)
        aryty = types.Array(dtype.instance_type, ndim, layout)

        def codegen(context, builder, signature, args):
            from numba.core import cgutils
            from numba.np.arrayobj import populate_array

            addr, shp, _ = args
            ary = context.make_array(aryty)(context, builder)
            dims = [context.cast(builder, d, ty, types.intp)
                    for d, ty in zip(cgutils.unpack_tuple(builder, shp, ndim), shape)]
            itemsize = context.get_abi_sizeof(context.get_data_type(aryty.dtype))
            strides = [context.get_constant(types.intp, itemsize)] * ndim
            order = range(ndim - 2, -1, -1) if layout == "C" else range(1, ndim)
            for k in order:
                inner = k + 1 if layout == "C" else k - 1
                strides[k] = builder.mul(strides[inner], dims[inner])
            addr = context.cast(builder, addr, address, types.intp)
            if distinct:
                data = builder.bitcast(_distinct_pointer(builder, addr), ary.data.type)
            else:
                data = builder.inttoptr(addr, ary.data.type)
            populate_array(ary, data=data, shape=dims, strides=strides, itemsize=itemsize, meminfo=None)
            return ary._getvalue()

        return aryty(address, shape, dtype), codegen

    kind = "distinct_array_at" if distinct else "array_at"
    array_at.__name__ = array_at.__qualname__ = f"{layout.lower()}_{kind}"
    return array_at


#: ``c_array_at(address, shape, np.float32)``: a C-contiguous view of memory that the caller
#: keeps alive, with no reference count (``_nrt=False`` kernels build them; Numba's own
#: ``carray`` needs its runtime). How kernels rebuild arrays from an address table
#: (``vecsim._codegen.address_table``): Numba's dispatch unboxes each array argument from
#: Python at about 45 ns, a view built here costs nearly nothing.
c_array_at = _array_at("C", False)
#: ``f_array_at``: the same for a Fortran-contiguous (column-major) array.
f_array_at = _array_at("F", False)
#: ``c_distinct_array_at``: as ``c_array_at``, for memory that no other array of the function
#: shares (not another view, not an argument). LLVM then needs no run-time overlap check
#: before it runs a loop over envs on SIMD lanes; without it, it gives up on a loop that
#: touches more than a handful of arrays, as every serial step loop does (Numba marks
#: arguments ``noalias`` only in a ``prange`` body). The promise is the caller's to keep:
#: ``vecsim._codegen.table_specs`` marks an array distinct only when it overlaps no other,
#: and a kernel checks its per-call array arguments against its distinct views
#: (``address_of``) before it touches either. Broken, LLVM may reorder loads and stores.
c_distinct_array_at = _array_at("C", True)
#: ``f_distinct_array_at``: the same for a Fortran-contiguous (column-major) array.
f_distinct_array_at = _array_at("F", True)


@intrinsic
def address_of(typingctx, array):
    """The address of ``array``'s data as an int64 (compare ``overlaps``)."""
    if not isinstance(array, types.Array):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(array)(context, builder, args[0])
        return builder.ptrtoint(ary.data, context.get_value_type(types.int64))

    return types.int64(array), codegen


@njit(**EXACT_OPTIONS)
def overlaps(a, b) -> bool:
    """Whether the data of the contiguous arrays ``a`` and ``b`` share a byte. Not inlined by
    Numba (LLVM inlines it): a kernel calls it once per table row, and 20 inlined copies made
    Numba's own passes over a parallel kernel seconds slower."""
    lo_a, lo_b = address_of(a), address_of(b)
    return a.nbytes > 0 and b.nbytes > 0 and lo_a < lo_b + b.nbytes and lo_b < lo_a + a.nbytes
