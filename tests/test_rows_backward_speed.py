"""The norms' backward's speed settings, each off by default (tools/probes/rows_backward.py
``--set norms`` measures them on an H200).

rows_common.NORM_BACKWARD_UNITS (empty by default: the grid of before): a norm's
backward's units (CTAs, or clusters) by kind, element type and N, in place of the caps of
SLICE_SUM_FLOATS / COLUMN_SUM_CTAS (and of rows_bulk_backward.CLUSTERS), so that the
persistent grid runs in one wave of what the multiprocessors hold (tools/probes/
rows_backward.py ``--set norms`` measures it). On the CPU interpreter, with the CTAs
narrowed (test_rows.small_ctas, test_rows_backward_bulk.small): the kernel's grid takes
the table's units; dx, dweight and dbias of 7 rows over 3 units against float64
(test_rows_backward_bulk.norm_backward_reference), the workspace left zeroed; and
dweight's and dbias's bits do not depend on M (the last 2 of the 7 rows have dy = 0: the
first 5 alone give the same bits, the same rows per unit summed in the same order).

rows_common.WIDE_BF16 (16-byte bfloat16 vectors) on a norm's backward in rows_cta and
rows_cluster against float64; rows_backward.WARP_PIPELINE (rows_warp's norm backward
pipelined): the bits of the unpipelined kernel, and against float64;
rows_common.NORM_BACKWARD_WARP_N (a norm's backward of a type past its N to rows_cta):
the dispatch."""

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


def lowered(kind: str, variant: str, n: int, dtype: str, affine: str, db: bool) -> tuple[object, int]:
    """(the kernel lowered for any M, its units)."""
    built = test_rows.lowered(module(kind, None, n, dtype, weight=affine, dweight=affine, dbias=dtype if db else None,
                                     variant=variant), variant)
    kernel = next(o for o in built.walk() if o.name == "func.func")
    return built, kernel.attributes["bulkred.grid_rows"].data[1].value.data


def run(built, kind: str, n: int, dtype: str, affine: str, db: bool, xbits, dybits, wbits) -> list:
    """[dx, dweight, (dbias)] of the rows on the interpreter; the workspace checked left zeroed."""
    m = xbits.shape[0]
    layer = kind == "layer_norm_backward"
    x = values(xbits, dtype)
    mean = x.mean(1).astype(np.float32) if layer else None
    xc = x - mean.astype(np.float64)[:, None] if layer else x
    rstd = (1 / np.sqrt((xc * xc).mean(1) + 1e-5)).astype(np.float32)
    outs = 1 + db
    args = [xbits, to_bits(np.full((m, n), 7.0), dtype), dybits, wbits] + ([mean] if layer else []) + [rstd]
    args += [to_bits(np.full(n, 7.0), affine) for _ in range(outs)]
    kernel = next(o for o in built.walk() if o.name == "func.func")
    ws = np.zeros(kernel.attributes["bulkred.workspace"].value.data, np.int8)
    got = test_rows.interpret(built, *args, ws)[:-1]
    assert not ws.any(), "the workspace is not left zeroed"
    return [got[1], *got[len(got) - outs:]]


def check(kind: str, dtype: str, affine: str, db: bool, got: list, xbits, dybits, wbits) -> None:
    """dx, dweight (and dbias) against float64 from the values the kernel read."""
    want, dw, dbias = norm_backward_reference(kind, xbits, dybits, wbits, dtype, affine)
    tol = {"float32": 1e-6, "bfloat16": 1.6e-2}[dtype] * max(1.0, np.abs(want).max())
    np.testing.assert_allclose(values(got[0], dtype), want, rtol=0, atol=tol)
    for ref, buf in zip([dw, dbias][:1 + db], got[1:], strict=True):
        rounding = {"float32": 4e-7, "bfloat16": 8e-3}[affine] * max(1.0, np.abs(ref).max())
        np.testing.assert_allclose(values(buf, affine), ref, rtol=0, atol=rounding + 1e-6 * np.abs(ref).max())


@pytest.mark.parametrize("kind,variant,n,dtype,affine,db", CASES, ids=[f"{c[1]}-{c[0]}-{c[3]}" for c in CASES])
def test_units_of_the_table(kind, variant, n, dtype, affine, db, monkeypatch) -> None:
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 8)
    monkeypatch.setattr(rows_backward, "GROUP_UNITS", 2)  # (3 units: two groups, both levels of the sums)
    monkeypatch.setattr(rows_bulk_backward, "CLUSTERS", {2: 1})  # (the table's units win over it)
    rng = np.random.default_rng(n + len(variant))
    xbits = to_bits(rng.standard_normal((7, n)) * 2 + 0.5, dtype)
    dybits = to_bits(rng.standard_normal((7, n)), dtype)
    dybits[5:] = to_bits(np.zeros((2, n)), dtype)  # (rows 5 and 6 add +0 to their units' sums)
    wbits = to_bits(rng.standard_normal(n), affine)
    monkeypatch.setattr(rows_common, "NORM_BACKWARD_UNITS", {})  # (the caps: the units without the table)
    default_units = lowered(kind, variant, n, dtype, affine, db)[1]
    monkeypatch.setattr(rows_common, "NORM_BACKWARD_UNITS", _units(kind, dtype, n, UNITS))
    built, units = lowered(kind, variant, n, dtype, affine, db)
    assert units == UNITS != default_units
    many = run(built, kind, n, dtype, affine, db, xbits, dybits, wbits)
    check(kind, dtype, affine, db, many, xbits, dybits, wbits)
    # dweight's and dbias's bits independent of M: the first 5 rows alone (the same rows per unit) give them
    few = run(built, kind, n, dtype, affine, db, xbits[:5], dybits[:5], wbits)
    np.testing.assert_array_equal(many[0][:5], few[0])
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


