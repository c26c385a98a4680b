"""The interpreter's ptx memory ops (interpreter/ptx_memory.py): ld / ld.vec / st.vec / atom / red
on addresses cast from memrefs, against numpy and a Python model of each PTX operation."""

from __future__ import annotations

import re

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, memref, scf
from xdsl.utils.exceptions import InterpretationError

from bulkred_dialect.interpreter import run_kernel
from bulkred_dialect.ops import ptx
from bulkred_dialect.ops.tile import BULKRED

G = "#bulkred.scope<global>"


@pytest.fixture(scope="module")
def ctx() -> Context:
    c = Context()
    for d in (builtin.Builtin, func.Func, memref.MemRef, arith.Arith, scf.Scf, BULKRED, ptx.PTX):
        c.load_dialect(d)
    return c


def module(ctx: Context, body: str) -> builtin.ModuleOp:
    from bulkred_dialect.diagnostics import parse_module

    m = parse_module(ctx, "builtin.module {\n" + body + "\n}")
    m.verify()
    return m


def test_ld_vec_nc_f32_at_an_offset(ctx):
    m = module(
        ctx,
        f"""
  func.func @k(%A: memref<12xf32, {G}>, %B: memref<4xf32, {G}>) {{
    %a = builtin.unrealized_conversion_cast %A : memref<12xf32, {G}> to !ptx.ptr<global>
    %x:4 = ptx.ld.vec nc f32 %a offset 16 : !ptx.ptr<global> -> f32, f32, f32, f32
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    memref.store %x#0, %B[%c0] : memref<4xf32, {G}>
    memref.store %x#1, %B[%c1] : memref<4xf32, {G}>
    memref.store %x#2, %B[%c2] : memref<4xf32, {G}>
    memref.store %x#3, %B[%c3] : memref<4xf32, {G}>
    func.return
  }}""",
    )
    a = np.array([1, 2, 3, 4, 5.5, -6, np.nan, 1e-40, 9, 10, 11, 12], np.float32)
    _, b = run_kernel(m, "k", a, np.zeros(4, np.float32))
    assert b.view(np.uint32).tolist() == a[4:8].view(np.uint32).tolist()


def test_ld_vec_extends_by_type_and_moves_with_add_ptr(ctx):
    """u16 zero-extends, s16 sign-extends into i32; b16 into f16 keeps the bits."""
    m = module(
        ctx,
        f"""
  func.func @k(%A: memref<8xi16, {G}>, %U: memref<2xi32, {G}>, %S: memref<2xi32, {G}>, %H: memref<4xf16, {G}>) {{
    %a = builtin.unrealized_conversion_cast %A : memref<8xi16, {G}> to !ptx.ptr<global>
    %eight = arith.constant 8 : i64
    %a8 = ptx.add.ptr %a, %eight : !ptx.ptr<global>, i64
    %u:2 = ptx.ld.vec u16 %a8 : !ptx.ptr<global> -> i32, i32
    %s:2 = ptx.ld.vec s16 %a8 : !ptx.ptr<global> -> i32, i32
    %h:4 = ptx.ld.vec b16 %a : !ptx.ptr<global> -> f16, f16, f16, f16
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    memref.store %u#0, %U[%c0] : memref<2xi32, {G}>
    memref.store %u#1, %U[%c1] : memref<2xi32, {G}>
    memref.store %s#0, %S[%c0] : memref<2xi32, {G}>
    memref.store %s#1, %S[%c1] : memref<2xi32, {G}>
    memref.store %h#0, %H[%c0] : memref<4xf16, {G}>
    memref.store %h#1, %H[%c1] : memref<4xf16, {G}>
    memref.store %h#2, %H[%c2] : memref<4xf16, {G}>
    memref.store %h#3, %H[%c3] : memref<4xf16, {G}>
    func.return
  }}""",
    )
    a = np.array([0x3C00, 0xC000, 0x7C00, 0x0001, 0xFFFE, 0x7FFF, 7, 8], np.uint16)
    z = np.zeros(2, np.int32)
    _, u, s, h = run_kernel(m, "k", a, z.copy(), z.copy(), np.zeros(4, np.float16))
    assert u.tolist() == [0xFFFE, 0x7FFF]
    assert s.tolist() == [-2, 0x7FFF]
    assert h.view(np.uint16).tolist() == a[:4].view(np.uint16).tolist()


