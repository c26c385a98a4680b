"""tests/ir_compare.py against the printed text: same_ir is True where two lowerings
print the same and False for a changed attribute, result type or operand; has_value_named
finds what ``in str(module)`` finds of a value's name."""

from __future__ import annotations

import re

from ir_compare import has_value_named, same_ir
from test_rows import small_ctas  # noqa: F401 - the small CTAs (autouse)
from xdsl.dialects.builtin import IntegerAttr, i32, i64
from xdsl.rewriter import Rewriter

import test_rows
from bulkred_dialect.row_kernels import module


def _kernel():
    return test_rows.lowered(module("softmax", 4, 64, "float32", stats=("row_max", "row_sum"), variant="rows_warp"))


def test_same_ir_agrees_with_the_printed_text():
    a, b = _kernel(), _kernel()
    assert str(a) == str(b) and same_ir(a, b)
    ops = [o for o in b.walk() if o.name == "arith.constant" and o.result.type == i32]
    assert ops
    c = ops[0]
    c.properties["value"] = IntegerAttr(c.properties["value"].value.data + 1, i32)  # an attribute changed
    assert str(a) != str(b) and not same_ir(a, b)
    b = _kernel()
    c = next(o for o in b.walk() if o.name == "arith.constant" and o.result.type == i32)
    Rewriter.replace_value_with_new_type(c.result, i64)  # a result type alone changed (the structural check leaves it out)
    assert str(a) != str(b) and b.is_structurally_equivalent(a) and not same_ir(a, b)
    b = _kernel()
    op = next(o for o in b.walk() if len(o.operands) == 2 and o.operands[0] is not o.operands[1]
              and o.operands[0].type == o.operands[1].type)
    op.operands = [op.operands[1], op.operands[0]]  # operands swapped
    assert str(a) != str(b) and not same_ir(a, b)


def test_has_value_named_finds_what_the_text_holds():
    m = _kernel()
    text = str(m)
    names = set(re.findall(r"%([A-Za-z][A-Za-z0-9_]*)", text))
    assert len(names) > 3
    for name in names:
        assert has_value_named(m, name), name
    assert not has_value_named(m, "columns_seen") and "columns_seen" not in text
