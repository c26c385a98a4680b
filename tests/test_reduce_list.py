"""bulkred.reduce_list and bulkred.scale_list on the CPU interpreter: the lowered kernels
(grid_list, grid_list_scale) run on small lists against numpy in float64, with the
launch narrowed to a few CTAs of one or two warps so that pieces, spans over several
chunks, vector and scalar paths, unaligned addresses and empty tensors all occur."""

from __future__ import annotations

import numpy as np
import pytest

from bulkred_dialect.backend_ptx.runtime import lower_tile_module
from bulkred_dialect.foreach import reduce_list_module, scale_list_module
from bulkred_dialect.foreach_table import descriptor_table
from bulkred_dialect.functions import Reduction
from bulkred_dialect.ops.list_layout import CODES
from bulkred_dialect.interpreter.ptx_memory import DEVICE_ADDRESSES
from bulkred_dialect.interpreter.threads import run_grid
from bulkred_dialect.ops.kernel_attrs import WORKSPACE_ATTR
from bulkred_dialect.ops.tile import kernel_launch
from bulkred_dialect.passes.variants import grid_list

def reduce_module(kind: str, prologue=(), epilogue=(), scale: bool = False, flag: bool = False):
    """A reduce_list kernel ``@k`` built as foreach.py builds it (the builder)."""
    return reduce_list_module(Reduction(kind, "float32", tuple(prologue), tuple(epilogue)), scale=scale, flag=flag, name="k")


def scale_module(clip: bool):
    return scale_list_module(clip, name="k")


_LOWERED: dict[tuple[str, int, int], tuple] = {}


def lowered(module, grid: int, block: int):
    """``module`` lowered with ``grid`` CTAs of ``block`` threads, and its kernel: once per
    (module text, grid, block) in this process (the interpreter does not change the IR;
    some tests run one kernel on several lists)."""
    key = (str(module), grid, block)
    if key not in _LOWERED:
        _LOWERED[key] = _lower(module, grid, block)
    return _LOWERED[key]


def _lower(module, grid: int, block: int):
    m = module.clone()  # lowered in place
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


def run_reduce(module, buffers, dtypes, grid=3, block=32, extra=(), offsets=None):
    m, kernel = lowered(module, grid, block)
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
    mod = reduce_module("sum", ("square",), ("sqrt",))
    _, dst, total, _ = run_reduce(mod, bufs, DTYPES, grid=6)
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
    mod = reduce_module("sum", ("square",), ("sqrt",))
    a = run_reduce(mod, bufs, dtypes, grid=4)
    b = run_reduce(mod, bufs, dtypes, grid=4)
    assert a[1].tobytes() == b[1].tobytes() and a[2].tobytes() == b[2].tobytes()


