"""Numerics of the lowered tile reductions: lower a thread-scope ``bulkred.reduce``,
run it in the interpreter, and compare bit for bit with the numpy references of
docs/lowering.md (``bulkred_dialect/reference.py``).

* sm_100a, 1-D float32 of length >= 8: ``sm100_packed`` (TVM TIRx's order, issue 9: its
  example, and adversarial vectors from tests/sm100_adversarial.py at lengths that take
  every path of the lowering, every length 8..80 on the GPU in
  tests/gpu/test_lowering_numerics_gpu.py;
  a long reduction is a loop with the same bits); the same module legalized for sm_90a
  (``legalize-for-target``) must give the same bits;
* sm_90a (and sm_100a outside the packed gate): ``local``, for f16, bf16, f32, f64, i32,
  i64 and 1-D, 2-D and 3-D sources.

Inputs mix normal values with subnormals (where ``.ftz`` matters), signed zeros, NaNs
with payloads and infinities; NaN results must be the canonical NaN.
"""

from __future__ import annotations

import zlib
from functools import cache

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp

from bulkred_dialect import reference as ref
from bulkred_dialect.diagnostics import parse_module, verify_located
from bulkred_dialect.interpreter import run_kernel
from bulkred_dialect.passes.legalize_for_target import LegalizeForTargetPass
from bulkred_dialect.passes.lower_tile_reductions import LowerTileReductionsPass
from bulkred_dialect.pipeline import gc_paused
from bulkred_dialect.universe import BULKRED_DIALECTS
from each_case import each_case
from ir_compare import same_ir
from sm100_adversarial import LENGTHS as ADVERSARIAL_LENGTHS
from sm100_adversarial import TIRX_EXAMPLE, minmax_vectors, sum_vectors

LAUNCH = "#bulkred.launch<grid = [1], block = [1], cluster = [1]>"
MLIR_TYPE = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64", "i32": "i32", "i64": "i64"}
NP_DTYPE = {
    "f16": np.float16,
    "bf16": np.uint16,  # bfloat16 travels as its bits
    "f32": np.float32,
    "f64": np.float64,
    "i32": np.int32,
    "i64": np.int64,
}


@pytest.fixture(autouse=True)
def _collector_paused():
    """Each test runs with Python's cyclic garbage collector paused, as the compiler
    compiles (``gc_paused``): lowered IR and the interpreter's state are many small objects
    in reference cycles, and the collector's passes over them took a tenth of the time."""
    with gc_paused():
        yield


@cache
def _context() -> Context:
    ctx = Context()
    for name, factory in {**get_all_dialects(), **BULKRED_DIALECTS}.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)
    return ctx


def tile_function(name: str, kind: str, shape: tuple[int, ...], elt: str, accum: bool) -> str:
    """``@name(%A, %B)``: copy A (global) to local, reduce it into a local B (initialized
    from B only with accum, so that a lowering that reads dst without accum reads poison),
    copy B back."""
    dshape = (1,) if len(shape) == 1 else shape[:-1]

    def mt(s: tuple[int, ...], scope: str) -> str:
        return f"memref<{'x'.join(map(str, s))}x{MLIR_TYPE[elt]}, #bulkred.scope<{scope}>>"

    sg, sl, dg, dl = mt(shape, "global"), mt(shape, "local"), mt(dshape, "global"), mt(dshape, "local")
    copy_in = f"    bulkred.copy %B, %b : {dg}, {dl}\n" if accum else ""
    acc = " accum" if accum else ""
    return (
        f"  func.func @{name}(%A: {sg}, %B: {dg}) attributes {{bulkred.launch = {LAUNCH}}} {{\n"
        f"    %a = memref.alloca() : {sl}\n"
        f"    %b = memref.alloca() : {dl}\n"
        f"    bulkred.copy %A, %a : {sg}, {sl}\n"
        f"{copy_in}"
        f"    bulkred.reduce {kind} thread{acc} %a, %b : {sl}, {dl}\n"
        f"    bulkred.copy %b, %B : {dl}, {dg}\n"
        "    func.return\n"
        "  }\n"
    )


def tile_module(kind: str, shape: tuple[int, ...], elt: str, accum: bool) -> str:
    """A module of one kernel ``@k``: :func:`tile_function`."""
    return "builtin.module {\n" + tile_function("k", kind, shape, elt, accum) + "}\n"


