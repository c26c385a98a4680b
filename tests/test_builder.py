"""The Python builder (bulkred_dialect/builder.py): it builds the IR of the MLIR text,
rejects bad arguments with ValueErrors that name the argument, and reports verifier
errors at the Python line that built the op; docs/builder.md's code blocks run."""

from __future__ import annotations

import contextlib
import io
import re
import runpy
import sys
from pathlib import Path

import pytest
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    FileLineColLoc,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    StringAttr,
    bf16,
    f16,
    f128,
    f32,
    f64,
    i16,
    i32,
    i64,
)

from bulkred_dialect import builder as T
from bulkred_dialect.cli import main as bulkred_opt
from bulkred_dialect.diagnostics import LocatedError, parse_module
from bulkred_dialect.passes.lower_tile_reductions import LowerTileReductionsPass
from bulkred_dialect.ops.tile import (
    ELEMENT_TYPES,
    BulkCopyOp,
    BulkReduceOp,
    CopyOp,
    LaunchAttr,
    MemoryScope,
    ReduceOp,
    buffer_type,
)

ROOT = Path(__file__).resolve().parents[1]
SEED_MLIR = ROOT / "examples" / "seed_sum32.mlir"
SEED_PY = ROOT / "examples" / "seed_sum32.py"
DOC = ROOT / "docs" / "builder.md"


def _parse(text: str) -> ModuleOp:
    return parse_module(T.context(), text, "<test>")


def _seed(target: str | None = None) -> ModuleOp:
    with T.kernel("test_func", grid=[1], block=[1], cluster=[1]) as k:
        A = k.param("A", [32], "float32")
        B = k.param("B", [1], "float32")
        A_local = T.alloc_buffer([32], "float32", scope="local", name="A_local")
        B_local = T.alloc_buffer([1], "float32", scope="local", name="B_local")
        T.copy(A, A_local)
        T.sum(B_local, A_local, accum=False)
        T.copy(B_local, B)
    return k.module(target=target)


def _ops(m: ModuleOp, cls: type) -> list:
    return [op for op in m.walk() if isinstance(op, cls)]


def _bt(shape: list[int], t, scope: MemoryScope) -> MemRefType:
    return buffer_type(shape, t, scope)


# region The seed program


def test_seed_equals_parsed_mlir():
    built = _seed()
    seed = _parse(SEED_MLIR.read_text())
    assert built.is_structurally_equivalent(seed)
    assert str(built) == str(seed)


def test_seed_differs_when_the_program_differs():
    # The comparison above can fail: accum=True is a different program.
    with T.kernel("test_func", grid=[1], block=[1], cluster=[1]) as k:
        A = k.param("A", [32], "float32")
        B = k.param("B", [1], "float32")
        A_local = T.alloc_buffer([32], "float32", name="A_local")
        B_local = T.alloc_buffer([1], "float32", name="B_local")
        T.copy(A, A_local)
        T.sum(B_local, A_local, accum=True)
        T.copy(B_local, B)
    assert not k.module().is_structurally_equivalent(_parse(SEED_MLIR.read_text()))


def test_seed_with_target_sets_module_attribute():
    m = _seed("sm_100a")
    assert m.attributes[T.TARGET_ATTR] == StringAttr("sm_100a")
    assert str(m).startswith('builtin.module attributes {bulkred.target = "sm_100a"} {')


def test_printed_module_parses_with_bulkred_opt(tmp_path, capsys):
    text = str(_seed("sm_100a"))
    path = tmp_path / "seed.mlir"
    path.write_text(text)
    assert bulkred_opt([str(path)]) == 0
    assert capsys.readouterr().out.strip() == text


def test_example_script_prints_the_seed(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [str(SEED_PY)])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(SEED_PY), run_name="__main__")
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == str(_parse(SEED_MLIR.read_text())).strip()


def test_example_script_rejects_bad_target(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [str(SEED_PY), "--target", "sm100"])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(SEED_PY), run_name="__main__")
    assert exit_.value.code == 1
    assert "'target' of T.module must look like sm_90, sm_90a or sm_100a, got 'sm100'" in capsys.readouterr().err


# endregion

# region Kernels and modules


def test_kernel_launch_and_params():
    with T.kernel("k2", grid=[8, 2], block=128, cluster=[4]) as k:
        X = k.param("X", [4, 16], "int64")
        Y = k.param("Y", 16, "float16")
    m = k.module()
    (fn,) = _ops(m, func.FuncOp)
    assert fn.sym_name.data == "k2"
    assert fn.attributes[T.LAUNCH_ATTR] == LaunchAttr([8, 2], [128], [4])
    assert [a.type for a in fn.body.block.args] == [
        _bt([4, 16], i64, MemoryScope.GLOBAL),
        _bt([16], f16, MemoryScope.GLOBAL),
    ]
    assert fn.function_type.inputs.data == (X.type, Y.type)
    assert [a.name_hint for a in fn.body.block.args] == ["X", "Y"]
    assert isinstance(fn.body.block.last_op, func.ReturnOp)


