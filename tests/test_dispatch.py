"""The variant registry (passes/dispatch.py), the reduction variants and the
lower-tile-reductions / legalize-for-target / bulkred-to-ptx passes: element-type
coverage, the locations of lowered ops, and the explain=true sinks.

The numeric tests run the lowered IR with a small evaluator defined here (memref,
scf.for, arith constants and the ptx arithmetic ops, f32 with numpy) and compare the
bits with an independent transcription of docs/lowering.md.
"""

from __future__ import annotations

import math
import re
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, memref, scf
from xdsl.dialects.builtin import FileLineColLoc, IntegerType, ModuleOp, Signedness, StringAttr
from xdsl.ir import Operation

from bulkred_dialect.diagnostics import LocatedError, parse_module, verify_located
from bulkred_dialect.interpreter import run_kernel
from bulkred_dialect.ops import ptx
from bulkred_dialect.ops.dtypes import ir_name as dtype_name
from bulkred_dialect.ops.ptx import arith as pa
from bulkred_dialect.ops.ptx.control import CmpOp, SelpOp, SetpOp
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import BITWISE_KINDS, BOOL_KINDS, FUSED_KINDS, BULKRED, ELEMENT_TYPES, ReduceKind, ReduceOp
from bulkred_dialect.passes.bulkred_to_ptx import BulkredToPtxPass
from bulkred_dialect.passes.check_target import check_module
from bulkred_dialect.passes import dispatch, variants
from bulkred_dialect.passes.dispatch import choose, explain
from bulkred_dialect.passes.legalize_for_target import LegalizeForTargetPass
from bulkred_dialect.passes.lower_tile_reductions import (
    EXPLAIN_ATTR,
    LowerTileReductionsPass,
    as_comments,
    comment_writer,
    explain_sink,
    record_on_module,
    take_explanations,
)
from bulkred_dialect.passes.predicates import Predicate
from bulkred_dialect.passes.registry import DispatchError, Registry
from bulkred_dialect.passes.variants import REGISTRY
from bulkred_dialect.passes.variants import local as local_variant
from each_case import each_case

SM100A = Target.parse("sm_100a")
SM90A = Target.parse("sm_90a")


@pytest.fixture(scope="module")
def ctx() -> Context:
    c = Context()
    for d in (builtin.Builtin, func.Func, memref.MemRef, arith.Arith, scf.Scf, BULKRED, ptx.PTX):
        c.load_dialect(d)
    return c


def reduce_module(
    ctx: Context,
    kind: str,
    src_shape: list[int],
    dtype: str = "f32",
    *,
    scope: str = "thread",
    src_space: str = "local",
    accum: bool = False,
    variant: str | None = None,
) -> ModuleOp:
    dst_shape = [1] if len(src_shape) == 1 else src_shape[:-1]
    st = f"memref<{'x'.join(map(str, src_shape))}x{dtype}, #bulkred.scope<{src_space}>>"
    dt = f"memref<{'x'.join(map(str, dst_shape))}x{dtype}, #bulkred.scope<local>>"
    flags = (" accum" if accum else "") + (f' variant "{variant}"' if variant else "")
    text = (
        f"func.func @f(%a: {st}, %b: {dt}) {{\n"
        f"  bulkred.reduce {kind} {scope}{flags} %a, %b : {st}, {dt}\n"
        "  func.return\n}\n"
    )
    return parse_module(ctx, text, "t.mlir")


def the_reduce(module: ModuleOp) -> ReduceOp:
    return next(op for op in module.walk() if isinstance(op, ReduceOp))


def always(ok: bool, actual: object = "x"):
    return lambda op, target: (ok, actual)


# region The registry


def test_same_priority_refused():
    r = Registry()
    r.register("bulkred.reduce", "a", 10, [], lambda *a: None)
    with pytest.raises(DispatchError, match=r"'b'.*priority 10, already taken by variant 'a'"):
        r.register("bulkred.reduce", "b", 10, [], lambda *a: None)
    # another op may reuse the priority
    r.register("bulkred.copy", "b", 10, [], lambda *a: None)


def test_same_name_refused():
    r = Registry()
    r.register("bulkred.reduce", "a", 10, [], lambda *a: None)
    with pytest.raises(DispatchError, match="variant 'a' of 'bulkred.reduce' is already registered"):
        r.register("bulkred.reduce", "a", 20, [], lambda *a: None)


@pytest.mark.parametrize("order", [(10, 20, 15), (20, 15, 10), (15, 10, 20)])
def test_highest_applicable_priority_wins(ctx, order):
    r = Registry()
    for p in order:
        r.register("bulkred.reduce", f"v{p}", p, [], lambda *a: None)
    op = the_reduce(reduce_module(ctx, "sum", [8]))
    assert r.select(op, SM100A).chosen.variant.name == "v20"
    assert [c.variant.priority for c in r.evaluate(op, SM100A).candidates] == [20, 15, 10]


def test_highest_priority_that_applies_wins(ctx):
    r = Registry()
    r.register("bulkred.reduce", "high", 30, [Predicate("never", always(False), "x")], lambda *a: None)
    r.register("bulkred.reduce", "mid", 20, [Predicate("yes", always(True), "x")], lambda *a: None)
    r.register("bulkred.reduce", "low", 10, [], lambda *a: None)
    op = the_reduce(reduce_module(ctx, "sum", [8]))
    assert r.select(op, SM100A).chosen.variant.name == "mid"


def recording(calls: list[str]):
    """``rec(name, ok)``: a predicate that appends its name to ``calls`` when evaluated."""

    def rec(name: str, ok: bool) -> Predicate:
        def fn(op, target):
            calls.append(name)
            return ok, name

        return Predicate(name, fn, "x")

    return rec


