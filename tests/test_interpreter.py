"""Semantics of the interpreter's ptx arithmetic: rounding, .ftz, NaN and signed-zero
rules of max/min, packed f32x2 lanes, integer wrapping and shifts, exact buffers.

Each case builds a one-op ``func.func`` with the op constructors and calls it through
``make_interpreter``; expected values come from float64 arithmetic or are written out
as bit patterns. On a GPU machine (``pytest -m gpu``) every scalar op also runs on
1024 operand pairs on the GPU and the interpreter must give the same bits.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import FloatAttr, FunctionType, IndexType, IntegerAttr, ModuleOp
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.interpreters.utils.ptr import TypedPtr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import InterpretationError

from bulkred_dialect import builder
from bulkred_dialect.errors import ArgumentError, InterpretError, KernelNotFoundError, SignatureValueError
from bulkred_dialect.interpreter import BF16, make_interpreter, run_kernel
from bulkred_dialect.ops.ptx.arith import (
    AddF32x2Op,
    AddOp,
    AndOp,
    ArithType,
    Max3Op,
    MaxOp,
    Min3Op,
    MinOp,
    MulLoOp,
    MulOp,
    OrOp,
    PackF32x2Op,
    RoundingMode,
    ShlOp,
    ShrOp,
    SubOp,
    UnpackF32x2Op,
    XorOp,
)
from bulkred_dialect.ops.ptx.base import bf16, f16, f32, f32x2, f64, i16, i32, i64
from bulkred_dialect.ops.tile import CopyOp, MemoryScope, buffer_type

T = ArithType


def f32b(bits: int) -> np.float32:
    return np.uint32(bits).view(np.float32)


def b32(x: np.float32) -> int:
    return int(np.float32(x).view(np.uint32))


def f64b(bits: int) -> np.float64:
    return np.uint64(bits).view(np.float64)


def b64(x: np.float64) -> int:
    return int(np.float64(x).view(np.uint64))


def f16b(bits: int) -> np.float16:
    return np.uint16(bits).view(np.float16)


def b16(x: np.float16) -> int:
    return int(np.float16(x).view(np.uint16))


SUB = f32b(0x00000001)  # 2**-149, the smallest subnormal
NEG_SUB = f32b(0x80000001)
BIG_SUB = f32b(0x007FFFFF)  # largest subnormal
MIN_NORMAL = f32b(0x00800000)  # 2**-126
NAN_PAYLOAD = f32b(0x7FC01234)
NEG_NAN = f32b(0xFFC00000)
SNAN = f32b(0x7F800001)
CANON = 0x7FFFFFFF


class OneOp:
    """A ``func.func @f`` holding one op on its arguments; call it with Python values."""

    def __init__(self, arg_types: Sequence[Attribute], make: Callable[..., Operation]):
        block = Block(arg_types=arg_types)
        with ImplicitBuilder(block):
            op = make(*block.args)
            func.ReturnOp(*op.results)
        self.op = op
        fn = func.FuncOp("f", FunctionType.from_lists(arg_types, [r.type for r in op.results]), Region(block))
        self.module = ModuleOp([fn])
        self.module.verify()
        self.interpreter = make_interpreter(self.module)

    def __call__(self, *args: Any) -> Any:
        results = self.interpreter.call_op("f", args)
        return results[0] if len(results) == 1 else results


def binary(cls: type, t: ArithType, ty: Attribute, **kw: Any) -> OneOp:
    rhs = i32 if cls in (ShlOp, ShrOp) else ty  # shift amounts are u32
    return OneOp([ty, rhs], lambda a, b: cls(t, a, b, **kw))


# region Floating-point add/sub/mul rounding


def test_add_f32_rounds_each_op_to_nearest_even():
    add = binary(AddOp, T.F32, f32, rnd=RoundingMode.RN)
    one = np.float32(1.0)
    # 1 + 2**-24 is a tie between 1 and 1 + 2**-23: to even gives 1.
    assert b32(add(one, np.float32(2.0**-24))) == b32(one)
    # (1 + 2**-23) + 2**-24 is a tie: to even gives 1 + 2**-22.
    assert b32(add(f32b(0x3F800001), np.float32(2.0**-24))) == 0x3F800002
    # Just above the tie rounds up.
    assert b32(add(one, f32b(0x33800001))) == 0x3F800001
    r = add(np.float32(0.1), np.float32(0.2))
    assert isinstance(r, np.float32)
    assert float(r) != float(np.float32(0.1)) + float(np.float32(0.2))  # not kept in double


def test_add_sub_mul_f32_match_float64_rounded_once():
    # A float64 result of one op on two f32 values, rounded to f32, is the correctly
    # rounded f32 result (53 >= 2*24 + 2), subnormals included.
    rng = np.random.default_rng(1)
    raw = rng.integers(0, 2**32, size=(400, 2), dtype=np.uint64).astype(np.uint32)
    raw[:100] &= np.uint32(0x80FFFFFF)  # tiny exponents: subnormal inputs and results
    vals = raw.view(np.float32)
    ops: list[tuple[type, Callable[[Any, Any], Any]]] = [
        (AddOp, lambda x, y: x + y),
        (SubOp, lambda x, y: x - y),
        (MulOp, lambda x, y: x * y),
    ]
    for cls, py in ops:
        run = binary(cls, T.F32, f32)
        for a, b in vals:
            with np.errstate(all="ignore"):
                want = np.float32(py(np.float64(a), np.float64(b)))
            got = run(a, b)
            if np.isnan(want):
                assert b32(got) == CANON
            else:
                assert b32(got) == b32(want), (cls.__name__, a, b)


def test_add_f32_overflows_where_rounding_reaches_infinity():
    """The largest float32 plus half its ulp (2^103) is a tie, rounded to the even
    2^128: infinity; a little less stays the largest float32."""
    add, sub = binary(AddOp, T.F32, f32), binary(SubOp, T.F32, f32)
    big = f32b(0x7F7FFFFF)
    assert b32(add(big, np.float32(2.0**103))) == 0x7F800000
    assert b32(add(big, np.float32(2.0**102))) == 0x7F7FFFFF
    assert b32(sub(-big, np.float32(2.0**103))) == 0xFF800000
    assert b32(add(big, big)) == 0x7F800000
    assert b32(binary(MulOp, T.F32, f32)(np.float32(2.0**64), np.float32(2.0**64))) == 0x7F800000


def test_f64_and_f16_add():
    add64 = binary(AddOp, T.F64, f64)
    assert b64(add64(np.float64(1.0), np.float64(2.0**-53))) == b64(np.float64(1.0))
    assert b64(add64(np.float64(np.inf), np.float64(-np.inf))) == 0xFFF8000000000000
    add16 = binary(AddOp, T.F16, f16)
    rng = np.random.default_rng(2)
    raw = rng.integers(0, 2**16, size=(300, 2), dtype=np.uint32).astype(np.uint16)
    for a, b in raw.view(np.float16):
        with np.errstate(all="ignore"):
            want = np.float16(np.float64(a) + np.float64(b))
        got = add16(a, b)
        assert isinstance(got, np.float16)
        assert b16(got) == (0x7FFF if np.isnan(want) else b16(want)), (a, b)


def test_f64_nan_operands_propagate():
    # f64 keeps a NaN operand's payload and sign (quieted), the second one when both are
    # NaN, unlike f32/f16/bf16 (seen on an H200).
    qa, sb, one = f64b(0x7FF8000000000001), f64b(0xFFF0000000000004), np.float64(1.0)
    for cls in (AddOp, SubOp, MulOp):
        run = binary(cls, T.F64, f64)
        assert b64(run(qa, one)) == 0x7FF8000000000001
        assert b64(run(one, sb)) == 0xFFF8000000000004
        assert b64(run(qa, sb)) == 0xFFF8000000000004
        assert b64(run(sb, qa)) == 0x7FF8000000000001
    assert b64(binary(MulOp, T.F64, f64)(np.float64(0.0), np.float64(-np.inf))) == 0xFFF8000000000000
    assert b64(binary(MinOp, T.F64, f64)(sb, qa)) == 0x7FF8000000000001


def test_bf16_add_rounds_to_nearest_even():
    add = binary(AddOp, T.BF16, bf16)
    one = BF16(0x3F80)
    assert add(one, BF16(0x3B80)) == one  # 1 + 2**-8: tie, to even
    assert add(one, BF16(0x3BC0)) == BF16(0x3F81)  # 1 + 3*2**-9 rounds up
    assert add(BF16(0x3F81), BF16(0x3B80)) == BF16(0x3F82)  # tie, to even (up)
    assert add(BF16(0x7F80), BF16(0xFF80)) == BF16(0x7FFF)  # inf - inf
    assert add(BF16(0x7F7F), BF16(0x7F7F)) == BF16(0x7F80)  # overflow to inf


def test_nan_results_are_canonical():
    add = binary(AddOp, T.F32, f32)
    assert b32(add(NAN_PAYLOAD, np.float32(1.0))) == CANON
    assert b32(add(NEG_NAN, NAN_PAYLOAD)) == CANON
    assert b32(add(np.float32(np.inf), np.float32(-np.inf))) == CANON
    assert b32(binary(MulOp, T.F32, f32)(np.float32(0.0), np.float32(np.inf))) == CANON


def test_signed_zero_sums():
    add = binary(AddOp, T.F32, f32)
    assert b32(add(np.float32(-0.0), np.float32(0.0))) == 0x00000000
    assert b32(add(np.float32(-0.0), np.float32(-0.0))) == 0x80000000
    assert b32(add(np.float32(1.5), np.float32(-1.5))) == 0x00000000


# endregion

# region .ftz


def test_ftz_flushes_subnormal_inputs():
    plain = binary(AddOp, T.F32, f32, rnd=RoundingMode.RN)
    ftz = binary(AddOp, T.F32, f32, rnd=RoundingMode.RN, ftz=True)
    assert b32(plain(MIN_NORMAL, SUB)) == 0x00800001
    assert b32(ftz(MIN_NORMAL, SUB)) == 0x00800000
    assert b32(plain(NEG_SUB, np.float32(-0.0))) == 0x80000001
    assert b32(ftz(NEG_SUB, np.float32(-0.0))) == 0x80000000  # -0 + -0
    assert b32(ftz(NEG_SUB, SUB)) == 0x00000000  # -0 + +0
    assert b32(ftz(BIG_SUB, BIG_SUB)) == 0x00000000


def test_f16_ftz():
    plain = binary(AddOp, T.F16, f16)
    ftz = binary(AddOp, T.F16, f16, ftz=True)
    min_normal, sub = f16b(0x0400), f16b(0x0001)
    assert b16(plain(min_normal, sub)) == 0x0401
    assert b16(ftz(min_normal, sub)) == 0x0400
    assert b16(plain(f16b(0x0401), f16b(0x8400))) == 0x0001
    assert b16(ftz(f16b(0x0401), f16b(0x8400))) == 0x0000
    assert b16(ftz(f16b(0x8401), f16b(0x0400))) == 0x8000
    mn = binary(MinOp, T.F16, f16, ftz=True)
    assert b16(mn(f16b(0x8001), np.float16(1.0))) == 0x8000


def test_ftz_flushes_subnormal_results_to_signed_zero():
    plain = binary(AddOp, T.F32, f32)
    ftz = binary(AddOp, T.F32, f32, ftz=True)
    a, b = f32b(0x00800001), f32b(0x80800000)  # (2**-126 + 2**-149) - 2**-126
    assert b32(plain(a, b)) == 0x00000001
    assert b32(ftz(a, b)) == 0x00000000
    assert b32(plain(b, a)) == 0x00000001
    assert b32(ftz(-a, -b)) == 0x80000000
    sub_ftz = binary(SubOp, T.F32, f32, ftz=True)
    assert b32(sub_ftz(f32b(0x80800000), f32b(0x80800001))) == 0x00000000
    assert b32(sub_ftz(f32b(0x00800000), f32b(0x00800001))) == 0x80000000
    mul = binary(MulOp, T.F32, f32)
    mul_ftz = binary(MulOp, T.F32, f32, ftz=True)
    assert b32(mul(MIN_NORMAL, np.float32(-0.5))) == 0x80400000
    assert b32(mul_ftz(MIN_NORMAL, np.float32(-0.5))) == 0x80000000


@pytest.mark.parametrize("rnd", [RoundingMode.RZ, RoundingMode.RM, RoundingMode.RP])
def test_directed_rounding_is_refused(rnd: RoundingMode):
    add = binary(AddOp, T.F32, f32, rnd=rnd)
    with pytest.raises(InterpretationError, match=f"rounding modifier '.{rnd}' is not supported"):
        add(np.float32(1.0), np.float32(1.0))
    packed = OneOp([f32x2, f32x2], lambda a, b: AddF32x2Op(a, b, rnd=rnd))
    with pytest.raises(InterpretationError, match=f"'.{rnd}'"):
        packed((np.float32(1), np.float32(1)), (np.float32(1), np.float32(1)))


# endregion

# region max / min


@pytest.mark.parametrize("cls", [MaxOp, MinOp])
def test_float_max_min_nan_rules(cls: type):
    run = binary(cls, T.F32, f32)
    one = np.float32(1.0)
    assert b32(run(NAN_PAYLOAD, one)) == b32(one)
    assert b32(run(one, NEG_NAN)) == b32(one)
    assert b32(run(SNAN, np.float32(-3.0))) == b32(np.float32(-3.0))
    assert b32(run(NAN_PAYLOAD, NEG_NAN)) == CANON
    assert b32(run(SNAN, SNAN)) == CANON


def test_float_max_min_signed_zeros_and_order():
    mx, mn = binary(MaxOp, T.F32, f32), binary(MinOp, T.F32, f32)
    pz, nz = np.float32(0.0), np.float32(-0.0)
    for a, b in ((pz, nz), (nz, pz)):
        assert b32(mx(a, b)) == 0x00000000
        assert b32(mn(a, b)) == 0x80000000
    assert b32(mx(nz, nz)) == 0x80000000
    assert mx(np.float32(-2.0), np.float32(1.5)) == np.float32(1.5)
    assert mn(np.float32(-2.0), np.float32(1.5)) == np.float32(-2.0)
    assert mx(np.float32(-np.inf), NEG_SUB) == NEG_SUB
    assert b32(mn(SUB, NEG_SUB)) == 0x80000001


def test_max_ftz_flushes_inputs():
    mx = binary(MaxOp, T.F32, f32)
    mx_ftz = binary(MaxOp, T.F32, f32, ftz=True)
    assert b32(mx(SUB, np.float32(-1.0))) == 0x00000001
    assert b32(mx_ftz(SUB, np.float32(-1.0))) == 0x00000000
    assert b32(mx_ftz(NEG_SUB, np.float32(-1.0))) == 0x80000000
    assert b32(mx_ftz(NEG_SUB, SUB)) == 0x00000000  # -0 < +0


def test_max_min_f64_f16():
    mx64 = binary(MaxOp, T.F64, f64)
    assert b64(mx64(f64b(0x7FF8000000000001), np.float64(-1.0))) == b64(np.float64(-1.0))
    assert b64(mx64(np.float64(-0.0), np.float64(0.0))) == 0
    assert b64(mx64(f64b(0x7FF8000000000001), f64b(0xFFF0000000000002))) == 0xFFF8000000000002
    mn16 = binary(MinOp, T.F16, f16)
    assert b16(mn16(f16b(0x7E01), np.float16(2.0))) == b16(np.float16(2.0))
    assert b16(mn16(np.float16(0.0), np.float16(-0.0))) == 0x8000
    assert b16(mn16(f16b(0x7E01), f16b(0x7C01))) == 0x7FFF


def test_integer_max_min_signedness():
    smax = binary(MaxOp, T.S32, i32)
    umax = binary(MaxOp, T.U32, i32)
    smin64 = binary(MinOp, T.S64, i64)
    assert smax(-1, 1) == 1
    assert umax(-1, 1) == -1  # 0xffffffff as u32 is the larger
    assert umax(0x7FFFFFFF, -(2**31)) == -(2**31)
    assert smin64(-(2**63), 2**63 - 1) == -(2**63)


def _three(cls: type, **kw: Any) -> OneOp:
    return OneOp([f32, f32, f32], lambda a, b, c: cls(a, b, c, **kw))


@pytest.mark.parametrize("cls,pick", [(Max3Op, max), (Min3Op, min)])
def test_three_input_max_min(cls: type, pick: Callable[..., float]):
    run = _three(cls)
    rng = np.random.default_rng(3)
    for a, b, c in rng.standard_normal((50, 3)).astype(np.float32):
        assert run(a, b, c) == pick(a, b, c)
    x, y = np.float32(2.5), np.float32(-7.0)
    for args in ((NAN_PAYLOAD, x, y), (x, NEG_NAN, y), (x, y, SNAN)):
        assert b32(run(*args)) == b32(pick(x, y))
    for args in ((NAN_PAYLOAD, NEG_NAN, x), (x, NAN_PAYLOAD, SNAN), (SNAN, x, NEG_NAN)):
        assert b32(run(*args)) == b32(x)
    assert b32(run(NAN_PAYLOAD, NEG_NAN, SNAN)) == CANON
    pz, nz = np.float32(0.0), np.float32(-0.0)
    want = 0x00000000 if cls is Max3Op else 0x80000000
    for args in ((pz, nz, nz), (nz, pz, nz), (nz, nz, pz), (nz, NAN_PAYLOAD, pz)):
        assert b32(run(*args)) == want


def test_three_input_nan_and_ftz_qualifiers():
    with_nan = _three(Max3Op, nan=True)
    assert b32(with_nan(np.float32(1), np.float32(2), NAN_PAYLOAD)) == CANON
    assert with_nan(np.float32(1), np.float32(3), np.float32(2)) == np.float32(3)
    ftz = _three(Min3Op, ftz=True)
    assert b32(ftz(SUB, np.float32(1.0), np.float32(2.0))) == 0x00000000
    assert b32(_three(Min3Op)(SUB, np.float32(1.0), np.float32(2.0))) == 0x00000001
    assert b32(ftz(NEG_SUB, SUB, np.float32(2.0))) == 0x80000000


# endregion

# region Packed f32x2


def test_add_f32x2_is_lane_wise():
    packed = OneOp([f32x2, f32x2], lambda a, b: AddF32x2Op(a, b, ftz=False))
    scalar = binary(AddOp, T.F32, f32)
    rng = np.random.default_rng(4)
    vals = rng.standard_normal((40, 4)).astype(np.float32)
    vals[:10, 1] *= np.float32(1e30)
    vals[:10, 3] = -vals[:10, 1]
    for a0, a1, b0, b1 in vals:
        lo, hi = packed((a0, a1), (b0, b1))
        assert (b32(lo), b32(hi)) == (b32(scalar(a0, b0)), b32(scalar(a1, b1)))


def test_add_f32x2_ftz_per_lane():
    packed = OneOp([f32x2, f32x2], lambda a, b: AddF32x2Op(a, b, ftz=True))
    a = (MIN_NORMAL, f32b(0x80800001))
    b = (SUB, f32b(0x00800000))
    lo, hi = packed(a, b)
    assert (b32(lo), b32(hi)) == (0x00800000, 0x80000000)
    plain = OneOp([f32x2, f32x2], lambda a, b: AddF32x2Op(a, b))
    lo, hi = plain(a, b)
    assert (b32(lo), b32(hi)) == (0x00800001, 0x80000001)
    lo, hi = packed((NAN_PAYLOAD, np.float32(1)), (np.float32(1), np.float32(2)))
    assert (b32(lo), b32(hi)) == (CANON, b32(np.float32(3)))


def test_pack_unpack_keep_bits():
    def make(lo: SSAValue, hi: SSAValue) -> Operation:
        p = PackF32x2Op(lo, hi)
        return UnpackF32x2Op(p.result)

    run = OneOp([f32, f32], make)
    lo, hi = run(SNAN, NEG_SUB)
    assert (b32(lo), b32(hi)) == (0x7F800001, 0x80000001)
    packed = OneOp([f32, f32], PackF32x2Op)(np.float32(1.0), np.float32(2.0))
    assert tuple(map(b32, packed)) == (0x3F800000, 0x40000000)


# endregion

# region Integers


def test_integer_add_sub_mul_wrap():
    assert binary(AddOp, T.S32, i32)(2**31 - 1, 1) == -(2**31)
    assert binary(AddOp, T.U32, i32)(-1, 1) == 0
    assert binary(AddOp, T.S64, i64)(2**63 - 1, 2**63 - 1) == -2
    assert binary(AddOp, T.S16, i16)(0x7FFF, 1) == -0x8000
    assert binary(SubOp, T.S32, i32)(-(2**31), 1) == 2**31 - 1
    assert binary(MulLoOp, T.S32, i32)(0x10000, 0x10001) == 0x10000
    assert binary(MulLoOp, T.S64, i64)(2**62, 4) == 0


def test_bitwise_ops():
    assert binary(AndOp, T.B32, i32)(-1, 0x0F0F0F0F) == 0x0F0F0F0F
    assert binary(OrOp, T.B32, i32)(-(2**31), 1) == -(2**31) + 1
    assert binary(XorOp, T.B64, i64)(-1, 1) == -2
    assert binary(XorOp, T.B32, i32)(0x12345678, 0x12345678) == 0


def test_shifts_clamp_and_sign():
    shl = binary(ShlOp, T.B32, i32)
    assert shl(1, 31) == -(2**31)
    assert shl(1, 32) == 0
    assert shl(1, 40) == 0
    assert shl(3, -1) == 0  # 0xffffffff as a u32 amount
    assert binary(ShlOp, T.B64, i64)(1, 63) == -(2**63)
    shr_b = binary(ShrOp, T.B32, i32)
    assert shr_b(-1, 4) == 0x0FFFFFFF
    assert shr_b(-1, 32) == 0
    shr_s = binary(ShrOp, T.S32, i32)
    assert shr_s(-16, 2) == -4
    assert shr_s(-16, 40) == -1
    assert shr_s(16, 40) == 0
    assert binary(ShrOp, T.U64, i64)(-1, 60) == 0xF


# endregion

# region Constants and buffers


def test_f32_constants_are_rounded_to_f32():
    run = OneOp([], lambda: arith.ConstantOp(FloatAttr(0.1, f32)))
    v = run()
    assert isinstance(v, np.float32)
    assert b32(v) == b32(np.float32(0.1))
    v64 = OneOp([], lambda: arith.ConstantOp(FloatAttr(0.1, f64)))()
    assert isinstance(v64, np.float64) and v64 == 0.1


def _local_round_trip(arg: SSAValue) -> Operation:
    t = buffer_type([4], f32, MemoryScope.LOCAL)
    buf = memref.AllocaOp.get(f32, shape=[4], memory_space=t.memory_space)
    i = arith.ConstantOp(IntegerAttr(2, IndexType()))
    memref.StoreOp.get(arg, buf, [i])
    return memref.LoadOp.get(buf, [i])


def test_local_alloca_store_load_keep_nan_payloads():
    run = OneOp([f32], _local_round_trip)
    for bits_ in (0x7F800001, 0xFFC01234, 0x80000001, 0x80000000):
        assert b32(run(f32b(bits_))) == bits_


def _copy_kernel(shape: list[int], elt: Attribute) -> ModuleOp:
    """``@k(%a, %b)``: b[i] = a[i] + b[i] elementwise on 1-D buffers (s32, f32 or f64 add)."""
    t = buffer_type(shape, elt, MemoryScope.GLOBAL)
    block = Block(arg_types=[t, t])
    a, b = block.args
    with ImplicitBuilder(block):
        lb = arith.ConstantOp(IntegerAttr(0, IndexType()))
        ub = arith.ConstantOp(IntegerAttr(shape[0], IndexType()))
        st = arith.ConstantOp(IntegerAttr(1, IndexType()))
        body = Block(arg_types=[IndexType()])
        with ImplicitBuilder(body):
            i = body.args[0]
            x = memref.LoadOp.get(a, [i])
            y = memref.LoadOp.get(b, [i])
            s = AddOp({f32: T.F32, f64: T.F64, i32: T.S32}[elt], x.res, y.res)
            memref.StoreOp.get(s.result, b, [i])
            scf.YieldOp()
        scf.ForOp(lb, ub, st, [], body)
        func.ReturnOp()
    module = ModuleOp([func.FuncOp("k", FunctionType.from_lists([t, t], []), Region(block))])
    module.verify()
    return module


def _strided_fold_kernel(n: int, stride: int) -> ModuleOp:
    """``@k(%a, %b)``: the loop shape of sm100_packed's further chunks. An ``scf.for`` over
    ``i = 0 .. n // stride`` carries two f32 values: ``x = add.rn.ftz.f32x2`` lane 0 of
    ``(x, y) + (a[i*stride + 1], a[i*stride + 2])`` with lane 1 giving ``y``; after the
    loop ``b[0], b[1] = x, y``."""
    t = buffer_type([n], f32, MemoryScope.LOCAL)
    block = Block(arg_types=[t, t])
    a, b = block.args
    with ImplicitBuilder(block):
        c = {v: arith.ConstantOp(IntegerAttr(v, IndexType())) for v in (0, 1, 2, stride, n // stride)}
        x0 = memref.LoadOp.get(a, [c[0]])
        y0 = memref.LoadOp.get(a, [c[0]])
        body = Block(arg_types=[IndexType(), f32, f32])
        with ImplicitBuilder(body):
            i, x, y = body.args
            base = arith.MuliOp(i, c[stride])
            lo = memref.LoadOp.get(a, [arith.AddiOp(base, c[1])])
            hi = memref.LoadOp.get(a, [arith.AddiOp(base, c[2])])
            s = AddF32x2Op(PackF32x2Op(x, y), PackF32x2Op(lo, hi), ftz=True)
            u = UnpackF32x2Op(s)
            scf.YieldOp(u.lo, u.hi)
        loop = scf.ForOp(c[0], c[n // stride], c[1], [x0.res, y0.res], body)
        memref.StoreOp.get(loop.results[0], b, [c[0]])
        memref.StoreOp.get(loop.results[1], b, [c[1]])
        func.ReturnOp()
    module = ModuleOp([func.FuncOp("k", FunctionType.from_lists([t, t], []), Region(block))])
    module.verify()
    return module


def test_scf_for_carries_f32_bits_and_strided_indices():
    """f32 iter_args keep their bits across iterations (the -0.0 start, a NaN result made
    canonical once), the index arithmetic picks a[i*4 + 1], a[i*4 + 2], and each packed add
    flushes as it runs."""
    a = np.zeros(12, dtype=np.float32)
    a[0] = -0.0
    a[[1, 5, 9]] = [SUB, MIN_NORMAL, np.float32(1.5)]  # lane 0: flushed, 2**-126, then + 1.5
    a[[2, 6, 10]] = [np.float32(np.inf), np.float32(-np.inf), np.float32(7)]  # lane 1: inf - inf
    a[[3, 4, 7, 8, 11]] = np.float32(100)  # never read
    b = np.zeros(12, dtype=np.float32)
    run_kernel(_strided_fold_kernel(12, 4), "k", a, b)
    assert b32(b[0]) == b32(np.float32(1.5) + MIN_NORMAL)
    assert b32(b[1]) == CANON


def test_run_kernel_mutates_numpy_buffers():
    module = _copy_kernel([5], f32)
    a = np.array([1.0, SUB, NAN_PAYLOAD, -0.0, 1e30], dtype=np.float32)
    b = np.array([2.0, SUB, 1.0, -0.0, 1e30], dtype=np.float32)
    out_a, out_b = run_kernel(module, "k", a, b)
    assert out_b is b
    assert list(map(b32, b)) == [0x40400000, 0x00000002, CANON, 0x80000000, b32(np.float32(2e30))]
    ints = _copy_kernel([3], i32)
    x = np.array([2**31 - 1, -5, 7], dtype=np.int32)
    y = np.array([1, 5, -8], dtype=np.int32)
    run_kernel(ints, "k", x, y)
    assert y.tolist() == [-(2**31), 0, -1]
    yu = np.array([1, 5, 2**32 - 8], dtype=np.uint32)
    run_kernel(ints, "k", x, yu)
    assert yu.tolist() == [2**31, 0, 2**32 - 1]


def test_run_kernel_accepts_shaped_arrays():
    module = _copy_kernel([3], f32)
    a = ShapedArray(TypedPtr.new_float32([1.0, 2.0, 0.5]), [3])
    b = ShapedArray(TypedPtr.new_float32([1.0, 0.25, 0.5]), [3])
    _, out_b = run_kernel(module, "k", a, b)
    assert b.data == [2.0, 2.25, 1.0]
    assert out_b.tolist() == [2.0, 2.25, 1.0]


def test_run_kernel_rejects_bad_arguments():
    """Argument mismatches are SignatureValueErrors (still ValueErrors); an unknown name
    is a KernelNotFoundError (a KeyError) that lists the functions."""
    module = _copy_kernel([3], f32)
    with pytest.raises(SignatureValueError, match="shape \\[4\\] does not match"):
        run_kernel(module, "k", np.zeros(4, np.float32), np.zeros(3, np.float32))
    with pytest.raises(SignatureValueError, match="dtype float64 does not hold"):
        run_kernel(module, "k", np.zeros(3, np.float64), np.zeros(3, np.float32))
    with pytest.raises(SignatureValueError, match="takes 2 arguments, got 1"):
        run_kernel(module, "k", np.zeros(3, np.float32))
    with pytest.raises(KernelNotFoundError, match=r"^no func.func named 'nope' in the module \(functions: k\)$"):
        run_kernel(module, "nope")
    with pytest.raises(ArgumentError, match="'block_id' must be a tuple of 3 integers >= 0, got 3"):
        run_kernel(module, "k", np.zeros(3, np.float32), np.zeros(3, np.float32), block_id=3)
    assert issubclass(SignatureValueError, ValueError) and issubclass(KernelNotFoundError, KeyError)


def test_run_kernel_refuses_a_tile_level_module():
    """The README's warned mistake: the builder's module before lower-tile-reductions."""
    with builder.kernel("tile", grid=[1], block=[1]) as k:
        A = k.param("A", [4], "float32")
        B = k.param("B", [1], "float32")
        builder.sum(B, A, scope="thread")
    with pytest.raises(InterpretError, match="'tile' holds the tile-level op 'bulkred.reduce'"):
        run_kernel(k.module(), "tile", np.zeros(4, np.float32), np.zeros(1, np.float32))


def test_run_refuses_a_tile_level_row_kernel():
    """A row kernel (bulkred.normalize_rows) before lower-tile-reductions: the same one-line
    refusal from run_kernel and run_grid (before: xDSL's InterpretationError, and an
    AttributeError from run_grid)."""
    from bulkred_dialect.interpreter import run_grid
    from bulkred_dialect.row_kernels import module

    m = module("softmax", 2, 64, "float32")
    name = next(op.sym_name.data for op in m.ops)
    for run in (run_kernel, run_grid):
        with pytest.raises(InterpretError, match=f"'{name}' holds the tile-level op 'bulkred.normalize_rows'"):
            run(m, name, np.zeros((2, 64), np.float32), np.zeros((2, 64), np.float32))



@pytest.mark.parametrize(
    "elt,dtype,expected",
    [
        (f32, np.int32, "float32 or uint32 bits"),  # the audit's case: signed ints as f32 bits
        (f32, np.float64, "float32 or uint32 bits"),
        (f32, np.float16, "float32 or uint32 bits"),
        (f64, np.complex64, "float64 or uint64 bits"),  # 8 bytes, but not f64's
        (f64, np.int64, "float64 or uint64 bits"),
        (i32, np.float32, "int32 or uint32"),
        (i32, np.int64, "int32 or uint32"),
        (i32, np.bool_, "int32 or uint32"),
    ],
    ids=str,
)
def test_run_kernel_rejects_a_dtype_of_another_kind(elt, dtype, expected):
    module = _copy_kernel([3], elt)
    ok = np.zeros(3, {f32: np.float32, f64: np.float64, i32: np.int32}[elt])
    bad = np.zeros(3, dtype)
    message = (
        f"argument 1: dtype {np.dtype(dtype)} does not hold the elements of "
        f"memref<3x{elt}, #bulkred.scope<global>> (expected {expected})"
    )
    with pytest.raises(ValueError) as e:
        run_kernel(module, "k", ok, bad)
    assert str(e.value) == message


def test_run_kernel_accepts_float_bits_as_unsigned_integers():
    """f32 as uint32 bits computes what float32 does; the argument keeps its dtype."""
    module = _copy_kernel([3], f32)
    a = np.array([1.5, SUB, -2.0], dtype=np.float32)
    b = np.array([0.25, SUB, 4.0], dtype=np.float32)
    bits_a, bits_b = a.view(np.uint32).copy(), b.view(np.uint32).copy()
    run_kernel(module, "k", a, b)
    _, out = run_kernel(module, "k", bits_a, bits_b)
    assert out.dtype == np.uint32 and out.tolist() == b.view(np.uint32).tolist()


def test_run_kernel_names_the_argument():
    """The block argument's name, when it has one, follows the position."""
    module = _copy_kernel([3], f32)
    k = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    k.body.block.args[0].name_hint = "A"
    with pytest.raises(ValueError, match=r"^argument 0 \(%A\): dtype int32 does not hold"):
        run_kernel(module, "k", np.zeros(3, np.int32), np.zeros(3, np.float32))