def test_param_before_with_block():
    k = T.kernel("pre")
    A = k.param("A", [4], "float32")
    with k:
        T.copy(A, T.alloc_buffer([4], "float32"))
    assert "func.func @pre(%A: memref<4xf32, #bulkred.scope<global>>)" in str(k.module())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"grid": [3], "cluster": [2]}, "'grid' [3, 1, 1] must be a multiple of 'cluster' [2, 1, 1] in every dimension"),
        ({"grid": [1, 1, 1, 1]}, "'grid' of T.kernel must have 1 to 3 entries, got 4"),
        ({"block": []}, "'block' of T.kernel must be a non-empty list of positive integers, got []"),
        ({"block": [0]}, "'block' of T.kernel must be a non-empty list of positive integers, got [0]"),
        ({"cluster": "2"}, "'cluster' of T.kernel must be a non-empty list of positive integers, got '2'"),
        ({"block": [2048]}, "'block' x dimension must be <= 1024, got 2048"),
        ({"block": [8, 8, 128]}, "'block' z dimension must be <= 64, got 128"),
        ({"block": [32, 32, 2]}, "'block' [32, 32, 2] has 2048 threads, more than 1024 per block"),
        ({"grid": [1, 70000]}, "'grid' y dimension must be <= 65535, got 70000"),
        (
            {"grid": [32], "cluster": [32]},
            "'cluster' [32, 1, 1] has 32 CTAs, more than 16 (8 portable, up to 16 non-portable)",
        ),
    ],
)
def test_kernel_bad_launch(kwargs, message):
    with pytest.raises(ValueError) as e:
        T.kernel("k", **kwargs)
    assert str(e.value) == message


@pytest.mark.parametrize(
    ("kwargs", "cluster"),
    [({"grid": [8], "block": [1024], "cluster": [8]}, "[8]"), ({"grid": [16], "block": [32, 32], "cluster": [16]}, "[16]")],
)
def test_kernel_cluster_limits_accepted(kwargs, cluster):
    with T.kernel("k", **kwargs) as k:
        pass
    assert f"cluster = {cluster}" in str(k.module())


@pytest.mark.parametrize("name", ["", "1k", "a-b", None])
def test_kernel_bad_name(name):
    with pytest.raises(ValueError, match=r"'name' of T.kernel must be an identifier"):
        T.kernel(name)


def test_param_errors():
    with T.kernel("params") as k:
        k.param("A", [4], "float32")
        with pytest.raises(ValueError, match="kernel 'params' already has a parameter named 'A'"):
            k.param("A", [4], "float32")
        with pytest.raises(ValueError, match=r"'dtype' of T.param must be one of int16, .*, got 'float8'"):
            k.param("B", [4], "float8")
        with pytest.raises(ValueError, match=r"'shape' of T.param must be a non-empty list of positive integers, got \[-1\]"):
            k.param("B", [-1], "float32")
        with pytest.raises(ValueError, match=r"'name' of T.param must be an identifier"):
            k.param("B c", [4], "float32")
    with pytest.raises(ValueError, match="k.param must be called before kernel 'params' is closed"):
        k.param("C", [4], "float32")


def test_module_is_fresh_each_call_and_holds_several_kernels():
    with T.kernel("one") as k1:
        k1.param("A", [4], "float32")
    with T.kernel("two", grid=[4], cluster=[2]) as k2:
        pass
    m1, m2 = k1.module(), k1.module()
    assert m1 is not m2 and str(m1) == str(m2)
    both = T.module(k1, k2, target="sm_90a")
    assert [f.sym_name.data for f in _ops(both, func.FuncOp)] == ["one", "two"]
    assert both.attributes[T.TARGET_ATTR] == StringAttr("sm_90a")


def test_module_errors():
    with pytest.raises(ValueError, match="T.module needs at least one kernel"):
        T.module()
    with pytest.raises(ValueError, match="T.module takes kernels from T.kernel, got int 3"):
        T.module(3)  # type: ignore[arg-type]
    with T.kernel("same") as a:
        pass
    with T.kernel("same") as b:
        pass
    with pytest.raises(ValueError, match="two kernels are named 'same'"):
        T.module(a, b)
    with pytest.raises(ValueError, match="'target' of T.module must look like sm_90, sm_90a or sm_100a, got 'sm_9x'"):
        a.module(target="sm_9x")
    with pytest.raises(ValueError, match="kernel 'never' has no body"):
        T.kernel("never").module()


def test_kernel_states():
    with T.kernel("outer") as outer:
        with pytest.raises(ValueError, match="kernels cannot nest: kernel 'outer' is still open when entering 'inner'"):
            with T.kernel("inner"):
                pass
        with pytest.raises(ValueError, match="kernel 'outer' is still open: build the module after its 'with' block"):
            outer.module()
    with pytest.raises(ValueError, match="kernel 'outer' can be entered only once"):
        with outer:
            pass
    failed = T.kernel("failed")
    with pytest.raises(RuntimeError):
        with failed:
            raise RuntimeError("user code failed")
    with pytest.raises(ValueError, match="kernel 'failed' is incomplete: its 'with' block raised an exception"):
        failed.module()
    # The failed block left no kernel open.
    with T.kernel("after") as after:
        pass
    assert _ops(after.module(), func.ReturnOp)


