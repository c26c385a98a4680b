"""The PTX module printer: level-3 IR (ptx ops inside ``func.func`` kernels) to PTX text,
and ``-t ptx`` for bulkred-opt.

The printer owns the module frame; each instruction op prints its own line
(``PtxInstruction.ptx_line``). What the printer decides:

* ``.version``: the lowest that every op needs (``requirement().ptx``) and the target
  accepts (``Target.min_ptx``), never above ``MAX_PTX_VERSION``; ``.target``;
  ``.address_size 64``;
* one ``.visible .entry`` per ``func.func`` with a ``.param`` per argument
  (``!ptx.ptr<global>`` is a ``.u64`` loaded with ``ld.param.u64`` and converted with
  ``cvta.to.global.u64``; scalars are loaded with ``ld.param``), and, from the kernel's
  ``bulkred.launch``, ``.reqntid`` and (for clusters of more than one CTA)
  ``.reqnctapercluster`` + ``.explicitcluster`` (a ``bulkred.launch`` that is not a
  ``#bulkred.launch<...>`` is an error);
* registers: one per SSA value, numbered from 1 per name prefix (``register_class``),
  declared as ``.reg .f32 %f<N>;``; ``ptx.alloc`` arrays declared at the top of the body;
* a label per block (``control.block_label``) and, on each branch, moves into the
  target block's argument registers, ordered as a parallel copy (a temporary breaks
  cycles such as a swap).

Before printing, every op is checked against the target (the same check as
``check-target``), and each kernel's ``.shared`` arrays against the static shared memory
ptxas allows on the target (``max_static_shared``). :func:`assemble_module` prints,
assembles with nvJitLink, and turns a ptxas error into a located error naming the PTX
line, ptxas's message and the IR op.

Example::

    bulkred-opt kernel.mlir -p lower-to-ptx -t 'ptx{target=sm_100a}'
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException, VerifyException
from xdsl.utils.target import Target as OutputTarget

from bulkred_dialect.backend_ptx.assemble import AssemblerCrashed, PtxasError, assemble
from bulkred_dialect.diagnostics import LocatedError, verify_located
from bulkred_dialect.ops.ptx.base import PtrType, PtxInstruction, StateSpace, check_module, i64, register_class
from bulkred_dialect.ops.ptx.control import BranchInstruction, CondBraOp, RetOp, block_label, kernel_labels, labels_of
from bulkred_dialect.ops.ptx.memory import (
    AllocOp,
    CvtaToGlobalOp,
    LdParamOp,
    LdStType,
    copy_mnemonic,
    static_shared_error,
)
from bulkred_dialect.errors import ArgumentError, AssembleError
from bulkred_dialect.ops.target import (
    CLUSTER_LAUNCH,
    MAX_PTX_VERSION,
    Target,
    cluster_launch_problem,
    format_ptx_version,
    resolve_target,
    target_option,
)
from bulkred_dialect.ops.kernel_attrs import MIN_CTAS_ATTR
from bulkred_dialect.ops.tile import LAUNCH_ATTR, LaunchAttr, kernel_launch

# Order of the register declarations.
_PREFIX_ORDER = ("%p", "%rs", "%h", "%r", "%rd", "%f", "%fd")

# .param type and ld.param type of a scalar kernel argument, by register class.
_PARAM_TYPES: dict[str, LdStType] = {
    ".b16": LdStType.B16,
    ".b32": LdStType.U32,
    ".b64": LdStType.U64,
    ".f32": LdStType.F32,
    ".f64": LdStType.F64,
}


class PtxasRejected(DiagnosticException, AssembleError):
    """ptxas rejected the PTX and no line of its log maps to an op."""


# region Registers


class Registers:
    """PTX register names for SSA values, numbered from 1 per prefix in order of first use."""

    def __init__(self) -> None:
        self.names: dict[SSAValue, str] = {}
        self.counts: dict[str, int] = defaultdict(int)
        self.decls: dict[str, str] = {}

    def __call__(self, value: SSAValue) -> str:
        name = self.names.get(value)
        if name is None:
            name = self.fresh(value.type)
            self.names[value] = name
        return name

    def fresh(self, t: Attribute) -> str:
        """A new register of the class holding IR type ``t`` (raises VerifyException)."""
        decl, prefix = register_class(t)
        self.decls.setdefault(prefix, decl)
        self.counts[prefix] += 1
        return f"{prefix}{self.counts[prefix]}"

    def alias(self, value: SSAValue, name: str) -> None:
        self.names[value] = name

    def declarations(self) -> list[str]:
        order = {p: i for i, p in enumerate(_PREFIX_ORDER)}
        return [
            f".reg {self.decls[p]} {p}<{self.counts[p] + 1}>;"
            for p in sorted(self.counts, key=lambda p: (order.get(p, len(order)), p))
        ]


def parallel_copy(moves: Sequence[tuple[str, str, Attribute]], regs: Registers) -> list[str]:
    """``mov`` lines that set every ``dst`` to the value ``src`` had before any of them.

    ``moves`` holds (dst register, src register, IR type). A move is emitted once no
    pending move still reads its destination; when only cycles remain, one destination
    is saved in a temporary first.
    """
    pending = [(d, s, t) for d, s, t in moves if d != s]
    lines: list[str] = []
    while pending:
        for i, (d, s, t) in enumerate(pending):
            if not any(s2 == d for j, (_, s2, _) in enumerate(pending) if j != i):
                lines.append(f"{copy_mnemonic(t)} {d}, {s};")
                del pending[i]
                break
        else:
            d, _, t = pending[0]
            tmp = regs.fresh(t)
            lines.append(f"{copy_mnemonic(t)} {tmp}, {d};")
            pending = [(d2, tmp if s2 == d else s2, t2) for d2, s2, t2 in pending]
    return lines


# endregion


@dataclass
class PrintedPtx:
    """PTX text with the IR op behind each line (1-based line numbers)."""

    lines: list[str] = field(default_factory=list)
    ops: list[Operation | None] = field(default_factory=list)

    def add(self, text: str, op: Operation | None) -> None:
        self.lines.append(text)
        self.ops.append(op)

    def extend(self, texts: Sequence[str], op: Operation | None) -> None:
        for t in texts:
            self.add(t, op)

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def line(self, number: int) -> str:
        return self.lines[number - 1] if 1 <= number <= len(self.lines) else ""

    def op_at(self, number: int) -> Operation | None:
        return self.ops[number - 1] if 1 <= number <= len(self.ops) else None


def _kernel_error(op: Operation, e: VerifyException) -> LocatedError:
    return LocatedError(op, str(e).strip().splitlines()[0] if str(e).strip() else "cannot be printed")


@dataclass
class _KernelPrinter:
    kernel: func.FuncOp
    target: Target
    regs: Registers = field(default_factory=Registers)

    def print(self, out: PrintedPtx) -> None:
        k = self.kernel
        name = k.sym_name.data
        if not k.body.blocks:
            raise LocatedError(k, "must have a body to be a kernel")
        if k.function_type.outputs.data:
            raise LocatedError(k, "a kernel returns nothing, but this function has results")
        entry = k.body.blocks.first
        assert entry is not None

        params, loads = self._params(name, entry)
        allocs = [op for op in k.walk() if isinstance(op, AllocOp)]
        error = static_shared_error(allocs, self.target)
        if error is not None:
            raise LocatedError(*error)
        decls: list[tuple[str, Operation]] = []
        body = PrintedPtx()
        body.extend(loads, k)
        blocks = list(k.body.blocks)
        for i, block in enumerate(blocks):
            if i > 0:
                body.add(f"{block_label(block)}:", k)
            for op in block.ops:
                if isinstance(op, AllocOp):
                    decls.append((op.ptx_line(self.regs), op))
                    continue
                try:
                    body.extend([f"\t{t}" for t in self._op_lines(op)], op)
                except VerifyException as e:
                    raise _kernel_error(op, e) from None

        if params:
            out.add(f".visible .entry {name}(", k)
            for j, p in enumerate(params):
                out.add(f"\t{p}{',' if j + 1 < len(params) else ''}", k)
            out.add(")", k)
        else:
            out.add(f".visible .entry {name}()", k)
        out.extend(self._directives(), k)
        out.add("{", k)
        for text, op in decls:
            out.add(f"\t{text}", op)
        out.extend([f"\t{d}" for d in self.regs.declarations()], k)
        if decls or self.regs.counts:
            out.add("", k)
        out.lines += body.lines
        out.ops += body.ops
        out.add("}", k)

    def _params(self, name: str, entry: Block) -> tuple[list[str], list[str]]:
        """The ``.param`` declarations and the lines that load them at entry."""
        params: list[str] = []
        loads: list[str] = []
        for arg in entry.args:
            sym = f"{name}_param_{arg.index}"
            t = arg.type
            if t == PtrType(StateSpace.GLOBAL):
                params.append(f".param .u64 {sym}")
                ld = LdParamOp(LdStType.U64, sym, i64)
                cvta = CvtaToGlobalOp(ld.result)
                loads.append(f"\t{ld.ptx_line(self.regs)}")
                self.regs.alias(cvta.result, self.regs(arg))
                loads.append(f"\t{cvta.ptx_line(self.regs)}")
                cvta.erase()
                ld.erase()
                continue
            try:
                decl, _ = register_class(t)
            except VerifyException:
                decl = ""
            if isinstance(t, PtrType) or decl not in _PARAM_TYPES:
                hint = " (run lower-to-ptx first)" if not decl and not isinstance(t, PtrType) else ""
                raise LocatedError(
                    self.kernel,
                    f"argument {arg.index} of type {t} cannot be a kernel parameter "
                    f"(valid: !ptx.ptr<global>, i16, i32, i64, f16, bf16, f32, f64){hint}",
                )
            ptype = _PARAM_TYPES[decl]
            params.append(f".param .{ptype} {sym}")
            ld = LdParamOp(ptype, sym, t)
            self.regs.alias(ld.result, self.regs(arg))
            loads.append(f"\t{ld.ptx_line(self.regs)}")
            ld.erase()
        return params, loads

    def _directives(self) -> list[str]:
        try:
            launch = kernel_launch(self.kernel)
        except VerifyException as e:
            raise LocatedError(self.kernel, str(e)) from None
        if launch is None:
            return []
        out = [".reqntid {}, {}, {}".format(*launch.block_dims)]
        least = self.kernel.attributes.get(MIN_CTAS_ATTR)  # (kernel_attrs.py)
        if isinstance(least, IntegerAttr):
            out.append(f".minnctapersm {least.value.data}")
        cluster = launch.cluster_dims
        if cluster != (1, 1, 1):
            problem = cluster_launch_problem(cluster, self.target)
            if problem is not None:
                raise LocatedError(self.kernel, problem)
            out += [".reqnctapercluster {}, {}, {}".format(*cluster), ".explicitcluster"]
        return out

    def _op_lines(self, op: Operation) -> list[str]:
        if isinstance(op, BranchInstruction):
            lines: list[str] = []
            for dest, args in op.edges():
                moves = [(self.regs(b), self.regs(a), b.type) for a, b in zip(args, dest.args)]
                lines += parallel_copy(moves, self.regs)
            if isinstance(op, CondBraOp):
                return lines + op.ptx_lines(self.regs)
            return lines + [op.ptx_line(self.regs)]
        if isinstance(op, PtxInstruction):
            return [op.ptx_line(self.regs)]
        if isinstance(op, func.ReturnOp):
            if op.arguments:
                raise LocatedError(op, "a kernel returns nothing")
            return [RetOp().ptx_line(self.regs)]
        raise LocatedError(
            op, "cannot be printed as PTX: it is not a ptx instruction (run lower-to-ptx first)"
        )


def _checked_version(module: ModuleOp, target: Target) -> tuple[int, int]:
    """The module's ``.version``, its ptx ops checked against ``target`` on the way
    (``check_module``, the pass ``check-target``'s check, which gives the version
    they need: one walk for both)."""
    version = check_module(module, target)
    for op in module.ops:  # the kernels
        if isinstance(op, func.FuncOp):
            launch = op.attributes.get(LAUNCH_ATTR)
            if isinstance(launch, LaunchAttr) and launch.cluster_dims != (1, 1, 1):
                version = max(version, CLUSTER_LAUNCH.ptx)
    return min(version, MAX_PTX_VERSION)


def render(module: ModuleOp, target: Target | str | None = None) -> PrintedPtx:
    """Check, then print ``module``; each line keeps the op it came from."""
    if not isinstance(module, ModuleOp):
        raise ArgumentError(f"print_ptx: 'module' must be a builtin.module, got {type(module).__name__}")
    t = resolve_target(module, target)
    verify_located(module)
    version = _checked_version(module, t)
    out = PrintedPtx()
    out.extend(
        [
            "//",
            "// Generated by bulkred (backend_ptx/printer.py)",
            "//",
            "",
            f".version {format_ptx_version(version)}",
            f".target {t.name}",
            ".address_size 64",
        ],
        None,
    )
    for op in module.ops:
        if not isinstance(op, func.FuncOp):
            raise LocatedError(op, "cannot be printed as PTX: a module holds only func.func kernels")
    kernels = list(module.ops)
    for i, op in enumerate(kernels):
        out.add("", None)
        out.add(f"\t// .globl\t{op.sym_name.data}", op)
        with labels_of(kernel_labels(i, op)):
            _KernelPrinter(op, t).print(out)
    return out


def print_ptx(module: ModuleOp, target: Target | str | None = None) -> str:
    """The PTX text of a level-3 module for ``target`` (a Target, ``"sm_100a"``, or None:
    the module's ``bulkred.target`` attribute, else sm_90a)."""
    return render(module, target).text


def assemble_module(
    module: ModuleOp, target: Target | str | None = None, *, isolated: bool = False
) -> bytes:
    """Print and assemble ``module``; return the cubin.

    A ptxas error becomes a :class:`LocatedError` on the op that printed the offending
    line: ``file:line:col: error: 'ptx.ld' ptxas (sm_90a) rejected PTX line 23
    `ld.global.f32 %f1, [%rd2];`: <ptxas message>``. With ``isolated`` nvJitLink runs in
    a child process, so that a crash in it is an error here (``assemble``).
    """
    t = resolve_target(module, target)
    return _assemble_printed(render(module, t), t, isolated)


def _assemble_printed(printed: PrintedPtx, t: Target, isolated: bool) -> bytes:
    """:func:`assemble_module` of the module that printed ``printed`` for ``t``."""
    try:
        return assemble(printed.text, t.name, isolated=isolated)
    except AssemblerCrashed as e:
        raise PtxasRejected(str(e)) from None
    except PtxasError as e:
        diags = [d for d in e.diagnostics if d.severity == "error"] or e.diagnostics
        for d in diags:
            op = printed.op_at(d.line)
            if op is not None:
                raise LocatedError(
                    op,
                    f"ptxas ({t.name}) rejected PTX line {d.line} `{printed.line(d.line).strip()}`: "
                    f"{d.message}",
                ) from None
        log = e.log.strip().splitlines()
        raise PtxasRejected(f"ptxas ({t.name}) rejected the PTX: {log[0] if log else 'no log'}") from None


@dataclass(frozen=True)
class PtxTarget(OutputTarget):
    """``-t ptx`` / ``-t 'ptx{target=sm_100a}'``: print the module as PTX.

    The target is the option (a name is parsed once, when the output target is made),
    else the module's ``bulkred.target``, else sm_90a; bulkred-opt gives it the target
    of the pipeline's last pass that has one when ``-t ptx`` names none. With ``assemble=true`` the PTX is also assembled through nvJitLink, in a child
    process (a crash of the assembler is reported, not the end of bulkred-opt); a ptxas
    error is reported on the IR op that printed the offending line.
    """

    name: ClassVar[str] = "ptx"

    target: Target | str | None = None
    assemble: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.target, Target | None):
            object.__setattr__(self, "target", target_option(self.target))

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        t = resolve_target(module, self.target)
        printed = render(module, t)  # printed once, for the output and the assembler
        text = printed.text
        if self.assemble:
            cubin = _assemble_printed(printed, t, isolated=True)
            text += f"// assembled by ptxas (nvJitLink) for {t.name}: {len(cubin)} bytes of cubin\n"
        output.write(text)


__all__ = [
    "PrintedPtx",
    "PtxTarget",
    "PtxasRejected",
    "Registers",
    "assemble_module",
    "parallel_copy",
    "print_ptx",
    "render",
]