@pytest.mark.parametrize(
    "kind, prologue, epilogue, ref",
    [
        ("max", ("abs",), (), lambda v: np.abs(v).max(initial=0.0)),
        ("min", ("abs",), (), lambda v: np.abs(v).min(initial=np.inf)),
        ("sum", ("abs",), (), lambda v: np.abs(v).sum()),
        ("sum", ("nonzero",), (), lambda v: float((v != 0).sum())),
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
    _, dst, total, _ = run_reduce(reduce_module("sum", [("pow", 3.0)], [("pow", 1 / 3)]),
                                  bufs, dtypes, grid=2)
    want = [(np.abs(values(b, d)) ** 3).sum() ** (1 / 3) for b, d in zip(bufs, dtypes)]
    np.testing.assert_allclose(dst, want, rtol=1e-4)  # ex2/lg2.approx


def test_unaligned_addresses_take_the_scalar_path():
    base = rand_list(5, [70, 50], ["float32", "float16"])
    mod = reduce_module("sum", ("square",))
    _, dst, _, _ = run_reduce(mod, base, ["float32", "float16"], grid=2, offsets=[4, 2])
    want = [(values(base[0], "float32")[1:] ** 2).sum(), (values(base[1], "float16")[1:] ** 2).sum()]
    np.testing.assert_allclose(dst, want, rtol=2e-6)


def test_unscale_writes_in_place_flags_nonfinite_and_norms_the_rounded_values():
    dtypes = ["float32", "bfloat16", "float16"]
    bufs = rand_list(6, [45, 33, 20], dtypes)
    before = [values(b, d).copy() for b, d in zip(bufs, dtypes)]
    mod = reduce_module("sum", ("square",), ("sqrt",), scale=True, flag=True)
    s = np.array([0.5], np.float32)
    flag = np.zeros(1, np.float32)
    _, dst, total, _, f, _ = run_reduce(mod, bufs, dtypes, grid=3, extra=(s, flag))
    assert f[0] == 0.0
    for b, d, x in zip(bufs, dtypes, before):
        np.testing.assert_array_equal(values(b, d), x * 0.5)  # exact: a power of two
    np.testing.assert_allclose(total[0], np.sqrt(sum(((x * 0.5) ** 2).sum() for x in before)), rtol=2e-6)
    bufs[1][7] = f64_to_bf16(np.array([np.inf]))[0]
    bufs[2][3] = np.nan
    _, dst, total, _, f, _ = run_reduce(mod, bufs, dtypes, grid=3, extra=(s, flag))
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
    mod = reduce_module("sum", ("square",), ("sqrt",))
    m, kernel = lowered(mod, 2, 32)
    table = descriptor_table([], [], [], 2)
    ws = np.zeros(kernel.attributes[WORKSPACE_ATTR].value.data, np.int8)
    _, _, total, _ = run_grid(m, "k", table, np.zeros(1, np.float32), np.full(1, 7, np.float32), ws)
    assert total[0] == 0.0


def test_nan_propagates_through_amax_and_the_norm():
    dtypes = ["float32", "float32"]
    for kind, pro in (("max", ("abs",)), ("sum", ("square",))):
        bufs = rand_list(8, [40, 10], dtypes)
        bufs[0][17] = np.nan
        _, dst, total, _ = run_reduce(reduce_module(kind, pro), bufs, dtypes, grid=2)
        assert np.isnan(dst[0]) and not np.isnan(dst[1]) and np.isnan(total[0]), (kind, dst, total)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")  # the products that overflow float16 (the point)
def test_found_inf_checks_the_inputs_before_the_scale():
    """AMP's rule: found_inf says whether an input was inf or NaN, not whether the
    product overflowed. float16 grads times 1e30, and any finite grad times inf, leave it
    0 (the stored values are inf); a NaN input still sets it."""
    dtypes = ["float16", "float32", "bfloat16"]
    mod = reduce_module("sum", ("square",), ("sqrt",), scale=True, flag=True)
    for s in (1e30, np.inf):
        bufs = rand_list(9, [40, 9, 17], dtypes)
        flag = np.zeros(1, np.float32)
        _, _, total, _, f, _ = run_reduce(mod, bufs, dtypes, grid=2, extra=(np.array([s], np.float32), flag))
        assert f[0] == 0.0, s
        assert np.isinf(values(bufs[0], "float16")).any() and not np.isfinite(total[0])
    bufs = rand_list(10, [40, 9, 17], dtypes)
    bufs[1][4] = np.nan
    _, _, _, _, f, _ = run_reduce(mod, bufs, dtypes, grid=2, extra=(np.array([0.5], np.float32), np.zeros(1, np.float32)))
    assert f[0] == 1.0


# region The table's layout: one definition (ops/list_layout.py) for the host, the ops and the lowering


def test_the_host_table_follows_the_layout_the_kernel_reads():
    """The numpy table's fields sit where ops/list_layout.py says, and the lowered kernel
    (which reads list_layout's offsets) reduces from that table: a field moved in one of
    them and not in the other fails here or in the interpreter runs above."""
    from bulkred_dialect.ops import list_layout as L

    dtypes = ["float16", "float32"]
    bufs = rand_list(11, [5, 70], dtypes)
    table = table_of(bufs, dtypes, grid=3)
    assert table.shape == (1 + 2 + 3, L.COLUMNS) and table.dtype == np.int64
    header = dict(zip(L.HEADER, table[0]))
    assert (header["count"], header["grid"]) == (2, 3) and header["chunk"] % L.ALIGN == 0
    rows = [dict(zip(L.TENSOR, r)) for r in table[1:3]]
    assert [r["numel"] for r in rows] == [5, 70]
    assert [r["code"] % L.ALIGNED for r in rows] == [L.CODES["float16"], L.CODES["float32"]]
    assert rows[1]["start"] == 16 and header["bytes"] == 16 + 70 * 4 + 8  # 10 bytes padded to 16; 280 to 288
    ctas = [dict(zip(L.CTA, r)) for r in table[3:]]
    assert ctas[0]["first"] == 0 and ctas[-1]["stop"] == 2 and ctas[-1]["hi"] == header["bytes"]
    assert L.offset(L.HEADER, "chunk") == 16 and L.ROW_BYTES == 8 * L.COLUMNS
    _, dst, _, _ = run_reduce(reduce_module("max", ("abs",)), bufs, dtypes, grid=3)
    np.testing.assert_array_equal(dst, [np.abs(values(b, d)).max() for b, d in zip(bufs, dtypes)])


def test_the_ops_verify_the_layouts_columns():
    """The ops take a table of list_layout.COLUMNS columns and refuse another, naming it."""
    from bulkred_dialect import builder as T
    from bulkred_dialect.diagnostics import LocatedError
    from bulkred_dialect.ops.list_layout import COLUMNS

    for cols, ok in ((COLUMNS, True), (COLUMNS + 1, False)):
        with T.kernel("k") as k:
            table = k.param("table", [None, cols], "int64")
            T.scale_list(table, k.param("factor", [1], "float32"))
        if ok:
            k.module()
        else:
            with pytest.raises(LocatedError, match=rf"'table' shape must be \[\?x{COLUMNS}\], got \[\?x{cols}\]"):
                k.module()


# endregion

# region Tensors that share memory (the in-place functions refuse them)


def test_first_overlap_names_two_positions():
    from bulkred_dialect.foreach_table import first_overlap

    f32, f16 = CODES["float32"], CODES["float16"]
    assert first_overlap([0, 400, 800], [100, 100, 100], f32) is None  # back to back
    assert first_overlap([800, 0, 400], [100, 100, 100], f32) is None  # in any order
    assert first_overlap([0, 400, 0], [100, 100, 100], f32) == (0, 2)  # the same tensor twice
    assert first_overlap([0, 4, 1000], [100, 100, 3], f32) == (0, 1)  # x[:100] and x[1:]
    assert first_overlap([1000, 0, 2000, 396], [3, 100, 2, 2], f32) == (1, 3)  # its last element
    assert first_overlap([0, 200], [100, 100], [f16, f32]) is None  # 200 bytes of float16 end at 200
    assert first_overlap([0, 199], [100, 100], [f16, f32]) == (0, 1)
    assert first_overlap([0, 0, 8], [0, 0, 0], f32) is None  # empty tensors share nothing
    assert first_overlap([0, 0], [10, 0], f32) is None
    # several pairs: the one whose later tensor comes first in the list
    assert first_overlap([0, 1000, 2000, 1000, 0], [10, 10, 10, 10, 10], f32) == (1, 3)
    assert first_overlap([5], [10], f32) is None and first_overlap([], [], f32) is None


# endregion

# region The list rows (functions.py) and their modules


def test_every_list_row_builds_its_module_and_schema():
    """Each list row's reduction builds and verifies (the builder, no MLIR text) for the
    orders its option takes; its schema marks what it writes; its ord is vector_norm's
    maps; numpy scalars are taken as the Python ones."""
    from bulkred_dialect.functions import FUNCTIONS, LIST_ROWS, LISTS

    for row in LIST_ROWS:
        if row.build is None:
            continue
        for p in (2.0, 1.0, 3.5, np.inf, -np.inf, 0.0):
            for local in (False, True):
                r = row.reduction({"ord": p, "local": local})
                m = reduce_list_module(r, scale=bool(row.scale), flag=bool(row.flag))
                op = next(o for o in m.walk() if o.name == "bulkred.reduce_list")
                assert op.kind.data == r.kind
                if row.name != "foreach_amax":  # vector_norm's own maps (ord 0: the count of nonzeros)
                    single = FUNCTIONS["vector_norm"].build("float32", {"ord": p, "dtype": None})
                    assert (r.kind, r.prologue) == (single.kind, single.prologue)
                    assert r.epilogue == (() if local else single.epilogue)
    assert LISTS["unscale_and_norm_"].schema() == (
        "(Tensor(a!)[] grads, Tensor inv_scale, Tensor(b!) found_inf, float ord) -> Tensor")
    assert LISTS["clip_grad_norm_"].schema() == (
        "(Tensor(a!)[] parameters_or_grads, float max_norm, float ord, bool error_if_nonfinite) -> Tensor")
    assert LISTS["foreach_norm"].schema() == "(Tensor[] tensors, float ord) -> Tensor"
    assert LISTS["total_norm"].reduction({"ord": 0.0}).prologue == ("nonzero",)
    check = {o.name: o.check for o in LISTS["clip_grad_norm_"].options}
    assert check["ord"](np.float32(3)) == 3.0 and check["max_norm"](np.float16(0.5)) == 0.5
    assert check["error_if_nonfinite"](np.bool_(True)) is True


def test_the_public_list_functions_take_numpy_scalar_options():
    """``ord=np.float32(3)`` is taken by total_norm as by vector_norm, bools alike: the
    call goes past the options to the list (refused here: numpy arrays, or no torch),
    while a bad option is named."""
    import bulkred_dialect as bulkred
    from bulkred_dialect.foreach import ListError

    calls = [
        lambda **o: bulkred.total_norm([np.ones(3)], **o),
        lambda **o: bulkred.foreach_norm([np.ones(3)], **{k: v for k, v in o.items() if k == "ord"}),
        lambda **o: bulkred.clip_grad_norm_([np.ones(3)], np.float32(1), **o),
    ]
    for call in calls:
        with pytest.raises(ListError) as e:
            call(ord=np.float32(3), error_if_nonfinite=np.bool_(False))
        assert "'ord'" not in str(e.value) and "error_if_nonfinite" not in str(e.value), str(e.value)
        with pytest.raises(ListError, match="'ord' must be a number"):
            call(ord="fro")
    with pytest.raises(ListError, match="'max_norm' must be a number"):
        bulkred.clip_grad_norm_([np.ones(3)], "1")
    with pytest.raises(ListError, match="'local' must be a bool"):
        bulkred.total_norm([np.ones(3)], local=1)


def test_the_list_functions_docs_and_signatures_are_their_rows():
    import inspect

    import bulkred_dialect as bulkred
    from bulkred_dialect.functions import LIST_ROWS

    for row in LIST_ROWS:
        fn = getattr(bulkred, row.name)
        assert inspect.signature(fn) == row.signature() and fn.__doc__.startswith(row.summary)
        assert row.grad is None


# endregion


def test_the_list_kernels_compile_through_the_compile_driver(monkeypatch):
    """A row's kernel as a call gets it (foreach's cache, compiler.compile_keyed), for a
    GPU that is pretended (sm_90a): the reduce_list with scale and flag and the clip,
    assembled, their parameters in the order the calls pass them, one grid for both (the
    table is built for it)."""
    from bulkred_dialect import foreach as F
    from bulkred_dialect.backend_ptx import device
    from bulkred_dialect.functions import LISTS
    from bulkred_dialect.ops.target import Target

    monkeypatch.setattr(device, "current_arch", lambda: "sm_90a")
    monkeypatch.setattr(F, "_KERNELS", {})
    monkeypatch.setattr(F, "_LIST_KERNELS", {})
    k = F._reduce_kernel(LISTS["unscale_and_norm_"], {"ord": 2.0})
    assert [p.name for p in k.signature.params] == ["table", "dst", "total", "scale", "found_inf"]
    assert F._reduce_kernel(LISTS["unscale_and_norm_"], {"ord": 2.0}) is k  # one look-up from then on
    clip = F._clip_kernel()
    assert [p.name for p in clip.signature.params] == ["table", "factor", "total"]
    assert F._grid(k) == F._grid(clip) == grid_list.list_grid(Target.parse("sm_90a"))