def lower(text: str, target: str, legalize_for: str | None = None) -> ModuleOp:
    ctx = _context()
    module = parse_module(ctx, text)
    verify_located(module)
    LowerTileReductionsPass(target=target).apply(ctx, module)
    verify_located(module)
    if legalize_for is not None:
        LegalizeForTargetPass(target=legalize_for).apply(ctx, module)
        verify_located(module)
    return module


def lower_packed_and_legal(text: str) -> tuple[ModuleOp, ModuleOp]:
    """``text`` lowered for sm_100a, and a copy of that legalized for sm_90a (what
    ``lower(text, "sm_100a", legalize_for="sm_90a")`` gives, without lowering twice)."""
    packed = lower(text, "sm_100a")
    legal = packed.clone()
    LegalizeForTargetPass(target="sm_90a").apply(_context(), legal)
    verify_located(legal)
    return packed, legal


def op_names(module: ModuleOp) -> set[str]:
    return {op.name for op in module.walk()}


def run(module: ModuleOp, src: np.ndarray, dst_old: np.ndarray, kernel: str = "k") -> np.ndarray:
    _, out = run_kernel(module, kernel, src.copy(), dst_old.copy())
    return out


def assert_same_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape, what
    g, w = ref.bits(got), ref.bits(want)
    assert np.array_equal(g, w), f"{what}: got {[hex(x) for x in g.ravel()]}, want {[hex(x) for x in w.ravel()]}"


# region Inputs