WIDE = [("layer_norm_backward", "rows_cta", False), ("rms_norm_backward", "rows_cluster", False),
        ("layer_norm_backward", "rows_warp", True), ("layer_norm_backward", "rows_bulk_backward", False)]


@pytest.mark.parametrize("kind,variant,warp_pipeline", WIDE)
def test_wide_bfloat16_norm_backward(kind: str, variant: str, warp_pipeline: bool, monkeypatch) -> None:
    """The probe's other setting of these cells, 16-byte bfloat16 vectors (rows_common.WIDE_BF16:
    8 elements a load, carried pipelined as 4 words), on a norm's backward in rows_cta,
    rows_cluster, rows_warp (pipelined: WARP_PIPELINE) and rows_bulk_backward (dy from
    shared memory): 5 rows over 2 units against float64."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 8)
    monkeypatch.setattr(rows_common, "WIDE_BF16", True)
    monkeypatch.setattr(rows_backward, "WARP_PIPELINE", warp_pipeline)
    monkeypatch.setattr(rows_common, "NORM_BACKWARD_UNITS", _units(kind, "bfloat16", 512, 2))
    rng = np.random.default_rng(5)
    xbits = to_bits(rng.standard_normal((5, 512)) * 2 + 0.5, "bfloat16")
    dybits = to_bits(rng.standard_normal((5, 512)), "bfloat16")
    wbits = to_bits(rng.standard_normal(512), "bfloat16")
    db = kind == "layer_norm_backward"
    op = next(o for o in module(kind, None, 512, "bfloat16", weight="bfloat16", dweight="bfloat16",
                                dbias="bfloat16" if db else None).walk() if o.name == "bulkred.normalize_rows")
    assert rows_common.vector_of(op) == 8
    built, units = lowered(kind, variant, 512, "bfloat16", "bfloat16", db)
    assert units == 2
    got = run(built, kind, 512, "bfloat16", "bfloat16", db, xbits, dybits, wbits)
    check(kind, "bfloat16", "bfloat16", db, got, xbits, dybits, wbits)


@pytest.mark.parametrize("kind,dtype,affine,db", [("layer_norm_backward", "bfloat16", "bfloat16", True),
                                                  ("rms_norm_backward", "float32", "float32", False)])
def test_warp_pipeline(kind: str, dtype: str, affine: str, db: bool, monkeypatch) -> None:
    """rows_backward.WARP_PIPELINE (on, measured at bfloat16 1024): rows_warp's norm backward loads each
    warp's next row before this row's butterfly. 7 rows over one CTA of 2 warps (rows 0, 2,
    4, 6 and 1, 3, 5: each warp's last row read twice): every output bit for bit the
    unpipelined kernel's, and against float64."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 0)
    monkeypatch.setattr(rows_backward, "PIPELINE", True)  # (float32 1024 is not pipelined by MEASURED)
    monkeypatch.setattr(rows_bulk_backward, "CHOSEN", [])
    n = 256
    rng = np.random.default_rng(3)
    xbits = to_bits(rng.standard_normal((7, n)) * 2 + 0.5, dtype)
    dybits = to_bits(rng.standard_normal((7, n)), dtype)
    wbits = to_bits(rng.standard_normal(n), affine)
    seen = []
    real = rows_backward.pipelined
    import bulkred_dialect.passes.variants.rows_lower as rows_lower

    monkeypatch.setattr(rows_lower, "pipelined", lambda p, op: seen.append(real(p, op)) or seen[-1])
    monkeypatch.setattr(rows_backward, "WARP_PIPELINE", False)
    default = run(lowered(kind, "rows_warp", n, dtype, affine, db)[0], kind, n, dtype, affine, db, xbits, dybits, wbits)
    monkeypatch.setattr(rows_backward, "WARP_PIPELINE", True)
    got = run(lowered(kind, "rows_warp", n, dtype, affine, db)[0], kind, n, dtype, affine, db, xbits, dybits, wbits)
    assert seen == [False, True]
    for a, b in zip(got, default, strict=True):
        np.testing.assert_array_equal(a, b)
    check(kind, dtype, affine, db, got, xbits, dybits, wbits)


def test_norm_backward_warp_n(monkeypatch) -> None:
    """rows_common.NORM_BACKWARD_WARP_N (empty by default): a norm's backward of the
    table's element type longer than its N goes to rows_cta instead of rows_warp; other
    types and the forward kinds keep rows_warp."""
    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.passes.dispatch import choose

    def variant(kind: str, dtype: str) -> str:
        kw = {"weight": dtype, "dweight": dtype} if kind.endswith("backward") else {"weight": dtype, "eps": 1e-5}
        op = next(o for o in module(kind, None, 1024, dtype, **kw).walk() if o.name == "bulkred.normalize_rows")
        return choose(op, Target.parse("sm_90a")).name

    monkeypatch.setattr(rows_bulk_backward, "CHOSEN", [])  # (the small fixture's: every cell)
    cells = [("rms_norm_backward", "bfloat16"), ("rms_norm_backward", "float32"), ("rms_norm", "bfloat16")]
    assert rows_common.NORM_BACKWARD_WARP_N == {}
    assert [variant(*c) for c in cells] == ["rows_warp"] * 3
    monkeypatch.setattr(rows_common, "NORM_BACKWARD_WARP_N", {"bfloat16": 512})
    assert [variant(*c) for c in cells] == ["rows_cta", "rows_warp", "rows_warp"]
