"""Tile-level bulk ops on the GPU (docs/lowering.md, "Bulk operations"): kernels written
with ``bulkred.bulk_copy`` / ``bulkred.bulk_reduce`` in MLIR, compiled by
``compile_tile_module`` (``bulkred-to-ptx`` with ``lower-bulk-ops``) and run:

* global -> shared -> global copies of 1-D and 2-D tiles, with a 3-D block (the elected
  thread is ``tid.x | tid.y | tid.z == 0``);
* global -> shared, every thread doubles its elements in shared memory, shared -> global
  (the shared destination is visible to every thread when the op returns);
* the same three times in a loop on one mbarrier and one global buffer (the mbarrier is
  invalidated and initialized again by each copy);
* bulk_reduce of a shared tile from each of 4 CTAs into one global buffer, for
  sum/max/min/and/or/xor on f32, f64, f16, i32 and i64 where the cp.reduce table has the
  form, the tiles filled by plain stores (the generic -> async proxy fence);
* bulk_copy into shared followed by bulk_reduce of the same tile.

Data: fresh random values; float sums use small integers so that every order of the
4 CTAs' atomic updates gives the same bits; outputs are checked against numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

from bulkred_dialect.backend_ptx.runtime import compile_tile_module, parse

from gpu.models import mismatch_report, same_bits

pytestmark = pytest.mark.gpu

ARCH = "sm_90a"
CTAS = 4
THREADS = 128

NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}

# (kind, element type) pairs the cp.reduce.async.bulk table has into global
REDUCE_FORMS = [
    ("sum", "f32"), ("sum", "f64"), ("sum", "f16"), ("max", "f16"), ("min", "f16"),
    ("sum", "i32"), ("max", "i32"), ("min", "i32"), ("and", "i32"), ("or", "i32"), ("xor", "i32"),
    ("sum", "i64"), ("max", "i64"), ("min", "i64"), ("and", "i64"),
]  # fmt: skip


def _mt(shape: tuple[int, ...], t: str, scope: str) -> str:
    return f"memref<{'x'.join(map(str, shape))}x{t}, #bulkred.scope<{scope}>>"


def _launch(grid: int, block: tuple[int, ...]) -> str:
    return (
        f"attributes {{bulkred.launch = #bulkred.launch<grid = [{grid}], "
        f"block = [{', '.join(map(str, block))}], cluster = [1]>}}"
    )


def _compile(text: str, name: str):
    return compile_tile_module(parse(text, f"{name}.mlir"), ARCH).kernel(name)


def copy_kernel(shape: tuple[int, ...], block: tuple[int, ...]) -> str:
    """``B = A`` through a shared tile: bulk_copy global -> shared, shared -> global."""
    g, s = _mt(shape, "f32", "global"), _mt(shape, "f32", "shared")
    m = _mt((1,), "i64", "shared")
    return f"""
func.func @copy(%A: {g}, %B: {g}) {_launch(1, block)} {{
  %tile = memref.alloca() : {s}
  %mbar = memref.alloca() : {m}
  bulkred.bulk_copy %A, %tile, %mbar : {g}, {s}, {m}
  bulkred.bulk_copy %tile, %B : {s}, {g}
  func.return
}}
"""


def _double_tile(s: str, n: int) -> str:
    """Every thread doubles elements tid, tid + 128, ... of ``%tile`` (f32, 1-D)."""
    return f"""
  %t = ptx.mov.sreg tid.x : i32
  %t0 = arith.index_cast %t : i32 to index
  %n = arith.constant {n} : index
  %step = arith.constant {THREADS} : index
  scf.for %i = %t0 to %n step %step {{
    %v = memref.load %tile[%i] : {s}
    %d = ptx.add rn f32 %v, %v : f32
    memref.store %d, %tile[%i] : {s}
  }}"""


def double_kernel(n: int) -> str:
    """``B = 2 * A``: bulk_copy in, each thread doubles its elements in shared, bulk_copy out."""
    g, s, m = _mt((n,), "f32", "global"), _mt((n,), "f32", "shared"), _mt((1,), "i64", "shared")
    return f"""
func.func @double(%A: {g}, %B: {g}) {_launch(1, (THREADS,))} {{
  %tile = memref.alloca() : {s}
  %mbar = memref.alloca() : {m}
  bulkred.bulk_copy %A, %tile, %mbar : {g}, {s}, {m}
{_double_tile(s, n)}
  bulkred.bulk_copy %tile, %B : {s}, {g}
  func.return
}}
"""


def double_loop_kernel(n: int, times: int) -> str:
    """``A = 2**times * A`` in place: ``times`` rounds of bulk_copy in, double, bulk_copy
    out, all on one mbarrier."""
    g, s, m = _mt((n,), "f32", "global"), _mt((n,), "f32", "shared"), _mt((1,), "i64", "shared")
    return f"""
func.func @double_loop(%A: {g}) {_launch(1, (THREADS,))} {{
  %tile = memref.alloca() : {s}
  %mbar = memref.alloca() : {m}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %times = arith.constant {times} : index
  scf.for %k = %c0 to %times step %c1 {{
    bulkred.bulk_copy %A, %tile, %mbar : {g}, {s}, {m}
{_double_tile(s, n)}
    bulkred.bulk_copy %tile, %A : {s}, {g}
  }}
  func.return
}}
"""


def reduce_kernel(kind: str, t: str, n: int) -> str:
    """CTA c fills a shared tile with ``src[c]`` (plain loads and stores) and
    bulk-reduces it into ``dst``."""
    g2, g, s = _mt((CTAS, n), t, "global"), _mt((n,), t, "global"), _mt((n,), t, "shared")
    return f"""
