"""The PTX printer (backend_ptx/printer.py) and the backend ops it prints: parallel
copies, registers, the line -> op map, ptxas errors located on the IR op, immediates,
and the ops the differential test cannot assemble alone (ld.param, alloc, mov.addr,
branches), assembled here inside whole kernels."""

from __future__ import annotations

import random
import struct
from typing import ClassVar

import pytest
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import Builtin, FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.irdl import irdl_op_definition, result_def
from xdsl.passes import PassPipeline

from bulkred_dialect.backend_ptx.assemble import PtxasError, assemble
from bulkred_dialect.backend_ptx.printer import (
    PtxTarget,
    Registers,
    assemble_module,
    parallel_copy,
    print_ptx,
    render,
)
from bulkred_dialect.diagnostics import LocatedError, parse_module
from bulkred_dialect.ops.ptx import PTX
from bulkred_dialect.ops.ptx.base import PtxInstruction, RegisterNamer, bf16, constant_int, f16, f32, f64, i1, i32, i64
from bulkred_dialect.ops.ptx.control import BraOp, CondBraOp, RetOp, SetpOp, CmpOp, SetpType
from bulkred_dialect.ops.ptx.memory import LdOp, MovImmOp, float_immediate
from bulkred_dialect.ops.target import Requirement, Target, max_static_shared
from bulkred_dialect.ops.tile import BULKRED
from bulkred_dialect.passes import ALL_PASSES

def context() -> Context:
    ctx = Context()
    for d in (Builtin, func.Func, arith.Arith, PTX, BULKRED):
        ctx.load_dialect(d)
    from xdsl.dialects import cf, memref, scf

    for d in (cf.Cf, memref.MemRef, scf.Scf):
        ctx.load_dialect(d)
    return ctx


def parse(text: str, name: str = "test.mlir") -> ModuleOp:
    return parse_module(context(), text, name)


def run_pipeline(module: ModuleOp, spec: str) -> ModuleOp:
    PassPipeline.parse_spec({k: v for k, v in ALL_PASSES.items()}, spec).apply(context(), module)
    return module


# region parallel_copy


def simulate(lines: list[str], regs: dict[str, object]) -> dict[str, object]:
    """Execute ``mov.bN d, s;`` lines on a register file."""
    regs = dict(regs)
    for line in lines:
        op, rest = line.split(" ", 1)
        assert op.startswith("mov."), line
        d, s = (x.strip() for x in rest.rstrip(";").split(","))
        regs[d] = regs[s]
    return regs


@pytest.mark.parametrize(
    "moves",
    [
        [("%r1", "%r2"), ("%r2", "%r1")],  # swap
        [("%r1", "%r2"), ("%r2", "%r3"), ("%r3", "%r1")],  # 3-cycle
        [("%r1", "%r2"), ("%r2", "%r3")],  # chain
        [("%r1", "%r1"), ("%r2", "%r1")],  # self move and a copy of it
        [("%r1", "%r3"), ("%r2", "%r3")],  # one source, two destinations
    ],
)
def test_parallel_copy_cases(moves):
    regs = Registers()
    for _ in range(3):
        regs.fresh(i32)
    before = {f"%r{i}": f"v{i}" for i in range(1, 4)}
    lines = parallel_copy([(d, s, i32) for d, s in moves], regs)
    after = simulate(lines, before)
    for d, s in moves:
        assert after[d] == before[s], (moves, lines)
    assert all(line.startswith("mov.b32 ") for line in lines)
    assert len(lines) <= len([m for m in moves if m[0] != m[1]]) + 1


def test_parallel_copy_random_permutations():
    rnd = random.Random(1234)
    for trial in range(200):
        n = rnd.randint(1, 7)
        names = [f"%rd{i}" for i in range(1, 2 * n + 1)]
        dsts = rnd.sample(names, n)
        srcs = [rnd.choice(names) for _ in dsts]
        regs = Registers()
        for _ in names:
            regs.fresh(i64)
        before = {r: f"v{r}" for r in names}
        lines = parallel_copy([(d, s, i64) for d, s in zip(dsts, srcs)], regs)
        after = simulate(lines, {**before, **{f"%rd{i}": None for i in range(2 * n + 1, 2 * n + 9)}})
        for d, s in zip(dsts, srcs):
            assert after[d] == before[s], (trial, list(zip(dsts, srcs)), lines)


def test_parallel_copy_of_predicates_uses_mov_pred():
    regs = Registers()
    regs.fresh(i1), regs.fresh(i1)
    assert parallel_copy([("%p1", "%p2", i1), ("%p2", "%p1", i1)], regs) == [
        "mov.pred %p3, %p1;",
        "mov.pred %p1, %p2;",
        "mov.pred %p2, %p3;",
    ]


