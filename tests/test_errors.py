"""The public boundary raises only the project's errors (bulkred_dialect/errors.py).

Each case is what a new user might try: the wrong kind of argument, text that is not
MLIR or not UTF-8, a bad target, pipeline or signature, an unknown kernel, a scalar that
does not fit its parameter. Each must raise its documented class (a subclass of
``BulkredError`` and of the matching built-in), with one line that names the problem.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import bulkred_dialect as bulkred
from bulkred_dialect import errors
from bulkred_dialect.backend_ptx import assemble, runtime
from bulkred_dialect.backend_ptx.signature import KernelSignature
from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops import target as target_mod
from bulkred_dialect.pipeline import OptionError

ROOT = Path(__file__).resolve().parents[1]
SEED = (ROOT / "examples" / "seed_sum32.mlir").read_text()

# A PTX module that assembles for sm_90a: one empty kernel.
PTX = ".version 8.0\n.target sm_90a\n.address_size 64\n\n.visible .entry k()\n{\n\tret;\n}\n"


# Parses, but does not verify: the function returns a value it does not declare.
BAD_RETURN = "func.func @k() {\n  %0 = arith.constant 1 : i32\n  func.return %0 : i32\n}\n"


def seed():
    return runtime.parse(SEED, "seed_sum32.mlir")


# (id, call, class, built-in, words the message must hold)
CASES: list[tuple[str, Callable[[], object], type[Exception], type[Exception], str]] = [
    ("compile_tile_module(42)", lambda: runtime.compile_tile_module(42), errors.ArgumentError, TypeError,
     "'module' must be a builtin.module"),
    ("compile_module(None)", lambda: runtime.compile_module(None), errors.ArgumentError, TypeError,
     "got NoneType"),
    ("lower_tile_module([1])", lambda: runtime.lower_tile_module([1]), errors.ArgumentError, TypeError,
     "got list"),
    ("parse(42)", lambda: runtime.parse(42), errors.ArgumentError, TypeError, "must be MLIR text"),
    ("pipeline=42", lambda: runtime.compile_tile_module(seed(), pipeline=42), errors.PipelineError, ValueError,
     "'pipeline' must be a pass pipeline"),
    ("parse(not mlir)", lambda: runtime.parse("this is not mlir"), errors.ParseError, ValueError,
     "<input>:1:6: error: Operation this is not registered"),
    ("parse(bad utf-8)", lambda: runtime.parse(b"\xff\xfe"), errors.ParseError, ValueError, "not UTF-8 text"),
    ("compile_ptx(bad utf-8)", lambda: runtime.compile_ptx(b"\xff\xfe\x00", "sm_90a"), errors.AssembleError,
     Exception, "not UTF-8 text"),
    ("compile_ptx(None)", lambda: runtime.compile_ptx(None, "sm_90a"), errors.ArgumentError, TypeError,
     "'ptx' must be PTX text"),
    ("compile_ptx(arch=garbage)", lambda: runtime.compile_ptx(PTX, "garbage"), errors.TargetError, ValueError,
     "'arch' must be a target name such as sm_90a, got 'garbage'"),
    ("compile_ptx(signatures=42)", lambda: runtime.compile_ptx(PTX, "sm_90a", signatures=42),
     errors.SignatureError, TypeError, "'signatures' must be KernelSignatures"),
    ("compile_ptx(rejected)", lambda: runtime.compile_ptx(PTX.replace("ret;", "bogus;"), "sm_90a"),
     assemble.PtxasError, ValueError, "ptxas (sm_90a) rejected the PTX"),
    ("mod.kernel(nosuch)", lambda: runtime.compile_ptx(PTX, "sm_90a").kernel("nosuch"),
     errors.KernelNotFoundError, KeyError, "no kernel 'nosuch' in the module (kernels: k)"),
    ("mod.launch(nosuch)", lambda: runtime.compile_ptx(PTX, "sm_90a").launch("nosuch"),
     errors.KernelNotFoundError, KeyError, "no kernel 'nosuch'"),
    ("target=42", lambda: runtime.compile_tile_module(seed(), 42), errors.TargetError, ValueError,
     "'target' must be a target name"),
    ("target=hopper", lambda: runtime.compile_tile_module(seed(), "hopper"), errors.TargetError, ValueError,
     "got 'hopper'"),
    ("pipeline unknown pass", lambda: runtime.compile_tile_module(seed(), pipeline="lower-to-ptz"),
     errors.PipelineError, ValueError, "unknown pass 'lower-to-ptz'"),
    ("parse(does not verify)", lambda: runtime.parse(BAD_RETURN, "bad.mlir"), LocatedError, ValueError,
     "bad.mlir:3:3: error: 'func.return' Expected arguments to have the same types"),
    ("sum(axis=True)", lambda: bulkred.sum(np.ones(4, np.float32), axis=True), bulkred.ReductionError, ValueError,
     "'axis' must be an int, a tuple of ints or None, got True"),
    ("amax(complex)", lambda: bulkred.amax(np.ones(4, np.complex64)), bulkred.ReductionError, ValueError,
     "a complex64 x is not supported"),
]


@pytest.mark.parametrize("call, cls, builtin, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_public_functions_raise_the_projects_errors(call, cls, builtin, words):
    with pytest.raises(cls) as e:
        call()
    assert isinstance(e.value, errors.BulkredError) and isinstance(e.value, builtin)
    text = str(e.value)
    assert "\n" not in text.strip(), text
    assert words in text, text


# Scalar parameters: (dtype, value, the bits passed) or (dtype, value, the words of the error).
SCALAR_OK = [
    ("bf16", 1.5, 0x3FC0),  # was passed as raw bits (0x0001)
    ("bf16", 1e10, 0x5015),  # 1e10 rounds to 0x5015 (was a raw OverflowError)
    ("bf16", 1.0 + 2**-8, 0x3F80),  # a tie rounds to even
    ("bf16", 1.0 + 3 * 2**-8, 0x3F82),  # a tie rounds to even (up)
    ("bf16", -2, 0xC000),  # an int is a value, not bits
    ("bf16", float("inf"), 0x7F80),
    ("f16", 1.5, 0x3E00),
    ("f32", 1.5, 0x3FC00000),
    ("f64", 2**60, 0x43B0000000000000),
]


@pytest.mark.parametrize("dtype, value, bits", SCALAR_OK, ids=[f"{d}={v!r}" for d, v, _ in SCALAR_OK])
def test_scalar_params_convert_by_value(dtype, value, bits):
    (got,) = KernelSignature.of("k", ("x", dtype)).check([value])
    assert int(np.asarray(got).view(f"uint{np.asarray(got).itemsize * 8}")) == bits


SCALAR_REFUSED = [
    ("bf16", 1e39, "1e+39 does not fit in bf16"),
    ("f16", 1e10, "10000000000.0 does not fit in f16"),
    ("f32", 1e40, "1e+40 does not fit in f32"),
    ("f64", 10**400, "an integer of 401 digits (100000...) does not fit in f64"),
    ("i32", 1.5, "expected an integer (i32), got float 1.5"),
    ("u8", 256, "256 does not fit in u8 [0, 255]"),
    ("s64", -(10**30), "an integer of 31 digits (-10000...) does not fit in s64 [-9223372036854775808, "),
]


@pytest.mark.parametrize("dtype, value, words", SCALAR_REFUSED, ids=[f"{d}={v!r:.12}" for d, v, _ in SCALAR_REFUSED])
def test_lossy_scalar_params_are_refused(dtype, value, words):
    with pytest.raises(errors.SignatureError) as e:
        KernelSignature.of("k", ("x", dtype)).check([value])
    assert isinstance(e.value, TypeError) and isinstance(e.value, runtime.RuntimeErrorBase)
    assert "\n" not in str(e.value) and f"kernel 'k' param 'x': {words}" in str(e.value)


def test_hierarchy():
    """Every existing error class is part of the one hierarchy, under its old name."""
    assert runtime.RuntimeErrorBase is errors.BulkredError
    assert runtime.SignatureError is errors.SignatureError and runtime.PipelineError is errors.PipelineError
    assert OptionError is errors.PipelineError
    assert target_mod.TargetError is errors.TargetError
    assert issubclass(LocatedError, errors.VerifyError)
    for cls in (runtime.NoGpuError, runtime.CudaError, runtime.KernelTimeoutError, runtime.LaunchConfigError):
        assert issubclass(cls, errors.LaunchError)
    assert issubclass(runtime.LaunchConfigError, ValueError)
    assert issubclass(assemble.PtxasError, errors.AssembleError)
    assert issubclass(assemble.AssemblerCrashed, errors.AssembleError)
    assert issubclass(assemble.AssemblerUnavailable, errors.AssembleError)
    assert issubclass(assemble.AssemblerUnavailable, RuntimeError)
    assert issubclass(bulkred.ReductionError, errors.BulkredError) and issubclass(bulkred.ReductionError, ValueError)
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.BulkredError)
    # the builder, the interpreter and the signature specs keep their ValueError / KeyError
    assert issubclass(errors.BuildError, ValueError) and issubclass(errors.InterpretError, ValueError)
    assert issubclass(errors.SignatureValueError, errors.SignatureError)
    assert issubclass(errors.SignatureValueError, ValueError) and issubclass(errors.SignatureValueError, TypeError)
    assert issubclass(errors.KernelNotFoundError, errors.UnknownNameError)
    assert issubclass(errors.UnknownNameError, KeyError)
    assert str(errors.UnknownNameError("unknown dtype 'x'")) == "unknown dtype 'x'"  # not KeyError's quotes


def test_errors_module_is_a_leaf():
    """errors.py imports nothing of ours (and not xDSL), so that ops/ can use it."""
    import ast

    tree = ast.parse((ROOT / "bulkred_dialect" / "errors.py").read_text())
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert [getattr(n, "module", None) for n in imports] == ["__future__"]
