"""float64 exp, log and pow from FMA and integer ops (passes/f64_math.py; Emitter.exp_f64,
log_f64, pow_f64), and the fused lowerings that use them where the accumulator is float64
(logsumexp, the pow maps of p-norms, log, exp_sub).

The routines run in the CPU interpreter, which computes each ptx op bit for bit as the GPU
does, in one thread looping over a vector of inputs (one kernel per routine). Each
result is checked twice: within 1 ulp of ``math.exp`` / ``math.log`` / ``math.pow``
(glibc's, whose last bit is not guaranteed: DEVELOPING.md, "What a test may compare bit
for bit"), and below 1 ulp of the exact value (``decimal`` at 40 digits), which does not
depend on the CPU. The special values (inf, NaN, zeros, subnormals, the overflow and
underflow limits) are exact.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, f64
from xdsl.ir import Block, Region
from xdsl.rewriter import InsertPoint

from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx.printer import assemble_module, print_ptx
from bulkred_dialect.backend_ptx.runtime import lower_tile_module
from bulkred_dialect.diagnostics import verify_located
from bulkred_dialect.interpreter.run import run_kernel
from bulkred_dialect.interpreter.threads import run_grid
from bulkred_dialect.ops.tile import MemoryScope, buffer_type
from bulkred_dialect.passes import f64_math
from bulkred_dialect.passes.emitter import Emitter

TINY = 5e-324  # the smallest subnormal
MIN_NORMAL = 2.2250738585072014e-308
MAX = 1.7976931348623157e308
POWERS = (3.0, 1 / 3, -1.5)


# region Kernels and references


def routines_module(n: int) -> ModuleOp:
    """``@exp(x, y)``, ``@log(x, y)`` and ``@pow(x, y0, y1, y2)`` over ``n`` float64s:
    one thread, a loop over the elements, ``y[i] = f(x[i])`` (pow: one output per
    :data:`POWERS`)."""
    t = buffer_type([n], f64, MemoryScope.GLOBAL)
    fns = []
    for name, outs in (("exp", 1), ("log", 1), ("pow", len(POWERS))):
        block = Block(arg_types=[t] * (1 + outs))
        ret = func.ReturnOp()
        block.add_op(ret)
        x, *ys = block.args

        def body(e: Emitter, i, _, name=name, x=x, ys=ys):
            v = e.load(x, [i])
            if name == "pow":
                for p, y in zip(POWERS, ys, strict=True):
                    e.store(e.pow_f64(v, p), y, [i])
            else:
                e.store(e.exp_f64(v) if name == "exp" else e.log_f64(v), ys[0], [i])
            return []

        Emitter(InsertPoint.before(ret)).for_(0, n, 1, [], body, index=True)
        fns.append(func.FuncOp(name, FunctionType.from_lists([t] * (1 + outs), []), Region(block)))
    module = ModuleOp(fns)
    verify_located(module)
    return module


def run(name: str, xs) -> list[np.ndarray]:
    xs = np.asarray(xs, np.float64)
    outs = [np.zeros_like(xs) for _ in range(len(POWERS) if name == "pow" else 1)]
    return list(run_kernel(routines_module(len(xs)), name, xs, *outs)[1:])


def ulp(v: Fraction) -> Fraction:
    """The spacing of the doubles around ``v`` (2^-1074 below the normal range)."""
    a = abs(v)
    if a < Fraction(MIN_NORMAL):
        return Fraction(1, 2**1074)
    e = math.frexp(float(a))[1]
    e -= Fraction(2) ** (e - 1) > a  # float(a) rounded up to a power of two
    return Fraction(2) ** (e - 53)


def exact(fn: str, x: float, p: float = 1.0) -> Fraction:
    with localcontext() as ctx:
        ctx.prec, ctx.Emax, ctx.Emin = 40, 10**6, -(10**6)
        d = Decimal(x)
        return Fraction({"exp": lambda: d.exp(), "log": lambda: d.ln(), "pow": lambda: (d.ln() * Decimal(p)).exp()}[fn]())


def ulps_off(got: float, want: Fraction) -> float:
    """``|got - want|`` in ulps of ``want`` (0 for an overflow that should be one)."""
    if math.isinf(got):
        return 0.0 if abs(want) >= Fraction(2) ** 1024 * (1 - Fraction(1, 2**54)) else math.inf
    return float(abs(Fraction(got) - want) / ulp(want))


def libm(fn: str, x: float, p: float = 1.0) -> float:
    try:
        return {"exp": math.exp, "log": math.log}[fn](x) if fn != "pow" else math.pow(x, p)
    except OverflowError:
        return math.inf
    except (ValueError, ZeroDivisionError):  # log(0), log(-1), pow(0, -1.5)
        return -math.inf if x == 0 and fn == "log" else math.inf if x == 0 else math.nan


def ordered(v: float) -> int:
    """The double's position on the number line (adjacent doubles differ by 1)."""
    b = int(np.float64(v).view(np.int64))
    return b if b >= 0 else -(b & 0x7FFFFFFFFFFFFFFF)