def test_st_vec_f32_at_an_offset_reads_back(ctx):
    """st.global.v4.f32 [b+16]: B[4:8] gets the values' bits (NaN, -0, a subnormal
    kept), the rest of B is untouched, and ld.vec at the same place reads them back."""
    m = module(
        ctx,
        f"""
  func.func @k(%A: memref<4xf32, {G}>, %B: memref<12xf32, {G}>, %C: memref<4xf32, {G}>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %x0 = memref.load %A[%c0] : memref<4xf32, {G}>
    %x1 = memref.load %A[%c1] : memref<4xf32, {G}>
    %x2 = memref.load %A[%c2] : memref<4xf32, {G}>
    %x3 = memref.load %A[%c3] : memref<4xf32, {G}>
    %b = builtin.unrealized_conversion_cast %B : memref<12xf32, {G}> to !ptx.ptr<global>
    ptx.st.vec f32 %b offset 16, %x0, %x1, %x2, %x3 : !ptx.ptr<global>, f32, f32, f32, f32
    %y:4 = ptx.ld.vec f32 %b offset 16 : !ptx.ptr<global> -> f32, f32, f32, f32
    memref.store %y#0, %C[%c0] : memref<4xf32, {G}>
    memref.store %y#1, %C[%c1] : memref<4xf32, {G}>
    memref.store %y#2, %C[%c2] : memref<4xf32, {G}>
    memref.store %y#3, %C[%c3] : memref<4xf32, {G}>
    func.return
  }}""",
    )
    a = np.array([5.5, np.nan, -0.0, 1e-40], np.float32)
    poison = np.full(12, 0xA5A5A5A5, np.uint32).view(np.float32)
    _, b, c = run_kernel(m, "k", a, poison.copy(), np.zeros(4, np.float32))
    want = poison.view(np.uint32).copy()
    want[4:8] = a.view(np.uint32)
    assert b.view(np.uint32).tolist() == want.tolist()
    assert c.view(np.uint32).tolist() == a.view(np.uint32).tolist()


def test_st_vec_b16_of_f16_and_bf16(ctx):
    """st.global.v2.b16 keeps the bits of f16 (a subnormal) and bf16 registers; each
    lands at consecutive 2-byte elements."""
    m = module(
        ctx,
        f"""
  func.func @k(%H: memref<4xf16, {G}>, %B: memref<4xbf16, {G}>, %x: f16, %y: f16, %p: bf16, %q: bf16) {{
    %h = builtin.unrealized_conversion_cast %H : memref<4xf16, {G}> to !ptx.ptr<global>
    %b = builtin.unrealized_conversion_cast %B : memref<4xbf16, {G}> to !ptx.ptr<global>
    ptx.st.vec b16 %h offset 4, %x, %y : !ptx.ptr<global>, f16, f16
    ptx.st.vec b16 %b, %p, %q : !ptx.ptr<global>, bf16, bf16
    func.return
  }}""",
    )
    tiny = np.array([1], np.uint16).view(np.float16)[0]  # the smallest f16 subnormal
    h = np.full(4, 0x7777, np.uint16).view(np.float16)
    bf = np.full(4, 0x7777, np.uint16)
    h2, b2 = run_kernel(m, "k", h, bf, tiny, np.float16(-2.0), -1.5, 3.0)
    assert h2.view(np.uint16).tolist() == [0x7777, 0x7777, 0x0001, 0xC000]
    assert b2.tolist() == [0xBFC0, 0x4040, 0x7777, 0x7777]  # bf16 -1.5, 3.0