def test_ops_outside_a_kernel():
    with pytest.raises(ValueError, match=r"T.alloc_buffer must be called inside a 'with T.kernel\(...\)' block"):
        T.alloc_buffer([4], "float32")
    with T.kernel("k") as k:
        A = k.param("A", [4], "float32")
    with pytest.raises(ValueError, match=r"T.copy must be called inside a 'with T.kernel\(...\)' block"):
        T.copy(A, A)


def test_plain_xdsl_ops_land_in_the_kernel():
    with T.kernel("mixed") as k:
        c = arith.ConstantOp(IntegerAttr(7, i32))
    (fn,) = _ops(k.module(), func.FuncOp)
    assert [op.name for op in fn.body.block.ops] == ["arith.constant", "func.return"]
    assert c.parent is k.body


# endregion

# region Buffers


@pytest.mark.parametrize(
    ("dtype", "element"),
    [
        ("float32", f32),
        ("float16", f16),
        ("bfloat16", bf16),
        ("float64", f64),
        ("int16", i16),
        ("int32", i32),
        ("int64", i64),
        (f16, f16),
        (i16, i16),
    ],
)
def test_dtypes(dtype, element):
    assert T.dtype_of(dtype) == element
    with T.kernel("dt") as k:
        buf = T.alloc_buffer([2, 8], dtype)
    assert buf.type == _bt([2, 8], element, MemoryScope.LOCAL)
    k.module()


def test_dtypes_are_the_tile_element_types():
    assert sorted(map(str, T.DTYPES.values())) == sorted(map(str, ELEMENT_TYPES))
    assert len(set(T.DTYPES.values())) == len(T.DTYPES)


@pytest.mark.parametrize(
    "dtype",
    ["float8", "f32", "int8", "uint32", "int128", IntegerType(32, Signedness.SIGNED), IntegerType(8), f128, 32, None],
)
def test_unknown_dtype(dtype):
    with T.kernel("dt") as k:
        with pytest.raises(ValueError) as e:
            T.alloc_buffer([4], dtype)
    assert str(e.value) == (
        f"'dtype' of T.alloc_buffer must be one of int16, int32, int64, float16, bfloat16, float32, float64, "
        f"got {dtype!r}"
    )
    k.module()


@pytest.mark.parametrize("kind", ["sum", "max", "min", "and", "or", "xor"])
def test_int16_reduction_lowers(kind):
    with T.kernel("r16", grid=[1], block=[1]) as k:
        X = k.param("X", [4, 9], "int16")
        Y = k.param("Y", [4], "int16")
        x = T.alloc_buffer([4, 9], "int16")
        y = T.alloc_buffer([4], "int16")
        T.copy(X, x)
        T.reduce(kind, y, x)
        T.copy(y, Y)
    m = k.module(target="sm_90a")
    LowerTileReductionsPass().apply(T.context(), m)
    m.verify()
    op = "add" if kind == "sum" else kind
    assert f"ptx.{op} {'b16' if kind in ('and', 'or', 'xor') else 's16'}" in str(m)


@pytest.mark.parametrize(
    ("scope", "expected"),
    [("local", MemoryScope.LOCAL), ("shared", MemoryScope.SHARED), ("cluster_shared", MemoryScope.CLUSTER_SHARED)],
)
def test_alloc_buffer_scopes(scope, expected):
    with T.kernel("s") as k:
        buf = T.alloc_buffer([16], "float32", scope=scope, name="buf")
    assert buf.type == _bt([16], f32, expected)
    assert isinstance(buf.owner, memref.AllocaOp)
    assert buf.name_hint == "buf"
    assert f"%buf = memref.alloca() : memref<16xf32, #bulkred.scope<{scope}>>" in str(k.module())


def test_alloc_buffer_default_scope_is_local():
    with T.kernel("d"):
        buf = T.alloc_buffer([4], "int32")
    assert buf.type == _bt([4], i32, MemoryScope.LOCAL)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scope": "register"}, "'scope' of T.alloc_buffer must be one of local, shared, cluster_shared, got 'register'"),
        ({"scope": "Shared"}, "'scope' of T.alloc_buffer must be one of local, shared, cluster_shared, got 'Shared'"),
        (
            {"scope": "global"},
            "'scope' of T.alloc_buffer must be one of local, shared, cluster_shared, got 'global' "
            "(global buffers are kernel parameters: use k.param)",
        ),
        ({"shape": [0]}, "'shape' of T.alloc_buffer must be a non-empty list of positive integers, got [0]"),
        ({"shape": []}, "'shape' of T.alloc_buffer must be a non-empty list of positive integers, got []"),
        ({"shape": [2.0]}, "'shape' of T.alloc_buffer must be a non-empty list of positive integers, got [2.0]"),
        ({"shape": [True]}, "'shape' of T.alloc_buffer must be a non-empty list of positive integers, got [True]"),
        ({"name": "9lives"}, "'name' of T.alloc_buffer must be an identifier ([A-Za-z_][A-Za-z0-9_]*), got '9lives'"),
    ],
)
def test_alloc_buffer_errors(kwargs, message):
    args = {"shape": [4], "dtype": "float32", **kwargs}
    with T.kernel("e"):
        with pytest.raises(ValueError) as e:
            T.alloc_buffer(**args)
    assert str(e.value) == message


