"""Buffers for the interpreter: memrefs are numpy arrays, loaded and stored by bits.

xDSL's own memref implementation packs floats through Python ``float`` (which may
quiet a NaN and loses nothing else, but gives Python floats back) and has no
``memref.alloca``; these overrides keep every element exact in its IR type and
ignore the memory space (``#bulkred.scope<local>`` or any other). Element values
follow :mod:`bulkred_dialect.interpreter.values`.

New buffers (``memref.alloca``/``memref.alloc``) are filled with the byte 0xA5, not
zeros, so that a lowering that reads an element before writing it shows up as a
wrong result rather than a lucky zero.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
)
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Attribute
from xdsl.utils.comparisons import to_signed as xdsl_to_signed
from xdsl.utils.comparisons import to_unsigned as xdsl_to_unsigned
from xdsl.utils.exceptions import InterpretationError

from bulkred_dialect.interpreter.values import (
    coerce_float,
    float_bits,
    float_from_bits,
    to_signed,
    to_unsigned,
)
from bulkred_dialect.ops.ptx.arith import ArithType
from bulkred_dialect.ops.tile import CopyOp

POISON_BYTE = 0xA5

_FLOAT_KIND: dict[type[Attribute], ArithType] = {
    Float16Type: ArithType.F16,
    BFloat16Type: ArithType.BF16,
    Float32Type: ArithType.F32,
    Float64Type: ArithType.F64,
}
_FLOAT_WIDTH = {ArithType.F16: 16, ArithType.BF16: 16, ArithType.F32: 32, ArithType.F64: 64}
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
# How a caller's numpy array of each element type is spelled (bf16 travels as its bits).
STORAGE_DTYPE: dict[ArithType, Any] = {
    ArithType.F16: np.float16,
    ArithType.BF16: np.uint16,
    ArithType.F32: np.float32,
    ArithType.F64: np.float64,
}


def element_format(t: Attribute, index_bitwidth: int = 64) -> tuple[ArithType | None, int]:
    """``(float type or None for integers, bit width)`` of a memref element type."""
    if type(t) in _FLOAT_KIND:
        kind = _FLOAT_KIND[type(t)]
        return kind, _FLOAT_WIDTH[kind]
    if isinstance(t, IntegerType) and t.width.data in _UINT:
        return None, t.width.data
    if isinstance(t, IntegerType) and t.width.data == 1:  # bool: one byte (0 or 1), as numpy and torch hold it
        return None, 8
    if isinstance(t, IndexType):
        return None, index_bitwidth
    raise InterpretationError(f"memref element type {t} is not supported by the interpreter")


def storage_dtype(t: Attribute, index_bitwidth: int = 64) -> Any:
    """The numpy dtype of a buffer of element type ``t``."""
    kind, width = element_format(t, index_bitwidth)
    if kind is not None:
        return STORAGE_DTYPE[kind]
    if isinstance(t, IntegerType) and t.width.data == 1:
        return np.bool_
    return {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}[width]


def _bits_view(buf: np.ndarray, width: int) -> np.ndarray:
    if buf.dtype.itemsize * 8 != width:
        raise InterpretationError(
            f"buffer of dtype {buf.dtype} cannot hold {width}-bit elements"
        )
    return buf.view(_UINT[width])


def _index(buf: np.ndarray, indices: PythonValues) -> tuple[int, ...]:
    if len(indices) == 1 and buf.ndim == 1:
        i = indices[0]
        if type(i) is int and 0 <= i < buf.shape[0]:
            return (i,)
    idx = tuple(int(i) for i in indices)
    if len(idx) != buf.ndim or any(not 0 <= i < d for i, d in zip(idx, buf.shape)):
        raise InterpretationError(f"index {list(idx)} is out of bounds for a buffer of shape {list(buf.shape)}")
    return idx


def _is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


def load_element(buf: np.ndarray, idx: tuple[int, ...], t: Attribute, index_bitwidth: int = 64) -> Any:
    """The element at ``idx``; a bool (``i1``) byte is true when it is not 0 (as
    ``lower-to-ptx`` loads it, ``ld.u8`` then ``setp.ne``), as the ``i1`` value -1 or 0
    (``arith.constant true`` is -1)."""
    kind, width = element_format(t, index_bitwidth)
    bits = int(_bits_view(buf, width)[idx])
    if kind is not None:
        return float_from_bits(kind, bits)
    if _is_bool(t):
        return -1 if bits else 0
    return to_signed(bits, width)


def store_element(
    buf: np.ndarray, idx: tuple[int, ...], t: Attribute, value: Any, index_bitwidth: int = 64
) -> None:
    """Store ``value`` at ``idx``; a bool (``i1``) as the byte 1 or 0, its low bit
    (``arith.constant true`` is -1, a comparison gives Python's ``True``)."""
    kind, width = element_format(t, index_bitwidth)
    if kind is not None:
        bits = float_bits(kind, value)
    else:
        bits = int(value) & 1 if _is_bool(t) else to_unsigned(int(value), width)
    _bits_view(buf, width)[idx] = bits


def new_buffer(t: MemRefType, index_bitwidth: int = 64) -> np.ndarray:
    shape = tuple(t.get_shape())
    if any(d < 0 for d in shape):
        raise InterpretationError(f"cannot allocate {t}: dynamic shapes are not supported")
    dtype = np.dtype(storage_dtype(t.element_type, index_bitwidth))
    raw = np.full(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize, POISON_BYTE, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def _buffer(interpreter: Interpreter, v: Any) -> np.ndarray:
    interpreter.interpreter_assert(isinstance(v, np.ndarray), f"expected a numpy buffer, got {type(v).__name__}")
    return v


# arith.cmpi's predicates (eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge), as xDSL
# interprets them
_CMPI = dict(enumerate((operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge,
                        operator.lt, operator.le, operator.gt, operator.ge)))


def cmpi_width(op: arith.CmpiOp, index_bitwidth: int) -> int | None:
    """The bits an ``arith.cmpi`` compares (an index's: ``index_bitwidth``); None for
    another operand type."""
    t = op.lhs.type
    if isinstance(t, IntegerType):
        return t.width.data
    return index_bitwidth if isinstance(t, IndexType) else None


def _comparison(op: arith.CmpiOp, index_bitwidth: int) -> Any:
    width = cmpi_width(op, index_bitwidth)
    if width is None:
        raise InterpretationError(f"arith.cmpi of {op.lhs.type} is not supported by the interpreter")
    predicate = op.predicate.value.data
    compare = _CMPI.get(predicate)
    if compare is None:
        raise InterpretationError(f"arith.cmpi predicate {op.predicate} is not supported by the interpreter")
    convert = xdsl_to_unsigned if predicate >= 6 else xdsl_to_signed
    return lambda a, b: compare(convert(a, width), convert(b, width))


@register_impls
class BufferFunctions(InterpreterFunctions):
    """memref.alloca/alloc/load/store on numpy buffers, exact float constants,
    ``arith.cmpi`` and ``bulkred.copy`` as an element-by-element copy."""

    @impl(memref.AllocaOp)
    def run_alloca(self, interpreter: Interpreter, op: memref.AllocaOp, args: PythonValues) -> PythonValues:
        if args:
            raise InterpretationError("memref.alloca with dynamic sizes is not supported by the interpreter")
        return (new_buffer(op.memref.type, interpreter.index_bitwidth),)

    @impl(memref.AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: memref.AllocOp, args: PythonValues) -> PythonValues:
        if args:
            raise InterpretationError("memref.alloc with dynamic sizes is not supported by the interpreter")
        return (new_buffer(op.memref.type, interpreter.index_bitwidth),)

    @impl(memref.LoadOp)
    def run_load(self, interpreter: Interpreter, op: memref.LoadOp, args: PythonValues) -> PythonValues:
        buf, *indices = args
        buf = _buffer(interpreter, buf)
        t, kind, width, native = self._format(interpreter, op)
        idx = _index(buf, indices)
        if buf.dtype is native:  # the element itself: a numpy float keeps its bits
            return (buf[idx],)
        return (load_element(buf, idx, t, interpreter.index_bitwidth),)

    @impl(memref.StoreOp)
    def run_store(self, interpreter: Interpreter, op: memref.StoreOp, args: PythonValues) -> PythonValues:
        value, buf, *indices = args
        buf = _buffer(interpreter, buf)
        t, kind, width, native = self._format(interpreter, op)
        idx = _index(buf, indices)
        if buf.dtype is native and type(value) is native.type:  # the bits of the value
            buf.view(_UINT[width])[idx] = value.view(_UINT[width])
            return ()
        store_element(buf, idx, t, value, interpreter.index_bitwidth)
        return ()

    def _format(self, interpreter: Interpreter, op: memref.LoadOp | memref.StoreOp) -> tuple[Any, ...]:
        """(element type, float kind or None, width, numpy dtype whose elements are the
        interpreter's values or None) of ``op``'s memref, read once per op."""
        memo = self.__dict__.setdefault("_formats", {})
        key = (op, interpreter.index_bitwidth)
        form = memo.get(key)
        if form is None:
            t = op.memref.type.element_type
            kind, width = element_format(t, interpreter.index_bitwidth)
            native = np.dtype(STORAGE_DTYPE[kind]) if kind is not None and kind != ArithType.BF16 else None
            form = memo[key] = (t, kind, width, native)
        return form

    @impl(arith.CmpiOp)
    def run_cmpi(self, interpreter: Interpreter, op: arith.CmpiOp, args: PythonValues) -> PythonValues:
        """xDSL's ``arith.cmpi`` (the operands as signed or unsigned integers of the
        type's width, the index type's the interpreter's), without its per-call checks
        of generic type hints (a kernel's loops and guards compare at every step)."""
        return (self.comparison(interpreter, op)(args[0], args[1]),)

    def comparison(self, interpreter: Interpreter, op: arith.CmpiOp) -> Any:
        """``op`` as a function of its two operands, made once per op."""
        memo = self.__dict__.setdefault("_comparisons", {})
        key = (op, interpreter.index_bitwidth)
        f = memo.get(key)
        if f is None:
            f = memo[key] = _comparison(op, interpreter.index_bitwidth)
        return f

    @impl(arith.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues) -> PythonValues:
        """The constant's value, made once per op and index width (a value is immutable:
        a numpy scalar or an int)."""
        memo = self.__dict__.setdefault("_constants", {})
        key = (op, interpreter.index_bitwidth)
        result = memo.get(key)
        if result is None:
            result = memo[key] = self._constant(interpreter, op)
        return result

    def _constant(self, interpreter: Interpreter, op: arith.ConstantOp) -> PythonValues:
        value = op.value
        if isinstance(value, FloatAttr) and type(value.type) in _FLOAT_KIND:
            return (coerce_float(_FLOAT_KIND[type(value.type)], value.value.data),)
        if isinstance(value, FloatAttr):
            raise InterpretationError(f"arith.constant of type {value.type} is not supported by the interpreter")
        if isinstance(value, IntegerAttr):
            if isinstance(value.type, IndexType):
                return (to_signed(value.value.data, interpreter.index_bitwidth),)
            return (value.value.data,)
        raise InterpretationError(f"arith.constant {value} is not supported by the interpreter")

    @impl(CopyOp)
    def run_copy(self, interpreter: Interpreter, op: CopyOp, args: PythonValues) -> PythonValues:
        src, dst = (_buffer(interpreter, a) for a in args)
        t = op.src.type.element_type
        _, width = element_format(t, interpreter.index_bitwidth)
        if src.shape != dst.shape:
            raise InterpretationError(f"bulkred.copy between shapes {list(src.shape)} and {list(dst.shape)}")
        _bits_view(dst, width)[...] = _bits_view(src, width)
        return ()