def test_out_of_bounds_access_is_an_error():
    def make(arg: SSAValue) -> Operation:
        t = buffer_type([2], f32, MemoryScope.LOCAL)
        buf = memref.AllocaOp.get(f32, shape=[2], memory_space=t.memory_space)
        i = arith.ConstantOp(IntegerAttr(-1, IndexType()))
        return memref.LoadOp.get(buf, [i])

    with pytest.raises(InterpretationError, match="out of bounds"):
        OneOp([f32], make)(np.float32(0))


# endregion

# region Against the GPU

# Each group: element type, PTX register class, ld/st width, and the ops run on every
# pair (a[i], b[i]); the PTX line of each op is its own ptx_mnemonic().
GPU_GROUPS: dict[str, tuple[Attribute, str, int, list[tuple[type, ArithType, dict[str, Any]]]]] = {
    "f32": (
        f32,
        ".f32",
        4,
        [
            (AddOp, T.F32, {"rnd": RoundingMode.RN}),
            (AddOp, T.F32, {"rnd": RoundingMode.RN, "ftz": True}),
            (AddOp, T.F32, {}),
            (SubOp, T.F32, {"rnd": RoundingMode.RN}),
            (SubOp, T.F32, {"rnd": RoundingMode.RN, "ftz": True}),
            (MulOp, T.F32, {"rnd": RoundingMode.RN}),
            (MulOp, T.F32, {"rnd": RoundingMode.RN, "ftz": True}),
            (MaxOp, T.F32, {}),
            (MinOp, T.F32, {}),
            (MaxOp, T.F32, {"ftz": True}),
            (MinOp, T.F32, {"ftz": True}),
        ],
    ),
    "f64": (
        f64,
        ".f64",
        8,
        [
            (AddOp, T.F64, {"rnd": RoundingMode.RN}),
            (SubOp, T.F64, {"rnd": RoundingMode.RN}),
            (MulOp, T.F64, {"rnd": RoundingMode.RN}),
            (MaxOp, T.F64, {}),
            (MinOp, T.F64, {}),
        ],
    ),
    "f16": (
        f16,
        ".b16",
        2,
        [
            (AddOp, T.F16, {"rnd": RoundingMode.RN}),
            (AddOp, T.F16, {"rnd": RoundingMode.RN, "ftz": True}),
            (SubOp, T.F16, {"rnd": RoundingMode.RN}),
            (MulOp, T.F16, {"rnd": RoundingMode.RN}),
            (MaxOp, T.F16, {}),
            (MinOp, T.F16, {}),
            (MaxOp, T.F16, {"ftz": True}),
        ],
    ),
    "bf16": (
        bf16,
        ".b16",
        2,
        [
            (AddOp, T.BF16, {"rnd": RoundingMode.RN}),
            (SubOp, T.BF16, {"rnd": RoundingMode.RN}),
            (MulOp, T.BF16, {"rnd": RoundingMode.RN}),
            (MaxOp, T.BF16, {}),
            (MinOp, T.BF16, {}),
        ],
    ),
    "i32": (
        i32,
        ".b32",
        4,
        [
            (AddOp, T.S32, {}),
            (SubOp, T.S32, {}),
            (MulLoOp, T.S32, {}),
            (MaxOp, T.S32, {}),
            (MinOp, T.S32, {}),
            (MaxOp, T.U32, {}),
            (MinOp, T.U32, {}),
            (AndOp, T.B32, {}),
            (OrOp, T.B32, {}),
            (XorOp, T.B32, {}),
            (ShlOp, T.B32, {}),
            (ShrOp, T.B32, {}),
            (ShrOp, T.S32, {}),
        ],
    ),
    "i64": (
        i64,
        ".b64",
        8,
        [
            (AddOp, T.S64, {}),
            (MulLoOp, T.S64, {}),
            (MaxOp, T.S64, {}),
            (MinOp, T.U64, {}),
            (XorOp, T.B64, {}),
        ],
    ),
}