def test_alloc_shared_and_mbarrier():
    with T.kernel("sm") as k:
        s = T.alloc_shared([64], "bfloat16", name="s")
        m = T.alloc_mbarrier(name="bar")
    assert s.type == _bt([64], bf16, MemoryScope.SHARED)
    assert m.type == _bt([1], i64, MemoryScope.SHARED)
    assert "%bar = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>" in str(k.module())


# endregion

# region Reductions and copies


@pytest.mark.parametrize("kind", ["sum", "max", "min", "and", "or", "xor"])
@pytest.mark.parametrize("scope", ["thread", "warp", "cta", "cluster"])
def test_reduce_kinds_and_scopes(kind, scope):
    with T.kernel("r") as k:
        src = T.alloc_buffer([4, 32], "int32")
        dst = T.alloc_buffer([4], "int32")
        op = T.reduce(kind, dst, src, scope=scope)
    assert isinstance(op, ReduceOp)
    assert (op.kind.data, op.scope.data) == (kind, scope)
    assert (op.src, op.dst) == (src, dst)
    assert op.accum is None and op.variant is None
    assert f"bulkred.reduce {kind} {scope} %" in str(k.module())


@pytest.mark.parametrize(("fn", "kind"), [(T.sum, "sum"), (T.max, "max"), (T.min, "min")])
def test_sum_max_min(fn, kind):
    with T.kernel("r") as k:
        src = T.alloc_buffer([32], "float32")
        dst = T.alloc_buffer([1], "float32")
        op = fn(dst, src, scope="warp", accum=True, variant="warp_shuffle")
    assert op.kind.data == kind and op.scope.data == "warp"
    assert op.accum is not None and op.variant == StringAttr("warp_shuffle")
    assert f'bulkred.reduce {kind} warp accum variant "warp_shuffle" %' in str(k.module())


def test_reduce_by_keyword():
    with T.kernel("kw"):
        src = T.alloc_buffer([8], "float32")
        dst = T.alloc_buffer([1], "float32")
        op = T.sum(src=src, dst=dst)
    assert (op.src, op.dst) == (src, dst)


def test_reduce_argument_errors():
    with T.kernel("re"):
        src = T.alloc_buffer([8], "float32")
        dst = T.alloc_buffer([1], "float32")
        with pytest.raises(ValueError, match="'kind' of T.reduce must be one of sum, max, min, and, or, xor, prod, any, all, argmax, argmin, var, logsumexp, nanmean, minmax, got 'mean'"):
            T.reduce("mean", dst, src)
        with pytest.raises(ValueError, match="'scope' of T.sum must be one of thread, warp, cta, cluster, grid, got 'block'"):
            T.sum(dst, src, scope="block")
        with pytest.raises(ValueError, match="'axes' of T.sum is only valid at grid scope, got scope thread"):
            T.sum(dst, src, axes=[0])
        with pytest.raises(ValueError, match="'deterministic' of T.sum must be True or False, got 1"):
            T.sum(dst, src, deterministic=1)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="'scope' of T.reduce must be one of thread, warp, cta, cluster, grid, got 'local'"):
            T.reduce("max", dst, src, scope="local")
        with pytest.raises(ValueError, match="'accum' of T.max must be True or False, got 1"):
            T.max(dst, src, accum=1)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="'variant' of T.min must be a non-empty string or None, got ''"):
            T.min(dst, src, variant="")
        with pytest.raises(ValueError) as e:
            T.sum(src, dst)
        assert str(e.value) == (
            "T.sum takes (dst, src) like TIRx: 'dst' has shape [8] and 'src' has shape [1], "
            "which reduces the other way; swap the arguments"
        )


def test_non_buffer_arguments():
    with T.kernel("nb"):
        buf = T.alloc_buffer([4], "float32")
        plain = memref.AllocaOp.get(f32, shape=[4]).memref  # a memref without #bulkred.scope
        with pytest.raises(ValueError, match=r"'src' of T.copy must be a buffer from k.param or T.alloc_buffer, got list \[1, 2\]"):
            T.copy([1, 2], buf)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=r"'dst' of T.copy must be a buffer .*, got a value of type memref<4xf32>"):
            T.copy(buf, plain)
        with pytest.raises(ValueError, match=r"'mbar' of T.bulk_copy must be a buffer .*, got int 0"):
            T.bulk_copy(buf, buf, mbar=0)  # type: ignore[arg-type]


