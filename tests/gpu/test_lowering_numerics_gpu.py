"""The numerics of tests/test_lowering_numerics.py on the GPU: the lowered tile
reductions, assembled for sm_90a and run, give the numpy references' bits
(``bulkred_dialect/reference.py``, and so the interpreter's): the local variant for
every type, and sm100_packed legalized for sm_90a on f32_inputs and on the adversarial
vectors of issue 9 at every length 8..80."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from bulkred_dialect import reference as ref
from bulkred_dialect.diagnostics import parse_module
from bulkred_dialect.pipeline import gc_paused
from sm100_adversarial import LENGTHS as ADVERSARIAL_LENGTHS
from sm100_adversarial import TIRX_EXAMPLE, minmax_vectors, sum_vectors
from test_lowering_numerics import (
    FLOAT_KINDS,
    _context,
    assert_same_bits,
    dst_olds,
    f32_inputs,
    local_dst_old,
    local_inputs,
    tile_function,
    tile_module,
)


@pytest.fixture(autouse=True)
def _collector_paused():
    """Each test runs with Python's cyclic garbage collector paused, as the compiler
    compiles (``gc_paused``; tests/test_lowering_numerics.py says why)."""
    with gc_paused():
        yield


# sm_90a runs the local variant and the sm100_packed lowering legalized for sm_90a; the
# GPU's bits must equal the reference's (and so the interpreter's).
PACKED_LEGALIZED = (
    "lower-tile-reductions{target=sm_100a},legalize-for-target{target=sm_90a},"
    "lower-to-ptx{target=sm_90a},check-target{target=sm_90a}"
)
GPU_CASES = (
    [("packed", k, "f32", (n,), acc) for k in FLOAT_KINDS for n in (8, 17, 33, 100) for acc in (False, True)]
    + [("local", k, e, s, acc) for e in ("f32", "f64", "f16", "bf16") for k in FLOAT_KINDS
       for s in ((13,), (4, 17)) for acc in (False, True)]
    + [("local", k, e, s, acc) for e in ("i32", "i64") for k in ("sum", "max", "xor")
       for s in ((13,), (4, 17)) for acc in (False, True)]
)


def gpu_compile(variant: str, kind: str, elt: str, shape: tuple[int, ...], accum: bool):
    from bulkred_dialect.backend_ptx import runtime

    module = parse_module(_context(), tile_module(kind, shape, elt, accum))
    pipeline = PACKED_LEGALIZED if variant == "packed" else None
    return runtime.compile_tile_module(module, "sm_90a", pipeline)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "variant,kind,elt,shape,accum", GPU_CASES, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v)
)
def test_gpu_matches_reference(variant: str, kind: str, elt: str, shape: tuple[int, ...], accum: bool):
    kernel = gpu_compile(variant, kind, elt, shape, accum).kernel("k")
    rng = np.random.default_rng(zlib.crc32(repr((variant, kind, elt, shape, accum)).encode()))
    dshape = (1,) if len(shape) == 1 else shape[:-1]
    if variant == "packed":
        olds = dst_olds(rng)
        srcs = list(f32_inputs(shape[0], rng).items())
        cases = [(label, src, olds[i % len(olds)]) for i, (label, src) in enumerate(srcs)]
    else:
        cases = [(str(i), src, local_dst_old(elt, dshape, rng)) for i, src in enumerate(local_inputs(elt, shape, rng))]
    for label, src, old in cases:
        if variant == "packed":
            want = ref.reduce_sm100_packed(kind, src, old if accum else None)
        else:
            want = ref.reduce_local(kind, src, old if accum else None, bf16=elt == "bf16")
        _, got = kernel(src.copy(), old.copy(), grid=1, block=1)
        assert_same_bits(got, want, f"GPU {variant} {kind} {elt} {shape} input {label}")


@pytest.mark.gpu
@pytest.mark.parametrize("accum", [False, True], ids=["set", "accum"])
@pytest.mark.parametrize("n", ADVERSARIAL_LENGTHS)
def test_gpu_sm100_packed_adversarial_vectors(n: int, accum: bool):
    """Issue 9 on the GPU: sm100_packed legalized for sm_90a (kernels @sum, @max, @min)
    gives TIRx's bits (the reference) on the adversarial vectors, at every length 8..80."""
    from bulkred_dialect.backend_ptx import runtime

    text = "builtin.module {\n" + "".join(tile_function(k, k, (n,), "f32", accum) for k in FLOAT_KINDS) + "}\n"
    compiled = runtime.compile_tile_module(parse_module(_context(), text), "sm_90a", PACKED_LEGALIZED)
    assert "f32x2" not in compiled.ptx
    rng = np.random.default_rng(2 * n + accum)
    cases = [("sum", *v) for v in sum_vectors(n, rng)]
    cases += [(k, *v) for v in minmax_vectors(n, rng) for k in ("max", "min")]
    if n == len(TIRX_EXAMPLE[0]):
        cases.append(("sum", "issue 9 example", TIRX_EXAMPLE[0], np.float32(0)))
    for kind, label, src, old in cases:
        dst = np.array([old], dtype=np.float32)
        want = ref.reduce_sm100_packed(kind, src, dst if accum else None)
        _, got = compiled.kernel(kind)(src.copy(), dst.copy(), grid=1, block=1)
        assert_same_bits(got, want, f"GPU sm100_packed legalized {kind} n={n} accum={accum} {label}")
    if n == len(TIRX_EXAMPLE[0]) and not accum:
        _, got = compiled.kernel("sum")(TIRX_EXAMPLE[0].copy(), np.zeros(1, np.float32), grid=1, block=1)
        assert ref.bits(got)[0] == TIRX_EXAMPLE[1]