def test_every_predicate_of_every_candidate_is_evaluated(ctx):
    calls: list[str] = []
    rec = recording(calls)
    r = Registry()
    r.register("bulkred.reduce", "high", 20, [rec("h1", False), rec("h2", True), rec("h3", False)], lambda *a: None)
    r.register("bulkred.reduce", "low", 10, [rec("l1", True), rec("l2", True)], lambda *a: None)
    op = the_reduce(reduce_module(ctx, "sum", [8]))
    sel = r.select(op, SM100A)
    assert calls == ["h1", "h2", "h3", "l1", "l2"]
    assert sel.chosen.variant.name == "low"
    assert sel.candidates[0].failed == ["h1", "h3"]


def test_choose_evaluates_only_what_it_needs_and_agrees_with_select(ctx):
    """The pass's ``choose`` stops at the first failing predicate and the first variant
    that applies; ``select`` (explain) evaluates them all; both pick the same."""
    calls: list[str] = []
    rec = recording(calls)
    r = Registry()
    r.register("bulkred.reduce", "high", 20, [rec("h1", False), rec("h2", True)], lambda *a: None)
    r.register("bulkred.reduce", "mid", 15, [rec("m1", True), rec("m2", True)], lambda *a: None)
    r.register("bulkred.reduce", "low", 10, [rec("l1", True)], lambda *a: None)
    op = the_reduce(reduce_module(ctx, "sum", [8]))
    assert r.choose(op, SM100A).name == "mid"
    assert calls == ["h1", "m1", "m2"]
    calls.clear()
    forced = the_reduce(reduce_module(ctx, "sum", [8], variant="low"))
    assert r.choose(forced, SM100A).name == "low" and calls == ["l1"]
    calls.clear()
    # nothing applies: select's located error, with the whole table
    r2 = Registry()
    r2.register("bulkred.reduce", "only", 10, [rec("o1", False)], lambda *a: None)
    with pytest.raises(LocatedError, match="no lowering variant applies on sm_100a"):
        r2.choose(op, SM100A)


def _grid_reduce(kind: str, shape: list[int], dtype: str, axis: int | None) -> ReduceOp:
    from bulkred_dialect.api import reduction_module

    return the_reduce(reduction_module(kind, tuple(shape), dtype, axis, "k"))


@pytest.mark.parametrize("target", ["sm_80", "sm_90", "sm_90a", "sm_100a", "sm_120a"])
def test_choose_agrees_with_select_on_every_registered_variant(ctx, target):
    t = Target.parse(target)
    ops = [
        the_reduce(reduce_module(ctx, kind, shape, dtype, accum=accum))
        for kind in ("sum", "max", "and")
        for shape in ([1], [7], [8], [32], [33], [4, 16])
        for dtype in ("f32", "i32")
        for accum in (False, True)
        if not (kind == "and" and dtype == "f32")
    ]
    ops += [
        _grid_reduce(kind, shape, dtype, axis)
        for kind in ("sum", "max")
        for shape, axis in (([32], None), ([1 << 20], None), ([256, 1024], 1), ([256, 1024], 0), ([3, 5], None))
        for dtype in ("float32", "bfloat16", "int32")
    ]
    for op in ops:
        sel = REGISTRY.evaluate(op, t)
        if sel.chosen is None:
            with pytest.raises(LocatedError):
                choose(op, t)
        else:
            assert choose(op, t) is sel.chosen.variant, (str(op), target)


def test_explain_table_content(ctx):
    r = Registry()
    r.register(
        "bulkred.reduce",
        "fast",
        20,
        [Predicate("width", always(False, 3), ">= 8"), Predicate("kind", always(True, "sum"), "sum")],
        lambda *a: None,
    )
    r.register("bulkred.reduce", "slow", 10, [Predicate("any", always(True, "yes"), "yes")], lambda *a: None)
    op = the_reduce(reduce_module(ctx, "sum", [8]))
    table = r.evaluate(op, SM90A).table()
    lines = table.splitlines()
    assert lines[0] == "dispatch of 'bulkred.reduce' at t.mlir:2:3 on sm_90a"
    assert lines[1].split() == ["variant", "priority", "predicate", "verdict", "expected", "actual"]
    assert lines[2].split() == ["fast", "20", "width", "FAIL", ">=", "8", "3"]
    assert lines[3].split() == ["fast", "20", "kind", "ok", "sum", "sum"]
    assert lines[4].split() == ["slow", "10", "any", "ok", "yes", "yes"]
    assert lines[5].split() == ["fast", "priority", "20:", "rejected:", "width"]
    assert lines[6].split() == ["slow", "priority", "10:", "chosen"]
    assert lines[7] == "chosen: slow"


def test_nothing_applies_is_a_located_error_with_the_table(ctx):
    r = Registry()
    r.register("bulkred.reduce", "only", 10, [Predicate("never", always(False, "got"), "want")], lambda *a: None)
    op = the_reduce(reduce_module(ctx, "sum", [8]))
    with pytest.raises(LocatedError) as e:
        r.select(op, SM90A)
    msg = str(e.value)
    assert msg.startswith("t.mlir:2:3: error: 'bulkred.reduce' no lowering variant applies on sm_90a\n")
    assert r.evaluate(op, SM90A).table() in msg
    assert "only  priority 10: rejected: never" in msg


def test_no_variant_registered(ctx):
    op = the_reduce(reduce_module(ctx, "sum", [8]))
    with pytest.raises(LocatedError, match="has no registered lowering variant"):
        Registry().select(op, SM90A)


