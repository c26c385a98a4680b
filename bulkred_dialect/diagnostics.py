"""Source locations for parsed ops and located, traceback-free diagnostics.

The parser records each op's ``file:line:col`` as a ``FileLineColLoc``; verifier
and pass errors are reported as ``file:line:col: error: 'op.name' message``.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from xdsl.context import Context
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DictionaryAttr,
    FileLineColLoc,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue, TypeAttribute
from xdsl.parser import Parser
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRTokenKind
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

from bulkred_dialect.errors import VerifyError
from bulkred_dialect.ops.op_definition import op_verifier


class LocatedParser(Parser):
    """An MLIR parser that attaches the source location of every op it parses.

    Errors that xDSL raises while building an op rather than while reading tokens
    (a declarative format's type constraint, an integer out of range for its type)
    become located parse errors naming the op: ``'ptx.max3' Expected attribute f32
    but got i32`` at the op's first token.

    A type spelled exactly as one parsed before in the same input is not parsed
    again: :meth:`parse_optional_type` returns the type it made then (types are
    immutable values) and resumes after the text (docs/compile_speed.md).

    Input that xDSL 0.74's parser accepts or reports without a location, refused
    here with a located error (docs/DEVELOPING.md, "Diagnostics"): an ``index``
    literal outside 64 bits, ``attributes`` with no dictionary after it, a
    ``func.func`` whose body is ``{ }``, and a block label defined twice.
    """

    # An index is 64 bits wide (as MLIR's IndexType::kInternalStorageBitWidth); a
    # literal may be written signed or unsigned, as for i64.
    INDEX_RANGE: tuple[int, int] = (-(2**63), 2**64)

    line_offset: int = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The name of each op being parsed, innermost last (set once the name is read).
        self._op_names: list[str | None] = []
        self._line_starts: list[int] | None = None
        # first token's text -> [(the type's whole text, the type)], see parse_optional_type
        self._types: dict[str, list[tuple[str, TypeAttribute]]] = {}
        # The span of the last region parsed as `{ }` (no block), see parse_operation.
        self._empty_region: tuple[int, int] | None = None

    def parse_optional_type(self) -> TypeAttribute | None:
        """xDSL's, with a memo of the types already parsed from this input.

        A parametrized type (``memref<32xf32, #bulkred.scope<global>>``,
        ``!ptx.ptr<global>``) is parsed once; where the same text comes again, from
        the same first token to the closing ``>``, the type made the first time is
        returned and the parser resumes after the text. Types are immutable and
        their syntax does not depend on where they are written, so the result is the
        same; only texts that end with ``>`` (nothing can continue a type after it)
        and hold no comment are kept. Each memref type of the seed example took
        about 0.3 ms to parse, half of it in ``MemRefType``'s constructor.
        """
        tok = self._current_token
        content = self.lexer.input.content
        if (
            tok.kind is not MLIRTokenKind.BARE_IDENT and tok.kind is not MLIRTokenKind.EXCLAMATION_IDENT
        ) or not isinstance(content, str):
            return super().parse_optional_type()
        start = tok.span.start
        head = tok.text
        seen = self._types.get(head)
        if seen:
            for text, typ in seen:
                if content.startswith(text, start):
                    self._resume_from(start + len(text))
                    return typ
        typ = super().parse_optional_type()
        if typ is not None:
            text = content[start : self._current_token.span.start].rstrip()
            if text.endswith(">") and "//" not in text:
                self._types.setdefault(head, []).append((text, typ))
        return typ

    def _get_op_by_name(self, name: str) -> type[Operation]:
        if self._op_names:
            self._op_names[-1] = name
        return super()._get_op_by_name(name)

    def parse_optional_builtin_int_or_float_attr(self) -> IntegerAttr | FloatAttr | None:
        """xDSL's, refusing an ``index`` literal that does not fit 64 bits (xDSL 0.74
        checks the range of ``iN`` literals only; a wider index would wrap modulo 2^64
        in the PTX address arithmetic)."""
        start = self._current_token.span.start
        attr = super().parse_optional_builtin_int_or_float_attr()
        if isinstance(attr, IntegerAttr) and isinstance(attr.type, IndexType):
            lo, hi = self.INDEX_RANGE
            if not lo <= attr.value.data < hi:
                self.raise_error(
                    f"integer value {attr.value.data} is out of range for type index (64 bits), "
                    f"which supports values in the range [{lo}, {hi})",
                    start,
                    self.pos,
                )
        return attr

    def parse_optional_attr_dict_with_keyword(self, reserved_attr_names=()) -> DictionaryAttr | None:
        """xDSL's, requiring the dictionary after ``attributes`` (xDSL 0.74 reads a
        missing one as empty, so ``func.func @k() attributes`` became a declaration)."""
        keyword = self._current_token.span
        if self.parse_optional_keyword("attributes") is None:
            return None
        tok = self._current_token
        if tok.kind is not MLIRTokenKind.L_BRACE:
            # Located at the keyword: what follows may be far away (the end of the input).
            got = "the end of the input" if tok.kind is MLIRTokenKind.EOF else f"'{tok.text}'"
            self.raise_error(
                f"expected an attribute dictionary '{{...}}' after 'attributes', got {got}",
                keyword.start,
                keyword.end,
            )
        return self.parse_optional_attr_dict_with_reserved_attr_names(reserved_attr_names)

    def parse_optional_region(self, arguments=None) -> Region | None:
        start = self._current_token.span.start
        region = super().parse_optional_region(arguments)
        if region is not None and not region.blocks:
            self._empty_region = (start, self.pos)
        return region

    def _parse_block(self) -> Block:
        """xDSL's, recording where each label is defined: xDSL 0.74 does not for a
        block referenced before its label (``cf.br ^bb1`` ... ``^bb1:``), so a second
        ``^bb1:`` failed with a bare ``KeyError: 'bb1'`` instead of its
        "re-declaration of block" error."""
        tok = self._current_token
        block = super()._parse_block()
        if tok.kind is MLIRTokenKind.CARET_IDENT:
            self.blocks[tok.text[1:]] = (block, tok.span)
        return block

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        self._op_names.append(None)
        try:
            op = super().parse_operation()
        except ParseError:
            raise
        except (DiagnosticException, ValueError, ArithmeticError) as e:
            name = self._op_names[-1]
            message = _root_message(e)
            self.raise_error(f"'{name}' {message}" if name else message, start, self.pos)
        finally:
            self._op_names.pop()
        self._check_function_body(op, start)
        if isinstance(op.location, UnknownLoc):
            line, col = self._line_col(start)
            op.location = FileLineColLoc(StringAttr(self.lexer.input.name), IntAttr(line), IntAttr(col))
        return op

    def _check_function_body(self, op: Operation, start: int) -> None:
        """A ``func.func`` in custom syntax is a declaration without braces; with ``{ }``
        (a region with no block) it is an error, as in MLIR. xDSL 0.74 reads both as a
        declaration. The generic form prints a declaration's region as ``({ })``, so
        it keeps it."""
        empty = self._empty_region
        if (
            op.name != "func.func"
            or empty is None
            or empty[0] < start
            or op.regions[0].blocks
            or self.lexer.input.content[start] == '"'
        ):
            return
        self.raise_error(
            "expected non-empty function body ('{ }' holds no block; a declaration is written without braces)",
            *empty,
        )

    def _line_col(self, pos: int) -> tuple[int, int]:
        """1-based line (plus ``line_offset``) and column of ``pos``, as
        ``Span.get_location`` gives them, from an index of the line starts built once
        (counting the newlines before each op would make parsing quadratic)."""
        starts = self._line_starts
        if starts is None:
            inp = self.lexer.input
            nl, text = inp.newline, inp.content
            starts, i = [0], text.find(nl)
            while i >= 0:
                starts.append(i + len(nl))
                i = text.find(nl, i + len(nl))
            self._line_starts = starts
        line = bisect.bisect_right(starts, pos)
        return line + self.line_offset, pos - starts[line - 1] + 1


class NestingTooDeep(ParseError):
    """Input nested deeper than the parser's recursion allows."""


