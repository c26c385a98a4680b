"""Imports among the ptx op files run one way: base <- addresses <- the op files."""

from __future__ import annotations

import ast
from pathlib import Path

import bulkred_dialect.ops.ptx as ptx_package

PTX_DIR = Path(ptx_package.__file__).parent
PKG = "bulkred_dialect.ops.ptx"
FOUNDATION = ("base", "addresses")  # in import order


def imported_ptx_modules(path: Path) -> set[str]:
    """Names of the modules of the ptx package that ``path`` imports, anywhere in the file
    (a function-level import counts: it is a cycle postponed, not removed)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from .memory import X / from . import memory
                base = node.module or ""
                names = [base] if base else [a.name for a in node.names]
            elif node.module == PKG:
                names = [a.name for a in node.names]
            elif node.module and node.module.startswith(PKG + "."):
                names = [node.module[len(PKG) + 1 :]]
            else:
                continue
            found.update(n.split(".")[0] for n in names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(PKG + "."):
                    found.add(a.name[len(PKG) + 1 :].split(".")[0])
    return found


def ptx_modules() -> list[str]:
    return sorted(p.stem for p in PTX_DIR.glob("*.py") if p.stem != "__init__")


def test_base_imports_no_module_of_the_ptx_package():
    assert imported_ptx_modules(PTX_DIR / "base.py") == set()


def test_addresses_imports_only_base():
    assert imported_ptx_modules(PTX_DIR / "addresses.py") == {"base"}


def test_ptx_modules_import_no_cycle():
    graph = {m: imported_ptx_modules(PTX_DIR / f"{m}.py") for m in ptx_modules()}
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph.get(m, ())):
            assert state.get(n) != 1, "import cycle: " + " -> ".join([*path, m, n])
            if n not in state:
                visit(n, [*path, m])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [])


def test_the_checker_sees_function_level_and_relative_imports(tmp_path):
    f = tmp_path / "x.py"
    f.write_text(
        "import os\n"
        "from bulkred_dialect.ops.ptx.base import PtrType\n"
        "from .sync import MapaOp\n"
        "def g():\n"
        "    from bulkred_dialect.ops.ptx.memory import AllocOp\n"
        "    import bulkred_dialect.ops.ptx.bulk\n"
        "    from bulkred_dialect.ops.ptx import redux\n"
    )
    assert imported_ptx_modules(f) == {"base", "sync", "memory", "bulk", "redux"}