GPU_N = 1024


def _probe_ptx(reg: str, size: int, mnemonics: list[str]) -> str:
    """A kernel computing ``out[k, i] = op_k(a[i], b[i])`` for each mnemonic."""
    width = f".b{size * 8}"
    lines = [
        ".version 8.0",
        ".target sm_90a",
        ".address_size 64",
        ".visible .entry probe(.param .u64 pa, .param .u64 pb, .param .u64 pout, .param .u32 pn)",
        "{",
        "  .reg .pred %p;",
        "  .reg .b32 %i, %n, %c, %t;",
        "  .reg .b64 %ra, %rb, %ro, %off, %addr;",
        f"  .reg {reg} %a, %b, %d<{len(mnemonics)}>;",
        "  ld.param.u64 %ra, [pa];",
        "  ld.param.u64 %rb, [pb];",
        "  ld.param.u64 %ro, [pout];",
        "  ld.param.u32 %n, [pn];",
        "  cvta.to.global.u64 %ra, %ra;",
        "  cvta.to.global.u64 %rb, %rb;",
        "  cvta.to.global.u64 %ro, %ro;",
        "  mov.u32 %i, %tid.x;",
        "  mov.u32 %c, %ctaid.x;",
        "  mov.u32 %t, %ntid.x;",
        "  mad.lo.u32 %i, %c, %t, %i;",
        "  setp.ge.u32 %p, %i, %n;",
        "  @%p bra DONE;",
        f"  mul.wide.u32 %off, %i, {size};",
        "  add.u64 %addr, %ra, %off;",
        f"  ld.global{width} %a, [%addr];",
        "  add.u64 %addr, %rb, %off;",
        f"  ld.global{width} %b, [%addr];",
    ]
    for k, m in enumerate(mnemonics):
        lines.append(f"  {m} %d{k}, %a, %b;")
    lines.append("  add.u64 %addr, %ro, %off;")
    for k in range(len(mnemonics)):
        lines.append(f"  st.global{width} [%addr+{k * GPU_N * size}], %d{k};")
    lines += ["DONE:", "  ret;", "}", ""]
    return "\n".join(lines)