def test_buffer_of_another_kernel():
    with T.kernel("first") as k1:
        a = T.alloc_buffer([4], "float32")
    with T.kernel("second"):
        b = T.alloc_buffer([4], "float32")
        with pytest.raises(ValueError, match="'src' of T.copy belongs to kernel 'first', not to the open kernel 'second'"):
            T.copy(a, b)
    k1.module()


def test_copy():
    with T.kernel("c") as k:
        g = k.param("g", [2, 8], "int64")
        s = T.alloc_shared([2, 8], "int64")
        op = T.copy(g, s)
    assert isinstance(op, CopyOp) and (op.src, op.dst) == (g, s)
    assert "bulkred.copy %g, %0 : memref<2x8xi64, #bulkred.scope<global>>, memref<2x8xi64, #bulkred.scope<shared>>" in str(
        k.module()
    )


# endregion

# region Bulk operations


def test_bulk_copy_four_directions():
    with T.kernel("bc", grid=[4], cluster=[4]) as k:
        g = k.param("g", [64], "float32")
        s = T.alloc_shared([64], "float32")
        c = T.alloc_buffer([64], "float32", scope="cluster_shared")
        mbar = T.alloc_mbarrier()
        ops = [
            T.bulk_copy(g, s, mbar=mbar),
            T.bulk_copy(g, c, mbar=mbar, rank=0),
            T.bulk_copy(s, c, mbar=mbar, rank=T.cluster_rank()),
            T.bulk_copy(s, g),
        ]
    m = k.module()
    assert all(isinstance(op, BulkCopyOp) for op in ops)
    assert [(op.src, op.dst, op.mbar) for op in ops] == [(g, s, mbar), (g, c, mbar), (s, c, mbar), (s, g, None)]
    assert all(op.cta_mask is None for op in ops)
    assert str(m) == str(_parse(str(m)))


@pytest.mark.parametrize(("mask", "printed"), [(0b1111, 15), (0x8001, -32767), (0xFFFF, -1)])
def test_bulk_copy_multicast_int(mask, printed):
    with T.kernel("mc", grid=[16], cluster=[16]) as k:
        g = k.param("g", [64], "float32")
        c = T.alloc_buffer([64], "float32", scope="cluster_shared")
        mbar = T.alloc_mbarrier()
        op = T.bulk_copy(g, c, mbar=mbar, multicast=mask)
    assert isinstance(op.cta_mask.owner, arith.ConstantOp)
    assert op.cta_mask.owner.value.value.data & 0xFFFF == mask
    m = k.module()
    assert f"arith.constant {printed} : i16" in str(m)
    assert m.is_structurally_equivalent(_parse(str(m)))


def test_bulk_copy_multicast_value():
    with T.kernel("mv", grid=[2], cluster=[2]) as k:
        g = k.param("g", [64], "float32")
        c = T.alloc_buffer([64], "float32", scope="cluster_shared")
        mask = arith.ConstantOp(IntegerAttr(3, i16)).result
        op = T.bulk_copy(g, c, mbar=T.alloc_mbarrier(), multicast=mask)
    assert op.cta_mask is mask
    k.module()


@pytest.mark.parametrize("mask", [0, 1 << 16, -1, True, "15"])
def test_bulk_copy_bad_multicast(mask):
    with T.kernel("bm"):
        g = T.alloc_shared([64], "float32")
        with pytest.raises(ValueError, match=r"'multicast' of T.bulk_copy must be a CTA mask 1..0xffff \(bit i = CTA rank i\) or an i16 value, got"):
            T.bulk_copy(g, g, multicast=mask)  # type: ignore[arg-type]


def test_bulk_reduce():
    with T.kernel("br", grid=[2], cluster=[2]) as k:
        out = k.param("out", [4, 4], "int32")
        s = T.alloc_shared([4, 4], "int32")
        peer = T.alloc_buffer([4, 4], "int32", scope="cluster_shared")
        mbar = T.alloc_mbarrier()
        to_global = T.bulk_reduce("max", s, out)
        to_peer = T.bulk_reduce("and", s, peer, mbar=mbar, rank=1)
    m = k.module()
    assert isinstance(to_global, BulkReduceOp) and to_global.kind.data == "max"
    assert (to_global.src, to_global.dst, to_global.mbar) == (s, out, None)
    assert (to_peer.kind.data, to_peer.src, to_peer.dst, to_peer.mbar) == ("and", s, peer, mbar)
    assert m.is_structurally_equivalent(_parse(str(m)))
    with T.kernel("br2"):
        with pytest.raises(ValueError, match="'kind' of T.bulk_reduce must be one of sum, max, min, and, or, xor, got 'add'"):
            T.bulk_reduce("add", s, out)


# endregion

# region Verifier errors, located at the Python call


