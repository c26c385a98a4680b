"""rows_bulk_backward's settings for the norms' backward at 262144 (issue 30, section 4; off by
default, measured by tools/probes/rows_ln_long.py): LEAN_DX (dx by two FFMA from the row's
constants, the first pass summing ``g (x - mean)``), WORDS (bfloat16 read from shared memory
as 32-bit words), HALVES (a ring of half slices) and SETTINGS' ``"spare_shared"`` (the
shared memory kept for the rest). On the interpreter's clusters with test_rows_backward_bulk's small settings
(slices of 512 bytes, CTAs of one warp, one unit for all the rows): dx against float64,
dweight and dbias bit for bit the default's (the same xhat, the same sums in the same
order), dx's bits independent of M (the first rows alone)."""

from __future__ import annotations

import numpy as np
import pytest
from ir_compare import same_ir
from test_rows import to_bits, values
from test_rows_backward_bulk import small  # noqa: F401 - the small settings (autouse)
from test_rows_backward_bulk import assert_the_defaults_column_sums, norm_backward_reference, run_norm

from bulkred_dialect.passes.variants import rows_bulk_backward
from bulkred_dialect.row_kernels import module

CASES = [  # (kind, N, dtype, dbias, CTAs a cluster, x's offset): layer_norm's rows of mean 100, spread 2
    ("layer_norm_backward", 512, "float32", True, 4, 100.0),  # a cluster of 4, both column sums
    ("layer_norm_backward", 512, "bfloat16", True, 2, 0.5),  # two vectors a thread, bfloat16's rounding
    ("rms_norm_backward", 128, "float32", False, 1, 0.5),  # one CTA: no cluster exchange, no mean
]


def _config(kind: str, n: int, dtype: str, db: bool) -> rows_bulk_backward.BulkPlan:
    built = module(kind, None, n, dtype, weight=dtype, dweight=dtype, dbias=dtype if db else None)
    return rows_bulk_backward.bulk_for(next(o for o in built.walk() if o.name == "bulkred.normalize_rows"))


def _rows(kind: str, n: int, dtype: str, offset: float, m: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n + len(dtype))
    return (to_bits(rng.standard_normal((m, n)) * 2 + offset, dtype), to_bits(rng.standard_normal((m, n)), dtype),
            to_bits(rng.standard_normal(n), dtype))


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_lean_dx(case, monkeypatch) -> None:
    """LEAN_DX over 7 rows of one unit: dx within float32's (bfloat16's) rounding of float64,
    and not the default's bits (another kernel); dweight and dbias bit for bit the default's;
    dx of the first 3 rows alone bit for bit theirs in the batch of 7."""
    kind, n, dtype, db, c, offset = case
    x, dy, w = _rows(kind, n, dtype, offset)
    default = run_norm(kind, x, dy, w, dtype, dtype, db)
    monkeypatch.setattr(rows_bulk_backward, "LEAN_DX", True)
    bp = _config(kind, n, dtype, db)
    assert (bp.cluster, bp.lean_dx) == (c, True)
    got = run_norm(kind, x, dy, w, dtype, dtype, db)
    for a, b in zip(got[1:], default[1:], strict=True):
        np.testing.assert_array_equal(a, b)
    dx, _, _ = norm_backward_reference(kind, x, dy, w, dtype, dtype)
    scale = max(1.0, np.abs(dx).max())
    if dtype == "float32":  # within a few float32 roundings of float64, as the default
        err, base = (np.abs(values(v, dtype) - dx).max() / scale for v in (got[0], default[0]))
        assert err < 5e-7 and err < 4 * base + 1e-7, (err, base)
        assert not np.array_equal(got[0], default[0])  # (LEAN_DX's own kernel)
    else:  # one rounding to bfloat16
        np.testing.assert_allclose(values(got[0], dtype), dx, rtol=0, atol=8e-3 * scale)
    alone = run_norm(kind, x[:3], dy[:3], w, dtype, dtype, db)
    np.testing.assert_array_equal(alone[0], got[0][:3])


@pytest.mark.parametrize("kind", ["layer_norm_backward", "rms_norm_backward"])
def test_words(kind: str, monkeypatch) -> None:
    """WORDS: bfloat16 x, dy and the weight (its slice in shared memory) read as 32-bit
    words: every output bit for bit the default's (the same float32 values); with LEAN_DX
    too, dweight's and dbias's bits the default's and dx LEAN_DX's alone."""
    n, dtype, db = 512, "bfloat16", kind == "layer_norm_backward"
    x, dy, w = _rows(kind, n, dtype, 0.5, m=5)
    default = run_norm(kind, x, dy, w, dtype, dtype, db)
    assert _config(kind, n, dtype, db).weight_bytes  # (the weight's slice in shared memory: read as words too)
    monkeypatch.setattr(rows_bulk_backward, "WORDS", True)
    assert _config(kind, n, dtype, db).words and not _config(kind, n, "float32", db).words
    for a, b in zip(run_norm(kind, x, dy, w, dtype, dtype, db), default, strict=True):
        np.testing.assert_array_equal(a, b)
    monkeypatch.setattr(rows_bulk_backward, "LEAN_DX", True)
    both = run_norm(kind, x, dy, w, dtype, dtype, db)
    monkeypatch.setattr(rows_bulk_backward, "WORDS", False)
    for a, b in zip(both, [run_norm(kind, x, dy, w, dtype, dtype, db)[0]] + default[1:], strict=True):
        np.testing.assert_array_equal(a, b)


