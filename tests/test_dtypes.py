"""ops/dtypes.py: each row against numpy, and every list of element types derived from it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.dialects.builtin import IndexType, IntegerType, Signedness, bf16, f16, f32, f64, i32

from bulkred_dialect import api
from bulkred_dialect import builder as T
from bulkred_dialect.backend_ptx import signature
from bulkred_dialect.ops import dtypes
from bulkred_dialect.ops.dtypes import COLLECTIVE_DTYPES, DTYPES, ELEMENT_DTYPES, dtype, ir_name, of_ir, of_short
from bulkred_dialect.ops.tile import ELEMENT_TYPES

KINDS = ("sum", "prod", "max", "min", "and", "or", "xor", "any", "all")


@pytest.mark.parametrize("d", DTYPES.values(), ids=lambda d: d.name)
def test_row_agrees_with_numpy(d):
    host = np.dtype(d.numpy)
    assert host.itemsize == d.bytes == d.bits // 8
    if d.is_bool:  # bool: numpy's bool_ (kind 'b'), one byte holding 0 or 1, unsigned in the lowerings
        assert host == np.bool_ and host.kind == "b" and not d.is_float and not d.signed
        assert d.ir == IntegerType(1) and d.dlpack == (dtypes.DL_BOOL, 8)
    elif d.numpy == d.name:  # numpy has the type itself
        assert host.kind == ("f" if d.is_float else "i" if d.signed else "u")
    else:  # bfloat16: its bits
        assert host.kind == "u" and d.is_float
    assert d.dlpack[1] == d.bits
    assert d.accumulator.is_float == d.is_float and d.accumulator.bytes >= d.bytes


@pytest.mark.parametrize("d", DTYPES.values(), ids=lambda d: d.name)
@pytest.mark.parametrize("kind", KINDS)
def test_identity_is_neutral(d, kind):
    """identity op x == x for the extremes and a middle value of the type."""
    if d.is_float:
        if kind in ("any", "all"):
            assert d.identity(kind) == (0 if kind == "any" else 1)
            return
        if kind in ("and", "or", "xor"):
            if kind == "and":
                with pytest.raises(ValueError, match="'and' has no identity in"):
                    d.identity(kind)
            return
        e = d.identity(kind)
        xs = [-1e30, -1.5, 0.0, 2.5, 1e30, math.inf, -math.inf]
        op = {"sum": lambda a, b: a + b, "prod": lambda a, b: a * b, "max": max, "min": min}[kind]
        assert all(op(e, x) == x for x in xs)
        return
    if d.is_bool:  # its values are 0 and 1; any and all are or and and of them
        e = d.identity(kind)
        op = {"sum": int.__add__, "prod": int.__mul__, "max": max, "min": min, "and": int.__and__, "or": int.__or__,
              "xor": int.__xor__, "any": int.__or__, "all": int.__and__}[kind]
        assert e in (0, 1) and all(op(e, x) == x for x in (0, 1))
        return
    if kind in ("any", "all"):  # the bool kinds: the same identity in every type (the verifier takes only bool)
        assert d.identity(kind) == (0 if kind == "any" else 1)
        return
    info = np.iinfo(np.dtype(d.name))
    xs = [int(info.min), int(info.min) + 1, 0, 1, int(info.max)]
    e = d.identity(kind)
    assert info.min <= e <= info.max or (kind == "and" and d.signed and e == -1)
    mask = (1 << d.bits) - 1
    op = {
        "sum": lambda a, b: a + b,
        "prod": lambda a, b: a * b,
        "max": max,
        "min": min,
        "and": lambda a, b: (a & b) & mask,
        "or": lambda a, b: a | b,
        "xor": lambda a, b: a ^ b,
    }[kind]
    assert all(op(e, x) & mask == x & mask for x in xs)


def test_unknown_kind_and_name():
    with pytest.raises(ValueError, match="unknown reduction kind 'mean'"):
        DTYPES["int32"].identity("mean")
    with pytest.raises(KeyError, match=r"unknown dtype 'float8' \(valid: int8, int16"):
        dtype("float8")


def test_look_ups_by_ir_type_and_spelling():
    for d in DTYPES.values():
        assert of_ir(d.ir) is d and of_short(d.short) is d and ir_name(d.ir) == d.name
    signed32 = IntegerType(32, Signedness.SIGNED)
    assert of_ir(signed32) is DTYPES["int32"] and ir_name(signed32) == "sint32"  # never mistaken for int32
    assert of_short("s32") is DTYPES["int32"]
    assert of_ir(IndexType()) is None and of_ir(IntegerType(1)) is DTYPES["bool"] and ir_name(IndexType()) == "index"
    assert [of_ir(t).name for t in (f16, bf16, f32, f64, i32)] == ["float16", "bfloat16", "float32", "float64", "int32"]


def test_the_module_imports_no_xdsl():
    import subprocess
    import sys
    from pathlib import Path

    code = "import sys, bulkred_dialect.ops.dtypes\nprint([m for m in sys.modules if m.split('.')[0] == 'xdsl'])"
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": str(root)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_every_list_of_element_types_derives_from_the_table():
    assert ELEMENT_TYPES == tuple(d.ir for d in ELEMENT_DTYPES)
    assert list(T.DTYPES) == [d.name for d in ELEMENT_DTYPES]
    assert api.DTYPES == tuple(d.name for d in COLLECTIVE_DTYPES)
    assert {d.name for d in COLLECTIVE_DTYPES} <= {d.name for d in ELEMENT_DTYPES}
    for d in DTYPES.values():  # each row's spelling is a kernel parameter type of its width
        nbytes, names, _ = signature.PARAM_DTYPES[d.short]
        assert nbytes == d.bytes and d.name in names
        assert signature._SCALAR_DTYPE[d.short] is np.dtype(d.numpy).type


def test_the_rows_are_the_only_source():
    """No table keyed by dtype names or short spellings (``"float32": ...``,
    ``"f16": ...``) is written out elsewhere in the package: ops/dtypes.py's rows are the
    one place, and other tables are built from them."""
    import re
    from pathlib import Path

    key = re.compile(r"""(?:^\s*|[{,]\s*)["'](?:u?int(?:8|16|32|64)|b?float(?:16|32|64)|[fisu](?:8|16|32|64)|bf16)["']\s*:""")
    root = Path(dtypes.__file__).resolve().parents[1]
    offenders = [
        f"{path.relative_to(root)}:{n}: {line.strip()}"
        for path in sorted(root.rglob("*.py"))
        if path.name != "dtypes.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if key.search(line)
    ]
    assert offenders == []
