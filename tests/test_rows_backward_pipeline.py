"""rows_backward.PIPELINE (off by default): a norm's backward on rows_cta and rows_cluster
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
             static: bool = False) -> list[np.ndarray]:
    """The kernel's outputs on fixed random rows (``static``: built for these M rows, else for any M)."""
    rng = np.random.default_rng(7)
    layer = kind == "layer_norm_backward"
    x = test_rows.to_bits(rng.standard_normal((m, n)) * 2 + 0.5, dtype)
    args = [x, test_rows.to_bits(np.zeros((m, n)), dtype), test_rows.to_bits(rng.standard_normal((m, n)), dtype)]
    if affine:
        args.append(test_rows.to_bits(rng.standard_normal(n), affine))
    args += ([rng.standard_normal(m).astype(np.float32)] if layer else []) + [rng.random(m).astype(np.float32) + 0.5]
    args += [test_rows.to_bits(np.zeros(n), affine or dtype) for _ in range(bool(affine) + db)]
    built = test_rows.lowered(module(kind, m if static else None, n, dtype, weight=affine, dweight=affine, dbias=dtype if db else None,
                                     variant=variant))
    kernel = next(o for o in built.walk() if o.name == "func.func")
    ws = np.zeros(kernel.attributes["bulkred.workspace"].value.data, np.int8)
    return test_rows.interpret(built, *args, ws)


@pytest.mark.parametrize("kind,variant,n,dtype,affine,db", CASES)
def test_pipelined_bits_are_the_defaults(kind, variant, n, dtype, affine, db, monkeypatch) -> None:
    """5 rows on one unit (a CTA, or a cluster: small_ctas), so that rows 1 to 4 are each
    loaded during the step before, the last one twice: every output's bits as with
    PIPELINE off; the kernel of any M, and (the first two cases) of M = 5 (its stride a
    constant)."""
    static = CASES.index((kind, variant, n, dtype, affine, db)) < 2
    want = _outputs(kind, variant, n, dtype, affine, db, 5)
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
    probe's other candidate): 5 rows on one unit, every bit the default's."""
    want = _outputs(kind, variant, n, dtype, affine, db, 5)
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


def test_off_by_default() -> None:
    """The measured choice stays until the probe says otherwise (docs/rows_bench_bwd_h200.md)."""
    assert rows_backward.PIPELINE is False
