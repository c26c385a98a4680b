"""Assemble many printed PTX modules with few nvJitLink runs (each run costs about 5 ms of
nvJitLink's own start, more than a small kernel's ptxas time).

The printer (backend_ptx/printer.py) prints a module as a header (``.version``,
``.target``, ``.address_size``) and its kernels, nothing else at module scope (shared
memory is declared inside each entry). Modules with the same header are assembled as
one module of all their kernels: ptxas compiles each entry on its own, so that module
assembles exactly when each of them does (names must differ: a clash fails). Where it
does not, each module of the group is assembled alone, so that the error is its own. A
module with anything else at module scope is assembled alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bulkred_dialect.backend_ptx.assemble import PtxasError, assemble

HEADER_END = ".address_size 64\n"

# What may stand outside an entry's braces in a printed module (after the header).
_MODULE_SCOPE = re.compile(
    r"(|//.*|\t// \.globl\t\S+|\.visible \.entry \S+\(\)?|\t\.param \.\w+ \S+,?|\)"
    r"|\.(reqntid|minnctapersm|reqnctapercluster|maxntid|maxnreg) [\d, ]+|\.explicitcluster)"
)


def _only_entries(body: str) -> bool:
    """Whether ``body`` (a module after its header) holds only entries: every line at
    brace depth 0 is part of an entry's head, a comment or empty."""
    depth = 0
    for line in body.splitlines():
        if depth == 0 and line not in ("{", "}") and not _MODULE_SCOPE.fullmatch(line):
            return False
        depth += line.count("{") - line.count("}")
        if depth < 0:
            return False
    return depth == 0


def _error(ptx: str, arch: str) -> str | None:
    try:
        assemble(ptx, arch)
    except PtxasError as e:
        return str(e)
    return None


def assemble_each(modules: Sequence[tuple[str, str]], arch: str) -> dict[str, str | None]:
    """``{name: None}`` for each (name, PTX) of ``modules`` that assembles for ``arch``,
    else ``{name: ptxas's error}`` (the module's own, assembled alone); those of one
    header in one nvJitLink run (module doc)."""
    out: dict[str, str | None] = {}
    groups: dict[str, list[tuple[str, str]]] = {}
    for name, ptx in modules:
        head, sep, body = ptx.partition(HEADER_END)
        if sep and _only_entries(body):
            groups.setdefault(head, []).append((name, body))
        else:
            out[name] = _error(ptx, arch)
    for head, members in groups.items():
        if len(members) > 1 and _error(head + HEADER_END + "".join(body for _, body in members), arch) is None:
            out.update((name, None) for name, _ in members)
            continue
        out.update((name, _error(head + HEADER_END + body, arch)) for name, body in members)
    return out