HALVES_CASES = [  # (kind, dtype, slots of half a slice): 2 vectors a thread, a cluster of 2, 7 rows of one unit
    ("layer_norm_backward", "float32", 4),  # one row's pieces: each copied as its row starts
    ("layer_norm_backward", "float32", 7),  # float32 262144's: the next row's pieces but the last a row ahead
    ("rms_norm_backward", "bfloat16", 5),  # one piece ahead; bfloat16, dweight alone
]


@pytest.mark.parametrize("kind,dtype,slots", HALVES_CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in HALVES_CASES])
def test_halves(kind: str, dtype: str, slots: int, monkeypatch) -> None:
    """HALVES: the ring's pieces half slices (x's and dy's first halves, then their second
    halves), the second halves waited for before the first pass's second half: every output
    bit for bit the default's over 7 rows (each slot's mbarrier through both phases)."""
    n, db = 512, kind == "layer_norm_backward"
    if dtype == "float32":
        monkeypatch.setattr(rows_bulk_backward, "SLICE_BYTES", 1024)  # (2 float32 vectors a thread)
    x, dy, w = _rows(kind, n, dtype, 0.5)
    default = run_norm(kind, x, dy, w, dtype, dtype, db)
    monkeypatch.setattr(rows_bulk_backward, "HALVES", True)
    monkeypatch.setattr(rows_bulk_backward, "SETTINGS", [(dtype, (kind,), n, n, {"slots": slots})])
    bp = _config(kind, n, dtype, db)
    assert (bp.cluster, bp.per, bp.halves, bp.pieces, bp.slots) == (2, 2, True, 4, slots)
    assert bp.piece_bytes == bp.slice_bytes // 2 == {"float32": 512, "bfloat16": 256}[dtype]
    for a, b in zip(run_norm(kind, x, dy, w, dtype, dtype, db), default, strict=True):
        np.testing.assert_array_equal(a, b)


def test_spare_shared(monkeypatch) -> None:
    """SETTINGS' ``"spare_shared"``: the shared memory kept for the rest, in place of
    SPARE_SHARED: the smaller spare keeps the 4 slots and the weight's slice (SHARED_PER_SM
    set here so that the default's spare drops the weight); another cell keeps the
    default's; the outputs bit for bit the default's."""
    kind, n, dtype = "layer_norm_backward", 512, "float32"  # a cluster of 4: slices of 512 bytes
    monkeypatch.setattr(rows_bulk_backward, "SHARED_PER_SM", 4 * 512 + 512 + 4096 - 1)
    x, dy, w = _rows(kind, n, dtype, 0.5, m=5)
    default = run_norm(kind, x, dy, w, dtype, dtype, True)
    bp = _config(kind, n, dtype, True)
    assert (bp.slots, bp.weight_bytes, bp.spare) == (4, 0, rows_bulk_backward.SPARE_SHARED)
    monkeypatch.setattr(rows_bulk_backward, "SETTINGS", [(dtype, (kind,), n, n, {"spare_shared": 2048})])
    bp = _config(kind, n, dtype, True)
    assert (bp.slots, bp.weight_bytes, bp.spare) == (4, 512, 2048)
    assert _config("rms_norm_backward", n, dtype, False).spare == rows_bulk_backward.SPARE_SHARED
    got = run_norm(kind, x, dy, w, dtype, dtype, True)
    for a, b in zip(got, default, strict=True):
        np.testing.assert_array_equal(a, b)


def test_default_off() -> None:
    """LEAN_DX, WORDS and HALVES are off but where SETTINGS says, and SETTINGS names
    them only in the cells an H200 measured faster (tools/probes/rows_ln_long.py, the seventh
    session): float32 layer_norm 262144 (lean_dx, 5 half slots and the weight's slice),
    bfloat16 layer_norm 262144 (lean_dx, words), bfloat16 rms_norm 262144 (words); float16
    as bfloat16; the column tail spread over the waiting CTAs (tail_loads,
    tail_spread: the second run) in all four 262144 cells, float32 rms_norm's included."""
    assert (rows_bulk_backward.LEAN_DX, rows_bulk_backward.WORDS,
            rows_bulk_backward.HALVES, rows_bulk_backward.TAIL_LOADS, rows_bulk_backward.TAIL_SPREAD) == (None,) * 5
    keys = {"lean_dx", "words", "halves", "spare_shared", "tail_loads", "tail_spread"}
    got = {(d, k, lo, hi, tuple(sorted(keys & set(s)))) for d, k, lo, hi, s in rows_bulk_backward.SETTINGS
           if keys & set(s)}
    layer, rms = ("layer_norm_backward",), ("rms_norm_backward",)
    tail = ("tail_loads", "tail_spread")
    assert got == {("float32", layer, 262144, 262144, ("halves", "lean_dx", "spare_shared") + tail),
                   ("bfloat16", layer, 262144, 262144, ("lean_dx",) + tail + ("words",)),
                   ("float16", layer, 262144, 262144, ("lean_dx",) + tail + ("words",)),
                   ("bfloat16", rms, 262144, 262144, tail + ("words",)),
                   ("float16", rms, 262144, 262144, tail + ("words",)),
                   ("float32", rms, 262144, 262144, tail)}


