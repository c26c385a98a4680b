"""rows_backward.PIPELINE (by default where rows_backward.MEASURED says): a norm's backward on rows_cta and rows_cluster
loads the unit's next row (x, dy, rstd, mean) before the current row's reduction and
carries it over the loop step. On the CPU interpreter, with the CTAs narrowed as in
test_rows: dx, dweight and dbias against float64 (test_rows.test_norm_backward: a row
per unit, both levels of the column sums, the first row loaded before the loop), and,
one unit looping over 5 rows, every output bit for bit the default's (the same rows per
unit, the same order of the column sums)."""

from __future__ import annotations

import numpy as np
import pytest
import test_rows
from test_rows import small_ctas  # noqa: F401 - the CTAs narrowed (autouse)

from bulkred_dialect.passes.variants import rows_backward
from bulkred_dialect.row_kernels import module

CASES = [  # (kind, variant, N, dtype, weight's type, dbias)
    ("layer_norm_backward", "rows_cta", 512, "float32", "float32", True),  # 64 threads x 2 vectors of 4
    ("rms_norm_backward", "rows_cta", 512, "bfloat16", "bfloat16", False),  # bfloat16 carried as words of two
    ("layer_norm_backward", "rows_cluster", 512, "bfloat16", "bfloat16", True),  # 4 CTAs of one warp, exact slices
    ("rms_norm_backward", "rows_cluster", 512, "float32", "float32", False),  # dweight alone, a cluster of float32
]


@pytest.fixture
def taken(monkeypatch):
    """PIPELINE on, and the plans it was asked about recorded (each must pipeline)."""
    monkeypatch.setattr(rows_backward, "PIPELINE", True)
    seen = []
    real = rows_backward.pipelined
    import bulkred_dialect.passes.variants.rows_lower as rows_lower

    monkeypatch.setattr(rows_lower, "pipelined", lambda p, op: seen.append(real(p, op)) or seen[-1])
    return seen


@pytest.mark.parametrize("kind,variant,n,dtype,affine,db", CASES)
def test_pipelined_norm_backward(kind, variant, n, dtype, affine, db, taken, monkeypatch) -> None:
    test_rows.test_norm_backward(kind, variant, n, dtype, affine, db, monkeypatch)
    assert taken == [True]


def _outputs(kind: str, variant: str, n: int, dtype: str, affine: str | None, db: bool, m: int,
             static: bool = False, built=None) -> list[np.ndarray]:
    """The kernel's outputs on fixed random rows (``static``: built for these M rows, else for any M;
    ``built``: that kernel lowered already, by :func:`_lowered`)."""
    rng = np.random.default_rng(7)
    layer = kind == "layer_norm_backward"
    x = test_rows.to_bits(rng.standard_normal((m, n)) * 2 + 0.5, dtype)
    args = [x, test_rows.to_bits(np.zeros((m, n)), dtype), test_rows.to_bits(rng.standard_normal((m, n)), dtype)]
    if affine:
        args.append(test_rows.to_bits(rng.standard_normal(n), affine))
    args += ([rng.standard_normal(m).astype(np.float32)] if layer else []) + [rng.random(m).astype(np.float32) + 0.5]
    args += [test_rows.to_bits(np.zeros(n), affine or dtype) for _ in range(bool(affine) + db)]
    if built is None:
        built = _lowered(kind, variant, n, dtype, affine, db, m if static else None)
    kernel = next(o for o in built.walk() if o.name == "func.func")
    ws = np.zeros(kernel.attributes["bulkred.workspace"].value.data, np.int8)
    return test_rows.interpret(built, *args, ws)


def _lowered(kind: str, variant: str, n: int, dtype: str, affine: str | None, db: bool, m: int | None):
    """The backward kernel of M rows (None: of any M), lowered with the settings as they are now."""
    return test_rows.lowered(module(kind, m, n, dtype, weight=affine, dweight=affine, dbias=dtype if db else None,
                                    variant=variant))


_NEITHER: dict[tuple, list[np.ndarray]] = {}


def _neither(*case) -> list[np.ndarray]:
    """``_outputs(*case, 5)`` with PIPELINE and SHARED_COLUMNS off: the reference of the
    two bit-for-bit tests below, lowered and run once per module (the same settings
    build the same kernel)."""
    assert rows_backward.PIPELINE is False and rows_backward.SHARED_COLUMNS is False
    if case not in _NEITHER:
        _NEITHER[case] = _outputs(*case, 5)
    return [a.copy() for a in _NEITHER[case]]