def test_registers_declarations_count_from_one():
    regs = Registers()
    for t in (f32, f32, i32, i1, i64, f64, f16, bf16):
        regs.fresh(t)
    assert regs.declarations() == [
        ".reg .pred %p<2>;",
        ".reg .b16 %h<3>;",
        ".reg .b32 %r<2>;",
        ".reg .b64 %rd<2>;",
        ".reg .f32 %f<3>;",
        ".reg .f64 %fd<2>;",
    ]


# endregion

# region immediates


@pytest.mark.parametrize(
    "value, t, text",
    [
        (1.0, f32, "0f3F800000"),
        (-2.0, f32, "0fC0000000"),
        (float("inf"), f32, "0f7F800000"),
        (1.0, f64, "0d3FF0000000000000"),
        (1.0, f16, "0x3C00"),
        (1.0, bf16, "0x3F80"),
        # 1 + 2^-8 + 2^-9 rounds up to 1 + 2^-7 in bf16 (ties and above go to even/up)
        (1.0 + 2**-8 + 2**-9, bf16, "0x3F81"),
        (1.0 + 2**-8, bf16, "0x3F80"),  # a tie rounds to even
    ],
)
def test_float_immediate(value, t, text):
    assert float_immediate(value, t) == text


def test_float_immediate_f32_round_trips():
    for bits in (0x00000001, 0x3EAAAAAB, 0x7F7FFFFF, 0x80800000):
        (v,) = struct.unpack(">f", bits.to_bytes(4, "big"))
        assert float_immediate(v, f32) == f"0f{bits:08X}"


def test_mov_imm_is_a_constant_for_constant_int():
    c = MovImmOp(42, i32)
    f = MovImmOp(1.5, f32)
    assert constant_int(c.result) == 42
    assert constant_int(f.result) is None
    regs = Registers()
    assert c.ptx_line(regs) == "mov.u32 %r1, 42;"
    assert f.ptx_line(regs) == "mov.f32 %f1, 0f3FC00000;"
    assert MovImmOp(-3, i64).ptx_line(regs) == "mov.s64 %rd1, -3;"
    assert MovImmOp(1, i1).ptx_line(regs) == "mov.pred %p1, 1;"


# endregion

# region Printing and assembling


KERNELS = """
func.func @k(%A: memref<64xf32, #bulkred.scope<global>>, %n: i32, %x: f32)
    attributes {bulkred.launch = #bulkred.launch<grid = [2], block = [64], cluster = [2]>} {
  %S = memref.alloca() : memref<64xf32, #bulkred.scope<shared>>
  %L = memref.alloca() : memref<4xf64, #bulkred.scope<local>>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %nn = arith.index_cast %n : i32 to index
  scf.for %i = %c0 to %c64 step %c1 {
    %v = memref.load %A[%i] : memref<64xf32, #bulkred.scope<global>>
    %p = arith.cmpi slt, %i, %nn : index
    %w = scf.if %p -> (f32) {
      scf.yield %v : f32
    } else {
      scf.yield %x : f32
    }
    memref.store %w, %S[%i] : memref<64xf32, #bulkred.scope<shared>>
  }
  %d = memref.load %L[%c1] : memref<4xf64, #bulkred.scope<local>>
  memref.store %d, %L[%c0] : memref<4xf64, #bulkred.scope<local>>
  func.return
}
"""


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_lowered_kernel_assembles(target):
    module = run_pipeline(parse(KERNELS), f"lower-to-ptx{{target={target}}}")
    text = print_ptx(module)
    assert f".target {target}" in text
    for needle in (
        ".reqnctapercluster 2, 1, 1",
        ".shared .align 128 .b8 __shared0_S[256];",
        ".local .align 16 .b8 __local1_L[32];",
        "ld.param.u32",
        "ld.param.f32",
        "cvta.to.global.u64",
        "st.shared::cta.f32",
        "ld.local.f64",
        "@%p",
    ):
        assert needle in text, needle
    assert len(assemble(text, target)) > 0
    assert len(assemble_module(module, target)) > 0


def test_print_ptx_takes_a_target_object_or_name_and_checks_it():
    module = parse(
        "func.func @k(%a: vector<2xf32>) {\n"
        "  %s = ptx.add.f32x2 rn ftz %a, %a : vector<2xf32>\n"
        "  func.return\n}\n"
    )
    assert ".version 8.6" in print_ptx(module, Target.parse("sm_100a"))
    assert ".target sm_103a" in print_ptx(module, "sm_103a")
    with pytest.raises(LocatedError, match=r"test.mlir:2:3: error: 'ptx.add.f32x2' .* target is sm_90a"):
        print_ptx(module)  # no attribute, no option: sm_90a


