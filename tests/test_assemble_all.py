"""Every PTX the project produces in its tests assembles with ptxas (nvJitLink, no GPU).

* tile-level reductions through the whole pipeline: sum/max/min (and and/or/xor on
  integers) of f32, f16, bf16, f64, i32, i64, at the lengths that take each path
  (:func:`variant_module`), 1-D and 2-D, with and without ``accum``; for sm_90a and
  sm_100a through ``bulkred-to-ptx``, and sm_100a's lowering legalized for sm_90a. The
  kernels of one (pipeline, element type) share one module, so one ptxas run checks
  them all (a failure is located on the op and kernel it came from);
* the seed demo (examples/seed_sum32.mlir) for each pipeline: through lit
  (tests/filecheck/backend_ptx/seed_sum32.mlir: sm_100a's and sm_90a's RUN lines
  assemble, with the packed adds counted on sm_100a and none on sm_90a; the
  legalized one, no packed add left, is assembled below as a lit test printing PTX);
* every lit test under tests/filecheck whose RUN line prints with ``-t ptx``: its
  bulkred-opt command is run in-process and each PTX module it prints is assembled for
  the module's own ``.target``. A RUN line with ``-t 'ptx{assemble=true}'`` is not run
  again here: bulkred-opt assembles what it prints and exits non-zero if ptxas rejects
  it, so the lit suite (tools/test.sh runs it with pytest) already fails on it.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.passes import PassPipeline

from bulkred_dialect.backend_ptx.assemble import PtxasError, assemble
from bulkred_dialect.backend_ptx.printer import assemble_module, print_ptx
from bulkred_dialect.cli import main as bulkred_opt
from bulkred_dialect.diagnostics import parse_module
from bulkred_dialect.passes import ALL_PASSES
from bulkred_dialect.pipeline import gc_paused
from bulkred_dialect.universe import BULKRED_DIALECTS

ROOT = Path(__file__).resolve().parent.parent
FILECHECK = ROOT / "tests" / "filecheck"

PIPELINES = {
    "sm_90a": ("sm_90a", "bulkred-to-ptx{target=sm_90a}"),
    "sm_100a": ("sm_100a", "bulkred-to-ptx{target=sm_100a}"),
    "sm_100a_legalized_for_sm_90a": (
        "sm_90a",
        "lower-tile-reductions{target=sm_100a},legalize-for-target{target=sm_90a},"
        "lower-to-ptx{target=sm_90a},check-target{target=sm_90a}",
    ),
}

ELEMENT_TYPES = ("f32", "f16", "bf16", "f64", "i32", "i64")

THREE_INPUT = re.compile(r"(max|min)(?:\.NaN)?\.f32 %f\d+, %f\d+, %f\d+, %f\d+;")  # .NaN by default


def context() -> Context:
    from xdsl.universe import Universe

    ctx = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        ctx.register_dialect(name, factory)
    for name, factory in BULKRED_DIALECTS.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)
    return ctx


# region Tile-level variants


def _buf(shape: tuple[int, ...], t: str, scope: str) -> str:
    return f"memref<{'x'.join(map(str, shape))}x{t}, #bulkred.scope<{scope}>>"


def reduce_kernel(name: str, kind: str, t: str, shape: tuple[int, ...], accum: bool) -> str:
    """A kernel: copy A to local, reduce along the last axis into a local B (from B's
    old value with accum), copy B out."""
    dst = (1,) if len(shape) == 1 else shape[:-1]
    a_g, a_l = _buf(shape, t, "global"), _buf(shape, t, "local")
    b_g, b_l = _buf(dst, t, "global"), _buf(dst, t, "local")
    init = f"    bulkred.copy %B, %Bl : {b_g}, {b_l}\n" if accum else ""
    return (
        f"  func.func @{name}(%A: {a_g}, %B: {b_g}) attributes "
        "{bulkred.launch = #bulkred.launch<grid = [1], block = [1], cluster = [1]>} {\n"
        f"    %Al = memref.alloca() : {a_l}\n"
        f"    %Bl = memref.alloca() : {b_l}\n"
        f"    bulkred.copy %A, %Al : {a_g}, {a_l}\n"
        f"{init}"
        f"    bulkred.reduce {kind} thread{' accum' if accum else ''} %Al, %Bl : {a_l}, {b_l}\n"
        f"    bulkred.copy %Bl, %B : {b_l}, {b_g}\n"
        "    func.return\n  }\n"
    )


def variant_module(t: str, packed: bool) -> str:
    """All kernels for element type ``t``. ``packed``: the pipeline lowers f32 through
    sm100_packed, whose code is the chunks (n // 8) then the remainder (n % 8), each
    written out on its own (docs/lowering.md): every length 7..17 (below the gate, one
    chunk with every remainder, two chunks), 23 (two chunks, a remainder of 7: further
    chunks repeat the second's code up to 71), and the looped forms (n >= 72) at 72, 79,
    100 (three chunks written out after the loop) and 1037;
    otherwise the local variant, whose code is one load for n = 1 and else a loop of
    the same code for any n (1 and 7)."""
    kinds = ["sum", "max", "min"] + (["and", "or", "xor"] if t.startswith("i") else [])
    lengths = [*range(7, 18), 23, 72, 79, 100, 1037] if packed and t == "f32" else (1, 7)
    kernels = []
    for kind in kinds:
        for n in lengths:
            kernels.append(reduce_kernel(f"{kind}_{n}", kind, t, (n,), False))
        kernels.append(reduce_kernel(f"{kind}_17_accum", kind, t, (17,), True))
        kernels.append(reduce_kernel(f"{kind}_4x9", kind, t, (4, 9), False))
        kernels.append(reduce_kernel(f"{kind}_2x3x8_accum", kind, t, (2, 3, 8), True))
    return "builtin.module {\n" + "".join(kernels) + "}\n"


# (pipeline, element type): the legalized pipeline differs from sm_90a's only where
# sm100_packed applies (f32).
VARIANT_CASES = [
    (p, t) for p in PIPELINES for t in ELEMENT_TYPES if t == "f32" or p != "sm_100a_legalized_for_sm_90a"
]


@pytest.fixture(autouse=True)
def _collector_paused():
    """Each test runs with Python's cyclic garbage collector paused, as bulkred-opt
    compiles (``gc_paused``): IR is many small objects in reference cycles, and with the
    collector on, lowering and printing a module of a hundred kernels took half as long
    again."""
    with gc_paused():
        yield


def lower(text: str, name: str, spec: str):
    ctx = context()
    module = parse_module(ctx, text, name)
    PassPipeline.parse_spec(dict(ALL_PASSES), spec).apply(ctx, module)
    return module


@pytest.mark.parametrize("pipeline, t", VARIANT_CASES, ids=[f"{p}-{t}" for p, t in VARIANT_CASES])
def test_tile_variants_assemble(pipeline, t):
    arch, spec = PIPELINES[pipeline]
    source = variant_module(t, packed=pipeline != "sm_90a")
    module = lower(source, f"variants_{t}_{pipeline}.mlir", spec)
    text = print_ptx(module)
    assert f".target {arch}" in text
    assert text.count(".visible .entry") == source.count("func.func")
    if arch == "sm_90a":
        assert "f32x2" not in text and not THREE_INPUT.search(text)
    elif t == "f32":
        # the sm_100 instructions are really there (else only the scalar path is tested)
        assert "add.rn.ftz.f32x2" in text
        assert {m.group(1) for m in THREE_INPUT.finditer(text)} == {"max", "min"}
    try:
        assert assemble(text, arch)
    except PtxasError:
        assemble_module(module)  # prints again, for the error located on its op
        raise


# endregion

# region lit tests that print PTX

_RUN = re.compile(r"//\s*RUN:\s*(.*)$")


def ptx_run_lines() -> list[tuple[Path, int, str]]:
    """(file, line, bulkred-opt command) of each RUN line printing with ``-t ptx`` that
    is expected to succeed (no ``not``), ``assemble=true`` or not."""
    out = []
    for path in sorted(FILECHECK.rglob("*.mlir")):
        if "Output" in path.parts:
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            m = _RUN.search(line)
            if m is None:
                continue
            cmd = m.group(1).split("|")[0].strip()
            if cmd.startswith("not ") or not cmd.startswith("bulkred-opt "):
                continue
            if not re.search(r"-t\s+'?ptx\b", cmd):
                continue
            out.append((path, i, cmd))
    return out


def _run_bulkred_opt(path: Path, cmd: str) -> str:
    args = shlex.split(cmd.replace("%s", str(path)).replace("%S", str(path.parent)))[1:]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = bulkred_opt(args)
    assert status == 0, f"bulkred-opt {' '.join(args)} exited {status}: {err.getvalue()}"
    return out.getvalue()


ALL_RUNS = ptx_run_lines()
_ASSEMBLES = re.compile(r"-t\s+'ptx\{[^}]*\bassemble=true\b")
# The RUN lines that lit assembles itself (module doc) and those assembled below.
LIT_ASSEMBLES = [r for r in ALL_RUNS if _ASSEMBLES.search(r[2])]
RUNS = [r for r in ALL_RUNS if not _ASSEMBLES.search(r[2])]


def test_lit_tests_print_ptx():
    """The discovery below finds the backend's lit tests (else it would check nothing),
    and the lines left to lit are those whose command assembles (and is expected to
    succeed: ``ptx_run_lines`` takes no ``not`` line)."""
    names = {p.name for p, _, _ in RUNS}
    assert {"frame.mlir", "seed_sum32.mlir", "module.mlir", "branches.mlir"} <= names
    assert {p.name for p, _, _ in LIT_ASSEMBLES} >= {"fused_lowering.mlir", "ptx_math_kernel.mlir", "seed_sum32.mlir"}
    # the seed demo's three pipelines (module doc): two assembled by lit, one here
    seed = [cmd for p, _, cmd in ALL_RUNS if p.name == "seed_sum32.mlir"]
    for spec in ("bulkred-to-ptx{target=sm_100a}", "bulkred-to-ptx{target=sm_90a}", "legalize-for-target{target=sm_90a}"):
        assert any(spec in cmd for cmd in seed), spec
    for path, line, cmd in LIT_ASSEMBLES:
        assert "assemble=true" in cmd and not cmd.startswith("not "), f"{path.name}:{line}"


@pytest.mark.parametrize(
    "path, line, cmd", RUNS, ids=[f"{p.relative_to(FILECHECK)}:{n}" for p, n, _ in RUNS]
)
def test_lit_ptx_assembles(path, line, cmd):
    text = _run_bulkred_opt(path, cmd)
    modules = [c for c in text.split("// -----") if ".version" in c]
    if "--verify-diagnostics" not in cmd:
        assert modules, f"{path.name}:{line}: no PTX module in the output"
    for chunk in modules:
        m = re.search(r"^\.target (\S+)", chunk, re.M)
        assert m is not None, chunk[:200]
        try:
            assemble(chunk, m.group(1))
        except PtxasError as e:
            pytest.fail(f"{path.name}:{line}: ptxas ({m.group(1)}) rejected the PTX:\n{e.log}\n{chunk}")


# endregion