def test_st_vec_v8_f32_and_wide_registers_store_as_st_does(ctx):
    """st.global.v8.f32 (the 256-bit form) writes 8 elements; st.v2.u32 from i64
    registers stores the low 32 bits of each, as ptx.st does."""
    m = module(
        ctx,
        f"""
  func.func @k(%A: memref<8xf32, {G}>, %B: memref<8xf32, {G}>, %U: memref<4xi32, {G}>, %l0: i64, %l1: i64) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c6 = arith.constant 6 : index
    %c7 = arith.constant 7 : index
    %x0 = memref.load %A[%c0] : memref<8xf32, {G}>
    %x1 = memref.load %A[%c1] : memref<8xf32, {G}>
    %x2 = memref.load %A[%c2] : memref<8xf32, {G}>
    %x3 = memref.load %A[%c3] : memref<8xf32, {G}>
    %x4 = memref.load %A[%c4] : memref<8xf32, {G}>
    %x5 = memref.load %A[%c5] : memref<8xf32, {G}>
    %x6 = memref.load %A[%c6] : memref<8xf32, {G}>
    %x7 = memref.load %A[%c7] : memref<8xf32, {G}>
    %b = builtin.unrealized_conversion_cast %B : memref<8xf32, {G}> to !ptx.ptr<global>
    ptx.st.vec f32 %b, %x0, %x1, %x2, %x3, %x4, %x5, %x6, %x7 : !ptx.ptr<global>, f32, f32, f32, f32, f32, f32, f32, f32
    %u = builtin.unrealized_conversion_cast %U : memref<4xi32, {G}> to !ptx.ptr<global>
    ptx.st.vec u32 %u, %l0, %l1 : !ptx.ptr<global>, i64, i64
    ptx.st u32 %u offset 8, %l0 : !ptx.ptr<global>, i64
    ptx.st u32 %u offset 12, %l1 : !ptx.ptr<global>, i64
    func.return
  }}""",
    )
    a = np.array([1, -2, 3.25, np.inf, -np.inf, 6, 7e30, -8e-39], np.float32)
    l0, l1 = 0x1234_5678_9ABC_DEF0, -3
    _, b, u = run_kernel(m, "k", a, np.zeros(8, np.float32), np.zeros(4, np.int32), l0, l1)
    assert b.view(np.uint32).tolist() == a.view(np.uint32).tolist()
    assert u.view(np.uint32).tolist() == [0x9ABC_DEF0, 0xFFFF_FFFD, 0x9ABC_DEF0, 0xFFFF_FFFD]


def test_st_vec_misaligned_and_out_of_bounds_are_errors_and_write_nothing(ctx):
    m = module(
        ctx,
        f"""
  func.func @k(%A: memref<6xf32, {G}>, %off: i64, %x: f32) {{
    %a = builtin.unrealized_conversion_cast %A : memref<6xf32, {G}> to !ptx.ptr<global>
    %p = ptx.add.ptr %a, %off : !ptx.ptr<global>, i64
    ptx.st.vec f32 %p, %x, %x, %x, %x : !ptx.ptr<global>, f32, f32, f32, f32
    func.return
  }}""",
    )
    (a,) = run_kernel(m, "k", np.zeros(6, np.float32), 0, 1.0)
    assert a.tolist() == [1, 1, 1, 1, 0, 0]
    a = np.zeros(6, np.float32)
    with pytest.raises(InterpretationError, match=r"'ptx.st.vec' accesses 16 bytes at byte offset 8: not 16-byte aligned"):
        run_kernel(m, "k", a, 8, 1.0)
    with pytest.raises(InterpretationError, match=r"'ptx.st.vec' accesses bytes \[16, 32\) of a 24-byte buffer"):
        run_kernel(m, "k", a, 16, 1.0)
    assert a.tolist() == [0] * 6


def _atom_module(ctx: Context, op: str, type_: str, elt: str) -> builtin.ModuleOp:
    """@k(%M: memref<1x elt>, %V: memref<n x elt>, %Old: memref<n x elt>): for each i,
    Old[i] = atom.op.type [M], V[i]."""
    mt = f"memref<1x{elt}, {G}>"
    vt = f"memref<6x{elt}, {G}>"
    return module(
        ctx,
        f"""
  func.func @k(%M: {mt}, %V: {vt}, %Old: {vt}) {{
    %m = builtin.unrealized_conversion_cast %M : {mt} to !ptx.ptr<global>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 6 : index
    scf.for %i = %c0 to %n step %c1 {{
      %v = memref.load %V[%i] : {vt}
      %old = ptx.atom {op} {type_} %m, %v : !ptx.ptr<global>, {elt}
      memref.store %old, %Old[%i] : {vt}
    }}
    func.return
  }}""",
    )