def test_forced_variant_beats_priority(ctx):
    r = Registry()
    r.register("bulkred.reduce", "high", 20, [], lambda *a: None)
    r.register("bulkred.reduce", "low", 10, [], lambda *a: None)
    op = the_reduce(reduce_module(ctx, "sum", [8], variant="low"))
    sel = r.select(op, SM90A)
    assert sel.chosen.variant.name == "low" and sel.forced == "low"
    assert "high  priority 20: applies, not forced" in sel.table()
    assert "forced by 'variant': low" in sel.table()


def test_forced_variant_that_does_not_apply(ctx):
    r = Registry()
    r.register(
        "bulkred.reduce",
        "high",
        20,
        [
            Predicate("p1", always(False, 1), "2"),
            Predicate("p2", always(True), "x"),
            Predicate("p3", always(False, "a"), "b"),
        ],
        lambda *a: None,
    )
    r.register("bulkred.reduce", "low", 10, [], lambda *a: None)
    op = the_reduce(reduce_module(ctx, "sum", [8], variant="high"))
    with pytest.raises(LocatedError) as e:
        r.select(op, SM90A)
    first = str(e.value).splitlines()[0]
    assert first == (
        "t.mlir:2:3: error: 'bulkred.reduce' forced 'variant' 'high' does not apply: "
        "p1 (expected 2, got 1); p3 (expected b, got a)"
    )


def test_forced_unknown_variant_lists_known(ctx):
    r = Registry()
    r.register("bulkred.reduce", "high", 20, [], lambda *a: None)
    r.register("bulkred.reduce", "low", 10, [], lambda *a: None)
    op = the_reduce(reduce_module(ctx, "sum", [8], variant="mid"))
    with pytest.raises(LocatedError, match=r"'variant' 'mid' is not a known variant \(known: high, low\)"):
        r.select(op, SM90A)
    assert "forced by 'variant': mid (not a known variant)" in r.evaluate(op, SM90A).table()


def test_decorator_registration():
    r = Registry()

    @r.register_variant("bulkred.reduce", "deco", priority=5, predicates=[Predicate("p", always(True), "x")])
    def lower(op, rewriter, target):
        return None

    (v,) = r.of("bulkred.reduce")
    assert (v.name, v.priority, v.lower, [p.name for p in v.predicates]) == ("deco", 5, lower, ["p"])


# endregion

# region The project's variants


def test_project_registry():
    reg = REGISTRY
    assert dispatch.REGISTRY is reg
    got = [(v.name, v.priority, [p.name for p in v.predicates]) for v in reg.of("bulkred.reduce")]
    grid = ["exec_scope", "form", "kernel", "dtype", "math"]
    collective = ["exec_scope", "local_scope", "dst_len", "dtype", "block"]
    cluster = [*collective, "cluster"]
    assert got == [
        ("grid_runs", 66, [*grid, "runs"]),
        ("grid_rows", 65, grid),
        ("grid_split_bulk", 64, ["exec_scope", "form", "kernel", "dtype", "kind", "columns", "size", "deterministic", "fused"]),
        ("grid_middle", 63, [*grid, "blocks"]),
        ("grid_split_det", 62, grid),
        ("grid_full_cluster", 61, ["exec_scope", "form", "kernel", "dtype", "sm_version", "kind", "fused"]),
        ("grid_full", 60, grid),
        ("grid_gather", 59, grid),
        ("cluster_red_async", 51, [*cluster, "kind"]),
        ("cluster_dsmem", 50, cluster),
        ("cta_shared", 40, collective),
        ("warp_redux_f32", 33, [*collective, "kind", "sm_version"]),
        ("warp_redux", 32, [*collective, "kind"]),
        ("warp_shuffle", 30, collective),
        (
            "sm100_packed",
            20,
            ["exec_scope", "local_scope", "dst_len", "src_ndim", "dtype", "kind", "sm_version", "reduction_len"],
        ),
        ("local", 10, ["exec_scope", "local_scope", "dtype"]),
    ]


def test_registry_table_lists_every_variant():
    """The table of passes/variants/__init__.py's docstring: every registered variant, in
    priority order, with its priority and its scope."""
    assert variants.__doc__ is not None
    rows = re.findall(r"^ +(\d+) +(\w+) +(grid|cluster|cta|warp|thread) ", variants.__doc__, re.MULTILINE)
    registered = REGISTRY.of("bulkred.reduce")
    scopes = [next(p.expected for p in v.predicates if p.name == "exec_scope") for v in registered]
    assert [(int(p), name, scope) for p, name, scope in rows] == [
        (v.priority, v.name, scope) for v, scope in zip(registered, scopes, strict=True)
    ]
    assert len(rows) == 16


@pytest.mark.parametrize(
    "target, chosen",
    [("sm_100a", "sm100_packed"), ("sm_100", "sm100_packed"), ("sm_103a", "sm100_packed"), ("sm_90a", "local")],
)
def test_explain_api_on_the_seed(ctx, target, chosen):
    op = the_reduce(reduce_module(ctx, "sum", [32]))
    table = explain(op, target)
    assert table.splitlines()[-1] == f"chosen: {chosen}"
    assert f"on {target}" in table.splitlines()[0]


# endregion

# region Evaluating lowered IR


def _flush(x: np.float32) -> np.float32:
    if x != 0 and abs(x) < np.float32(2.0**-126):
        return np.float32(math.copysign(0.0, float(x)))
    return x


def _fmax(a, b):
    return b if np.isnan(a) else a if np.isnan(b) else max(a, b)