def check(fn: str, xs, got, p: float = 1.0, bound: float = 1.0) -> float:
    """Each result within 1 ulp of libm (NaN for NaN, the same infinity or zero) and
    below ``bound`` ulps of the exact value; returns the largest error in ulps."""
    worst = 0.0
    for x, y in zip(xs, got, strict=True):
        x, y, want = float(x), float(y), libm(fn, float(x), p)
        if math.isnan(want) or math.isinf(want) or want == 0:
            assert (math.isnan(y) if math.isnan(want) else y == want), (fn, p, x, y, want)
            continue
        assert abs(ordered(y) - ordered(want)) <= 1, (fn, p, x, y, want)
        if fn == "log" and x == 1.0:
            assert y == 0.0
            continue
        err = ulps_off(y, exact(fn, x, p))
        assert err < bound, (fn, p, x, y, err)
        worst = max(worst, err)
    return worst


# endregion

# region The routines


def test_constants_are_fdlibms_and_the_ln2_splits():
    """fdlibm's e_log.c constants by their bit patterns; ln2 = HI + LO to 2^-105 for
    exp's split (HI is ln2 rounded), to 2^-85 for log's (HI has 21 zero bits); the
    exp polynomial within 1e-18 of exp on the reduced range (exact arithmetic)."""
    bits = [struct_hex(v) for v in f64_math.LOG_POLY]
    assert bits == ["3fe5555555555593", "3fd999999997fa04", "3fd2492494229359", "3fcc71c51d8e78af",
                    "3fc7466496cb03de", "3fc39a09d078c69f", "3fc2f112df3e5244"]
    assert f64_math.LOG_POLY[0] == 6.666666666666735130e-01 and f64_math.LOG_POLY[6] == 1.479819860511658591e-01
    assert struct_hex(f64_math.LOG_LN2_HI) == "3fe62e42fee00000" and struct_hex(f64_math.LOG_LN2_LO) == "3dea39ef35793c76"
    assert f64_math.EXP_LN2_HI == math.log(2) and f64_math.LOG2E == 1 / math.log(2)
    ln2 = exact("log", 2.0)
    for hi, lo, bits in ((f64_math.EXP_LN2_HI, f64_math.EXP_LN2_LO, 105), (f64_math.LOG_LN2_HI, f64_math.LOG_LN2_LO, 85)):
        assert abs(Fraction(hi) + Fraction(lo) - ln2) < Fraction(1, 2**bits)
    a = Fraction(math.log(2) / 2)
    for i in range(-20, 21):
        t = Fraction(float(a * Fraction(i, 20)))
        poly = Fraction(0)
        for c in reversed(f64_math.EXP_POLY):
            poly = poly * t + Fraction(c)
        assert abs((1 + t + t * t / 2 + t**3 * poly) / exact("exp", float(t)) - 1) < Fraction(1, 10**18)


def struct_hex(v: float) -> str:
    return format(int(np.float64(v).view(np.uint64)), "016x")


EXP_EDGES = [
    0.0, -0.0, 1.0, -1.0, TINY, -TINY, MIN_NORMAL, 1e-300, -1e-17, 0.5,
    math.log(2) / 2, -math.log(2) / 2,  # the edges of the reduced range
    709.782712893384, 709.7827128933841, 709.79, 710.0, 711.0, 1e300, math.inf,  # the largest finite result, then inf
    -708.3964185322641, -708.4, -709.0, -744.0, -745.0,  # results near and below the smallest normal
    -745.1332191019411, -745.1332191019412, -745.2, -746.0, -1e300, -math.inf, math.nan,  # 2^-1074, then 0
]


def test_exp_special_values_and_sweep():
    """exp over its edges (overflow beyond 709.78, subnormal results down to 2^-1074 at
    -745.13, then 0; inf, -inf, NaN, zeros, subnormal inputs) and a seeded sweep of the
    whole range, [-1, 1], the subnormal results and the top binade: within 1 ulp of
    libm, below 1 ulp of the exact value (0.84 measured over 75000 inputs)."""
    rng = np.random.default_rng(23)
    k = np.arange(-8, 9)
    xs = np.concatenate([
        EXP_EDGES,
        rng.uniform(-745.2, 709.8, 160), rng.uniform(-1, 1, 40), rng.uniform(-745.2, -708, 40), rng.uniform(700, 709.78, 20),
        np.nextafter((k + 0.5) * math.log(2), np.inf), np.nextafter((k + 0.5) * math.log(2), -np.inf),  # where k changes
    ])
    (got,) = run("exp", xs)
    assert math.isnan(got[EXP_EDGES.index(math.nan)]) and got[EXP_EDGES.index(-math.inf)] == 0.0
    assert got[EXP_EDGES.index(math.inf)] == math.inf and got[EXP_EDGES.index(709.7827128933841)] == math.inf
    assert got[EXP_EDGES.index(709.782712893384)] == 1.7976931348622732e308
    assert got[EXP_EDGES.index(-745.1332191019411)] == TINY and got[EXP_EDGES.index(-745.1332191019412)] == 0.0
    assert got[0] == got[1] == 1.0
    check("exp", xs, got)