def _model(op: str, t: str, old: int, b: int) -> int:
    """PTX ISA, atom: the new value (unsigned bits of width w)."""
    w = int(t[1:])
    mask = (1 << w) - 1

    def s(x: int) -> int:
        return x - (1 << w) if x >> (w - 1) else x

    if op == "add":
        return (old + b) & mask
    if op in ("min", "max"):
        pick = min if op == "min" else max
        return pick(s(old), s(b)) & mask if t[0] == "s" else pick(old, b)
    if op == "inc":
        return 0 if old >= b else old + 1
    if op == "dec":
        return b if old == 0 or old > b else old - 1
    return {"and": old & b, "or": old | b, "xor": old ^ b, "exch": b}[op]


@pytest.mark.parametrize(
    "op,t",
    [
        ("add", "u32"), ("add", "s32"), ("add", "u64"),
        ("inc", "u32"), ("dec", "u32"),
        ("min", "u32"), ("min", "s32"), ("max", "u64"), ("max", "s64"),
        ("and", "b32"), ("or", "b64"), ("xor", "b32"), ("exch", "b64"),
    ],
)
def test_atom_integer_ops_match_the_model(ctx, op, t):
    w = int(t[1:])
    elt = f"i{w}"
    m = _atom_module(ctx, op, t, elt)
    rng = np.random.default_rng(w + len(op))
    udt = np.dtype(f"uint{w}")
    start = np.array([0xFFFFFFF0 if op != "dec" else 0], udt)
    values = rng.integers(0, 2**w, 6, dtype=udt)
    values[0] = 3
    values[1] = (1 << w) - 1 if w < 64 else 2**64 - 1
    mem, _, old = run_kernel(m, "k", start.copy(), values.copy(), np.zeros(6, udt))
    cur = int(start[0])
    expect_old = []
    for v in values.tolist():
        expect_old.append(cur)
        cur = _model(op, t, cur, int(v))
    assert old.tolist() == expect_old
    assert int(mem[0]) == cur


def test_atom_add_u32_gives_tickets(ctx):
    m = _atom_module(ctx, "add", "u32", "i32")
    mem, _, old = run_kernel(m, "k", np.array([5], np.uint32), np.ones(6, np.uint32), np.zeros(6, np.uint32))
    assert old.tolist() == [5, 6, 7, 8, 9, 10]
    assert mem.tolist() == [11]


def test_atom_add_f32_flushes_subnormals_and_f64_does_not(ctx):
    tiny32 = np.float32(1e-40)  # subnormal
    m = _atom_module(ctx, "add", "f32", "f32")
    mem, _, old = run_kernel(
        m, "k", np.array([0], np.float32),
        np.array([tiny32, 1.5, 2.25, 0.1, -4, 1e30], np.float32), np.zeros(6, np.float32),
    )
    acc = np.float32(0)
    for v in (0.0, 1.5, 2.25, np.float32(0.1), -4, np.float32(1e30)):
        acc = np.float32(acc + np.float32(v))
    assert mem[0] == acc
    assert old[1].view(np.uint32) == 0  # 0 + subnormal: flushed to +0
    m64 = _atom_module(ctx, "add", "f64", "f64")
    mem64, _, _ = run_kernel(
        m64, "k", np.array([0], np.float64), np.array([1e-310, 0, 0, 0, 0, 0], np.float64), np.zeros(6)
    )
    assert mem64[0] == 1e-310


