"""The seed demo (examples/seed_sum32.mlir: one thread sums a float32 vector into
B[0]) compiled by our pipeline for sm_90a and run: the ``local`` variant and the
``sm100_packed`` lowering legalized for sm_90a, at several lengths, each result equal
to ``bulkred_dialect.reference`` bit for bit (and, for ``local``, to the float32
sequential sum). The legalized sm100_packed also runs issue 9's adversarial sums
(tests/sm100_adversarial.py, lengths 8..80, and a long looped one) and its example, whose
TIRx bits are 0x4b800001."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bulkred_dialect import reference
from bulkred_dialect.backend_ptx.runtime import compile_tile_module, parse
from sm100_adversarial import LENGTHS, TIRX_EXAMPLE, sum_vectors

pytestmark = pytest.mark.gpu

SEED = Path(__file__).resolve().parents[2] / "examples" / "seed_sum32.mlir"

PIPELINES = {
    "local": None,  # bulkred-to-ptx{target=sm_90a}: the registry picks local
    "sm100_packed_legalized": (
        "lower-tile-reductions{target=sm_100a},legalize-for-target{target=sm_90a},"
        "lower-to-ptx{target=sm_90a},check-target{target=sm_90a}"
    ),
}


def seed_module(n: int):
    text = SEED.read_text().replace("memref<32xf32", f"memref<{n}xf32")
    return parse(text, f"seed_sum{n}.mlir")


def inputs(rng, n: int, kind: str) -> np.ndarray:
    if kind == "normal":
        a = rng.standard_normal(n)
    elif kind == "spread":
        a = rng.standard_normal(n) * np.exp2(rng.integers(-30, 30, n))
    else:  # subnormal: normal values near the bottom of the range mixed with subnormal ones
        a = rng.standard_normal(n) * 1e-37
        sub = rng.integers(1, 1 << 23, n).astype(np.uint32).view(np.float32)
        a = np.where(rng.random(n) < 0.4, sub * np.sign(a), a)
    a = np.asarray(a, dtype=np.float32)
    a[a == 0] = np.float32(0.75)
    return a


@pytest.mark.parametrize("n", [8, 17, 32, 100])
@pytest.mark.parametrize("variant", list(PIPELINES))
def test_seed_sum(variant, n, rng):
    mod = compile_tile_module(seed_module(n), "sm_90a", PIPELINES[variant])
    assert "f32x2" not in mod.ptx
    kernel = mod.kernel("test_func")
    for kind in ("normal", "spread", "subnormal"):
        A = inputs(rng, n, kind)
        B = np.full(1, np.nan, dtype=np.float32)
        A_out, B_out = kernel(A, B)
        assert reference.bits(A_out).tolist() == reference.bits(A).tolist(), "the kernel changed A"
        if variant == "local":
            want = reference.reduce_local("sum", A)
            seq = A[0]
            for x in A[1:]:
                seq = np.float32(seq + x)
            assert reference.bits(want)[0] == np.array([seq]).view(np.uint32)[0]
        else:
            want = reference.reduce_sm100_packed("sum", A)
        got, exp = int(reference.bits(B_out)[0]), int(reference.bits(want)[0])
        assert got == exp, (
            f"{variant} n={n} {kind}: B = {B_out[0]!r} (0x{got:08x}), reference {want[0]!r} (0x{exp:08x}); {rng}"
        )


def test_seed_sm100_packed_legalized_gives_tirx_bits_on_the_issue_example():
    x, want = TIRX_EXAMPLE
    kernel = compile_tile_module(seed_module(len(x)), "sm_90a", PIPELINES["sm100_packed_legalized"]).kernel("test_func")
    _, B = kernel(x.copy(), np.full(1, np.nan, dtype=np.float32))
    got = int(reference.bits(B)[0])
    assert got == want == int(reference.bits(reference.reduce_sm100_packed("sum", x))[0]), f"0x{got:08x}"


@pytest.mark.parametrize("n", [*LENGTHS, 4101])
def test_seed_sm100_packed_legalized_adversarial(n):
    """Issue 9's adversarial sums (n = 4101: the further chunks in a loop) on the GPU, bit
    for bit against the reference (TIRx's order)."""
    kernel = compile_tile_module(seed_module(n), "sm_90a", PIPELINES["sm100_packed_legalized"]).kernel("test_func")
    for label, A, _ in sum_vectors(n, np.random.default_rng(n)):
        _, B = kernel(A.copy(), np.full(1, np.nan, dtype=np.float32))
        want = reference.reduce_sm100_packed("sum", A)
        got, exp = int(reference.bits(B)[0]), int(reference.bits(want)[0])
        assert got == exp, f"sm100_packed legalized n={n} {label}: 0x{got:08x}, reference 0x{exp:08x}"