def parse_module(ctx: Context, text: str | bytes, name: str = "<input>", line_offset: int = 0) -> ModuleOp:
    """Parse ``text`` with every op located; ``line_offset`` is added to each line
    number (the lines before the chunk in a ``--split-input-file`` input).

    Input nested too deeply for Python's stack (thousands of ``[`` or regions)
    raises :class:`NestingTooDeep` at the token where the parser gave up.
    """
    parser = LocatedParser(ctx, text, name)
    parser.line_offset = line_offset
    try:
        return parser.parse_module()
    except RecursionError:
        span = parser._current_token.span
        raise NestingTooDeep(span, "input nests too deeply") from None


def parse_error_line(e: ParseError, line_offset: int = 0) -> str:
    """xDSL's ``ParseError`` as one line, ``file:line:col: error: message`` (``line_offset``:
    the lines before the chunk of a ``--split-input-file`` input)."""
    loc = Span(e.span.start, e.span.end, e.span.input, line_offset).get_location()
    msg = e.msg.strip()
    if msg == "Could not parse entire input!":  # xDSL's words for a stray token
        msg = f"expected an operation, got '{e.span.text}'"
    elif not msg or msg.startswith("in "):
        msg = f"unexpected '{e.span.text}' {msg}".rstrip()
    return f"{loc.file}:{loc.line}:{loc.col}: error: {msg}"