def _located_error(build) -> tuple[LocatedError, int]:
    """Build a kernel with ``build(k)``, which returns the line of the bad call."""
    with T.kernel("bad", grid=[2], cluster=[2]) as k:
        line = build(k)
    with pytest.raises(LocatedError) as e:
        k.module()
    return e.value, line


def _this_line() -> int:
    return sys._getframe(1).f_lineno


def test_shape_mismatch_is_located():
    def build(k):
        src = T.alloc_buffer([32], "float32")
        dst = T.alloc_buffer([2], "float32")
        line = _this_line() + 1
        T.sum(dst, src)
        return line

    err, line = _located_error(build)
    assert err.op.name == "bulkred.reduce"
    loc = err.op.location
    assert isinstance(loc, FileLineColLoc)
    assert (Path(loc.filename.data), loc.line.data, loc.column.data) == (Path(__file__), line, 9)
    assert str(err) == (
        f"{__file__}:{line}:9: error: 'bulkred.reduce' 'dst' shape must be [1] to reduce 'src' [32] "
        "along its last axis, got [2]"
    )


@pytest.mark.parametrize(
    ("build", "op_name", "message"),
    [
        (
            lambda k: T.max(T.alloc_buffer([1], "float16"), T.alloc_buffer([8], "float32")),
            "bulkred.reduce",
            "'dst' element type must equal 'src' element type f32 below grid scope, got f16",
        ),
        (
            lambda k: T.reduce("xor", T.alloc_buffer([1], "float32"), T.alloc_buffer([8], "float32")),
            "bulkred.reduce",
            "'kind' xor needs an integer element type, got f32",
        ),
        (
            lambda k: T.copy(T.alloc_buffer([8], "float32"), T.alloc_buffer([8], "int32")),
            "bulkred.copy",
            "'dst' must have the shape and element type of 'src' memref<8xf32, #bulkred.scope<local>>, "
            "got memref<8xi32, #bulkred.scope<local>>",
        ),
        (
            lambda k: T.bulk_copy(k.param("g", [3], "float32"), T.alloc_shared([3], "float32"), mbar=T.alloc_mbarrier()),
            "bulkred.bulk_copy",
            "bulk size must be a multiple of 16 bytes, got 12",
        ),
        (
            lambda k: T.bulk_copy(k.param("g", [8], "float32"), T.alloc_shared([8], "float32")),
            "bulkred.bulk_copy",
            "a bulk copy into shared needs an 'mbar' operand",
        ),
        (
            lambda k: T.bulk_copy(T.alloc_buffer([8], "float32"), T.alloc_shared([8], "float32"), mbar=T.alloc_mbarrier()),
            "bulkred.bulk_copy",
            "bulk copy from local to shared is not supported "
            "(valid: global->shared, global->cluster_shared, shared->cluster_shared, shared->global)",
        ),
        (
            lambda k: T.bulk_copy(
                k.param("g", [8], "float32"), T.alloc_shared([8], "float32"), mbar=T.alloc_mbarrier(), multicast=3
            ),
            "bulkred.bulk_copy",
            "'cta_mask' (multicast) is only valid for a global -> cluster_shared copy",
        ),
        (
            lambda k: T.bulk_reduce("sum", T.alloc_shared([8], "int32"), T.alloc_buffer([8], "int32", scope="cluster_shared")),
            "bulkred.bulk_reduce",
            "a bulk reduce into cluster_shared needs an 'mbar' operand",
        ),
        (
            lambda k: T.bulk_reduce("sum", T.alloc_shared([8], "float32"), T.alloc_buffer([8], "float32", scope="cluster_shared")),
            "bulkred.bulk_reduce",
            "'kind' sum on element type f32 has no cp.reduce.async.bulk form into cluster_shared (valid .type for .add: u32, s32, u64)",
        ),
        (
            lambda k: T.bulk_reduce("max", T.alloc_shared([8], "float32"), k.param("g", [8], "float32")),
            "bulkred.bulk_reduce",
            "'kind' max on element type f32 has no cp.reduce.async.bulk form into global (valid .type for .max: u32, s32, u64, s64, f16, bf16)",
        ),
        (
            lambda k: T.bulk_reduce("sum", k.param("g", [8], "float32"), k.param("h", [8], "float32")),
            "bulkred.bulk_reduce",
            "operand 'src' must be in scope shared, got global",
        ),
    ],
)
def test_verifier_errors(build, op_name, message):
    def build_and_line(k):
        build(k)
        return 0

    err, _ = _located_error(build_and_line)
    assert (err.op.name, err.message) == (op_name, message)
    assert str(err).endswith(f": error: '{op_name}' {message}")
    assert str(err).startswith(f"{__file__}:")


# endregion

# region docs/builder.md


