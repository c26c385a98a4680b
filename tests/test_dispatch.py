"""The variant registry (passes/dispatch.py), the reduction variants and the
lower-tile-reductions / legalize-for-target / bulkred-to-ptx passes.

The numeric tests run the lowered IR with a small evaluator defined here (memref,
scf.for, arith constants and the ptx arithmetic ops, f32 with numpy) and compare the
bits with an independent transcription of docs/lowering.md.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, memref, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from bulkred_dialect.diagnostics import LocatedError, parse_module
from bulkred_dialect.ops import ptx
from bulkred_dialect.ops.ptx import arith as pa
from bulkred_dialect.ops.target import Target
from bulkred_dialect.ops.tile import BULKRED, ReduceOp
from bulkred_dialect.passes.bulkred_to_ptx import BulkredToPtxPass
from bulkred_dialect.passes.check_target import check_module
from bulkred_dialect.passes.dispatch import (
    REGISTRY,
    DispatchError,
    Predicate,
    Registry,
    explain,
    load_variants,
)
from bulkred_dialect.passes.legalize_for_target import LegalizeForTargetPass
from bulkred_dialect.passes.lower_tile_reductions import LowerTileReductionsPass

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


def test_every_predicate_of_every_candidate_is_evaluated(ctx):
    calls: list[str] = []

    def rec(name: str, ok: bool):
        def fn(op, target):
            calls.append(name)
            return ok, name

        return Predicate(name, fn, "x")

    r = Registry()
    r.register("bulkred.reduce", "high", 20, [rec("h1", False), rec("h2", True), rec("h3", False)], lambda *a: None)
    r.register("bulkred.reduce", "low", 10, [rec("l1", True), rec("l2", True)], lambda *a: None)
    op = the_reduce(reduce_module(ctx, "sum", [8]))
    sel = r.select(op, SM100A)
    assert calls == ["h1", "h2", "h3", "l1", "l2"]
    assert sel.chosen.variant.name == "low"
    assert sel.candidates[0].failed == ["h1", "h3"]


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
    reg = load_variants()
    assert reg is REGISTRY
    got = [(v.name, v.priority, [p.name for p in v.predicates]) for v in reg.of("bulkred.reduce")]
    assert got == [
        (
            "sm100_packed",
            20,
            ["exec_scope", "local_scope", "dst_len", "src_ndim", "dtype", "sm_version", "reduction_len"],
        ),
        ("local", 10, ["exec_scope", "local_scope", "dtype"]),
    ]


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
    if name == "ptx.max":
        return _fmax(a, b)
    if name == "ptx.min":
        return _fmin(a, b)
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
    elif isinstance(op, pa.BinaryArithOp | pa.LogicOp):
        env[op.result] = _binary(op, env[op.lhs], env[op.rhs])
    else:
        raise AssertionError(f"the test evaluator does not know {op.name}")


def reference_sm100_packed(kind: str, x: np.ndarray, old: np.float32 | None) -> np.float32:
    """docs/lowering.md, "sm100_packed", transcribed independently of the pass."""
    n = len(x)
    if kind == "sum":
        f = _flush
        acc = list(x[:8])
        for c in range(1, n // 8):
            for k in range(8):
                acc[k] = f(f(acc[k]) + f(x[8 * c + k]))
        for i in range(8 * (n // 8), n):
            acc[i % 8] = acc[i % 8] + x[i]
        for lo, hi in ((0, 2), (4, 6), (0, 4)):
            acc[lo], acc[lo + 1] = f(f(acc[lo]) + f(acc[hi])), f(f(acc[lo + 1]) + f(acc[hi + 1]))
        r = acc[0] + acc[1]
        return old + r if old is not None else r
    g = _fmax if kind == "max" else _fmin
    acc = list(x[:4])
    chunks = (n - 4) // 8
    for c in range(chunks):
        for j in range(4):
            acc[j] = g(g(acc[j], x[4 + 8 * c + j]), x[8 + 8 * c + j])
    for i in range(4 + 8 * chunks, n):
        acc[i % 4] = g(acc[i % 4], x[i])
    r = g(g(g(acc[0], acc[1]), acc[2]), acc[3])
    return g(old, r) if old is not None else r


def lowered(ctx, target: str, *args, **kw) -> ModuleOp:
    m = reduce_module(ctx, *args, **kw)
    LowerTileReductionsPass(target=target).apply(ctx, m)
    m.verify()
    return m


def count(module: ModuleOp, name: str) -> int:
    return sum(1 for op in module.walk() if op.name == name)


def _data(rng, shape) -> np.ndarray:
    # magnitudes spread over many binades, so that the order of additions shows in the bits
    mag = np.exp2(rng.integers(-20, 20, size=shape)).astype(np.float32)
    return (rng.standard_normal(shape).astype(np.float32) * mag).astype(np.float32)


# endregion

# region sm100_packed


@pytest.mark.parametrize("n", range(8, 42))
def test_sm100_packed_sum_counts(ctx, n):
    m = lowered(ctx, "sm_100a", "sum", [n])
    assert count(m, "ptx.add.f32x2") == 4 * (n // 8 - 1) + 3
    assert count(m, "ptx.add") == n % 8 + 1
    assert count(m, "scf.for") == 0


@pytest.mark.parametrize("n", range(8, 42))
@pytest.mark.parametrize("kind", ["max", "min"])
def test_sm100_packed_minmax_counts(ctx, n, kind):
    m = lowered(ctx, "sm_100a", kind, [n])
    assert count(m, f"ptx.{kind}3") == 4 * ((n - 4) // 8) + 1
    assert count(m, f"ptx.{kind}") == (n - 4) % 8 + 1
    assert count(m, "ptx.add.f32x2") == 0


@pytest.mark.parametrize("n", [8, 9, 13, 16, 17, 32, 33, 47])
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("accum", [False, True])
def test_sm100_packed_bits_match_the_documented_algorithm(ctx, n, kind, accum):
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
    ],
)
@pytest.mark.parametrize("accum", [False, True])
def test_local_matches_a_sequential_fold(ctx, kind, dtype, shape, accum):
    npt = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}[dtype]
    rng = np.random.default_rng(len(shape) + shape[-1])
    if dtype.startswith("f"):
        x = _data(rng, shape).astype(npt)
    else:
        x = rng.integers(-(2**20), 2**20, size=shape).astype(npt)
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


# endregion

# region legalize-for-target and the pipeline


@pytest.mark.parametrize("n", [8, 17, 33])
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_legalize_keeps_the_bits(ctx, n, kind):
    rng = np.random.default_rng(n)
    x = _data(rng, n)
    x[3] = np.float32(-3e-39)
    packed = lowered(ctx, "sm_100a", kind, [n])
    before = run(packed, {"a": x, "b": np.zeros(1, np.float32)})["b"]
    LegalizeForTargetPass(target="sm_90a").apply(ctx, packed)
    packed.verify()
    for name in ("ptx.add.f32x2", "ptx.max3", "ptx.min3", "ptx.mov.pack", "ptx.mov.unpack"):
        assert count(packed, name) == 0, name
    check_module(packed, SM90A)
    after = run(packed, {"a": x, "b": np.zeros(1, np.float32)})["b"]
    assert before.tobytes() == after.tobytes()


def test_legalize_is_a_no_op_on_sm100(ctx):
    m = lowered(ctx, "sm_100a", "sum", [16])
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