def format_location(op: Operation) -> str:
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    parent = op.parent_op()
    return format_location(parent) if parent is not None else "<unknown>"


class LocatedError(DiagnosticException, VerifyError):
    """An error tied to an op: ``file:line:col: error: 'op' message`` (the project's
    :class:`~bulkred_dialect.errors.VerifyError`)."""

    def __init__(self, op: Operation, message: str):
        self.op = op
        self.message = message
        super().__init__(f"{format_location(op)}: error: '{op.name}' {message}")


def _root_message(err: BaseException) -> str:
    """The verifier's own sentence, without xDSL's printed-module context.

    xDSL wraps constraint failures (``operand 'mbar' at position 3 does not
    verify:``) around the constraint's message; keep both on one line.
    """
    parts: list[str] = []
    e: BaseException | None = err
    while e is not None:
        text = str(e).strip()
        prefix = "Operation does not verify: "
        if text.startswith(prefix):
            text = text[len(prefix) :]
        first = text.splitlines()[0].strip() if text else ""
        if first and first not in parts and not first.startswith("Operation does not verify"):
            parts.append(first.rstrip(":"))
        e = e.__cause__ if isinstance(e.__cause__, DiagnosticException) else None
    if not parts:
        return type(err).__name__
    # Outer context first, then the innermost fact.
    return ": ".join(parts) if len(parts) <= 2 else f"{parts[0]}: {parts[-1]}"


# Dialects whose verifiers are ours: anything but a VerifyException from them is a bug
# to report as one (an internal error), not bad input.
_OUR_DIALECTS = ("ptx.", "bulkred.")


def _check_indices(op: Operation) -> None:
    """memref.load / memref.store: one index per dimension (xDSL's verifiers raise a bare
    Exception for it)."""
    if op.name not in ("memref.load", "memref.store"):
        return
    t = op.operands[0 if op.name == "memref.load" else 1].type
    if isinstance(t, MemRefType):
        n = len(op.operands) - (1 if op.name == "memref.load" else 2)
        if n != t.get_num_dims():
            raise VerifyException(
                f"'indices' must hold one index per dimension of {t} ({t.get_num_dims()}), got {n}"
            )


def _memref_indices(op: Operation) -> tuple[Attribute, Sequence[SSAValue]]:
    """(memref type, indices) of a memref.load / memref.store."""
    if op.name == "memref.load":
        return op.operands[0].type, op.operands[1:]
    return op.operands[1].type, op.operands[2:]


def _constant_index(v: SSAValue) -> int | None:
    """The value of an ``arith.constant`` index (or integer), else None."""
    owner = v.owner
    if isinstance(owner, Operation) and owner.name == "arith.constant":
        value = getattr(owner, "value", None)
        if isinstance(value, IntegerAttr):
            return value.value.data
    return None


def _check_constant_indices(op: Operation) -> None:
    """memref.load / memref.store: a constant index must lie in its static dimension
    (xDSL checks nothing; lowered, it would address memory outside the buffer)."""
    t, indices = _memref_indices(op)
    if not isinstance(t, MemRefType):
        return
    for i, (v, dim) in enumerate(zip(indices, t.get_shape())):
        c = _constant_index(v)
        if c is not None and dim >= 0 and not 0 <= c < dim:
            raise VerifyException(f"'indices' #{i} must be in [0, {dim}) for dimension {i} of {t}, got {c}")


def _static(values: Sequence[int]) -> list[int | None]:
    return [None if v == DYNAMIC_INDEX else v for v in values]