LOG_EDGES = [
    0.0, -0.0, -1.0, -TINY, -math.inf, math.inf, math.nan, 1.0,
    TINY, 2 * TINY, 3 * TINY, MIN_NORMAL * (1 - 2.0**-52), MIN_NORMAL, MAX,  # subnormal inputs, the ends
    1 + 2.0**-52, 1 - 2.0**-53, 1 + 2.0**-30, 1 - 2.0**-30, 2.0, 0.5, math.e,
    math.sqrt(2), np.nextafter(math.sqrt(2), 0), math.sqrt(0.5), np.nextafter(math.sqrt(0.5), 1),  # the mantissa split
]


def test_log_special_values_and_sweep():
    """log over its edges (+-0 -> -inf, negative and -inf -> NaN, +inf, NaN, subnormal
    inputs, 1 and 1 +- an ulp, the mantissa split at sqrt(2)) and a seeded sweep: every
    positive double by its bits (log-uniform), [0.5, 2], 1 +- 1e-3, subnormals: within 1
    ulp of libm, below 1 ulp of the exact value (0.75 measured over 75000 inputs)."""
    rng = np.random.default_rng(23)
    xs = np.concatenate([
        LOG_EDGES,
        rng.integers(0, 0x7FF0000000000000, 160, dtype=np.int64).view(np.float64),
        rng.uniform(0.5, 2, 40), 1 + rng.uniform(-1e-3, 1e-3, 30),
        rng.integers(1, 1 << 52, 20, dtype=np.int64).view(np.float64),
    ])
    (got,) = run("log", xs)
    assert got[0] == got[1] == -math.inf and got[LOG_EDGES.index(math.inf)] == math.inf
    assert all(math.isnan(got[LOG_EDGES.index(v)]) for v in (-1.0, -TINY, -math.inf)) and math.isnan(got[6])
    assert got[LOG_EDGES.index(1.0)] == 0.0 and not math.copysign(1, got[LOG_EDGES.index(1.0)]) < 0
    assert got[LOG_EDGES.index(TINY)] == -744.4400719213812 and got[LOG_EDGES.index(MAX)] == 709.782712893384
    check("log", xs, got)


def test_pow_keeps_its_accuracy_over_the_whole_range():
    """``x ** p`` as ``exp(p * log(x))`` with the logarithm and the product in two parts:
    below 1 ulp of the exact value for p = 3, 1/3, -1.5 wherever the result is a normal
    double (a rounded ``p * log(x)`` of 700 alone would be off by hundreds of ulp), and 0,
    inf and NaN as ``math.pow`` gives them."""
    rng = np.random.default_rng(5)
    xs = np.concatenate([
        [0.0, -0.0, math.inf, math.nan, 1.0, TINY, MAX, 2.0, 10.0],
        np.exp(rng.uniform(-230, 230, 30)), np.exp(rng.uniform(-460, 460, 12)), rng.uniform(0, 10, 12),
    ])
    for p, got in zip(POWERS, run("pow", xs), strict=True):
        assert got[0] == got[1] == (0.0 if p > 0 else math.inf) and got[2] == (math.inf if p > 0 else 0.0)
        assert math.isnan(got[3]) and got[4] == 1.0
        normal = [(x, y) for x, y in zip(xs, got) if MIN_NORMAL <= abs(libm("pow", x, p)) < math.inf]
        check("pow", [x for x, _ in normal], [y for _, y in normal], p)


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_the_routines_assemble(target: str):
    """The three kernels through bulkred-to-ptx, printed and assembled by ptxas
    (nvJitLink): fma.rn.f64, mov.b64 of the halves, div.rn.f64, cvt.rn.f64.s32, no ex2/lg2."""
    module = routines_module(8)
    lower_tile_module(module, target)
    text = print_ptx(module, target)
    for form in ("fma.rn.f64", "mov.b64 {%r", "shl.b32", "shr.s32", "shr.u32", "div.rn.f64", "cvt.rn.f64.s32", "selp.f64"):
        assert form in text, form
    assert "ex2" not in text and "lg2" not in text
    assert assemble_module(module, target)