def f32_inputs(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Several float32 vectors of length n, each stressing something else."""
    out: dict[str, np.ndarray] = {}
    out["normal"] = (rng.standard_normal(n) * rng.choice([1e-3, 1.0, 1e4], n)).astype(np.float32)
    # Subnormals and values just above 2**-126 whose differences are subnormal: here
    # flushing to zero changes the sum.
    tiny = rng.integers(1, 0x00FFFFFF, n).astype(np.uint32)
    tiny |= (rng.integers(0, 2, n).astype(np.uint32) << np.uint32(31))
    out["subnormal"] = tiny.view(np.float32)
    mixed = out["normal"].copy()
    k = rng.choice(n, size=min(n, 4), replace=False)
    mixed[k] = out["subnormal"][k]
    out["mixed"] = mixed
    # Large cancelling pairs plus small values: the order of the adds decides the result.
    big = (rng.standard_normal(n) * 1e7).astype(np.float32)
    m = n // 2
    big[1 : 2 * m : 2] = -big[0 : 2 * m : 2]
    big += rng.standard_normal(n).astype(np.float32)
    out["cancel"] = big
    special = out["normal"].copy()
    specials = np.array([0x00000000, 0x80000000, 0x00000001, 0x80000003, 0x00800000], dtype=np.uint32)
    pos = rng.choice(n, size=min(n, 3), replace=False)
    special[pos] = rng.choice(specials, len(pos)).view(np.float32)
    out["signed"] = special.copy()
    nans = np.array([0x7FC01234, 0xFFC00000, 0x7F800001], dtype=np.uint32)
    special[pos[:1]] = rng.choice(nans, 1).view(np.float32)
    out["special"] = special
    zeros = np.where(rng.random(n) < 0.5, np.float32(-0.0), np.float32(0.0)).astype(np.float32)
    out["zeros"] = zeros
    out["infs"] = np.where(rng.random(n) < 0.2, np.float32(np.inf), out["normal"]).astype(np.float32)
    out["infs"][rng.random(n) < 0.2] = -np.inf
    return out


def dst_olds(rng: np.random.Generator) -> list[np.ndarray]:
    vals = [0.0, -0.0, 1.5, float(rng.standard_normal()), 1e-40, float("nan")]
    return [np.array([v], dtype=np.float32) for v in vals]


# endregion

# region sm100_packed

# One length per path of the lowering (CPU_ADVERSARIAL_LENGTHS below says which): one
# chunk with no remainder, one and seven; two chunks with none, one and seven; four
# chunks and one; the last unrolled length (71: 8 chunks, the remainder 7; 64, its chunks
# without the remainder, is an adversarial length below); 72: the first length whose
# further chunks go through the scf.for (two iterations); 100: the loop and 3 chunks
# after it.
SM100_LENGTHS = [8, 9, 15, 16, 17, 23, 33, 71, 72, 100]


@cache
def _packed_local(n: int, accum: bool) -> ModuleOp:
    """:func:`local_module` lowered for sm_100a, once per process for the tests that run
    it (the interpreter does not change the IR)."""
    return lower(local_module(n, accum), "sm_100a")


@cache
def _legal_local(n: int, accum: bool) -> ModuleOp:
    """:func:`_packed_local` legalized for sm_90a (a copy)."""
    legal = _packed_local(n, accum).clone()
    LegalizeForTargetPass(target="sm_90a").apply(_context(), legal)
    verify_located(legal)
    return legal


@pytest.mark.parametrize("accum", [False, True], ids=["set", "accum"])
def test_sm100_packed_matches_reference_bit_for_bit(accum: bool):
    """At each of SM100_LENGTHS, one module of three kernels (sum, max, min) of local
    buffers (:func:`local_module`, lowered once with test_sm100_packed_adversarial_vectors':
    the copies in and out of global memory that a whole kernel adds are the same code at
    every length and kind, and interpret slower), lowered for sm_100a and legalized for
    sm_90a: each kernel, interpreted, gives the reference's bits on every input of
    :func:`f32_inputs`, in both forms."""
    each_case(lambda n: _check_packed(n, accum), [(n,) for n in SM100_LENGTHS])


def _check_packed(n: int, accum: bool) -> None:
    kinds = ["sum", "max", "min"]
    packed, legal = _packed_local(n, accum), _legal_local(n, accum)
    for kind in kinds:
        names = op_names(kernel_of(packed, kind))
        assert ("ptx.add.f32x2" if kind == "sum" else f"ptx.{kind}3") in names, f"sm100_packed was not chosen for {kind}"
    assert op_names(legal).isdisjoint({"ptx.add.f32x2", "ptx.max3", "ptx.min3"})

    for kind in kinds:
        rng = np.random.default_rng(1000 * n + 10 * kinds.index(kind) + accum)
        olds = dst_olds(rng)
        for i, (label, src) in enumerate(f32_inputs(n, rng).items()):
            old = olds[i % len(olds)]
            want = ref.reduce_sm100_packed(kind, src, old if accum else None)
            got = run(packed, src, old, kind)
            assert_same_bits(got, want, f"sm100_packed {kind} n={n} accum={accum} {label}")
            assert_same_bits(run(legal, src, old, kind), got, f"legalized sm100_packed {kind} n={n} accum={accum} {label}")


def kernel_of(module: ModuleOp, name: str):
    return next(op for op in module.ops if getattr(op, "sym_name", None) is not None and op.sym_name.data == name)


def test_sm100_packed_sum_differs_from_local_where_ftz_matters():
    """The packed sum flushes subnormals in its packed adds only, not in the scalar
    remainder and final adds: on this input that gives other bits than the local fold,
    so the bit-for-bit comparisons check where ftz applies."""
    x = np.zeros(17, dtype=np.float32)
    x[0] = np.uint32(0x00800000).view(np.float32)  # 2**-126
    x[8] = np.uint32(0x80000001).view(np.float32)  # -2**-149, flushed by the chunk add
    x[16] = np.uint32(0x00000001).view(np.float32)  # 2**-149, scalar remainder add: kept
    want = ref.reduce_sm100_packed("sum", x)
    assert ref.bits(want)[0] == 0x00800001
    assert ref.bits(ref.reduce_local("sum", x))[0] == 0x00800000
    got = run(lower(tile_module("sum", (17,), "f32", False), "sm_100a"), x, np.zeros(1, np.float32))
    assert_same_bits(got, want, "sum n=17 ftz placement")


def local_module(n: int, accum: bool) -> str:
    """``@sum``, ``@max``, ``@min`` (``%a``, ``%b``): one reduction each of a local ``src`` of
    length n into a local ``dst`` of one element (no copies, so that it interprets fast)."""
    src, dst = f"memref<{n}xf32, #bulkred.scope<local>>", "memref<1xf32, #bulkred.scope<local>>"
    acc = " accum" if accum else ""
    return "".join(
        f"func.func @{k}(%a: {src}, %b: {dst}) {{\n  bulkred.reduce {k} thread{acc} %a, %b : {src}, {dst}\n"
        "  func.return\n}\n"
        for k in ("sum", "max", "min")
    )


def test_sm100_packed_sum_has_tirx_bits_on_the_issue_example():
    """Issue 9: TIRx adds every remainder element into ls[0] (0 + 1 + 1 = 2, then
    2 + 2**24 is exact); added lane by lane, both ones are ties rounded away."""
    x, want = TIRX_EXAMPLE
    assert ref.bits(ref.reduce_sm100_packed("sum", x))[0] == want
    text = tile_module("sum", (10,), "f32", False)
    for m in lower_packed_and_legal(text):
        assert ref.bits(run(m, x, np.zeros(1, np.float32)))[0] == want


def test_sm100_packed_accum_enters_ls0_first():
    """With accum TIRx starts from ``ls[0] = src[0] + dst``: 1 + 1 = 2, and 2 + 2**24 is
    exact; adding dst last (to 2**24 + 1, a tie rounded to 2**24) would lose both ones."""
    x = np.zeros(8, dtype=np.float32)
    x[0], x[1] = 1, 2.0**24
    old = np.ones(1, dtype=np.float32)
    assert ref.bits(ref.reduce_sm100_packed("sum", x, old))[0] == 0x4B800001
    got = run(lower(tile_module("sum", (8,), "f32", True), "sm_100a"), x, old)
    assert ref.bits(got)[0] == 0x4B800001


def test_sm100_packed_accum_add_does_not_flush():
    """``ls[0] = src[0] + dst`` is a scalar ``add.rn.f32``: 2**-126 - 2**-149 stays a
    subnormal, and the remainder's 2**-126 makes it normal again (0x00ffffff); a flushing
    add would give 0x00800000."""
    x = np.zeros(9, dtype=np.float32)
    x[0] = x[8] = np.uint32(0x00800000).view(np.float32)
    old = np.array([0x80000001], dtype=np.uint32).view(np.float32)
    assert ref.bits(ref.reduce_sm100_packed("sum", x, old))[0] == 0x00FFFFFF
    got = run(lower(tile_module("sum", (9,), "f32", True), "sm_100a"), x, old)
    assert ref.bits(got)[0] == 0x00FFFFFF


# The lengths the interpreter runs the adversarial vectors at. sm100_packed's code for
# n is a first chunk of 8, n // 8 - 1 further chunks (unrolled below 72, from 72 an
# scf.for of 4 chunks per iteration and the chunks left over) and n % 8 remainder
# elements, each added by the same ops: every remainder 0..7 after one and two chunks
# (8..23), remainders 0, 1 and 7 at more unrolled chunks up to the last unrolled length
# (71), and the loop with 0 and 1 chunks left over (72, 73, 79, 80). The GPU test
# (tests/gpu/test_lowering_numerics_gpu.py) runs every length 8..80.
CPU_ADVERSARIAL_LENGTHS = [*range(8, 24), 24, 25, 31, 33, 47, 56, 63, 64, 71, 72, 73, 79, 80]
assert set(CPU_ADVERSARIAL_LENGTHS) <= set(ADVERSARIAL_LENGTHS)


@pytest.mark.parametrize("accum", [False, True], ids=["set", "accum"])
def test_sm100_packed_adversarial_vectors(accum: bool):
    """Issue 9: on vectors where the order of the adds shows in the bits, the lowering
    (interpreted) equals TIRx's order (the reference) bit for bit, at lengths that take
    every path of the lowering (``CPU_ADVERSARIAL_LENGTHS``, each a case)."""
    each_case(lambda n: _check_adversarial(n, accum), [(n,) for n in CPU_ADVERSARIAL_LENGTHS])


def _check_adversarial(n: int, accum: bool) -> None:
    module = _packed_local(n, accum)
    rng = np.random.default_rng(2 * n + accum)
    cases = [("sum", *v) for v in sum_vectors(n, rng)]
    cases += [(k, *v) for v in minmax_vectors(n, rng) for k in ("max", "min")]
    for kind, label, src, old in cases:
        dst = np.array([old], dtype=np.float32)
        want = ref.reduce_sm100_packed(kind, src, dst if accum else None)
        _, got = run_kernel(module, kind, src.copy(), dst.copy())
        assert_same_bits(got, want, f"sm100_packed {kind} n={n} accum={accum} {label}")


def test_sm100_packed_long_reduction_is_a_loop_with_the_same_bits():
    """n = 197: 23 further chunks, 5 iterations of 4 in the scf.for (the shorter lengths
    above run it twice at most) and 3 after it, a remainder of 5. Interpreted, with and
    without legalize-for-target (sm_90a), it gives the reference's bits. (That the code
    does not grow with the length, up to n = 16384: tests/test_sass.py.)"""
    n = 8 * (1 + 5 * 4 + 3) + 5
    for accum in (False, True):
        text = local_module(n, accum)
        packed, legal = lower_packed_and_legal(text)
        for m in (packed, legal):
            fors = [op for op in m.walk() if op.name == "scf.for"]
            assert len(fors) == 3, "one loop per reduction"
        rng = np.random.default_rng(n + accum)
        for kind in ("sum", "max", "min"):
            src = (rng.standard_normal(n) * np.exp2(rng.integers(-30, 30, n))).astype(np.float32)
            src[rng.integers(0, n, 20)] = np.uint32(0x00000007).view(np.float32)  # subnormals
            dst = np.array([rng.standard_normal()], dtype=np.float32)
            want = ref.reduce_sm100_packed(kind, src, dst if accum else None)
            for m, what in ((packed, "sm_100a"), (legal, "legalized for sm_90a")):
                _, got = run_kernel(m, kind, src.copy(), dst.copy())
                assert_same_bits(got, want, f"sm100_packed {kind} n={n} accum={accum} {what}")


@pytest.mark.parametrize("n", [8, 17, 32])
def test_sm100_packed_nan_results_are_canonical(n: int):
    x = np.ones(n, dtype=np.float32)
    x[3] = np.float32(np.inf)
    x[n - 1] = np.float32(-np.inf)
    got = run(lower(tile_module("sum", (n,), "f32", False), "sm_100a"), x, np.zeros(1, np.float32))
    assert ref.bits(got)[0] == 0x7FFFFFFF
    nans = np.full(n, np.uint32(0x7FC00001), dtype=np.uint32).view(np.float32)
    got = run(lower(tile_module("max", (n,), "f32", False), "sm_100a"), nans, np.zeros(1, np.float32))
    assert ref.bits(got)[0] == 0x7FFFFFFF


# endregion

# region local

# local's code is a load for n = 1, else a loop over elements 1..n-1 (variants/local.py):
# one element, one step, and a few lengths of the loop (7: below sm100_packed's gate of 8
# on sm_100a, 13: above it for the other types).
LOCAL_1D_LENGTHS = [1, 2, 7, 13]
LOCAL_ND_SHAPES = [(3, 5), (4, 17), (1, 8), (2, 3, 4)]
LOCAL_ND_CASES = [("f32", "sum"), ("f32", "max"), ("f16", "sum"), ("f64", "min"), ("i32", "sum"), ("i64", "xor"), ("bf16", "sum")]


def local_inputs(elt: str, shape: tuple[int, ...], rng: np.random.Generator) -> list[np.ndarray]:
    n = int(np.prod(shape))
    if elt in ("i32", "i64"):
        info = np.iinfo(NP_DTYPE[elt])
        full = rng.integers(info.min, info.max, n, dtype=NP_DTYPE[elt], endpoint=True)
        small = rng.integers(-100, 100, n).astype(NP_DTYPE[elt])
        return [full.reshape(shape), small.reshape(shape)]
    if elt == "bf16":
        f = f32_inputs(n, rng)
        # bfloat16 values: the high halves of float32 values (subnormals, zeros, NaNs kept)
        return [(v.view(np.uint32) >> np.uint32(16)).astype(np.uint16).reshape(shape) for v in f.values()]
    dt = NP_DTYPE[elt]
    f = f32_inputs(n, rng)
    with np.errstate(all="ignore"):  # f16: large values overflow to inf
        out = [f[k].astype(dt) for k in ("normal", "cancel", "signed", "special", "zeros")]
    if elt == "f16":
        sub = rng.integers(1, 0x0400, n).astype(np.uint16) | (rng.integers(0, 2, n).astype(np.uint16) << 15)
        out.append(sub.view(np.float16))
        out.append((rng.standard_normal(n) * 300).astype(np.float16))
    if elt == "f64":
        sub = rng.integers(1, 2**52, n, dtype=np.uint64) | (rng.integers(0, 2, n).astype(np.uint64) << np.uint64(63))
        out.append(sub.view(np.float64))
        out.append(rng.standard_normal(n) * 1e300)  # overflows to inf and inf - inf
    return [o.reshape(shape) for o in out]


def local_dst_old(elt: str, dshape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if elt in ("i32", "i64"):
        info = np.iinfo(NP_DTYPE[elt])
        return rng.integers(info.min, info.max, dshape, dtype=NP_DTYPE[elt], endpoint=True)
    v = rng.standard_normal(dshape).astype(np.float32)
    if elt == "bf16":
        return (v.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    return v.astype(NP_DTYPE[elt])


@cache
def _local_modules(elt: str, shape: tuple[int, ...], accum: bool, kinds: tuple[str, ...], targets: tuple[str, ...]):
    """One module of a kernel ``@<kind>`` per kind (:func:`tile_function`), lowered for
    each target (once for all the tests of these kinds: the interpreter does not change
    the IR), and the targets whose lowering is not the same as an earlier target's (the
    interpreter is deterministic: the same lowering gives the same bits, so it runs once)."""
    text = "builtin.module {\n" + "".join(tile_function(k, k, shape, elt, accum) for k in kinds) + "}\n"
    modules = [lower(text, t) for t in targets]
    for m in modules:
        assert op_names(m).isdisjoint({"ptx.add.f32x2", "ptx.max3", "ptx.min3"}), "local was not chosen"
    return [(t, m) for i, (t, m) in enumerate(zip(targets, modules)) if not any(same_ir(m, e) for e in modules[:i])]


def _check_local(kind: str, elt: str, shape: tuple[int, ...], accum: bool, targets: list[str], kinds: tuple[str, ...]) -> None:
    """``kind``'s kernel of :func:`_local_modules` (``kinds`` one module) gives
    ``reference.reduce_local``'s bits on each input of :func:`local_inputs`."""
    assert kind in kinds
    lowered = _local_modules(elt, shape, accum, kinds, tuple(targets))
    rng = np.random.default_rng(zlib.crc32(repr((kind, elt, shape, accum)).encode()))
    dshape = (1,) if len(shape) == 1 else shape[:-1]
    for i, src in enumerate(local_inputs(elt, shape, rng)):
        old = local_dst_old(elt, dshape, rng)
        want = ref.reduce_local(kind, src, old if accum else None, bf16=elt == "bf16")
        for target, m in lowered:
            got = run(m, src, old, kind)
            assert_same_bits(got, want, f"local {kind} {elt} {shape} accum={accum} on {target} input {i}")