def _doc_blocks() -> list[tuple[int, str, str | None]]:
    """(line, python code, expected stdout or None) for each python block of the doc;
    an ``mlir`` or ``text`` block right after a python block is what it prints."""
    lines = DOC.read_text().splitlines()
    blocks: list[tuple[int, str, str]] = []  # (first line, language, text)
    i = 0
    while i < len(lines):
        m = re.fullmatch(r"```(\w*)", lines[i])
        if m is None:
            i += 1
            continue
        j = i + 1
        while lines[j] != "```":
            j += 1
        blocks.append((i + 2, m.group(1), "\n".join(lines[i + 1 : j]) + "\n"))
        i = j + 1
    out = []
    for n, (line, lang, text) in enumerate(blocks):
        if lang != "python":
            continue
        expected = None
        if n + 1 < len(blocks) and blocks[n + 1][1] in ("mlir", "text"):
            between = lines[line + text.count("\n") : blocks[n + 1][0] - 2]
            if all(not s.strip() for s in between):
                expected = blocks[n + 1][2]
        out.append((line, text, expected))
    return out


DOC_BLOCKS = _doc_blocks()


def test_doc_has_checked_examples():
    assert len(DOC_BLOCKS) >= 5
    assert sum(expected is not None for _, _, expected in DOC_BLOCKS) >= 5


@pytest.mark.parametrize(("line", "code", "expected"), DOC_BLOCKS, ids=[f"builder.md:{b[0]}" for b in DOC_BLOCKS])
def test_doc_code_block(line, code, expected):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "example.py", "exec"), {"__name__": f"builder_md_{line}"})
    if expected is not None:
        assert out.getvalue() == expected


# endregion


# region Shapes: numpy integers are integers; sizes must fit the index type


@pytest.mark.parametrize("make", [lambda np: [np.int64(4)], lambda np: np.int32(4), lambda np: (np.uint8(4),)])
def test_numpy_integer_shapes_are_accepted(make):
    np = pytest.importorskip("numpy")
    with T.kernel("k", grid=make(np), block=[np.int64(32)]) as k:
        X = k.param("X", make(np), "float32")
        L = T.alloc_buffer(make(np), "float32")
    assert X.type == _bt([4], f32, MemoryScope.GLOBAL)
    assert list(L.type.get_shape()) == [4]
    assert k.launch == LaunchAttr([4], [32], [1])
    assert "memref<4xf32" in str(k.module())


def test_numpy_bool_is_not_a_shape():
    np = pytest.importorskip("numpy")
    with pytest.raises(ValueError, match=r"'grid' of T.kernel must be a non-empty list of positive integers"):
        T.kernel("k", grid=[np.True_])


@pytest.mark.parametrize(
    ("shape", "dtype", "message"),
    [
        ([2**63], "float32", "'shape' of T.param: dimension 0 must be at most 2**63 - 1 (the index type), got 9223372036854775808"),
        ([4, 2**64], "float32", "'shape' of T.param: dimension 1 must be at most 2**63 - 1 (the index type), got 18446744073709551616"),
        (
            [2**61],
            "float32",
            "'shape' of T.param [2305843009213693952] must hold at most 2**63 - 1 bytes (the index type), "
            "got 2305843009213693952 elements of f32 (9223372036854775808 bytes)",
        ),
        (
            [2**32, 2**31],
            "float16",
            "'shape' of T.param [4294967296, 2147483648] must hold at most 2**63 - 1 bytes (the index type), "
            "got 9223372036854775808 elements of f16 (18446744073709551616 bytes)",
        ),
    ],
)
def test_shape_must_fit_the_index_type(shape, dtype, message):
    with T.kernel("k") as k:
        with pytest.raises(ValueError) as e:
            k.param("X", shape, dtype)
        assert str(e.value) == message
        with pytest.raises(ValueError, match="alloc_buffer"):
            T.alloc_buffer(shape, dtype)


def test_largest_shape_that_fits_is_accepted():
    with T.kernel("k") as k:
        X = k.param("X", [2**60 - 1], "float64")  # 2**63 - 8 bytes
    assert list(X.type.get_shape()) == [2**60 - 1]


def test_launch_dims_must_fit_the_index_type():
    with pytest.raises(ValueError, match=r"'grid' of T.kernel: dimension 0 must be at most 2\*\*63 - 1"):
        T.kernel("k", grid=[2**63])


# endregion


# region T.normalize_rows


def _rows_kernel(kind: str, **extra):
    """A kernel of one T.normalize_rows on [4, 32] float32 rows; ``extra`` names further
    operands (shape, dtype) and attributes."""
    shapes = {"target": ([4], "int64"), "loss": ([4], "float32"), "grad": ([4, 32], "float32"),
              "residual": ([4, 32], "float32"), "residual_out": ([4, 32], "float32"), "weight": ([32], "float32"),
              "bias": ([32], "bfloat16"), "rstd": ([4], "float32"), "lse": ([4], "float32")}
    with T.kernel("rows") as k:
        x = k.param("x", [4, 32], "float32", strides=[40, 1])
        y = None if kind == "cross_entropy" else k.param("y", [4, 32], "float32")
        operands = {f: k.param(f, *shapes[f]) for f, v in extra.items() if v is True}
        attrs = {f: v for f, v in extra.items() if v is not True}
        op = T.normalize_rows(kind, x, y, **operands, **attrs)
    return k, op