# endregion

# region The fused lowerings of float64


def fused(kind: str, x: np.ndarray, axes, **maps) -> np.ndarray:
    """``bulkred.reduce kind`` of a float64 ``x`` over ``axes`` (maps: prologue, epilogue,
    and ``aux``'s values), lowered for sm_90a and run on the interpreter's grid."""
    aux = maps.pop("aux", None)
    with T.kernel("k") as k:
        xp = k.param("x", list(x.shape), "float64")
        shape = [d for i, d in enumerate(x.shape) if axes is not None and i not in axes] or [1]
        y = k.param("y", shape, "float64")
        c = k.param("c", shape, "float64") if aux is not None else None
        T.reduce(kind, y, xp, axes=axes, aux=c, **maps)
    module = k.module()
    lower_tile_module(module, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    args = [x, np.zeros(shape)] + ([np.asarray(aux, np.float64)] if aux is not None else [])
    return run_grid(module, "k", *args)[1]


def reference_lse(rows: np.ndarray) -> list[float]:
    out = []
    for r in rows:
        r = [float(v) for v in r]
        m = max(r)
        if any(math.isnan(v) for v in r) or m in (math.inf, -math.inf):
            out.append(math.nan if any(math.isnan(v) for v in r) else m)
        else:
            out.append(float(Fraction(m) + Fraction(Decimal(math.fsum(math.exp(v - m) for v in r)).ln())))
    return out


def test_logsumexp_float64_columns_in_the_interpreter():
    """logsumexp of float64 columns (grid_split_det), one case each: spreads of 30 and
    1e4, values at the largest double (no overflow: the running shift), all -inf (-inf),
    with +inf (inf), with NaN (NaN), exponentials in the subnormal range; within 4e-16
    relative of a float64 reference."""
    rng = np.random.default_rng(1)
    x = np.stack([
        rng.standard_normal(8) * 30, rng.standard_normal(8) * 1e4, np.r_[1e308, 1e308, -1e308, np.zeros(5)],
        np.full(8, -np.inf), np.r_[np.inf, np.ones(7)], np.r_[np.nan, np.ones(7)], np.r_[-745.0, -746.0, -800.0, np.full(5, -744.0)],
    ]).T.copy()
    got = fused("logsumexp", x, [0])
    for g, w in zip(got, reference_lse(x.T), strict=True):
        assert (math.isnan(g) and math.isnan(w)) or g == w or abs(g - w) <= 4e-16 * abs(w), (g, w)


def test_logsumexp_float64_whole_vector():
    """logsumexp of a whole float64 vector (grid_full: the warp steps shuffle the
    (shift, sum) state's two 64-bit registers) against a float64 reference."""
    v = np.random.default_rng(2).standard_normal(64) * 20
    (got,) = fused("logsumexp", v, None)
    assert abs(got - reference_lse([v])[0]) <= 4e-16 * abs(got)


def test_p_norm_float64_in_the_interpreter():
    """vector_norm's ord=3 of float64 rows (grid_rows; sum, prologue [pow 3], epilogue [pow 1/3]):
    within 1e-15 of numpy's float64 ``sum(|x| ** 3) ** (1 / 3)``, also for values of
    1e100 and 1e-100 (whose cubes are near the ends of the double range); a zero row
    gives 0, a row with inf gives inf, with NaN NaN."""
    rng = np.random.default_rng(3)
    x = np.stack([
        rng.standard_normal(33), rng.standard_normal(33) * 1e100, rng.standard_normal(33) * 1e-100,
        np.zeros(33), np.r_[np.inf, np.ones(32)], np.r_[np.nan, np.ones(32)],
    ])
    got = fused("sum", x, [1], prologue=[("pow", 3.0)], epilogue=[("pow", 1 / 3)])
    np.testing.assert_allclose(got[:3], np.sum(np.abs(x[:3]) ** 3, axis=1) ** (1 / 3), rtol=1e-15)
    assert got[3] == 0.0 and got[4] == math.inf and math.isnan(got[5])


def test_exp_sub_and_log_maps_of_float64():
    """The softmax denominator's ``exp_sub`` prologue (``exp(x - c)``, c from aux) and a
    ``log`` epilogue, in float64: ``log(sum(exp(x - c)))`` (near 0: compared within
    1e-15 of the sum, to which the rounding of the sum is relative)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 20)) * 10
    c = x.max(axis=1)
    got = fused("sum", x, [1], prologue=["exp_sub"], epilogue=["log"], aux=c)
    want = [float(Fraction(Decimal(math.fsum(math.exp(v - m) for v in r)).ln())) for r, m in zip(x, c)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)


# endregion