def _gpu_inputs(group: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Operand bit patterns: specials, subnormals, near ties, random bits, random values."""
    size = GPU_GROUPS[group][2]
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[size]
    if group in ("i32", "i64"):
        info = np.iinfo({4: np.int32, 8: np.int64}[size])
        full = rng.integers(info.min, info.max, (2, GPU_N), dtype=info.dtype, endpoint=True)
        full[:, : GPU_N // 4] = rng.integers(-50, 50, (2, GPU_N // 4))
        full[1, GPU_N // 4 : GPU_N // 2] = rng.integers(0, 70, GPU_N // 4)  # shift amounts
        return full[0], full[1]
    fmt = {"f32": (np.float32, 23, 8), "f64": (np.float64, 52, 11), "f16": (np.float16, 10, 5), "bf16": (None, 7, 8)}
    _, frac, exp = fmt[group]
    bits = size * 8
    top = 1 << (bits - 1)
    exp_mask = ((1 << exp) - 1) << frac
    specials = [0, top, 1, top | 1, (1 << frac) - 1, 1 << frac, top | (1 << frac), exp_mask, top | exp_mask,
                exp_mask | 1, exp_mask | (1 << (frac - 1)), top | exp_mask | (1 << (frac - 1)) | 5]
    pool = rng.integers(0, 1 << min(bits, 63), (2, GPU_N), dtype=np.uint64)
    if bits == 64:
        pool |= rng.integers(0, 2, (2, GPU_N), dtype=np.uint64) << np.uint64(63)
    pool = pool.astype(u)
    n4 = GPU_N // 4
    pool[:, :n4] = rng.choice(np.array(specials, dtype=u), (2, n4))
    # tiny values (subnormals and just-normal), where ftz and underflow matter
    pool[:, n4 : 2 * n4] = (rng.integers(0, 1 << (frac + 2), (2, n4)).astype(u)
                            | (rng.integers(0, 2, (2, n4)).astype(u) << u(bits - 1)))
    # moderate values of similar exponent (near ties of rounding)
    one = ((1 << (exp - 1)) - 1) << frac
    pool[:, 2 * n4 : 3 * n4] = (one + rng.integers(-(3 << frac), 3 << frac, (2, n4))).astype(u) ^ (
        rng.integers(0, 2, (2, n4)).astype(u) << u(bits - 1))
    return pool[0], pool[1]


@pytest.mark.gpu
@pytest.mark.parametrize("group", list(GPU_GROUPS))
def test_interpreter_matches_the_gpu(group: str):
    """Every op of the group on 1024 operand pairs, on the GPU and in the interpreter."""
    from bulkred_dialect.backend_ptx import runtime

    ty, reg, size, specs = GPU_GROUPS[group]
    ops = [binary(cls, t, ty, **kw) for cls, t, kw in specs]
    mnemonics = [o.op.ptx_mnemonic() for o in ops]
    rng = np.random.default_rng(zlib.crc32(group.encode()))
    a_bits, b_bits = _gpu_inputs(group, rng)
    host_dtype = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": np.uint16,
                  "i32": np.int32, "i64": np.int64}[group]
    a, b = a_bits.view(host_dtype), b_bits.view(host_dtype)
    spell = {"i32": "i32", "i64": "i64"}.get(group, group)
    sig = runtime.KernelSignature.of(
        "probe", ("a", spell, (GPU_N,)), ("b", spell, (GPU_N,)), ("out", spell, (len(ops), GPU_N)), ("n", "u32")
    )
    mod = runtime.compile_ptx(_probe_ptx(reg, size, mnemonics), "sm_90a", [sig])
    out = np.zeros((len(ops), GPU_N), dtype=host_dtype)
    _, _, out = mod.kernel("probe")(a, b, out, np.uint32(GPU_N), grid=GPU_N // 128, block=128)
    gpu_bits = out.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[size])

    def value(x: Any) -> Any:
        if group == "bf16":
            return BF16(int(x))
        if group in ("i32", "i64"):
            return int(x)
        return x

    def to_bits(x: Any) -> int:
        if group == "bf16":
            return x.bits
        if group in ("i32", "i64"):
            return x & ((1 << (size * 8)) - 1)
        return int(np.asarray(x).view({2: np.uint16, 4: np.uint32, 8: np.uint64}[size]))

    bad = []
    for k, (o, m) in enumerate(zip(ops, mnemonics)):
        for i in range(GPU_N):
            got = to_bits(o(value(a[i]), value(b[i])))
            want = int(gpu_bits[k, i])
            if got != want:
                bad.append(f"{m} a={int(a_bits[i]):#x} b={int(b_bits[i]):#x}: gpu {want:#x}, interpreter {got:#x}")
    assert not bad, f"{len(bad)} mismatches, first: " + "; ".join(bad[:8])


# endregion


def test_tile_level_copy_runs_unlowered():
    """``bulkred.copy`` runs as an element copy, so tile-level modules without a reduce
    can be interpreted as they are."""
    t_g = buffer_type([2, 3], f32, MemoryScope.GLOBAL)
    t_l = buffer_type([2, 3], f32, MemoryScope.LOCAL)
    block = Block(arg_types=[t_g, t_g])
    with ImplicitBuilder(block):
        tmp = memref.AllocaOp.get(f32, shape=[2, 3], memory_space=t_l.memory_space)
        CopyOp(block.args[0], tmp.memref)
        CopyOp(tmp.memref, block.args[1])
        func.ReturnOp()
    module = ModuleOp([func.FuncOp("k", FunctionType.from_lists([t_g, t_g], []), Region(block))])
    module.verify()
    a = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    a[1, 2] = f32b(0x7F800001)
    b = np.zeros((2, 3), dtype=np.float32)
    run_kernel(module, "k", a, b)
    assert b.view(np.uint32).tolist() == a.view(np.uint32).tolist()