func.func @reduce(%dst: {g}, %src: {g2}) {_launch(CTAS, (THREADS,))} {{
  %tile = memref.alloca() : {s}
  %c = ptx.mov.sreg ctaid.x : i32
  %cta = arith.index_cast %c : i32 to index
  %t = ptx.mov.sreg tid.x : i32
  %t0 = arith.index_cast %t : i32 to index
  %n = arith.constant {n} : index
  %step = arith.constant {THREADS} : index
  scf.for %i = %t0 to %n step %step {{
    %v = memref.load %src[%cta, %i] : {g2}
    memref.store %v, %tile[%i] : {s}
  }}
  bulkred.bulk_reduce {kind} %tile, %dst : {s}, {g}
  func.return
}}
"""


def copy_then_reduce_kernel(n: int) -> str:
    """Each of 4 CTAs bulk-copies ``src`` into a shared tile and bulk-reduces (sum) the
    tile into ``dst``."""
    g, s, m = _mt((n,), "i32", "global"), _mt((n,), "i32", "shared"), _mt((1,), "i64", "shared")
    return f"""
func.func @copy_then_reduce(%dst: {g}, %src: {g}) {_launch(CTAS, (THREADS,))} {{
  %tile = memref.alloca() : {s}
  %mbar = memref.alloca() : {m}
  bulkred.bulk_copy %src, %tile, %mbar : {g}, {s}, {m}
  bulkred.bulk_reduce sum %tile, %dst : {s}, {g}
  func.return
}}
"""


# region numpy models


def random_values(rng, t: str, shape: tuple[int, ...], kind: str) -> np.ndarray:
    """Integers over the full range; floats: small integers for sums (exact in any
    order), normal values otherwise."""
    dt = np.dtype(NP[t])
    if dt.kind == "i":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    if kind == "sum":
        bound = 64 if t == "f16" else 1 << 20
        return rng.integers(-bound, bound, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def reduce_model(kind: str, dst: np.ndarray, src: np.ndarray) -> np.ndarray:
    """``dst`` combined with every row of ``src`` (integers wrap; float sums are exact here)."""
    fn = {
        "sum": np.add,
        "max": np.maximum,
        "min": np.minimum,
        "and": np.bitwise_and,
        "or": np.bitwise_or,
        "xor": np.bitwise_xor,
    }[kind]
    out = dst.copy()
    with np.errstate(over="ignore"):
        for row in src:
            out = fn(out, row)
    return out


# endregion


@pytest.mark.parametrize(
    "shape,block", [((1024,), (THREADS,)), ((4, 68), (32, 2, 2)), ((4,), (1,))], ids=str
)
def test_copy_through_shared(shape, block, rng):
    A = rng.standard_normal(shape).astype(np.float32)
    B = np.full(shape, np.nan, np.float32)
    A_out, B_out = _compile(copy_kernel(shape, block), "copy")(A, B)
    assert same_bits(A_out, A), "the kernel changed A"
    assert same_bits(B_out, A), f"{rng}\n" + mismatch_report(B_out, A)


@pytest.mark.parametrize("n", [1024, 1020])
def test_double_in_shared(n, rng):
    A = rng.standard_normal(n).astype(np.float32)
    B = np.full(n, np.nan, np.float32)
    _, B_out = _compile(double_kernel(n), "double")(A, B)
    want = A * np.float32(2)
    assert same_bits(B_out, want), f"{rng}\n" + mismatch_report(B_out, want)


def test_double_loop_reuses_the_mbarrier(rng):
    n, times = 1024, 3
    A = rng.standard_normal(n).astype(np.float32)
    (A_out,) = _compile(double_loop_kernel(n, times), "double_loop")(A)
    want = A * np.float32(2**times)
    assert same_bits(A_out, want), f"{rng}\n" + mismatch_report(A_out, want)


@pytest.mark.parametrize("kind,t", REDUCE_FORMS, ids=lambda v: str(v))
def test_bulk_reduce_from_4_ctas(kind, t, rng):
    n = 1024 if t != "i32" else 1020  # 4080 bytes: a multiple of 16, not of 128
    dst = random_values(rng, t, (n,), kind)
    src = random_values(rng, t, (CTAS, n), kind)
    dst_out, src_out = _compile(reduce_kernel(kind, t, n), "reduce")(dst, src)
    assert same_bits(src_out, src), "the kernel changed src"
    want = reduce_model(kind, dst, src)
    assert same_bits(dst_out, want), f"{kind} {t}, {rng}\n" + mismatch_report(dst_out, want)


def test_bulk_copy_then_bulk_reduce(rng):
    n = 1024
    dst = random_values(rng, "i32", (n,), "sum")
    src = random_values(rng, "i32", (n,), "sum")
    dst_out, _ = _compile(copy_then_reduce_kernel(n), "copy_then_reduce")(dst, src)
    want = reduce_model("sum", dst, np.stack([src] * CTAS))
    assert same_bits(dst_out, want), f"{rng}\n" + mismatch_report(dst_out, want)
