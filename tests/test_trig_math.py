"""float64 sin, cos and atan2 from FMA and integer ops (passes/trig_math.py), which the
complex logsumexp's lowering uses (passes/fused.py: ``exp(z) = e^re (cos im + i sin im)``,
``log(s) = log|s| + i atan2(im, re)``), run by the CPU interpreter (every ptx op as the
GPU computes it), against libm (``math.sin``, ``math.cos``, ``math.atan2``: within 2 ulp;
libm's last bit is not guaranteed either), the special values exact; and the kernels
assembled by ptxas (no ``sin.approx``/``cos.approx``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, f64
from xdsl.ir import Block, Region
from xdsl.rewriter import InsertPoint

from bulkred_dialect.backend_ptx.printer import assemble_module, print_ptx
from bulkred_dialect.backend_ptx.runtime import lower_tile_module
from bulkred_dialect.diagnostics import verify_located
from bulkred_dialect.interpreter.run import run_kernel
from bulkred_dialect.ops.tile import MemoryScope, buffer_type
from bulkred_dialect.passes import trig_math
from bulkred_dialect.passes.emitter import Emitter


def routines_module(n: int) -> ModuleOp:
    """``@trig(x, y, sin, cos, atan2)`` over ``n`` float64s: one thread, a loop,
    ``sin[i], cos[i] = sincos(x[i])``, ``atan2[i] = atan2(y[i], x[i])``."""
    t = buffer_type([n], f64, MemoryScope.GLOBAL)
    block = Block(arg_types=[t] * 5)
    ret = func.ReturnOp()
    block.add_op(ret)
    x, y, s, c, a = block.args

    def body(e: Emitter, i, _):
        v, w = e.load(x, [i]), e.load(y, [i])
        sin_, cos_ = trig_math.sincos(e, v)
        e.store(sin_, s, [i])
        e.store(cos_, c, [i])
        e.store(trig_math.atan2(e, w, v), a, [i])
        return []

    Emitter(InsertPoint.before(ret)).for_(0, n, 1, [], body, index=True)
    module = ModuleOp([func.FuncOp("trig", FunctionType.from_lists([t] * 5, []), Region(block))])
    verify_located(module)
    return module


def run(xs, ys) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    xs, ys = np.asarray(xs, np.float64), np.asarray(ys, np.float64)
    outs = run_kernel(routines_module(len(xs)), "trig", xs, ys, *(np.zeros_like(xs) for _ in range(3)))
    return outs[2], outs[3], outs[4]


def ulps(got: float, want: float) -> float:
    return abs(got - want) / math.ulp(max(abs(want), 2.2250738585072014e-308))


def test_sin_cos_atan2_within_2_ulp_of_libm():
    """Seeded inputs: |x| up to 10 (OpInfo's samples), up to 1e5 (the reduction's three
    parts of pi/2), near multiples of pi/2 (a small reduced argument), every quadrant
    and sign of atan2, magnitudes from 1e-8 to 1e8; the largest error measured is 1 ulp."""
    rng = np.random.default_rng(7)
    xs = np.concatenate([rng.uniform(-10, 10, 120), rng.uniform(-1e5, 1e5, 40),
                         np.arange(-8, 9) * (math.pi / 2) + rng.uniform(-1e-9, 1e-9, 17)])
    ys = rng.standard_normal(len(xs)) * 10.0 ** rng.integers(-8, 9, len(xs))
    s, c, a = run(xs, ys)
    worst = 0.0
    for x, y, gs, gc, ga in zip(xs, ys, s, c, a, strict=True):
        x, y = float(x), float(y)
        for got, want in ((gs, math.sin(x)), (gc, math.cos(x)), (ga, math.atan2(y, x))):
            err = ulps(float(got), want)
            if abs(want) < 1e-8:  # near a zero of sin or cos: the reduced argument's absolute error
                err = abs(float(got) - want) / math.ulp(1.0)
            assert err <= 2, (x, y, float(got), want, err)
            worst = max(worst, err)
    assert worst > 0  # the comparison saw rounding (not a copy of libm)


def test_special_values():
    """inf and NaN give NaN for sin and cos; atan2's zeros, infinities, NaN and the axes."""
    inf, nan = math.inf, math.nan
    xs = [inf, -inf, nan, 0.0, -0.0, 0.0, 1.0, -1.0, 0.0, 0.0, inf, -inf, 1.0, nan, 5e-324]
    ys = [0.0, 0.0, 1.0, 0.0, 2.0, 3.0, 0.0, 0.0, -1.0, 1.0, inf, -inf, nan, 1.0, 0.0]
    s, c, a = run(xs, ys)
    assert all(math.isnan(v) for v in (*s[:3], *c[:3]))
    assert s[3] == 0.0 and c[3] == 1.0 and c[4] == 1.0
    want = [0.0, math.pi, nan, 0.0, math.pi / 2, math.pi / 2, 0.0, math.pi, -math.pi / 2, math.pi / 2, math.pi / 4,
            -3 * math.pi / 4, nan, nan, 0.0]
    for x, y, got, w in zip(xs, ys, a, want, strict=True):
        assert (math.isnan(got) if math.isnan(w) else abs(got - w) <= math.ulp(w or 1.0)), (x, y, got, w)


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_the_routines_assemble(target: str):
    """Through bulkred-to-ptx, printed and assembled by ptxas: fma.rn.f64, div.rn.f64 and
    selects, no approximate sin/cos."""
    module = routines_module(4)
    lower_tile_module(module, target)
    text = print_ptx(module, target)
    for form in ("fma.rn.f64", "div.rn.f64", "selp.f64", "and.b32"):
        assert form in text, form
    assert "sin.approx" not in text and "cos.approx" not in text
    assert assemble_module(module, target)
