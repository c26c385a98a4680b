"""rows_bulk_backward.GRAD_REGISTERS (off by default): each thread loads its vectors of dy
from global memory into registers once a row, the ring of shared-memory slots holding x's
(or softmax's y's) slices alone. On the interpreter's clusters with test_rows_backward_bulk's
small settings (slices of 512 bytes, CTAs of one warp, one unit for all the rows): dx,
dweight and dbias against float64, and every output bit for bit the default's (the same
sums in the same order), through rings of 2, 3, 4 and 16 slots (7 rows: with up to 4 slots
each slot's mbarrier goes through both phases; 16: every row ahead); with 16-byte bfloat16
vectors; CTAS_PER_SM (the kernel's .minnctapersm) and the SETTINGS table."""

from __future__ import annotations

import numpy as np
import pytest
import test_rows
from test_rows import to_bits, values
from test_rows_backward_bulk import norm_backward_reference, run_norm, small  # noqa: F401 - the small settings (autouse)

from bulkred_dialect.ops.kernel_attrs import MIN_CTAS_ATTR
from bulkred_dialect.passes.variants import rows_bulk_backward, rows_common
from bulkred_dialect.row_kernels import module

VARIANT = "rows_bulk_backward"


def _config(kind: str, n: int, dtype: str, **kw) -> rows_bulk_backward.BulkPlan:
    """rows_bulk_backward's configuration of the op of these settings."""
    built = module(kind, None, n, dtype, **kw)
    return rows_bulk_backward.bulk_for(next(o for o in built.walk() if o.name == "bulkred.normalize_rows"))


CASES = [  # (kind, N, dtype, weight's type, dbias, CTAs a cluster, vectors a thread)
    ("layer_norm_backward", 512, "float32", "float32", True, 4, 1),  # a cluster of 4, both column sums
    ("layer_norm_backward", 512, "bfloat16", "bfloat16", True, 2, 2),  # two 8-byte vectors of dy a thread
    ("rms_norm_backward", 128, "float32", "float32", False, 1, 1),  # one CTA: no cluster exchange
]


RINGS = [(CASES[0], 2), (CASES[1], 4), (CASES[2], 3), (CASES[2], 16)]


@pytest.mark.parametrize("case,slots", RINGS, ids=[f"{c[0]}-{c[1]}-{c[2]}-{q}" for c, q in RINGS])
def test_norm_grad_in_registers(case, slots, monkeypatch) -> None:
    """One unit over 7 rows: dx, dweight (and dbias) bit for bit the default's with the
    same ring, and against float64."""
    kind, n, dtype, affine, db, c, per = case
    rng = np.random.default_rng(n + slots)
    xbits = to_bits(rng.standard_normal((7, n)) * 2 + 0.5, dtype)
    dybits = to_bits(rng.standard_normal((7, n)), dtype)
    wbits = to_bits(rng.standard_normal(n), affine)
    kw = {"weight": affine, "dweight": affine, "dbias": dtype if db else None}
    monkeypatch.setattr(rows_bulk_backward, "SLOTS", slots)
    default = run_norm(kind, xbits, dybits, wbits, dtype, affine, db)
    monkeypatch.setattr(rows_bulk_backward, "GRAD_REGISTERS", True)
    bp = _config(kind, n, dtype, **kw)
    assert (bp.cluster, bp.per, bp.slots, bp.tensors) == (c, per, slots, 1)
    got = run_norm(kind, xbits, dybits, wbits, dtype, affine, db)
    assert len(got) == len(default) == 2 + db
    for a, b in zip(got, default, strict=True):
        np.testing.assert_array_equal(a, b)
    dx, dw, dbias = norm_backward_reference(kind, xbits, dybits, wbits, dtype, affine)
    tol = {"float32": 1e-6, "bfloat16": 1.6e-2}[dtype] * max(1.0, np.abs(dx).max())
    np.testing.assert_allclose(values(got[0], dtype), dx, rtol=0, atol=tol)
    for ref, buf in zip([dw] + ([dbias] if db else []), got[1:], strict=True):
        rounding = {"float32": 4e-7, "bfloat16": 8e-3}[dtype] * max(1.0, np.abs(ref).max())
        np.testing.assert_allclose(values(buf, affine), ref, rtol=0, atol=rounding + 1e-6 * np.abs(ref).max())


def test_wide_bfloat16_grad_in_registers(monkeypatch) -> None:
    """dy in registers with 16-byte bfloat16 vectors (rows_common.WIDE_BF16: 8 elements,
    one vector a thread of each CTA's slice) against float64 (the sums' order differs
    from 8-byte vectors': no bit comparison)."""
    monkeypatch.setattr(rows_bulk_backward, "GRAD_REGISTERS", True)
    monkeypatch.setattr(rows_common, "WIDE_BF16", True)
    kind, n, dtype = "layer_norm_backward", 512, "bfloat16"
    bp = _config(kind, n, dtype, weight=dtype, dweight=dtype, dbias=dtype)
    assert (bp.cluster, bp.per, bp.tensors) == (2, 1, 1)
    rng = np.random.default_rng(17)
    xbits = to_bits(rng.standard_normal((5, n)) * 2 + 0.5, dtype)
    dybits = to_bits(rng.standard_normal((5, n)), dtype)
    wbits = to_bits(rng.standard_normal(n), dtype)
    got = run_norm(kind, xbits, dybits, wbits, dtype, dtype, True)
    dx, dw, dbias = norm_backward_reference(kind, xbits, dybits, wbits, dtype, dtype)
    np.testing.assert_allclose(values(got[0], dtype), dx, rtol=0, atol=1.6e-2 * max(1.0, np.abs(dx).max()))
    for ref, buf in zip([dw, dbias], got[1:], strict=True):
        np.testing.assert_allclose(values(buf, dtype), ref, rtol=0, atol=8e-3 * max(1.0, np.abs(ref).max()) + 1e-6)