def test_normalize_rows_builds_the_op():
    from bulkred_dialect.ops.tile import NormalizeRowsOp

    k, op = _rows_kernel("layer_norm", weight=True, rstd=True, eps=1e-5, variant="rows_cta")
    module = k.module()
    (built,) = [o for o in module.walk() if isinstance(o, NormalizeRowsOp)]
    args = list(next(o for o in module.walk() if isinstance(o, func.FuncOp)).body.block.args)
    assert [built.x, built.y, built.weight, built.rstd] == args
    assert built.bias is None and built.mean is None and built.grad is None
    assert str(built.norm_kind) == "layer_norm" and built.variant.data == "rows_cta"
    assert built.eps.value.data == pytest.approx(1e-5) and built.eps.type == f32
    assert isinstance(op.location, FileLineColLoc) and op.location.filename.data == __file__
    text = str(module)
    assert _parse(text).is_structurally_equivalent(module)  # its text parses back to the same IR
    assert 'bulkred.normalize_rows layer_norm variant "rows_cta" %x, %y weight %weight' in text

    k, _ = _rows_kernel("cross_entropy", target=True, loss=True, lse=True, ignore_index=-7, label_smoothing=0.25)
    (ce,) = [o for o in k.module().walk() if isinstance(o, NormalizeRowsOp)]
    assert ce.y is None and ce.ignored == -7 and ce.smoothing == 0.25 and ce.lse is not None


def test_normalize_rows_operand_rules_are_the_verifiers_at_the_builders_line():
    k, op = _rows_kernel("softmax", weight=True)
    with pytest.raises(LocatedError) as info:
        k.module()
    assert str(info.value).startswith(f"{__file__}:{op.location.line.data}:")  # the T.normalize_rows call
    assert "operand 'weight' is only valid with kind rms_norm, layer_norm, add_rms_norm, rms_norm_backward or layer_norm_backward, got kind softmax" in str(info.value)
    k, _ = _rows_kernel("layer_norm", weight=True, bias=True, eps=1e-5)
    with pytest.raises(LocatedError, match="operand 'bias' element type must be f32, got bf16"):
        k.module()
    k, _ = _rows_kernel("rms_norm")
    with pytest.raises(LocatedError, match="'eps' is required with kind rms_norm"):
        k.module()


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda x, y: T.normalize_rows("softmax2", x, y),
         "'kind' of T.normalize_rows must be one of softmax, log_softmax, rms_norm, layer_norm, add_rms_norm, "
         "cross_entropy, softmax_backward, log_softmax_backward, rms_norm_backward, layer_norm_backward, "
         "cross_entropy_backward, got 'softmax2'"),
        (lambda x, y: T.normalize_rows("softmax", None, y),
         "'x' of T.normalize_rows must be a buffer from k.param or T.alloc_buffer, got NoneType None"),
        (lambda x, y: T.normalize_rows("softmax", x, 3), "'y' of T.normalize_rows must be a buffer"),
        (lambda x, y: T.normalize_rows("softmax", x, y, row_max="m"), "'row_max' of T.normalize_rows must be a buffer"),
        (lambda x, y: T.normalize_rows("rms_norm", x, y, eps="1e-5"), "'eps' of T.normalize_rows must be a float, got str '1e-5'"),
        (lambda x, y: T.normalize_rows("rms_norm", x, y, eps=True), "'eps' of T.normalize_rows must be a float, got bool True"),
        (lambda x, y: T.normalize_rows("cross_entropy", x, None, ignore_index=1.5),
         "'ignore_index' of T.normalize_rows must be an integer, got float 1.5"),
        (lambda x, y: T.normalize_rows("cross_entropy", x, None, label_smoothing=[0.1]),
         "'label_smoothing' of T.normalize_rows must be a float, got list [0.1]"),
        (lambda x, y: T.normalize_rows("softmax", x, y, variant=3),
         "'variant' of T.normalize_rows must be a variant's name (a string), got int 3"),
    ],
)
def test_normalize_rows_bad_arguments_are_one_line(call, message):
    with T.kernel("rows") as k:
        x = k.param("x", [4, 32], "float32")
        y = k.param("y", [4, 32], "float32")
        with pytest.raises(ValueError) as info:
            call(x, y)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_normalize_rows_needs_an_open_kernel_and_its_own_buffers():
    with T.kernel("a") as a:
        xa = a.param("x", [4, 32], "float32")
    with pytest.raises(ValueError, match=r"T.normalize_rows must be called inside a 'with T.kernel\(...\)' block"):
        T.normalize_rows("softmax", xa, xa)
    with T.kernel("b") as b:
        yb = b.param("y", [4, 32], "float32")
        with pytest.raises(ValueError, match="'x' of T.normalize_rows belongs to kernel 'a', not to the open kernel 'b'"):
            T.normalize_rows("softmax", xa, yb)


# endregion