def _whole_grid(built, units: int) -> None:
    """``bulkred.grid_rows`` given a third entry, ``units``: the interpreter (as the launch
    layer) runs a grid of 2 to ``units`` CTAs as one cluster, every CTA at once, switching at
    CTA barriers."""
    from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64

    kernel = next(o for o in built.walk() if o.name == "func.func")
    rule = [a.value.data for a in kernel.attributes["bulkred.grid_rows"].data]
    kernel.attributes["bulkred.grid_rows"] = ArrayAttr([IntegerAttr(v, i64) for v in rule[:2] + [units]])


TAIL_CASES = [  # (kind, dtype, N, CTAs a cluster, units, GROUP_UNITS, TAIL_LOADS)
    ("layer_norm_backward", "float32", 512, 4, 2, 2, 2),  # a cluster of 4, 2 units: a batch a column of one output
    ("layer_norm_backward", "bfloat16", 512, 2, 3, 4, 16),  # 3 units (rows 1, 2 of a batch of 1 or 2 not added)
    ("rms_norm_backward", "float32", 128, 1, 3, 4, 6),  # one CTA a unit (no rank): the whole row, dweight alone
]


@pytest.mark.parametrize("spread", [0, 3])
@pytest.mark.parametrize("case", TAIL_CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in TAIL_CASES])
def test_tail_loads(case, spread: int, monkeypatch) -> None:
    """TAIL_LOADS: the column sums in one level, the last CTA (of its rank) adding every
    unit's partial row, its loads in batches (with TAIL_SPREAD, by pieces drawn by the
    CTAs that see every unit arrive within 3 polls: on the interpreter's clusters, run one
    after another, the last cluster's; one CTA a unit, the grid one cluster: all at once):
    dweight (and dbias) bit for bit the default's two levels' over batches of 1 row (fewer
    rows than units: the units past the grid's not added) and 7, and near float64; dx the
    default's; the workspace, counters included, left zeroed (run_norm, twice on one
    kernel); more units than a group: the default's tail (TAIL_LOADS alone: the same PTX)."""
    from test_rows_backward_bulk import norm_kernel

    from bulkred_dialect.passes.variants import rows_backward, rows_common

    kind, dtype, n, c, units, group, loads = case
    monkeypatch.setattr(rows_bulk_backward, "TAIL_SPREAD", spread)
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 64)
    monkeypatch.setattr(rows_bulk_backward, "CLUSTERS", {c: units})
    monkeypatch.setattr(rows_backward, "GROUP_UNITS", group)
    db = kind == "layer_norm_backward"
    x, dy, w = _rows(kind, n, dtype, 0.5)
    default_k = norm_kernel(kind, n, dtype, dtype, db)
    monkeypatch.setattr(rows_bulk_backward, "TAIL_LOADS", loads)
    bp = _config(kind, n, dtype, db)
    assert (bp.cluster, bp.tail_loads, bp.tail_spread) == (c, loads, spread)
    tail_k = norm_kernel(kind, n, dtype, dtype, db)
    assert not same_ir(tail_k, default_k)
    if spread and c == 1:  # (the interpreter runs the grid as one cluster: its CTAs at once, the pieces shared)
        _whole_grid(tail_k, units)
    assert_the_defaults_column_sums(kind, x, dy, w, dtype, db, units, default_k, tail_k)
    if units < 3:  # (2 units always fit a group: ColumnSums.group >= the square root of the units)
        return
    monkeypatch.setattr(rows_backward, "GROUP_UNITS", 1)  # (3 units in groups of 2: the default's tail)
    monkeypatch.setattr(rows_bulk_backward, "TAIL_LOADS", 0)
    two = norm_kernel(kind, n, dtype, dtype, db)
    monkeypatch.setattr(rows_bulk_backward, "TAIL_LOADS", loads)
    mine = norm_kernel(kind, n, dtype, dtype, db)
    if not spread:  # the same kernel: the same bits on the deterministic interpreter, nothing to run
        assert same_ir(mine, two)
        return
    for a, b in zip(run_norm(kind, x, dy, w, dtype, dtype, db, units, built=mine),
                    run_norm(kind, x, dy, w, dtype, dtype, db, units, built=two), strict=True):
        np.testing.assert_array_equal(a, b)
