"""rows_common.NORM_BACKWARD_UNITS (empty by default: the grid of before): a norm's
backward's units (CTAs, or clusters) by kind, element type and N, in place of the caps of
SLICE_SUM_FLOATS / COLUMN_SUM_CTAS (and of rows_bulk_backward.CLUSTERS), so that the
persistent grid runs in one wave of what the multiprocessors hold (tools/probes/
rows_backward.py ``--set norms`` measures it). On the CPU interpreter, with the CTAs
narrowed (test_rows.small_ctas, test_rows_backward_bulk.small): the kernel's grid takes
the table's units; dx, dweight and dbias of 7 rows over 3 units against float64
(test_rows_backward_bulk.norm_backward_reference), the workspace left zeroed; and
dweight's and dbias's bits do not depend on M (the first 3 rows alone, then followed by 4
whose dy is 0, give the same bits: the same rows per unit, summed in the same order)."""

from __future__ import annotations

import numpy as np
import pytest
import test_rows
from test_rows import small_ctas, to_bits, values  # noqa: F401 - the CTAs narrowed (autouse)
from test_rows_backward_bulk import norm_backward_reference, small  # noqa: F401 - the small slices (autouse)

from bulkred_dialect.passes.variants import rows_backward, rows_bulk_backward, rows_common
from bulkred_dialect.row_kernels import module

CASES = [  # (kind, variant, N, dtype, weight's type, dbias)
    ("layer_norm_backward", "rows_cta", 512, "float32", "float32", True),  # 64 threads x 2 vectors of 4
    ("rms_norm_backward", "rows_cluster", 512, "bfloat16", "bfloat16", False),  # clusters of 4 CTAs of one warp
    ("layer_norm_backward", "rows_warp", 256, "bfloat16", "bfloat16", True),  # a warp a row, 2 a CTA
    ("layer_norm_backward", "rows_bulk_backward", 512, "bfloat16", "bfloat16", True),  # clusters of 2, 512-byte slices
]
UNITS = 3


def _units(kind: str, dtype: str, n: int, units: int) -> dict:
    return {(kind, dtype): ((n, n, units),)}


def run(kind: str, variant: str, n: int, dtype: str, affine: str, db: bool, xbits, dybits, wbits) -> tuple[int, list]:
    """(the kernel's units, [dx, dweight, (dbias)]) of the rows on the interpreter; the
    workspace checked left zeroed."""
    m = xbits.shape[0]
    layer = kind == "layer_norm_backward"
    x = values(xbits, dtype)
    mean = x.mean(1).astype(np.float32) if layer else None
    xc = x - mean.astype(np.float64)[:, None] if layer else x
    rstd = (1 / np.sqrt((xc * xc).mean(1) + 1e-5)).astype(np.float32)
    outs = 1 + db
    args = [xbits, to_bits(np.full((m, n), 7.0), dtype), dybits, wbits] + ([mean] if layer else []) + [rstd]
    args += [to_bits(np.full(n, 7.0), affine) for _ in range(outs)]
    built = test_rows.lowered(module(kind, None, n, dtype, weight=affine, dweight=affine, dbias=dtype if db else None,
                                     variant=variant), variant)
    kernel = next(o for o in built.walk() if o.name == "func.func")
    units = kernel.attributes["bulkred.grid_rows"].data[1].value.data
    ws = np.zeros(kernel.attributes["bulkred.workspace"].value.data, np.int8)
    got = test_rows.interpret(built, *args, ws)[:-1]
    assert not ws.any(), "the workspace is not left zeroed"
    return units, [got[1], *got[len(got) - outs:]]


@pytest.mark.parametrize("kind,variant,n,dtype,affine,db", CASES, ids=[f"{c[1]}-{c[0]}-{c[3]}" for c in CASES])
def test_units_of_the_table(kind, variant, n, dtype, affine, db, monkeypatch) -> None:
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 8)
    monkeypatch.setattr(rows_backward, "GROUP_UNITS", 2)  # (3 units: two groups, both levels of the sums)
    monkeypatch.setattr(rows_bulk_backward, "CLUSTERS", {2: 1})  # (the table's units win over it)
    rng = np.random.default_rng(n + len(variant))
    xbits = to_bits(rng.standard_normal((7, n)) * 2 + 0.5, dtype)
    dybits = to_bits(rng.standard_normal((7, n)), dtype)
    wbits = to_bits(rng.standard_normal(n), affine)
    assert rows_common.NORM_BACKWARD_UNITS == {}  # off by default
    default_units, _ = run(kind, variant, n, dtype, affine, db, xbits[:1], dybits[:1], wbits)
    monkeypatch.setattr(rows_common, "NORM_BACKWARD_UNITS", _units(kind, dtype, n, UNITS))
    units, got = run(kind, variant, n, dtype, affine, db, xbits, dybits, wbits)
    assert units == UNITS != default_units
    want, dw, dbias = norm_backward_reference(kind, xbits, dybits, wbits, dtype, affine)
    tol = {"float32": 1e-6, "bfloat16": 1.6e-2}[dtype] * max(1.0, np.abs(want).max())
    np.testing.assert_allclose(values(got[0], dtype), want, rtol=0, atol=tol)
    for ref, buf in zip([dw, dbias][:1 + db], got[1:], strict=True):
        rounding = {"float32": 4e-7, "bfloat16": 8e-3}[affine] * max(1.0, np.abs(ref).max())
        np.testing.assert_allclose(values(buf, affine), ref, rtol=0, atol=rounding + 1e-6 * np.abs(ref).max())
    # dweight's and dbias's bits independent of M: rows 3 to 6 with dy = 0 add +0 to each unit's sums
    dybits[3:] = to_bits(np.zeros((4, n)), dtype)
    _, many = run(kind, variant, n, dtype, affine, db, xbits, dybits, wbits)
    _, few = run(kind, variant, n, dtype, affine, db, xbits[:3], dybits[:3], wbits)
    np.testing.assert_array_equal(many[0][:3], few[0])
    for a, b in zip(many[1:], few[1:], strict=True):
        np.testing.assert_array_equal(a, b)


def test_only_the_cells_of_the_table(monkeypatch) -> None:
    """The table's cell alone: another kind, element type or N keeps the default's units."""
    from bulkred_dialect.ops.target import Target

    monkeypatch.setattr(rows_common, "sm_count", lambda target: 132)

    def units(kind: str, n: int, dtype: str) -> int:
        layer = kind == "layer_norm_backward"
        op = next(o for o in module(kind, None, n, dtype, weight=dtype, dweight=dtype,
                                    dbias=dtype if layer else None).walk() if o.name == "bulkred.normalize_rows")
        return rows_common.plan(op, Target.parse("sm_90a"), group=256, block=256, items=4, ctas_per_sm=2).ctas

    before = {c: units(*c) for c in [("rms_norm_backward", 4096, "bfloat16"), ("layer_norm_backward", 4096, "bfloat16"),
                                     ("rms_norm_backward", 8192, "bfloat16"), ("rms_norm_backward", 4096, "float32")]}
    assert before[("rms_norm_backward", 4096, "bfloat16")] == 264  # (132 x 2 here; 512 by SLICE_SUM_FLOATS)
    monkeypatch.setattr(rows_common, "NORM_BACKWARD_UNITS", _units("rms_norm_backward", "bfloat16", 4096, 200))
    after = {c: units(*c) for c in before}
    assert after == {**before, ("rms_norm_backward", 4096, "bfloat16"): 200}