def _check_subview(op: Operation) -> None:
    """memref.subview with static offsets, sizes and strides: against the source's
    static shape (each dimension of the view inside the source's), and its declared
    result type against the one inferred from them (shape, and the strides and offset
    of the layout; a dimension of size 1 may be dropped, a static stride or offset may
    be declared dynamic). xDSL 0.74 checks neither: a view past the end of its source
    was lowered to loads outside the buffer."""
    from xdsl.dialects.memref import SubviewOp  # only once a subview is verified

    if not isinstance(op, SubviewOp):
        return
    src, t = op.source.type, op.result.type
    if not isinstance(src, MemRefType) or not isinstance(t, MemRefType):
        return
    rank = src.get_num_dims()
    lists = {
        "static_offsets": op.static_offsets.get_values(),
        "static_sizes": op.static_sizes.get_values(),
        "static_strides": op.static_strides.get_values(),
    }
    for field, values in lists.items():
        if len(values) != rank:
            raise VerifyException(
                f"'{field}' must hold one value per dimension of {src} ({rank}), got {len(values)}"
            )
    offsets, sizes, strides = (_static(v) for v in lists.values())
    for i, n in enumerate(sizes):
        if n is not None and n < 0:
            raise VerifyException(f"'static_sizes' #{i} must be >= 0, got {n}")
    for i, (dim, o, n, s) in enumerate(zip(src.get_shape(), offsets, sizes, strides)):
        if dim < 0:
            continue
        where = f"dimension {i} of {src}"
        if o is not None and n is not None and s is not None:
            if n == 0 and not 0 <= o <= dim:
                raise VerifyException(f"'static_offsets' #{i} of an empty view must be in [0, {dim}] for {where}, got {o}")
            last = o + (n - 1) * s
            if n > 0 and not (0 <= o < dim and 0 <= last < dim):
                raise VerifyException(
                    f"dimension {i} of the view must lie in [0, {dim}) ({where}), got elements {o} to {last} "
                    f"(offset {o}, size {n}, stride {s})"
                )
        elif o is not None and not 0 <= o <= dim:
            raise VerifyException(f"'static_offsets' #{i} must be in [0, {dim}] for {where}, got {o}")
        elif n is not None and s is not None and n > 0 and (n - 1) * abs(s) >= dim:
            raise VerifyException(
                f"dimension {i} of the view must fit in the {dim} elements of {where}, got a span of {(n - 1) * abs(s) + 1} "
                f"(size {n}, stride {s})"
            )
    if src.get_strides() is None:
        return  # a layout without strides: nothing to infer
    dyn = {"offsets": iter(op.offsets), "sizes": iter(op.sizes), "strides": iter(op.strides)}
    mixed = [
        [next(dyn[k]) if v is None else v for v in values]
        for k, values in zip(dyn, (offsets, sizes, strides))
    ]
    want = SubviewOp.infer_result_type(src, *mixed)
    _check_subview_result(want, t)


def _check_subview_result(want: MemRefType, t: MemRefType) -> None:
    """``t`` is ``want``, or ``want`` with some dimensions of size 1 dropped; a static
    stride or offset of ``want`` may be declared dynamic (``?``)."""
    shape, got = list(want.get_shape()), list(t.get_shape())
    kept: list[int] = []
    for i, d in enumerate(shape):
        if len(kept) < len(got) and got[len(kept)] == d:
            kept.append(i)
        elif d != 1:
            break
    problem = None
    if t.element_type != want.element_type:
        problem = f"its element type {t.element_type} is not {want.element_type}"
    elif t.memory_space != want.memory_space:
        problem = "its memory space differs from the source's"
    elif len(kept) != len(got) or any(d != 1 for i, d in enumerate(shape) if i not in kept):
        problem = f"its shape {_dims(got)} is not {_dims(shape)}"
    else:
        want_strides, got_strides = want.get_strides(), t.get_strides()
        if want_strides is not None and got_strides is not None:
            expected = [want_strides[i] for i in kept]
            if any(g is not None and g != w for g, w in zip(got_strides, expected)):
                problem = f"its strides {_dims(got_strides)} are not {_dims(expected)}"
                if None in expected:
                    problem += " (a stride given by an operand must be declared '?')"
            elif (g := t.get_offset()) is not None and g != want.get_offset():
                problem = f"its offset {g} is not {_dim(want.get_offset())}"
                if want.get_offset() is None:
                    problem += " (an offset given by an operand must be declared '?')"
    if problem is not None:
        reduced = " (or it without dimensions of size 1)" if 1 in shape else ""
        raise VerifyException(f"result type must be {want}{reduced}, got {t}: {problem}")