def test_module_target_attribute_and_ptx_target_option():
    module = parse('builtin.module attributes {bulkred.target = "sm_100a"} {\n'
                   "  func.func @k() {\n    func.return\n  }\n}\n")
    from io import StringIO

    out = StringIO()
    PtxTarget().emit(context(), module, out)
    assert ".target sm_100a" in out.getvalue()
    out = StringIO()
    PtxTarget(target="sm_90a").emit(context(), module, out)
    assert ".target sm_90a" in out.getvalue()


def test_line_map_points_at_the_op():
    module = run_pipeline(parse(KERNELS), "lower-to-ptx")
    printed = render(module)
    lds = [n for n in range(1, len(printed.lines) + 1) if printed.line(n).strip().startswith("ld.global.f32")]
    assert len(lds) == 1
    op = printed.op_at(lds[0])
    assert isinstance(op, LdOp)
    # the ld keeps the location of the memref.load it came from
    assert isinstance(op.location, FileLineColLoc) and op.location.line.data == 11
    assert printed.text.count("\n") == len(printed.lines)



@pytest.mark.parametrize("launch", ["5", '"block = [32]"', "[32]", "#bulkred.reduce_kind sum"])
def test_launch_attribute_of_another_kind_is_an_error(launch):
    module = parse(f"func.func @k() attributes {{bulkred.launch = {launch}}} {{\n  func.return\n}}\n")
    with pytest.raises(LocatedError, match=r"^test.mlir:1:1: error: 'func.func' 'bulkred.launch' must be a #bulkred.launch<"):
        print_ptx(module)
    ok = parse("func.func @k() attributes {bulkred.launch = #bulkred.launch<block = [32]>} {\n  func.return\n}\n")
    assert ".reqntid 32, 1, 1" in print_ptx(ok)


def _shared_kernel(nbytes: int) -> str:
    """PTX of a kernel with a static .shared array of ``nbytes`` bytes that it uses."""
    return (
        "func.func @k(%v: i32) {\n"
        f"  ptx.alloc shared @big size {nbytes} align 16\n"
        "  %a = ptx.mov.addr @big : !ptx.ptr<shared::cta>\n"
        "  ptx.st u32 %a, %v : !ptx.ptr<shared::cta>, i32\n"
        "  func.return\n}\n"
    )


@pytest.mark.parametrize("target", ["sm_90", "sm_90a", "sm_100a", "sm_100f", "sm_103a", "sm_120a", "sm_80"])
def test_static_shared_limit_is_ptxas_limit(target):
    """max_static_shared agrees with ptxas: the limit assembles, 16 bytes more is refused
    by ptxas and by the printer, on the array that crosses it."""
    limit = max_static_shared(Target.parse(target))
    ptx = print_ptx(parse(_shared_kernel(limit)), target)
    assert len(assemble(ptx, target)) > 0
    over = parse(_shared_kernel(limit + 16))
    with pytest.raises(LocatedError, match=rf"^test.mlir:2:3: error: 'ptx.alloc' brings the kernel's shared memory to {limit + 16} bytes, more than {target} allows for static .shared arrays \({limit}"):
        print_ptx(over, target)
    raw = print_ptx(parse(_shared_kernel(limit)), target).replace(f"big[{limit}]", f"big[{limit + 16}]")
    with pytest.raises(PtxasError, match="too much shared data"):
        assemble(raw, target)


@irdl_op_definition
class BogusOp(PtxInstruction):
    """A test-only op whose line ptxas rejects."""

    name = "ptx.test_bogus"
    REQUIREMENT: ClassVar = Requirement(sm=50, ptx=(6, 0))
    result = result_def(i32)

    def __init__(self):
        super().__init__(result_types=[i32])

    def ptx_mnemonic(self) -> str:
        return "bogus.u32"

    def ptx_operands(self, reg: RegisterNamer) -> list[str]:
        return [reg(self.result)]


def test_ptxas_error_is_located_on_the_op():
    k = func.FuncOp("k", ([], []))
    bogus = BogusOp()
    bogus.location = FileLineColLoc(StringAttr("kernel.mlir"), IntAttr(7), IntAttr(5))
    k.body.block.add_ops([bogus, RetOp()])
    module = ModuleOp([k])
    printed = render(module, "sm_90a")
    line = printed.lines.index("\tbogus.u32 %r1;") + 1
    with pytest.raises(LocatedError) as info:
        assemble_module(module, "sm_90a")
    msg = str(info.value)
    assert msg.startswith("kernel.mlir:7:5: error: 'ptx.test_bogus' ptxas (sm_90a) rejected PTX line")
    assert f"line {line} `bogus.u32 %r1;`" in msg
    assert info.value.op is bogus