@pytest.mark.parametrize("kind,variant,n,dtype,affine,db", CASES)
def test_pipelined_bits_are_the_defaults(kind, variant, n, dtype, affine, db, monkeypatch) -> None:
    """5 rows on one unit (a CTA, or a cluster: small_ctas), so that rows 1 to 4 are each
    loaded during the step before, the last one twice: every output's bits as with
    PIPELINE off; the kernel of any M, and (the first two cases) of M = 5 (its stride a
    constant)."""
    static = CASES.index((kind, variant, n, dtype, affine, db)) < 2
    monkeypatch.setattr(rows_backward, "PIPELINE", False)
    monkeypatch.setattr(rows_backward, "SHARED_COLUMNS", False)
    want = _neither(kind, variant, n, dtype, affine, db)
    monkeypatch.setattr(rows_backward, "PIPELINE", True)
    got = _outputs(kind, variant, n, dtype, affine, db, 5)
    if static:
        got += _outputs(kind, variant, n, dtype, affine, db, 5, static=True)
        want = want + want
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("kind,variant,n,dtype,affine,db", [CASES[0], CASES[2]])
def test_pipelined_with_shared_columns(kind, variant, n, dtype, affine, db, monkeypatch) -> None:
    """PIPELINE with each thread's column sums in shared memory (SHARED_COLUMNS, the
    probe's other candidate): 5 rows on one unit, every bit as with neither."""
    monkeypatch.setattr(rows_backward, "PIPELINE", False)
    monkeypatch.setattr(rows_backward, "SHARED_COLUMNS", False)
    want = _neither(kind, variant, n, dtype, affine, db)
    monkeypatch.setattr(rows_backward, "SHARED_COLUMNS", True)
    monkeypatch.setattr(rows_backward, "PIPELINE", True)
    seen = []
    real = rows_backward.shared_columns
    import bulkred_dialect.passes.variants.rows_lower as rows_lower

    monkeypatch.setattr(rows_lower, "shared_columns", lambda p, outs: seen.append(real(p, outs)) or seen[-1])
    got = _outputs(kind, variant, n, dtype, affine, db, 5)
    assert seen == [True]
    for a, b in zip(got, want, strict=True):
        assert a.tobytes() == b.tobytes()


def test_the_measured_settings_by_type_and_n() -> None:
    """PIPELINE and SHARED_COLUMNS default to rows_backward.MEASURED (the H200's probe,
    docs/rows_bench_bwd_h200.md): bfloat16 pipelined to 65536, float32 pipelined with its
    column sums in shared memory from 8193 to 65536, float16 as bfloat16, longer rows neither;
    and rows_cluster takes 16-bit rms_norm backwards to 65536 (float32's to 16384)."""
    from types import SimpleNamespace

    from bulkred_dialect.ops.dtypes import DTYPES
    from bulkred_dialect.passes.variants import rows_common

    assert rows_backward.PIPELINE is None and rows_backward.SHARED_COLUMNS is None

    def plan(dtype, n):
        return SimpleNamespace(dtype=DTYPES[dtype], n=n)

    got = {(d, n): rows_backward.measured(plan(d, n)) for d in ("bfloat16", "float32", "float16")
           for n in (4096, 8192, 16384, 65536, 262144)}
    assert got == {
        ("bfloat16", 4096): (True, False), ("bfloat16", 8192): (True, False), ("bfloat16", 16384): (True, False),
        ("bfloat16", 65536): (True, False), ("bfloat16", 262144): (False, False),
        ("float32", 4096): (False, False), ("float32", 8192): (False, False), ("float32", 16384): (True, True),
        ("float32", 65536): (True, True), ("float32", 262144): (False, False),
        **{("float16", n): (n <= 65536, False) for n in (4096, 8192, 16384, 65536, 262144)},
    }
    # a (kind, type) entry before the type's: float16 layer_norm's column sums in shared memory
    from bulkred_dialect.ops.tile.rows import NormKind

    def kind_plan(kind, dtype, n):
        return SimpleNamespace(kind=kind, dtype=DTYPES[dtype], n=n)

    assert [rows_backward.measured(kind_plan(NormKind.LAYER_NORM_BACKWARD, "float16", n)) for n in (4096, 65536, 262144)] \
        == [(True, True), (True, True), (False, False)]
    assert rows_backward.measured(kind_plan(NormKind.RMS_NORM_BACKWARD, "float16", 4096)) == (True, False)
    assert rows_backward.measured(kind_plan(NormKind.LAYER_NORM_BACKWARD, "bfloat16", 4096)) == (True, False)
    rms = {(d, n): module("rms_norm_backward", None, n, d, weight=d, dweight=d)
           for d, n in (("bfloat16", 65536), ("float16", 65536), ("bfloat16", 131072))}
    ops = {k: next(o for o in m.walk() if o.name == "bulkred.normalize_rows") for k, m in rms.items()}
    assert rows_common.cluster_takes_norm_backward(ops["bfloat16", 65536])
    assert rows_common.cluster_takes_norm_backward(ops["float16", 65536])
    assert not rows_common.cluster_takes_norm_backward(ops["bfloat16", 131072])
