"""Arrays rebuilt inside kernels from raw addresses (the engine's address tables), and the
pointer intrinsics that let LLVM vectorise loops over them."""

from __future__ import annotations

from numba import njit, types
from numba.extending import intrinsic

from vecsim.core.jit import EXACT_OPTIONS

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
#: (``vecsim.engine.codegen.address_table``): Numba's dispatch unboxes each array argument from
#: Python on every call, a view built here costs nearly nothing (see docs/numba-workarounds.md).
c_array_at = _array_at("C", False)
#: ``f_array_at``: the same for a Fortran-contiguous (column-major) array.
f_array_at = _array_at("F", False)
#: ``c_distinct_array_at``: as ``c_array_at``, for memory that no other array of the function
#: shares (not another view, not an argument). LLVM then needs no run-time overlap check
#: before it runs a loop over envs on SIMD lanes; without it, it gives up on a loop that
#: touches more than a handful of arrays, as every serial step loop does (Numba marks
#: arguments ``noalias`` only in a ``prange`` body: see docs/numba-workarounds.md). The
#: promise is the caller's to keep: ``vecsim.engine.codegen.table_specs`` marks an array
#: distinct only when it overlaps no other, and a kernel checks its per-call array arguments
#: against its distinct views (``address_of``) before it touches either. Broken, LLVM may
#: reorder loads and stores.
c_distinct_array_at = _array_at("C", True)
#: ``f_distinct_array_at``: the same for a Fortran-contiguous (column-major) array.
f_distinct_array_at = _array_at("F", True)


@intrinsic
def address_of(typingctx, array):
    """The address of ``array``'s data as an int64 (compare ``overlaps_span``)."""
    if not isinstance(array, types.Array):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(array)(context, builder, args[0])
        return builder.ptrtoint(ary.data, context.get_value_type(types.int64))

    return types.int64(array), codegen


@njit(**EXACT_OPTIONS)
def overlaps_span(array, start, nbytes) -> bool:
    """Whether the data of the contiguous ``array`` shares a byte with the ``nbytes`` bytes from
    address ``start`` (a row of an address table: the check needs no view of it)."""
    lo, size = address_of(array), array.size * array.itemsize
    return size > 0 and nbytes > 0 and lo < start + nbytes and start < lo + size


@njit(**EXACT_OPTIONS)
def is_c_contiguous(a) -> bool:
    """Whether the 1-D or 2-D array ``a`` (of any layout type) is C-contiguous and its data
    aligned to its item size: what ``as_c_layout`` needs."""
    itemsize = a.itemsize
    if address_of(a) % itemsize != 0:
        return False
    if a.ndim == 1:
        return a.shape[0] < 2 or a.strides[0] == itemsize
    return (a.shape[0] * a.shape[1] == 0
            or ((a.shape[1] < 2 or a.strides[1] == itemsize) and (a.shape[0] < 2 or a.strides[0] == a.shape[1] * itemsize)))


@intrinsic
def as_c_layout(typingctx, array):
    """``array``, typed C-contiguous: the same data, shape and strides (no copy). Only for an
    array that ``is_c_contiguous``: the kernel then reads it as one, with no strides."""
    if not isinstance(array, types.Array):
        return None
    c_type = array.copy(layout="C")

    def codegen(context, builder, signature, args):
        from numba.core.imputils import impl_ret_borrowed

        return impl_ret_borrowed(context, builder, c_type, args[0])

    return c_type(array), codegen
