"""Interpreter implementations of the ptx memory ops that take ``!ptx.ptr`` addresses:
``ld``, ``st``, ``ld.vec``, ``st.vec``, ``atom`` and ``red`` (atomic also when several
interpreter threads run, :mod:`bulkred_dialect.interpreter.threads`),
``add.ptr``, and ``fence``/``membar`` (nothing to order: the interpreter's memory is
sequentially consistent).

An address is a :class:`Pointer`: the numpy buffer of a memref and a byte offset into
it. ``builtin.unrealized_conversion_cast`` of a memref to ``!ptx.ptr<space>`` (how
level-2 IR hands a buffer to a ptx op) gives its first byte; ``ptx.add.ptr`` moves it.
Accesses read and write the buffer's bytes (little-endian, as on the GPU), so any
``.type`` may be used on a buffer of any element type. An access outside the buffer or
not aligned to its own size raises an ``InterpretationError`` (on the GPU: undefined,
or a misaligned-address fault).

Semantics (PTX ISA, ld / atom / red):

* ``ld``: ``.u``/``.b`` types are zero-extended and ``.s`` types sign-extended into
  a wider integer register; a float register gets the loaded bits.
* ``atom``/``red``: integer ``add`` wraps; ``min``/``max`` compare signed for ``.s``
  types, unsigned otherwise; ``inc``: ``old >= b ? 0 : old + 1``; ``dec``:
  ``(old == 0 || old > b) ? b : old - 1`` (unsigned); ``exch`` stores ``b``. ``add.f32``
  rounds to nearest even and flushes subnormal inputs and results to sign-preserving
  zero ("atom.add.f32 ... flushes subnormal inputs and results"); ``add.f64`` and the
  ``.noftz`` f16/bf16 forms keep subnormals; f16/bf16 ``min``/``max`` follow
  ``min``/``max`` (a NaN operand is ignored). ``atom`` returns the old value. A vector
  ``red`` combines element by element.

The warp and CTA collectives (``shfl.sync``, ``redux.sync``, ``bar.sync``) need the
other threads: :mod:`bulkred_dialect.interpreter.threads` runs them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects.builtin import IntegerType, MemRefType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    impl_cast,
    register_impls,
)
from xdsl.ir import Attribute
from xdsl.utils.exceptions import InterpretationError

from bulkred_dialect.interpreter.values import (
    float_binary,
    float_bits,
    float_from_bits,
    float_minmax,
    to_signed,
    to_unsigned,
)
from bulkred_dialect.ops.ptx.arith import ArithType
from bulkred_dialect.ops.ptx.atom import (
    AtomOp,
    AtomType,
    FenceOp,
    MembarOp,
    RedOp,
    type_bytes,
)
from bulkred_dialect.ops.ptx.base import PtrType, StateSpace, bf16, f16, f32, f64
from bulkred_dialect.ops.ptx.memory import LdOp, LdVecOp, MovOp, PtrAddOp, StOp, StVecOp

_FLOAT_OF_TYPE: dict[Attribute, ArithType] = {
    f16: ArithType.F16,
    bf16: ArithType.BF16,
    f32: ArithType.F32,
    f64: ArithType.F64,
}


# atom and red read, combine and write as one step when several interpreter threads run
# (interpreter/threads.py)
ATOMIC = threading.Lock()


@dataclass(frozen=True)
class Pointer:
    """An address: ``offset`` bytes into the numpy buffer ``buffer`` (state space ``space``)."""

    buffer: np.ndarray
    offset: int
    space: StateSpace
    # the buffer's bytes (made once per buffer cast, handed on by moved())
    raw: np.ndarray | None = field(default=None, compare=False, repr=False)

    def moved(self, delta: int) -> Pointer:
        return Pointer(self.buffer, self.offset + delta, self.space, self._raw())

    def _raw(self) -> np.ndarray:
        raw = self.raw
        if raw is None:
            raw = self.buffer.reshape(-1).view(np.uint8)
            object.__setattr__(self, "raw", raw)
        return raw

    def _bytes(self, op_name: str, nbytes: int) -> np.ndarray:
        raw = self._raw()
        offset = self.offset
        if offset % nbytes != 0:
            raise InterpretationError(
                f"'{op_name}' accesses {nbytes} bytes at byte offset {offset}: not {nbytes}-byte aligned"
            )
        if offset < 0 or offset + nbytes > raw.size:
            raise InterpretationError(
                f"'{op_name}' accesses bytes [{offset}, {offset + nbytes}) of a "
                f"{raw.size}-byte buffer"
            )
        return raw[offset : offset + nbytes]

    def read(self, op_name: str, nbytes: int) -> int:
        """The little-endian unsigned integer of ``nbytes`` bytes at this address."""
        view = self._bytes(op_name, nbytes)
        uint = _UINT.get(nbytes)
        if uint is None:
            return int.from_bytes(view.tobytes(), "little")
        return int(view.view(uint)[0])

    def write(self, op_name: str, nbytes: int, bits: int) -> None:
        view = self._bytes(op_name, nbytes)
        uint = _UINT.get(nbytes)
        if uint is None:
            view[...] = np.frombuffer(to_unsigned(bits, nbytes * 8).to_bytes(nbytes, "little"), np.uint8)
        else:
            view.view(uint)[0] = to_unsigned(bits, nbytes * 8)


# The unsigned integer of each access size (bytes); a vector's whole span is checked as
# one access of up to 32 bytes (ld.v8.f32), read as bytes.
_UINT: dict[int, Any] = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


class DeviceAddresses:
    """Global addresses for numpy buffers, so that a kernel can read an address from
    memory (the list ops' descriptor table) and load through it: :meth:`of` gives a
    buffer a base address (a multiple of 256, 2^32 apart), ``ptx.mov`` of an ``i64``
    to ``!ptx.ptr<global>`` finds the buffer that holds it. The buffers stay registered
    until :meth:`clear`."""

    BASE = 1 << 40
    SPAN = 1 << 32

    def __init__(self) -> None:
        self.buffers: list[np.ndarray] = []

    def of(self, buffer: np.ndarray) -> int:
        """The address of ``buffer``'s first byte (``buffer`` must own contiguous memory)."""
        for i, b in enumerate(self.buffers):
            if b is buffer:
                return self.BASE + i * self.SPAN
        if buffer.nbytes >= self.SPAN:
            raise ValueError(f"a buffer of {buffer.nbytes} bytes is too large for the interpreter's address space")
        self.buffers.append(buffer)
        return self.BASE + (len(self.buffers) - 1) * self.SPAN

    def pointer(self, address: int) -> Pointer | None:
        i, offset = divmod(address - self.BASE, self.SPAN)
        if address < self.BASE or i >= len(self.buffers):
            return None
        return Pointer(self.buffers[i], offset, StateSpace.GLOBAL)

    def clear(self) -> None:
        self.buffers.clear()


DEVICE_ADDRESSES = DeviceAddresses()


def _pointer(interpreter: Interpreter, v: Any) -> Pointer:
    interpreter.interpreter_assert(isinstance(v, Pointer), f"expected a ptx address, got {type(v).__name__}")
    return v


# The float register types by class (an attribute's class is cheaper to look up than the
# attribute).
_FLOAT_OF_CLASS: dict[type, ArithType] = {type(t): k for t, k in _FLOAT_OF_TYPE.items()}
_FLOAT_WIDTH = {ArithType.F16: 16, ArithType.BF16: 16, ArithType.F32: 32, ArithType.F64: 64}


def _register_width(t: Attribute) -> int:
    kind = _FLOAT_OF_CLASS.get(type(t))
    if kind is not None:
        return _FLOAT_WIDTH[kind]
    if isinstance(t, IntegerType):
        return t.width.data
    raise InterpretationError(f"register type {t} is not supported by the interpreter")


def to_register(bits: int, t: Attribute) -> Any:
    """The interpreter's value of IR type ``t`` for a register holding ``bits``."""
    kind = _FLOAT_OF_CLASS.get(type(t))
    if kind is not None:
        return float_from_bits(kind, to_unsigned(bits, _FLOAT_WIDTH[kind]))
    return to_signed(bits, _register_width(t))


def from_register(value: Any, t: Attribute) -> int:
    """The bits (unsigned) of a register of IR type ``t`` holding ``value``."""
    kind = _FLOAT_OF_CLASS.get(type(t))
    if kind is not None:
        return float_bits(kind, value)
    return to_unsigned(int(value), _register_width(t))


_NP_FLOAT: dict[ArithType, Any] = {ArithType.F16: np.float16, ArithType.F32: np.float32, ArithType.F64: np.float64}
_INT = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _reader(ptx_type: str, register: Attribute) -> Callable[[np.ndarray], Any]:
    """What ``ld`` of ``ptx_type`` (``f32``, ``u8``, ``s16``...) gives a register of IR
    type ``register`` from the element's bytes: ``.s`` types sign-extended, the others
    zero-extended, into the register's bits (a float register of the access's width
    gets the bits as the float)."""
    width = int(ptx_type[1:])
    kind = _FLOAT_OF_CLASS.get(type(register))
    if kind in _NP_FLOAT and _FLOAT_WIDTH[kind] == width:
        dtype = np.dtype(_NP_FLOAT[kind])
        return lambda raw: raw.view(dtype)[0]
    if kind is None and isinstance(register, IntegerType):
        rw = register.width.data
        dtype = np.dtype((_INT if ptx_type[0] == "s" else _UINT)[width // 8])
        return lambda raw: to_signed(int(raw.view(dtype)[0]), rw)
    uint = np.dtype(_UINT[width // 8])

    def read(raw: np.ndarray) -> Any:
        bits = int(raw.view(uint)[0])
        if ptx_type[0] == "s":
            bits = to_unsigned(to_signed(bits, width), _register_width(register))
        return to_register(bits, register)

    return read


def _writer(ptx_type: str, register: Attribute) -> Callable[[np.ndarray, Any], None]:
    """How ``st`` of ``ptx_type`` writes a value of a register of IR type ``register``
    into the element's bytes (its bits, cut to the access's width)."""
    width = int(ptx_type[1:])
    uint = np.dtype(_UINT[width // 8])
    kind = _FLOAT_OF_CLASS.get(type(register))
    native = _NP_FLOAT.get(kind) if kind is not None and _FLOAT_WIDTH[kind] == width else None

    def write(raw: np.ndarray, value: Any) -> None:
        if native is not None and type(value) is native:
            raw.view(uint)[0] = value.view(uint)
        else:
            raw.view(uint)[0] = to_unsigned(from_register(value, register), width)

    return write


_FLOAT_OF_ATOM = {
    AtomType.F16: ArithType.F16,
    AtomType.BF16: ArithType.BF16,
    AtomType.F32: ArithType.F32,
    AtomType.F64: ArithType.F64,
}


def combine_bits(op_name: str, kind: str, t: AtomType, old: int, b: int) -> int:
    """The new bits of an atomic ``kind`` on ``.type`` ``t`` (old and b as unsigned bits)."""
    name = str(t)
    width = 8 * type_bytes(t)
    mask = (1 << width) - 1
    if t in _FLOAT_OF_ATOM:
        ft = _FLOAT_OF_ATOM[t]
        x, y = float_from_bits(ft, old), float_from_bits(ft, b)
        if kind == "add":
            # only add.f32 flushes; add.f64 and the .noftz half forms keep subnormals
            return float_bits(ft, float_binary("add", ft, x, y, ftz=ft == ArithType.F32))
        if kind in ("min", "max"):
            return float_bits(ft, float_minmax(kind, ft, (x, y)))
        raise InterpretationError(f"'{op_name}' has no interpretation for '.{kind}.{name}'")  # pragma: no cover
    if kind == "add":
        return (old + b) & mask
    if kind in ("min", "max"):
        ka, kb = (to_signed(old, width), to_signed(b, width)) if name[0] == "s" else (old, b)
        return to_unsigned((min if kind == "min" else max)(ka, kb), width)
    if kind == "inc":
        return 0 if old >= b else (old + 1) & mask
    if kind == "dec":
        return b if old == 0 or old > b else old - 1
    if kind == "and":
        return old & b
    if kind == "or":
        return old | b
    if kind == "xor":
        return old ^ b
    if kind == "exch":
        return b
    raise InterpretationError(f"'{op_name}' has no interpretation for '.{kind}'")  # pragma: no cover


@register_impls
class PtxMemoryFunctions(InterpreterFunctions):
    """Casts of memrefs to ``!ptx.ptr``, ``add.ptr``, ``ld``, ``st``, ``ld.vec``,
    ``st.vec``, ``atom``, ``red``, ``fence`` and ``membar``."""

    @impl_cast(MemRefType, PtrType)
    def cast_memref_to_ptr(self, input_type: MemRefType, output_type: PtrType, value: Any) -> Any:
        if not isinstance(value, np.ndarray):
            raise InterpretationError(
                f"a cast of {input_type} to {output_type} needs a numpy buffer, got {type(value).__name__}"
            )
        if not value.flags.c_contiguous:
            raise InterpretationError(f"a cast of {input_type} to {output_type} needs a contiguous buffer")
        return Pointer(value, 0, output_type.state_space)

    @impl(MovOp)
    def run_mov(self, interpreter: Interpreter, op: MovOp, args: PythonValues) -> PythonValues:
        """``mov``: a register copy. An ``i64`` into ``!ptx.ptr<global>`` is an address
        read from memory (:class:`DeviceAddresses`); an address into another pointer type
        is the same address; otherwise the bits are kept (``mov.b32`` of f32 to i32...)."""
        (a,) = args
        rt = op.result.type
        if isinstance(a, Pointer):
            interpreter.interpreter_assert(isinstance(rt, PtrType), f"'ptx.mov' of an address to {rt}")
            return (Pointer(a.buffer, a.offset, rt.state_space),)
        if isinstance(rt, PtrType):
            p = DEVICE_ADDRESSES.pointer(int(a) & ((1 << 64) - 1))
            if p is None:
                raise InterpretationError(f"'ptx.mov' of {int(a):#x} to {rt}: no buffer at that address")
            return (p,)
        return (to_register(from_register(a, op.src.type), rt),)

    @impl(PtrAddOp)
    def run_add_ptr(self, interpreter: Interpreter, op: PtrAddOp, args: PythonValues) -> PythonValues:
        base, offset = args
        return (_pointer(interpreter, base).moved(int(offset)),)

    def _access(self, op: LdOp | StOp | LdVecOp | StVecOp, registers: Any) -> tuple[int, int, list[Any]]:
        """(the op's immediate offset, its element size in bytes, one element reader
        (ld) or writer (st) per register), read once per op."""
        memo = self.__dict__.setdefault("_accesses", {})
        plan = memo.get(op)
        if plan is None:
            t = str(op.type.data)
            make = _reader if isinstance(op, (LdOp, LdVecOp)) else _writer
            offset = op.offset.value.data if op.offset else 0
            plan = memo[op] = (offset, int(t[1:]) // 8, [make(t, r.type) for r in registers])
        return plan

    @impl(LdOp)
    def run_ld(self, interpreter: Interpreter, op: LdOp, args: PythonValues) -> PythonValues:
        offset, size, (read,) = self._access(op, (op.result,))
        ptr = _pointer(interpreter, args[0]).moved(offset)
        return (read(ptr._bytes(op.name, size)),)

    @impl(StOp)
    def run_st(self, interpreter: Interpreter, op: StOp, args: PythonValues) -> PythonValues:
        offset, size, (write,) = self._access(op, (op.value,))
        ptr = _pointer(interpreter, args[0]).moved(offset)
        write(ptr._bytes(op.name, size), args[1])
        return ()

    @impl(LdVecOp)
    def run_ld_vec(self, interpreter: Interpreter, op: LdVecOp, args: PythonValues) -> PythonValues:
        offset, size, reads = self._access(op, op.d)
        ptr = _pointer(interpreter, args[0]).moved(offset)
        # the whole vector must be aligned to its size, as one access
        whole = ptr._bytes(op.name, size * op.count)
        return tuple(read(whole[i * size : (i + 1) * size]) for i, read in enumerate(reads))

    @impl(StVecOp)
    def run_st_vec(self, interpreter: Interpreter, op: StVecOp, args: PythonValues) -> PythonValues:
        offset, size, writes = self._access(op, op.values)
        ptr = _pointer(interpreter, args[0]).moved(offset)
        # the whole vector must be aligned to its size, as one access
        whole = ptr._bytes(op.name, size * op.count)
        for i, (value, write) in enumerate(zip(args[1:], writes)):
            write(whole[i * size : (i + 1) * size], value)
        return ()

    @impl(AtomOp)
    def run_atom(self, interpreter: Interpreter, op: AtomOp, args: PythonValues) -> PythonValues:
        ptr = _pointer(interpreter, args[0])
        t = op.type.data
        size = type_bytes(t)
        b = from_register(args[1], op.value.type)
        with ATOMIC:
            old = ptr.read(op.name, size)
            ptr.write(op.name, size, combine_bits(op.name, str(op.op.data), t, old, b))
        return (to_register(old, op.d.type),)

    @impl(RedOp)
    def run_red(self, interpreter: Interpreter, op: RedOp, args: PythonValues) -> PythonValues:
        ptr = _pointer(interpreter, args[0])
        t = op.type.data
        size = type_bytes(t)
        ptr._bytes(op.name, size * op.count)  # alignment and bounds of the whole vector
        for i, (value, v) in enumerate(zip(args[1:], op.values)):
            p = ptr.moved(i * size)
            b = from_register(value, v.type)
            with ATOMIC:
                p.write(op.name, size, combine_bits(op.name, str(op.op.data), t, p.read(op.name, size), b))
        return ()

    @impl(FenceOp)
    def run_fence(self, interpreter: Interpreter, op: FenceOp, args: PythonValues) -> PythonValues:
        return ()

    @impl(MembarOp)
    def run_membar(self, interpreter: Interpreter, op: MembarOp, args: PythonValues) -> PythonValues:
        return ()