def test_branch_ops_assemble_in_a_kernel():
    """ptx.bra with block arguments, ptx.bra.cond and ptx.ret, built in Python."""
    from xdsl.ir import Block

    k = func.FuncOp("loop", ([i32], []))
    entry = k.body.block
    cond = Block(arg_types=[i32])
    body = Block()
    exit_ = Block()
    k.body.add_block([cond, body, exit_])
    zero = MovImmOp(0, i32)
    one = MovImmOp(1, i32)
    entry.add_ops([zero, one, BraOp(cond, zero.result)])
    p = SetpOp(CmpOp.LT, SetpType.S32, cond.args[0], entry.args[0])
    cond.add_ops([p, CondBraOp(p.result, body, exit_)])
    from bulkred_dialect.ops.ptx.arith import AddOp, ArithType

    nxt = AddOp(ArithType.S32, cond.args[0], one.result)
    body.add_ops([nxt, BraOp(cond, nxt.result)])
    exit_.add_op(RetOp())
    module = ModuleOp([k])
    module.verify()
    text = print_ptx(module, "sm_90a")
    assert "@%p1 bra $L__BB0_2;\n\tbra.uni $L__BB0_3;" in text
    assert len(assemble_module(module, "sm_90a")) > 0


# endregion


# region On the GPU

MIX = """
func.func @mix(%A: memref<64x4xf32, #bulkred.scope<global>>, %B: memref<64xf32, #bulkred.scope<global>>,
               %C: memref<64xi32, #bulkred.scope<global>>, %D: memref<64xi32, #bulkred.scope<global>>,
               %n: i32, %x: f32)
    attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [64], cluster = [1]>} {
  %S = memref.alloca() : memref<64xf32, #bulkred.scope<shared>>
  %tid = ptx.mov.sreg tid.x : i32
  %t = arith.index_cast %tid : i32 to index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %j = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %A[%t, %j] : memref<64x4xf32, #bulkred.scope<global>>
    %s = ptx.add rn f32 %acc, %v : f32
    scf.yield %s : f32
  }
  memref.store %sum, %S[%t] : memref<64xf32, #bulkred.scope<shared>>
  %a0 = arith.constant 0 : i32
  %b0 = arith.constant 1 : i32
  %fa, %fb = scf.for %k = %c0 to %t step %c1 iter_args(%a = %a0, %b = %b0) -> (i32, i32) {
    %ab = arith.addi %a, %b : i32
    scf.yield %b, %ab : i32, i32
  }
  %p, %q = scf.for %k = %c0 to %t step %c1 iter_args(%u = %tid, %w = %n) -> (i32, i32) {
    scf.yield %w, %u : i32, i32
  }
  %lt = arith.cmpi slt, %tid, %n : i32
  %r = scf.if %lt -> (f32) {
    %v = memref.load %S[%t] : memref<64xf32, #bulkred.scope<shared>>
    scf.yield %v : f32
  } else {
    scf.yield %x : f32
  }
  memref.store %r, %B[%t] : memref<64xf32, #bulkred.scope<global>>
  memref.store %fa, %C[%t] : memref<64xi32, #bulkred.scope<global>>
  memref.store %p, %D[%t] : memref<64xi32, #bulkred.scope<global>>
  func.return
}
"""


@pytest.mark.gpu
def test_lowered_control_flow_runs_on_the_gpu():
    """Loops with carried values (a chain and a swap cycle), an if with a result, 2-D
    global and shared addressing, scalar parameters: each thread's results equal
    numpy's."""
    import numpy as np

    from bulkred_dialect.backend_ptx.runtime import compile_tile_module, current_arch, parse as rt_parse

    arch = current_arch()
    mod = compile_tile_module(rt_parse(MIX, "mix.mlir"), arch, f"lower-to-ptx{{target={arch}}}")
    rng = np.random.default_rng(7)
    A = rng.standard_normal((64, 4)).astype(np.float32)
    n, x = 37, np.float32(-2.5)
    B, C, D = (np.full(64, np.nan, np.float32), np.zeros(64, np.int32), np.zeros(64, np.int32))
    _, B, C, D = mod.kernel("mix")(A, B, C, D, np.int32(n), x)
    for t in range(64):
        acc = np.float32(0)
        for j in range(4):
            acc = np.float32(acc + A[t, j])
        want_b = acc if t < n else x
        assert B[t].tobytes() == np.float32(want_b).tobytes(), (t, B[t], want_b)
        a, b = 0, 1
        for _ in range(t):
            a, b = b, (a + b) & 0xFFFFFFFF
        assert int(C[t]) & 0xFFFFFFFF == a, (t, C[t], a)
        assert int(D[t]) == (t if t % 2 == 0 else n), (t, D[t])


# endregion