def _fmin(a, b):
    return b if np.isnan(a) else a if np.isnan(b) else min(a, b)


def _binary(op: pa.BinaryArithOp | pa.LogicOp, a, b):
    name = op.name
    if name == "ptx.add":
        if op.ftz is not None:
            return _flush(_flush(a) + _flush(b))
        return a + b
    if name in ("ptx.max", "ptx.min"):
        if op.nan is not None and (np.isnan(a) or np.isnan(b)):  # max.NaN
            return np.float32(np.nan)
        return _fmax(a, b) if name == "ptx.max" else _fmin(a, b)
    return {"ptx.and": np.bitwise_and, "ptx.or": np.bitwise_or, "ptx.xor": np.bitwise_xor}[name](a, b)


def run(module: ModuleOp, buffers: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run the single function of ``module`` on copies of ``buffers`` (by argument name)."""
    fn = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    mem = {k: v.copy() for k, v in buffers.items()}
    env: dict = {arg: mem[arg.name_hint] for arg in fn.body.block.args}
    with np.errstate(over="ignore"):
        _run_block(fn.body.block.ops, env)
    return mem


def _run_block(ops, env) -> list:
    for op in ops:
        if isinstance(op, func.ReturnOp):
            return []
        if isinstance(op, scf.YieldOp):
            return [env[v] for v in op.operands]
        _step(op, env)
    return []


def _step(op: Operation, env) -> None:
    if isinstance(op, arith.ConstantOp):
        env[op.result] = op.value.value.data
    elif isinstance(op, arith.AddiOp | arith.MuliOp):
        a, b = env[op.lhs], env[op.rhs]
        env[op.result] = a + b if isinstance(op, arith.AddiOp) else a * b
    elif isinstance(op, memref.AllocaOp):
        t = op.memref.type
        env[op.memref] = np.zeros(t.get_shape(), dtype=np.float32)
    elif isinstance(op, memref.LoadOp):
        env[op.res] = env[op.memref][tuple(env[i] for i in op.indices)]
    elif isinstance(op, memref.StoreOp):
        env[op.memref][tuple(env[i] for i in op.indices)] = env[op.value]
    elif isinstance(op, scf.ForOp):
        vals = [env[v] for v in op.iter_args]
        block = op.body.block
        for i in range(env[op.lb], env[op.ub], env[op.step]):
            env[block.args[0]] = i
            for a, v in zip(block.args[1:], vals):
                env[a] = v
            vals = _run_block(block.ops, env)
        for r, v in zip(op.results, vals):
            env[r] = v
    elif isinstance(op, pa.PackF32x2Op):
        env[op.result] = (env[op.lo], env[op.hi])
    elif isinstance(op, pa.UnpackF32x2Op):
        env[op.lo], env[op.hi] = env[op.src]
    elif isinstance(op, pa.AddF32x2Op):
        (a0, a1), (b0, b1) = env[op.lhs], env[op.rhs]
        f = _flush if op.ftz is not None else (lambda x: x)
        env[op.result] = (f(f(a0) + f(b0)), f(f(a1) + f(b1)))
    elif isinstance(op, pa.Max3Op | pa.Min3Op):
        g = _fmax if isinstance(op, pa.Max3Op) else _fmin
        env[op.result] = g(g(env[op.a], env[op.b]), env[op.c])
    elif isinstance(op, SetpOp):  # f64 max/min's NaN test: setp.nan.f64
        assert op.cmp.data == CmpOp.NAN
        env[op.result] = bool(np.isnan(env[op.lhs]) or np.isnan(env[op.rhs]))
    elif isinstance(op, SelpOp):
        env[op.result] = env[op.on_true] if env[op.cond] else env[op.on_false]
    elif isinstance(op, pa.BinaryArithOp | pa.LogicOp):
        env[op.result] = _binary(op, env[op.lhs], env[op.rhs])
    else:
        raise AssertionError(f"the test evaluator does not know {op.name}")


def reference_sm100_packed(kind: str, x: np.ndarray, old: np.float32 | None) -> np.float32:
    """docs/lowering.md, "sm100_packed" (TVM TIRx's order), transcribed independently of
    the pass."""
    n, full = len(x), len(x) // 8
    if kind == "sum":
        f = _flush
        ls = list(x[:8])
        if old is not None:
            ls[0] = x[0] + old
        for k in range(1, full):
            for j in range(8):
                ls[j] = f(f(ls[j]) + f(x[8 * k + j]))
        for i in range(8 * full, n):
            ls[0] = ls[0] + x[i]
        for lo, hi in ((0, 2), (4, 6), (0, 4)):
            ls[lo], ls[lo + 1] = f(f(ls[lo]) + f(ls[hi])), f(f(ls[lo + 1]) + f(ls[hi + 1]))
        return ls[0] + ls[1]
    g = _fmax if kind == "max" else _fmin
    t = [g(x[2 * i], x[2 * i + 1]) for i in range(4)]
    if old is not None:
        t[0] = g(g(x[0], x[1]), old)
    for k in range(1, full):
        for i in range(4):
            t[i] = g(g(t[i], x[8 * k + 2 * i]), x[8 * k + 2 * i + 1])
    for i in range(8 * full, n):
        t[0] = g(t[0], x[i])
    return g(g(g(t[0], t[1]), t[2]), t[3])


_LOWERED: dict[tuple, ModuleOp] = {}


@pytest.fixture(scope="module", autouse=True)
def _lowered_freed():
    """:func:`lowered`'s modules go with the module's tests."""
    yield
    _LOWERED.clear()


def lowered(ctx, target: str, *args, **kw) -> ModuleOp:
    """:func:`reduce_module` lowered for ``target`` and verified, made once per context
    and arguments: the count, bits and legalize tests of one length and kind share it
    (they read it, and the interpreter does not change it; a test that changes the
    module takes a ``clone()``)."""
    key = (id(ctx), target, repr(args), repr(sorted(kw.items())))
    m = _LOWERED.get(key)
    if m is None:
        m = reduce_module(ctx, *args, **kw)
        LowerTileReductionsPass(target=target).apply(ctx, m)
        verify_located(m)
        _LOWERED[key] = m
    return m


def count(module: ModuleOp, name: str) -> int:
    return sum(1 for op in module.walk() if op.name == name)


def _data(rng, shape) -> np.ndarray:
    # magnitudes spread over many binades, so that the order of additions shows in the bits
    mag = np.exp2(rng.integers(-20, 20, size=shape)).astype(np.float32)
    return (rng.standard_normal(shape).astype(np.float32) * mag).astype(np.float32)


# endregion

# region sm100_packed


# The counts follow n // 8 and n % 8 (chunks_in_ir), the chunks and the remainder each
# written out on its own: every length with one chunk (8..15, every remainder), two to
# five chunks at remainders 0, 1 and 7 (16, 17, 23, 24, ... 41), the last unrolled
# length (71), the first lengths that loop (72, 73, 79, 80), and long ones
PACKED_COUNT_LENGTHS = [*range(8, 18), 23, 24, 25, 31, 32, 33, 39, 40, 41, 71, 72, 73, 79, 80, 100, 1031, 16384]


def chunks_in_ir(n: int) -> tuple[int, bool]:
    """docs/lowering.md: the further chunks written out in the IR (four in the loop body
    and the ones left over, or all of them when fewer than 8), and whether there is a loop."""
    further = n // 8 - 1
    return (4 + further % 4, True) if further >= 8 else (further, False)


# (n, accum) of the count tests: a case each, one test (each_case)
PACKED_COUNT_CASES = [(n, accum) for n in PACKED_COUNT_LENGTHS for accum in (False, True)]


def test_sm100_packed_sum_counts(ctx):
    def check(n, accum):
        m = lowered(ctx, "sm_100a", "sum", [n], accum=accum)
        chunks, looped = chunks_in_ir(n)
        assert count(m, "ptx.add.f32x2") == 4 * chunks + 3
        assert count(m, "ptx.add") == n % 8 + 1 + accum
        assert count(m, "scf.for") == looped
        assert count(m, "memref.load") == 8 * (1 + chunks) + n % 8 + accum

    each_case(check, PACKED_COUNT_CASES)


@pytest.mark.parametrize("kind", ["max", "min"])
def test_sm100_packed_minmax_counts(ctx, kind):
    def check(n, accum):
        m = lowered(ctx, "sm_100a", kind, [n], accum=accum)
        chunks, looped = chunks_in_ir(n)
        assert count(m, f"ptx.{kind}3") == 4 * chunks + 1 + accum
        assert count(m, f"ptx.{kind}") == 4 - accum + n % 8 + 1
        assert count(m, "ptx.add.f32x2") == 0
        assert count(m, "scf.for") == looped

    each_case(check, PACKED_COUNT_CASES)


# One length per path of the algorithm: one chunk, alone (8) and with a remainder (13);
# further chunks written out (17: one, and a remainder of 1; 47: four and 7); the loop
# (72: its first length; 100: three chunks left after it and a remainder of 4; 301: 9
# iterations and a remainder of 5). tests/test_lowering_numerics.py checks more lengths,
# and inputs, bit for bit.
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_sm100_packed_bits_match_the_documented_algorithm(ctx, kind):
    """Each length, with and without accum (a case each)."""
    each_case(
        lambda n, accum: _check_packed_bits(ctx, kind, n, accum),
        [(n, accum) for n in (8, 13, 17, 47, 72, 100, 301) for accum in (False, True)],
    )


def _check_packed_bits(ctx, kind, n, accum):
    rng = np.random.default_rng(n * 7 + len(kind) + accum)
    x = _data(rng, n)
    if kind == "sum":
        x[rng.integers(0, n)] = np.float32(1e-39)  # a subnormal: flushed by the packed adds only
    old = np.float32(rng.standard_normal())
    m = lowered(ctx, "sm_100a", kind, [n], accum=accum)
    assert the_chosen(ctx, kind, n).variant.name == "sm100_packed"
    out = run(m, {"a": x, "b": np.array([old], dtype=np.float32)})["b"][0]
    want = reference_sm100_packed(kind, x, old if accum else None)
    assert out.tobytes() == np.float32(want).tobytes()


def the_chosen(ctx, kind, n):
    return REGISTRY.select(the_reduce(reduce_module(ctx, kind, [n])), SM100A).chosen


# endregion

# region local


@pytest.mark.parametrize(
    "kind, dtype, shape",
    [
        ("sum", "f32", [5]),
        ("sum", "f32", [1]),
        ("max", "f32", [3, 7]),
        ("min", "f64", [2, 9]),
        ("sum", "i32", [4, 6]),
        ("max", "i64", [2, 2, 5]),
        ("xor", "i32", [3, 4]),
        ("and", "i64", [2, 3]),
        ("or", "i32", [9]),
        ("sum", "i16", [3, 9]),
        ("min", "i16", [17]),
        ("and", "i16", [2, 5]),
    ],
)
@pytest.mark.parametrize("accum", [False, True])
def test_local_matches_a_sequential_fold(ctx, kind, dtype, shape, accum):
    npt = {"f32": np.float32, "f64": np.float64, "i16": np.int16, "i32": np.int32, "i64": np.int64}[dtype]
    rng = np.random.default_rng(len(shape) + shape[-1])
    if dtype.startswith("f"):
        x = _data(rng, shape).astype(npt)
    else:
        bound = 2**12 if dtype == "i16" else 2**20  # an i16 sum of 9 such values can wrap, as on the GPU
        x = rng.integers(-bound, bound, size=shape).astype(npt)
    old = (x.sum(axis=-1) // 3 if dtype.startswith("i") else x.sum(axis=-1) / 3).astype(npt).reshape(
        shape[:-1] or [1]
    )
    m = lowered(ctx, "sm_90a", kind, shape, dtype, accum=accum)
    assert count(m, "ptx.add.f32x2") == 0
    out = run(m, {"a": x, "b": old})["b"]
    op = {
        "sum": lambda a, b: a + b,
        "max": _fmax,
        "min": _fmin,
        "xor": np.bitwise_xor,
        "and": np.bitwise_and,
        "or": np.bitwise_or,
    }[kind]
    rows = x.reshape(-1, shape[-1])
    want = []
    for r, row in enumerate(rows):
        acc = row[0]
        for v in row[1:]:
            acc = op(acc, v)
        if accum:
            acc = op(old.reshape(-1)[r], acc)
        want.append(acc)
    assert out.reshape(-1).tobytes() == np.array(want, dtype=npt).tobytes()


def test_local_int_ops_are_signed_and_bitwise_typed(ctx):
    m = lowered(ctx, "sm_90a", "max", [4, 8], "i64")
    (op,) = [o for o in m.walk() if isinstance(o, pa.MaxOp)]
    assert op.type.data == pa.ArithType.S64
    m = lowered(ctx, "sm_90a", "xor", [8], "i32")
    (op,) = [o for o in m.walk() if isinstance(o, pa.XorOp)]
    assert op.type.data == pa.ArithType.B32
    m = lowered(ctx, "sm_90a", "sum", [8], "f32")
    (op,) = [o for o in m.walk() if isinstance(o, pa.AddOp)]
    assert op.rnd.data == pa.RoundingMode.RN and op.ftz is None


def test_copy_lowering(ctx):
    text = """
    func.func @f(%a: memref<3x5xf32, #bulkred.scope<global>>, %b: memref<3x5xf32, #bulkred.scope<local>>) {
      bulkred.copy %a, %b : memref<3x5xf32, #bulkred.scope<global>>, memref<3x5xf32, #bulkred.scope<local>>
      func.return
    }"""
    m = parse_module(ctx, text)
    LowerTileReductionsPass().apply(ctx, m)
    m.verify()
    assert count(m, "bulkred.copy") == 0 and count(m, "scf.for") == 2
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    out = run(m, {"a": x, "b": np.zeros((3, 5), np.float32)})["b"]
    assert (out == x).all()


@pytest.mark.parametrize("shape, loops", [([1], 0), ([1, 1], 0), ([1, 5], 1), ([3, 1], 1), ([3, 1, 4], 2), ([1, 3, 1], 1)])
def test_copy_lowering_takes_no_loop_for_an_extent_of_one(ctx, shape, loops):
    t = "x".join(map(str, shape))
    text = f"""
    func.func @f(%a: memref<{t}xf32, #bulkred.scope<global>>, %b: memref<{t}xf32, #bulkred.scope<local>>) {{
      bulkred.copy %a, %b : memref<{t}xf32, #bulkred.scope<global>>, memref<{t}xf32, #bulkred.scope<local>>
      func.return
    }}"""
    m = parse_module(ctx, text)
    LowerTileReductionsPass().apply(ctx, m)
    m.verify()
    assert count(m, "scf.for") == loops
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    out = run(m, {"a": x, "b": np.full(shape, np.nan, np.float32)})["b"]
    assert (out == x).all()


# endregion

# region legalize-for-target and the pipeline


def test_legalize_keeps_the_bits(ctx):
    each_case(lambda n, kind: _check_legalize_keeps_the_bits(ctx, n, kind), [(n, kind) for n in (8, 17, 33, 100) for kind in ("sum", "max", "min")])


def _check_legalize_keeps_the_bits(ctx, n, kind):
    rng = np.random.default_rng(n)
    x = _data(rng, n)
    x[3] = np.float32(-3e-39)
    packed = lowered(ctx, "sm_100a", kind, [n]).clone()  # legalized below, in place
    before = run(packed, {"a": x, "b": np.zeros(1, np.float32)})["b"]
    LegalizeForTargetPass(target="sm_90a").apply(ctx, packed)
    packed.verify()
    for name in ("ptx.add.f32x2", "ptx.max3", "ptx.min3", "ptx.mov.pack", "ptx.mov.unpack"):
        assert count(packed, name) == 0, name
    check_module(packed, SM90A)
    after = run(packed, {"a": x, "b": np.zeros(1, np.float32)})["b"]
    assert before.tobytes() == after.tobytes()


def test_legalize_is_a_no_op_on_sm100(ctx):
    m = lowered(ctx, "sm_100a", "sum", [16]).clone()  # legalized below, in place
    text = str(m)
    LegalizeForTargetPass(target="sm_100a").apply(ctx, m)
    assert str(m) == text


SEED = Path(__file__).resolve().parents[1] / "examples" / "seed_sum32.mlir"


def seed(ctx: Context, kind: str = "sum") -> ModuleOp:
    return parse_module(ctx, SEED.read_text().replace("bulkred.reduce sum", f"bulkred.reduce {kind}"))


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_bulkred_to_ptx_runs_every_stage_with_one_target(ctx, target):
    m = seed(ctx)
    BulkredToPtxPass(target=target).apply(ctx, m)
    m.verify()
    names = {op.name for op in m.walk()}
    assert not {n for n in names if n.startswith(("bulkred.", "memref.", "scf."))}
    assert ("ptx.add.f32x2" in names) == (target == "sm_100a")
    check_module(m, Target.parse(target))


def test_bulkred_to_ptx_target_from_module_attribute(ctx):
    m = seed(ctx, "max")
    m.attributes["bulkred.target"] = builtin.StringAttr("sm_100a")
    BulkredToPtxPass().apply(ctx, m)
    assert count(m, "ptx.max3") == 4 * ((32 - 4) // 8) + 1


# endregion

# region Element types: what the verifier accepts, a variant lowers

def test_local_dtype_predicate_lists_exactly_the_verifier_element_types():
    assert sorted(dtype_name(t) for t in ELEMENT_TYPES) == sorted(local_variant._PTX_TYPES)
    local = next(v for v in REGISTRY.of("bulkred.reduce") if v.name == "local")
    dtype = next(p for p in local.predicates if p.name == "dtype")
    assert dtype.expected.split(", ") == list(local_variant._PTX_TYPES)


def _kinds_for(t) -> list[str]:
    """The kinds the verifier takes on ``t`` below grid scope: the bitwise ones on
    integers, any/all on i1 (bool) only (no tile-level type: tests/test_bool.py runs
    them at grid scope); the fused kinds are grid-scope only (tests/test_fused.py)."""
    return [
        str(k) for k in ReduceKind
        if (k not in BITWISE_KINDS or isinstance(t, IntegerType)) and (k not in BOOL_KINDS or t == IntegerType(1))
        and k not in FUSED_KINDS
    ]


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("elt", [str(t) for t in ELEMENT_TYPES])
def test_every_verifier_accepted_element_type_lowers(ctx, target, elt):
    for kind in _kinds_for(next(t for t in ELEMENT_TYPES if str(t) == elt)):
        for shape in ([1], [9], [2, 3]):
            m = reduce_module(ctx, kind, shape, elt)
            verify_located(m)
            sel = REGISTRY.evaluate(the_reduce(m), Target.parse(target))
            assert sel.chosen is not None, sel.table()
            LowerTileReductionsPass(target=target).apply(ctx, m)
            verify_located(m)
            assert count(m, "bulkred.reduce") == 0


@pytest.mark.parametrize(
    "t, name",
    [
        (IntegerType(32), "int32"),
        (IntegerType(32, Signedness.SIGNED), "sint32"),
        (IntegerType(32, Signedness.UNSIGNED), "uint32"),
        (IntegerType(16, Signedness.UNSIGNED), "uint16"),
    ],
)
def test_dtype_name_keeps_signedness_apart(t, name):
    assert dtype_name(t) == name


def test_element_types_no_variant_lowers_are_verifier_errors(ctx):
    def check(elt):
        m = reduce_module(ctx, "sum", [8], elt)
        with pytest.raises(Exception, match=f"'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got {elt}"):
            m.verify()

    each_case(check, [(elt,) for elt in ("si32", "ui32", "i8", "i128", "f8E4M3FN", "tf32", "f80", "f128", "index")])


@pytest.mark.parametrize("kind", ["sum", "max", "min", "and", "or", "xor"])
def test_i16_local_in_the_interpreter(ctx, kind):
    """i16 through the project's bit-exact interpreter: signed min/max, wrapping add."""
    text = (
        "func.func @k(%a: memref<3x11xi16, #bulkred.scope<local>>, %b: memref<3xi16, #bulkred.scope<local>>) {\n"
        f"  bulkred.reduce {kind} thread accum %a, %b : memref<3x11xi16, #bulkred.scope<local>>, "
        "memref<3xi16, #bulkred.scope<local>>\n  func.return\n}\n"
    )
    m = parse_module(ctx, text)
    LowerTileReductionsPass(target="sm_90a").apply(ctx, m)
    m.verify()
    rng = np.random.default_rng(len(kind))
    a = rng.integers(-(2**15), 2**15, size=(3, 11)).astype(np.int16)
    b = rng.integers(-(2**15), 2**15, size=(3,)).astype(np.int16)
    fold = {
        "sum": lambda x: np.add.reduce(x, axis=-1, dtype=np.int16),
        "max": lambda x: x.max(axis=-1),
        "min": lambda x: x.min(axis=-1),
        "and": lambda x: np.bitwise_and.reduce(x, axis=-1),
        "or": lambda x: np.bitwise_or.reduce(x, axis=-1),
        "xor": lambda x: np.bitwise_xor.reduce(x, axis=-1),
    }[kind]
    want = fold(np.concatenate([b[:, None], a], axis=1))
    _, out = run_kernel(m, "k", a.copy(), b.copy())
    assert out.tobytes() == want.tobytes()


# endregion

# region Locations of the lowered ops


def _line_of(op: Operation) -> int | None:
    loc = op.location
    return loc.line.data if isinstance(loc, FileLineColLoc) else None


def _lines_in_func(m: ModuleOp) -> set[int | None]:
    fn = next(op for op in m.walk() if isinstance(op, func.FuncOp))
    return {_line_of(op) for op in fn.walk() if op is not fn and not isinstance(op, func.ReturnOp)}


def test_lowered_ops_carry_the_reduce_location(ctx):
    each_case(
        lambda target, kind, shape, legalize: _check_reduce_location(ctx, target, kind, shape, legalize),
        [
            (target, kind, shape, legalize)
            for target, kind, shape in [("sm_100a", "sum", [16]), ("sm_100a", "max", [13]), ("sm_90a", "min", [3, 5]), ("sm_90a", "sum", [1])]
            for legalize in (False, True)
        ],
    )


def _check_reduce_location(ctx, target, kind, shape, legalize):
    m = reduce_module(ctx, kind, shape, accum=True)
    assert _line_of(the_reduce(m)) == 2
    LowerTileReductionsPass(target=target).apply(ctx, m)
    if legalize:
        LegalizeForTargetPass(target="sm_90a").apply(ctx, m)
    m.verify()
    assert _lines_in_func(m) == {2}


def test_lowered_copies_carry_the_copy_location(ctx):
    text = """func.func @f(%a: memref<3x5xf32, #bulkred.scope<global>>, %b: memref<3x5xf32, #bulkred.scope<local>>, %c: memref<2xi64, #bulkred.scope<global>>, %d: memref<2xi64, #bulkred.scope<local>>) {
  bulkred.copy %a, %b : memref<3x5xf32, #bulkred.scope<global>>, memref<3x5xf32, #bulkred.scope<local>>
  bulkred.copy %c, %d : memref<2xi64, #bulkred.scope<global>>, memref<2xi64, #bulkred.scope<local>>
  func.return
}"""
    m = parse_module(ctx, text)
    LowerTileReductionsPass().apply(ctx, m)
    lines = [_line_of(op) for op in m.walk() if op.name in ("memref.load", "memref.store", "scf.for")]
    assert lines == [2, 2, 2, 2, 3, 3, 3]


# endregion

# region explain=true output: the sink



def _two_reduces(ctx, target: str = "sm_100a") -> ModuleOp:
    text = f"""builtin.module attributes {{bulkred.target = "{target}"}} {{
func.func @f(%a: memref<16xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {{
  bulkred.reduce sum thread %a, %b : memref<16xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  bulkred.reduce max thread %a, %b : memref<16xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}}
}}"""
    return parse_module(ctx, text, "two.mlir")


def test_explain_default_sink_is_stdout(ctx, capsys):
    m = _two_reduces(ctx)
    LowerTileReductionsPass(explain=True).apply(ctx, m)
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(line.startswith("//") for line in lines)
    assert [line for line in lines if line.startswith("// dispatch")] == [
        "// dispatch of 'bulkred.reduce' at two.mlir:3:3 on sm_100a",
        "// dispatch of 'bulkred.reduce' at two.mlir:4:3 on sm_100a",
    ]
    assert EXPLAIN_ATTR not in m.attributes


def test_explain_false_writes_nothing(ctx, capsys):
    m = _two_reduces(ctx)
    with explain_sink(record_on_module):
        LowerTileReductionsPass().apply(ctx, m)
    assert capsys.readouterr().out == ""
    assert EXPLAIN_ATTR not in m.attributes


def test_explain_recorded_on_the_module_and_taken(ctx, capsys):
    m = _two_reduces(ctx, "sm_90a")
    with explain_sink(record_on_module):
        LowerTileReductionsPass(explain=True).apply(ctx, m)
    assert capsys.readouterr().out == ""
    tables = m.attributes[EXPLAIN_ATTR]
    assert [t.data.splitlines()[0] for t in tables.data] == [
        "dispatch of 'bulkred.reduce' at two.mlir:3:3 on sm_90a",
        "dispatch of 'bulkred.reduce' at two.mlir:4:3 on sm_90a",
    ]
    assert all(t.data.splitlines()[-1] == "chosen: local" for t in tables.data)
    text = take_explanations(m)
    assert EXPLAIN_ATTR not in m.attributes
    assert text == as_comments([t.data for t in tables.data])
    assert text.endswith("// chosen: local\n") and text.count("// dispatch of") == 2
    assert take_explanations(m) == ""
    # after the `with`, the default sink (stdout) is back
    LowerTileReductionsPass(explain=True).apply(ctx, _two_reduces(ctx))
    assert capsys.readouterr().out.count("// dispatch of") == 2


def test_explain_record_appends_and_keeps_other_attributes(ctx):
    m = _two_reduces(ctx)
    m.attributes[EXPLAIN_ATTR] = builtin.ArrayAttr([StringAttr("earlier")])
    with explain_sink(record_on_module):
        LowerTileReductionsPass(explain=True).apply(ctx, m)
    assert [t.data.split("\n")[0] for t in m.attributes[EXPLAIN_ATTR].data][0] == "earlier"
    assert len(m.attributes[EXPLAIN_ATTR].data) == 3
    assert m.attributes["bulkred.target"] == StringAttr("sm_100a")


def test_explain_to_a_stream_per_module(ctx, capsys):
    outs = []
    for target in ("sm_100a", "sm_90a"):
        buf = StringIO()
        with explain_sink(comment_writer(buf)):
            LowerTileReductionsPass(explain=True).apply(ctx, _two_reduces(ctx, target))
        outs.append(buf.getvalue())
    assert capsys.readouterr().out == ""
    assert "on sm_100a" in outs[0] and "on sm_90a" not in outs[0]
    assert "on sm_90a" in outs[1] and "on sm_100a" not in outs[1]
    assert "// chosen: sm100_packed" in outs[0] and "// chosen: local" in outs[1]


def test_explain_without_reductions_calls_no_sink(ctx):
    calls = []
    m = parse_module(ctx, "func.func @f() {\n  func.return\n}\n")
    with explain_sink(lambda module, tables: calls.append(tables)):
        LowerTileReductionsPass(explain=True).apply(ctx, m)
    assert calls == []


# endregion