@pytest.mark.parametrize("kind", ["softmax_backward", "log_softmax_backward"])
def test_softmax_grad_in_registers(kind: str, monkeypatch) -> None:
    """softmax's and log_softmax's dx with dy in registers (a cluster of 4, 3 slots)
    against float64 and the default's bits."""
    monkeypatch.setattr(rows_bulk_backward, "SLOTS", 3)
    m, n, dtype = 7, 512, "float32"
    rng = np.random.default_rng(len(kind))
    x = rng.standard_normal((m, n)) * 2
    e = np.exp(x - x.max(1, keepdims=True))
    soft = kind == "softmax_backward"
    fwd = (e / e.sum(1, keepdims=True) if soft else np.log(e / e.sum(1, keepdims=True))).astype(dtype)
    dy = rng.standard_normal((m, n)).astype(dtype)

    def dx() -> np.ndarray:
        built = test_rows.lowered(module(kind, m, n, dtype, variant=VARIANT), VARIANT)
        return test_rows.interpret(built, fwd, np.full_like(fwd, 7.0), dy)[1]

    default = dx()
    monkeypatch.setattr(rows_bulk_backward, "GRAD_REGISTERS", True)
    assert _config(kind, n, dtype).tensors == 1
    got = dx()
    np.testing.assert_array_equal(got, default)
    f, g = fwd.astype(np.float64), dy.astype(np.float64)
    want = f * (g - (g * f).sum(1, keepdims=True)) if soft else g - np.exp(f) * g.sum(1, keepdims=True)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=4e-6 * max(1.0, np.abs(want).max()))


def test_default_off() -> None:
    """Off but where SETTINGS says (measured cells): dy's slices in the ring (two tensors a
    row), no cap on the CTAs a multiprocessor takes."""
    assert rows_bulk_backward.GRAD_REGISTERS is None and rows_bulk_backward.CTAS_PER_SM is None
    assert all(lo <= hi and set(s) <= {"grad_registers", "slots", "ctas_per_sm", "stats_ahead", "lean_dx",
                                                   "halves", "spare_shared", "words", "tail_loads",
                                                   "tail_spread"}
               for _d, _k, lo, hi, s in rows_bulk_backward.SETTINGS)
    bp = _config("rms_norm_backward", 512, "float32", weight="float32", dweight="float32")
    assert (bp.tensors, bp.slots, bp.ctas_per_sm) == (2, 4, None)


def test_settings_table(monkeypatch) -> None:
    """A SETTINGS entry sets its cell's ring (dy in registers, 3 slots, 2 CTAs a
    multiprocessor), not another kind's or N's; GRAD_REGISTERS = False wins over it; the
    cell's outputs bit for bit the default's."""
    monkeypatch.setattr(rows_bulk_backward, "SETTINGS", [
        ("float32", ("layer_norm_backward",), 512, 512, {"grad_registers": True, "slots": 3, "ctas_per_sm": 2})])
    kw = {"weight": "float32", "dweight": "float32", "dbias": "float32"}
    bp = _config("layer_norm_backward", 512, "float32", **kw)
    assert (bp.tensors, bp.slots, bp.ctas_per_sm) == (1, 3, 2)
    assert _config("rms_norm_backward", 512, "float32", weight="float32", dweight="float32").tensors == 2
    assert _config("layer_norm_backward", 256, "float32", **kw).tensors == 2
    rng = np.random.default_rng(23)
    x, dy, w = (to_bits(rng.standard_normal(s), "float32") for s in ((5, 512), (5, 512), 512))
    got = run_norm("layer_norm_backward", x, dy, w, "float32", "float32", True)
    monkeypatch.setattr(rows_bulk_backward, "GRAD_REGISTERS", False)
    bp = _config("layer_norm_backward", 512, "float32", **kw)
    assert (bp.tensors, bp.slots) == (2, 3)
    for a, b in zip(got, run_norm("layer_norm_backward", x, dy, w, "float32", "float32", True), strict=True):
        np.testing.assert_array_equal(a, b)


def test_ctas_per_sm(monkeypatch) -> None:
    """CTAS_PER_SM caps the CTAs a multiprocessor takes (the kernel's ``.minnctapersm``),
    which shared memory alone would set higher (64 CTAs of one warp here)."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 4)

    def min_ctas() -> int:
        built = test_rows.lowered(module("rms_norm_backward", None, 512, "float32", weight="float32",
                                         dweight="float32", variant=VARIANT), VARIANT)
        kernel = next(o for o in built.walk() if o.name == "func.func")
        return kernel.attributes[MIN_CTAS_ATTR].value.data

    assert min_ctas() == 2048 // 32
    monkeypatch.setattr(rows_bulk_backward, "CTAS_PER_SM", 2)
    assert min_ctas() == 2