FLOAT_KINDS = ["sum", "max", "min"]
INT_KINDS = ["sum", "max", "min", "and", "or", "xor"]


@pytest.mark.parametrize(
    "elt,kind",
    [(e, k) for e in ("f32", "f64", "f16", "bf16") for k in FLOAT_KINDS]
    + [(e, k) for e in ("i32", "i64") for k in INT_KINDS],
)
def test_local_1d_matches_reference(elt: str, kind: str):
    """Each length of LOCAL_1D_LENGTHS, with and without accum (a case each)."""
    kinds = tuple(INT_KINDS if elt in ("i32", "i64") else FLOAT_KINDS)

    def check(n: int, accum: bool) -> None:
        # sm_90a always takes local; on sm_100a a 1-D f32 source of 8 or more elements
        # takes sm100_packed, every other source local (checked at two lengths to keep
        # this fast).
        on_sm100 = n in (7, 13) and not (elt == "f32" and n >= 8)
        _check_local(kind, elt, (n,), accum, ["sm_90a", "sm_100a"] if on_sm100 else ["sm_90a"], kinds)

    each_case(check, [(n, accum) for n in LOCAL_1D_LENGTHS for accum in (False, True)])


@pytest.mark.parametrize("elt,kind", LOCAL_ND_CASES)
def test_local_nd_rows_reduce_independently(elt: str, kind: str):
    """Each shape of LOCAL_ND_SHAPES, with and without accum (a case each)."""
    kinds = tuple(k for e, k in LOCAL_ND_CASES if e == elt)  # one module of the kinds this type is run with
    each_case(
        lambda shape, accum: _check_local(kind, elt, shape, accum, ["sm_90a", "sm_100a"], kinds),
        [(shape, accum) for shape in LOCAL_ND_SHAPES for accum in (False, True)],
    )


def test_local_sum_is_a_left_fold():
    """The order of the fold shows in the bits: (1e8 + 1 + ... + 1) - 1e8 is 0 in f32."""
    x = np.array([1e8] + [1.0] * 6 + [-1e8], dtype=np.float32)
    want = ref.reduce_local("sum", x)
    assert ref.bits(want)[0] == 0
    got = run(lower(tile_module("sum", (8,), "f32", False), "sm_90a"), x, np.zeros(1, np.float32))
    assert_same_bits(got, want, "left fold")
    assert float(np.sum(x.astype(np.float64))) == 6.0


# endregion