def _red_module(ctx: Context, n: int, vec: int) -> builtin.ModuleOp:
    """@k(%X: memref<n*vec x f32>, %S: memref<vec x f32>): for each i,
    red.add(.v{vec}).f32 [S], X[i*vec : i*vec+vec]."""
    xt = f"memref<{n * vec}xf32, {G}>"
    st = f"memref<{vec}xf32, {G}>"
    loads = "\n".join(
        f"      %o{j} = arith.addi %base, %c{j} : index\n      %x{j} = memref.load %X[%o{j}] : {xt}"
        for j in range(vec)
    )
    consts = "\n".join(f"    %c{j} = arith.constant {j} : index" for j in range(max(vec, 2)))
    xs = ", ".join(f"%x{j}" for j in range(vec))
    types = ", ".join(["f32"] * vec)
    return module(
        ctx,
        f"""
  func.func @k(%X: {xt}, %S: {st}) {{
    %s = builtin.unrealized_conversion_cast %S : {st} to !ptx.ptr<global>
{consts}
    %cv = arith.constant {vec} : index
    %n = arith.constant {n} : index
    scf.for %i = %c0 to %n step %c1 {{
      %base = arith.muli %i, %cv : index
{loads}
      ptx.red add f32 %s, {xs} : !ptx.ptr<global>, {types}
    }}
    func.return
  }}""",
    )


@pytest.mark.parametrize("vec", [1, 2, 4])
def test_red_add_f32_sums_in_order(ctx, vec):
    n = 37
    x = np.random.default_rng(vec).standard_normal(n * vec).astype(np.float32)
    _, s = run_kernel(_red_module(ctx, n, vec), "k", x, np.zeros(vec, np.float32))
    expect = np.zeros(vec, np.float32)
    for i in range(n):
        for j in range(vec):
            expect[j] = np.float32(expect[j] + x[i * vec + j])
    assert s.view(np.uint32).tolist() == expect.view(np.uint32).tolist()


def test_misaligned_and_out_of_bounds_accesses_are_errors(ctx):
    m = module(
        ctx,
        f"""
  func.func @k(%A: memref<6xf32, {G}>, %off: i64) {{
    %a = builtin.unrealized_conversion_cast %A : memref<6xf32, {G}> to !ptx.ptr<global>
    %p = ptx.add.ptr %a, %off : !ptx.ptr<global>, i64
    %x:4 = ptx.ld.vec f32 %p : !ptx.ptr<global> -> f32, f32, f32, f32
    func.return
  }}""",
    )
    a = np.zeros(6, np.float32)
    run_kernel(m, "k", a, 0)
    with pytest.raises(InterpretationError, match=r"'ptx.ld.vec' accesses 16 bytes at byte offset 8: not 16-byte aligned"):
        run_kernel(m, "k", a, 8)
    with pytest.raises(InterpretationError, match=r"'ptx.ld.vec' accesses bytes \[16, 32\) of a 24-byte buffer"):
        run_kernel(m, "k", a, 16)


def test_half_precision_red_and_atom_keep_subnormals(ctx):
    """red.add.noftz.v2.f16, red.max.noftz.v2.bf16 and atom.add.noftz.f16: subnormals
    are kept (the ``.noftz`` forms), max returns one of its inputs."""
    m = module(
        ctx,
        f"""
  func.func @k(%H: memref<2xf16, {G}>, %B: memref<2xbf16, {G}>, %O: memref<1xf16, {G}>, %x: f16, %y: bf16) {{
    %h = builtin.unrealized_conversion_cast %H : memref<2xf16, {G}> to !ptx.ptr<global>
    %b = builtin.unrealized_conversion_cast %B : memref<2xbf16, {G}> to !ptx.ptr<global>
    ptx.red add noftz f16 %h, %x, %x : !ptx.ptr<global>, f16, f16
    ptx.red max noftz bf16 %b, %y, %y : !ptx.ptr<global>, bf16, bf16
    %old = ptx.atom add noftz f16 %h, %x : !ptx.ptr<global>, f16
    %c0 = arith.constant 0 : index
    memref.store %old, %O[%c0] : memref<1xf16, {G}>
    func.return
  }}""",
    )
    tiny = np.array([1], np.uint16).view(np.float16)[0]  # the smallest f16 subnormal
    h = np.array([tiny, 1.0], np.float16)
    b = np.array([0xBF80, 0x0001], np.uint16)  # bf16 -1.0 and the smallest subnormal
    y = 0.5  # bf16 0.5 (exact)
    h2, b2, old = run_kernel(m, "k", h, b, np.zeros(1, np.float16), tiny, y)
    assert h2.view(np.uint16).tolist() == [3, 0x3C00]  # tiny + tiny + tiny, 1.0 + tiny rounds to 1.0
    assert old.view(np.uint16).tolist() == [2]
    assert b2.tolist() == [0x3F00, 0x3F00]  # max(-1, 0.5), max(tiny, 0.5)