def _dim(d: int | None) -> str:
    return "?" if d is None or d == DYNAMIC_INDEX else str(d)


def _dims(ds: Sequence[int | None]) -> str:
    return "[" + ", ".join(_dim(d) for d in ds) + "]"


# Checks that xDSL 0.74's verifiers of its own ops lack, run after the op's own verifier
# (docs/DEVELOPING.md, "Diagnostics").
_UPSTREAM_CHECKS = {
    "memref.load": _check_constant_indices,
    "memref.store": _check_constant_indices,
    "memref.subview": _check_subview,
}


_VERIFIED = "_bulkred_verified_as"  # the module attribute (Python's) holding the state last verified


def walk_ops(module: Operation) -> list[Operation]:
    """``list(module.walk())`` (each op before its regions' ops, in order), from a stack
    rather than xDSL's nested generators (through which every op of a kernel passes once
    per level of nesting), each block's ops followed by their links (xDSL 0.74's
    ``_first_op`` / ``_next_op``, as ``Block.ops`` follows them)."""
    out: list[Operation] = [module]
    add = out.append
    # the next op to visit at each level, the first of each block of ``module`` to begin with
    stack: list[Operation | None] = [b._first_op for r in reversed(module.regions) for b in reversed(r.blocks)]  # noqa: SLF001
    while stack:
        op = stack.pop()
        if op is None:
            continue
        add(op)
        stack.append(op._next_op)  # noqa: SLF001 (after the ops of op's regions)
        for region in reversed(op.regions):
            for block in reversed(region.blocks):
                stack.append(block._first_op)  # noqa: SLF001
    return out


def _state(ops: Sequence[Operation]) -> list[object]:
    """What verifying the module of ``ops`` (:func:`walk_ops`'s) reads, as objects compared by
    identity (or equal immutable attributes): every op in walk order with its block,
    operand, result and successor tuples (xDSL replaces a tuple to change one), its
    properties' and attributes' items, and each region's blocks with their argument
    tuples. Values' and blocks' types are fixed at their creation (a new type is a new
    value)."""
    out: list[object] = []
    add, extend = out.append, out.extend
    for op in ops:
        extend((op, op.parent, op._operands, op.results, op._successors))  # noqa: SLF001 (xDSL 0.74's tuples)
        extend(op.properties.items())
        add(len(op.properties))
        extend(op.attributes.items())
        add(len(op.attributes))
        for region in op.regions:
            add(region)
            for block in region.blocks:
                extend((block, block._args))  # noqa: SLF001
    return out


def verify_located(module: ModuleOp) -> None:
    """Verify every op, raising :class:`LocatedError` for the first (innermost) failure.

    Some verifiers of xDSL's own dialects raise a bare ``Exception`` or fail an
    ``assert`` on bad input; for ops of those dialects any exception is a verifier error.
    Some check too little: :data:`_UPSTREAM_CHECKS` adds what they lack (constant
    indices of memref.load/store, memref.subview against its source). An op of xDSL's
    dialects whose definition is of the fixed form is checked as ours are
    (:func:`~bulkred_dialect.ops.op_definition.upstream_check`), and every op by
    :func:`~bulkred_dialect.ops.op_definition.op_verifier` (``Operation.verify``'s
    checks without its per-terminator count of the region's blocks, ``IsolatedFromAbove``
    in one walk), ``op.verify`` running only where that does not pass (its error, word
    for word).

    A module verified before and unchanged since (every op, operand, result,
    successor, property, attribute, region and block the same objects, :func:`_state`)
    is not verified again: lowering then printing, or building then lowering, verified
    the same IR twice.
    """
    ops = walk_ops(module)
    state = _state(ops)
    if getattr(module, _VERIFIED, None) == state:
        return  # verified before, and nothing it reads has changed since
    for op in ops:
        try:
            _check_indices(op)
            passes = op_verifier(type(op))
            if passes is None or not passes(op):
                op.verify(verify_nested_ops=False)
            check = _UPSTREAM_CHECKS.get(op.name)
            if check is not None:
                check(op)
        except VerifyException as e:
            raise LocatedError(op, _root_message(e)) from None
        except Exception as e:
            if op.name.startswith(_OUR_DIALECTS):
                raise
            text = str(e).strip().splitlines()[0] if str(e).strip() else ""
            text = text[:1].lower() + text[1:]
            raise LocatedError(op, text or f"does not verify ({type(e).__name__})") from None
    setattr(module, _VERIFIED, state)
