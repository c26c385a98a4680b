"""bulkred.reduce_list and bulkred.scale_list on the CPU interpreter: the lowered kernels
(grid_list, grid_list_scale) run on small lists against numpy in float64, with the
launch narrowed to a few CTAs of one or two warps so that pieces, spans over several
chunks, vector and scalar paths, unaligned addresses and empty tensors all occur."""

from __future__ import annotations

import numpy as np
import pytest

from bulkred_dialect.backend_ptx.runtime import lower_tile_module
from bulkred_dialect.builder import context
from bulkred_dialect.diagnostics import parse_module
from bulkred_dialect.foreach import reduce_list_text, scale_list_text
from bulkred_dialect.foreach_table import CODES, descriptor_table
from bulkred_dialect.interpreter.ptx_memory import DEVICE_ADDRESSES
from bulkred_dialect.interpreter.threads import run_grid
from bulkred_dialect.ops.kernel_attrs import WORKSPACE_ATTR
from bulkred_dialect.ops.tile import kernel_launch
from bulkred_dialect.passes.variants import grid_list

def reduce_module(kind: str, prologue: str = "", epilogue: str = "", scale: bool = False, flag: bool = False) -> str:
    return reduce_list_text(kind, prologue, epilogue, scale=scale, flag=flag, name="k")


def scale_module(clip: bool) -> str:
    return scale_list_text(clip, name="k")


def lowered(text: str, grid: int, block: int):
    m = parse_module(context(), text, "<test>")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(grid_list, "list_grid", lambda target: grid)
        mp.setattr(grid_list, "BLOCK", block)
        lower_tile_module(m, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
    kernel = next(o for o in m.walk() if o.name == "func.func")
    assert kernel_launch(kernel).grid_dims == (grid, 1, 1)
    return m, kernel


def f64_to_bf16(x: np.ndarray) -> np.ndarray:
    """bfloat16 bits of ``x`` (through float32, rounded to nearest even; NaN kept)."""
    b = np.asarray(x, np.float64).astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(np.asarray(x, np.float64)), np.uint16(0x7FC0), r).astype(np.uint16)