_BOOL_KERNEL = f"""
  func.func @k(%A: memref<4xi1, {G}>, %B: memref<4xi1, {G}>, %i: index, %j: index) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %t = arith.constant true
    %f = arith.constant false
    %x = memref.load %A[%i] : memref<4xi1, {G}>
    %y = memref.load %A[%j] : memref<4xi1, {G}>
    %lt = arith.cmpi slt, %i, %j : index
    memref.store %t, %B[%c0] : memref<4xi1, {G}>
    memref.store %x, %B[%c1] : memref<4xi1, {G}>
    memref.store %y, %B[%c2] : memref<4xi1, {G}>
    memref.store %lt, %B[%c3] : memref<4xi1, {G}>
    func.return
  }}"""


def _runnable(ctx: Context, lowered: builtin.ModuleOp) -> builtin.ModuleOp:
    """The straight-line kernel ``lowered`` (lower-to-ptx's output) in a form the
    interpreter runs: its !ptx.ptr<global> arguments cast from the level-2 memrefs,
    ``ptx.mov.imm`` as ``arith.constant``, ``ptx.ret`` as ``func.return``."""
    text = str(lowered)
    text = re.sub(r"ptx\.mov\.imm (-?\d+) : (i\d+)", r"arith.constant \1 : \2", text)
    text = text.replace("ptx.ret", "func.return")
    t = f"memref<4xi1, {G}>"
    text = text.replace(
        "(%A: !ptx.ptr<global>, %B: !ptx.ptr<global>, %i: i64, %j: i64) {",
        f"(%Am: {t}, %Bm: {t}, %i: i64, %j: i64) {{\n"
        f"    %A = builtin.unrealized_conversion_cast %Am : {t} to !ptx.ptr<global>\n"
        f"    %B = builtin.unrealized_conversion_cast %Bm : {t} to !ptx.ptr<global>",
    )
    return module(ctx, text.removeprefix("builtin.module {").rstrip().removesuffix("}"))


@pytest.mark.parametrize(("i", "j"), [(0, 1), (3, 2), (2, 2)])
def test_bool_loads_and_stores_agree_with_their_lowering(ctx, i, j):
    """memref.load / memref.store of i1 at level 2 and lower-to-ptx's ld.u8 + setp.ne.b32
    and selp.b32 + st.b8 (tests/filecheck/passes/lower_to_ptx_bool.mlir) give the same
    bytes: a bool is one byte, stored as 1 or 0, and any non-zero byte loads as true."""
    from bulkred_dialect.passes.lower_to_ptx.lower_pass import LowerToPtxPass

    level2 = module(ctx, _BOOL_KERNEL)
    lowered = module(ctx, _BOOL_KERNEL)
    LowerToPtxPass().apply(ctx, lowered)
    assert {"ptx.ld", "ptx.setp", "ptx.selp", "ptx.st"} <= {op.name for op in lowered.walk()}
    a = np.array([0, 1, 2, 0xFF], np.uint8)  # 2 and 0xFF: not 0, so true
    want = [1, int(a[i] != 0), int(a[j] != 0), int(i < j)]
    _, b2 = run_kernel(level2, "k", a.copy(), np.full(4, 7, np.uint8), i, j)
    _, b3 = run_kernel(_runnable(ctx, lowered), "k", a.copy(), np.full(4, 7, np.uint8), i, j)
    assert b2.tolist() == want
    assert b3.tolist() == want