def bf16_to_f64(b: np.ndarray) -> np.ndarray:
    return (np.asarray(b, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def bits(x: np.ndarray, dtype: str) -> np.ndarray:
    """The buffer the kernel sees: float32 as is, float16 as is, bfloat16 as its bits."""
    if dtype == "bfloat16":
        return f64_to_bf16(x.astype(np.float64))
    return x.astype(dtype)


def values(buf: np.ndarray, dtype: str) -> np.ndarray:
    return bf16_to_f64(buf) if dtype == "bfloat16" else buf.astype(np.float64)


def table_of(buffers, dtypes, grid, offsets=None):
    DEVICE_ADDRESSES.clear()
    addrs = []
    for i, b in enumerate(buffers):
        off = 0 if offsets is None else offsets[i]
        addrs.append(DEVICE_ADDRESSES.of(b) + off)
    numels = [b.size - (0 if offsets is None else offsets[i] // b.itemsize) for i, b in enumerate(buffers)]
    return descriptor_table(addrs, numels, [CODES[d] for d in dtypes], grid)


def run_reduce(text, buffers, dtypes, grid=3, block=32, extra=(), offsets=None):
    m, kernel = lowered(text, grid, block)
    table = table_of(buffers, dtypes, grid, offsets)
    dst = np.full(len(buffers), np.nan, np.float32)
    total = np.zeros(1, np.float32)
    ws = np.zeros(kernel.attributes[WORKSPACE_ATTR].value.data, np.int8)
    outs = run_grid(m, "k", table, dst, total, *extra, ws)
    assert not ws[-4:].any(), "the ticket is reset"
    return outs


def rand_list(seed, sizes, dtypes):
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal(n) for n in sizes]
    return [bits(x, d) for x, d in zip(xs, dtypes)]


SIZES = [37, 0, 5, 130, 3, 64]
DTYPES = ["float32", "bfloat16", "float32", "float16", "bfloat16", "float32"]


def test_l2_norms_of_a_mixed_list_span_chunks_and_combine_in_order():
    bufs = rand_list(1, SIZES, DTYPES)
    text = reduce_module("sum", "#bulkred.map<square>", "#bulkred.map<sqrt>")
    _, dst, total, _ = run_reduce(text, bufs, DTYPES, grid=6)
    want = [np.sqrt((values(b, d) ** 2).sum()) for b, d in zip(bufs, DTYPES)]
    np.testing.assert_allclose(dst, want, rtol=2e-6)
    np.testing.assert_allclose(total[0], np.sqrt(sum(w * w for w in want)), rtol=2e-6)
    assert dst[1] == 0.0  # the empty tensor
    # the chunks: 528 bytes over 6 CTAs, 96 each: tensor 3 (float16, 260 bytes) spans three
    table = table_of(bufs, DTYPES, 6)
    chunk = table[0, 2]
    start, n = table[4, 3], table[4, 1]
    assert (start + 2 * n - 1) // chunk - start // chunk >= 2


def test_the_same_bits_twice_and_with_another_block():
    bufs = rand_list(2, [200, 9, 77], ["float32", "float32", "bfloat16"])
    dtypes = ["float32", "float32", "bfloat16"]
    text = reduce_module("sum", "#bulkred.map<square>", "#bulkred.map<sqrt>")
    a = run_reduce(text, bufs, dtypes, grid=4)
    b = run_reduce(text, bufs, dtypes, grid=4)
    assert a[1].tobytes() == b[1].tobytes() and a[2].tobytes() == b[2].tobytes()


@pytest.mark.parametrize(
    "kind, prologue, epilogue, ref",
    [
        ("max", "#bulkred.map<abs>", "", lambda v: np.abs(v).max(initial=0.0)),
        ("min", "#bulkred.map<abs>", "", lambda v: np.abs(v).min(initial=np.inf)),
        ("sum", "#bulkred.map<abs>", "", lambda v: np.abs(v).sum()),
        ("sum", "#bulkred.map<nonzero>", "", lambda v: float((v != 0).sum())),
    ],
)
def test_other_orders(kind, prologue, epilogue, ref):
    sizes, dtypes = [21, 0, 40], ["float32", "float32", "float16"]
    bufs = rand_list(3, sizes, dtypes)
    bufs[0][[2, 5]] = 0
    _, dst, total, _ = run_reduce(reduce_module(kind, prologue, epilogue), bufs, dtypes, grid=2)
    want = [ref(values(b, d)) for b, d in zip(bufs, dtypes)]
    np.testing.assert_allclose(dst, want, rtol=2e-6)
    np.testing.assert_allclose(total[0], ref(np.concatenate([values(b, d) for b, d in zip(bufs, dtypes)])), rtol=2e-6)


def test_p_norm():
    bufs = rand_list(4, [30, 12], ["float32", "bfloat16"])
    dtypes = ["float32", "bfloat16"]
    _, dst, total, _ = run_reduce(reduce_module("sum", "#bulkred.map<pow 3.0>", "#bulkred.map<pow 0.3333333333333333>"),
                                  bufs, dtypes, grid=2)
    want = [(np.abs(values(b, d)) ** 3).sum() ** (1 / 3) for b, d in zip(bufs, dtypes)]
    np.testing.assert_allclose(dst, want, rtol=1e-4)  # ex2/lg2.approx


def test_unaligned_addresses_take_the_scalar_path():
    base = rand_list(5, [70, 50], ["float32", "float16"])
    text = reduce_module("sum", "#bulkred.map<square>")
    _, dst, _, _ = run_reduce(text, base, ["float32", "float16"], grid=2, offsets=[4, 2])
    want = [(values(base[0], "float32")[1:] ** 2).sum(), (values(base[1], "float16")[1:] ** 2).sum()]
    np.testing.assert_allclose(dst, want, rtol=2e-6)


def test_unscale_writes_in_place_flags_nonfinite_and_norms_the_rounded_values():
    dtypes = ["float32", "bfloat16", "float16"]
    bufs = rand_list(6, [45, 33, 20], dtypes)
    before = [values(b, d).copy() for b, d in zip(bufs, dtypes)]
    text = reduce_module("sum", "#bulkred.map<square>", "#bulkred.map<sqrt>", scale=True, flag=True)
    s = np.array([0.5], np.float32)
    flag = np.zeros(1, np.float32)
    _, dst, total, _, f, _ = run_reduce(text, bufs, dtypes, grid=3, extra=(s, flag))
    assert f[0] == 0.0
    for b, d, x in zip(bufs, dtypes, before):
        np.testing.assert_array_equal(values(b, d), x * 0.5)  # exact: a power of two
    np.testing.assert_allclose(total[0], np.sqrt(sum(((x * 0.5) ** 2).sum() for x in before)), rtol=2e-6)
    bufs[1][7] = f64_to_bf16(np.array([np.inf]))[0]
    bufs[2][3] = np.nan
    _, dst, total, _, f, _ = run_reduce(text, bufs, dtypes, grid=3, extra=(s, flag))
    assert f[0] == 1.0 and np.isinf(dst[1]) and np.isnan(dst[2]) and np.isnan(total[0])


@pytest.mark.parametrize("clip", [True, False])
def test_scale_list(clip):
    dtypes = ["float32", "bfloat16"]
    bufs = rand_list(7, [50, 19], dtypes)
    before = [values(b, d).copy() for b, d in zip(bufs, dtypes)]
    m, _ = lowered(scale_module(clip), 2, 32)
    table = table_of(bufs, dtypes, 2)
    if clip:
        run_grid(m, "k", table, np.array([1.0], np.float32), np.array([4.0 - 1e-6], np.float32))
        coef = np.float32(1.0) / np.float32(np.float32(4.0 - 1e-6) + np.float32(1e-6))
    else:
        run_grid(m, "k", table, np.array([0.25], np.float32))
        coef = 0.25
    np.testing.assert_allclose(values(bufs[0], "float32"), before[0] * coef, rtol=1e-7)
    np.testing.assert_allclose(values(bufs[1], "bfloat16"), before[1] * coef, rtol=2**-8)
    if clip:  # a coefficient >= 1 writes nothing
        snap = [b.copy() for b in bufs]
        run_grid(m, "k", table, np.array([1.0], np.float32), np.array([0.5], np.float32))
        assert all((a == b).all() for a, b in zip(snap, bufs))


def test_an_empty_list_gives_the_identity():
    text = reduce_module("sum", "#bulkred.map<square>", "#bulkred.map<sqrt>")
    m, kernel = lowered(text, 2, 32)
    table = descriptor_table([], [], [], 2)
    ws = np.zeros(kernel.attributes[WORKSPACE_ATTR].value.data, np.int8)
    _, _, total, _ = run_grid(m, "k", table, np.zeros(1, np.float32), np.full(1, 7, np.float32), ws)
    assert total[0] == 0.0


def test_nan_propagates_through_amax_and_the_norm():
    dtypes = ["float32", "float32"]
    for kind, pro in (("max", "#bulkred.map<abs>"), ("sum", "#bulkred.map<square>")):
        bufs = rand_list(8, [40, 10], dtypes)
        bufs[0][17] = np.nan
        _, dst, total, _ = run_reduce(reduce_module(kind, pro), bufs, dtypes, grid=2)
        assert np.isnan(dst[0]) and not np.isnan(dst[1]) and np.isnan(total[0]), (kind, dst, total)
