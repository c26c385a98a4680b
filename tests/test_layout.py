"""Imports among the ptx op files run one way: base <- addresses <- the op files; the
tile dialect's package defines its names once (no shim) and registers them all; tools/ is
a few documented runners."""

from __future__ import annotations

import ast
import re
import subprocess
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


# region The package's and the tools' layout (issue 29: split by concern, no shim, a few runners)

ROOT = PTX_DIR.parents[2]


def test_no_module_of_ops_only_re_exports():
    """A dialect's names live where they are defined: a module of ``ops/`` made only of
    imports (and ``__all__``) is a shim; a package's ``__init__`` may gather its own."""
    shims = []
    for path in sorted((ROOT / "bulkred_dialect" / "ops").rglob("*.py")):
        if path.name == "__init__.py":
            continue
        body = ast.parse(path.read_text()).body
        if all(
            isinstance(n, ast.Import | ast.ImportFrom)
            or (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
            or (isinstance(n, ast.Assign) and [getattr(t, "id", None) for t in n.targets] == ["__all__"])
            for n in body
        ):
            shims.append(str(path.relative_to(ROOT)))
    assert not shims, f"modules that only re-export: {shims}"


def test_the_tile_dialect_names_every_op_of_its_package():
    """ops/tile/__init__.py's ``BULKRED`` holds every op and attribute its modules define."""
    import importlib

    from xdsl.irdl import IRDLOperation

    from bulkred_dialect.ops.tile import BULKRED

    defined = set()
    for path in sorted((ROOT / "bulkred_dialect" / "ops" / "tile").glob("*.py")):
        mod = importlib.import_module(f"bulkred_dialect.ops.tile.{path.stem}") if path.stem != "__init__" else None
        for cls in vars(mod).values() if mod else ():
            if isinstance(cls, type) and cls.__module__ == mod.__name__ and isinstance(getattr(cls, "name", None), str):
                defined.add(cls)
    registered = {*BULKRED.operations, *BULKRED.attributes}
    assert any(issubclass(c, IRDLOperation) for c in defined)  # the walk finds the ops
    assert defined - registered == set(), sorted(c.__name__ for c in defined - registered)


def test_tools_are_the_documented_runners():
    """tools/ holds a few runners, each named in docs/DEVELOPING.md's layout, and no file
    named after an issue; every probe that tools/diag.py runs says what it measures and
    runs as a script."""
    files = sorted(p.relative_to(ROOT / "tools") for p in (ROOT / "tools").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert not [f for f in files if re.search(r"issue", f.name, re.I)]
    layout = (ROOT / "docs" / "DEVELOPING.md").read_text()
    layout = layout[layout.index("\ntools/") : layout.index("\nbenchmarks/")]
    undocumented = [str(f) for f in files if f.name not in layout and f.stem not in layout]
    assert not undocumented, f"tools/ files that docs/DEVELOPING.md's layout does not name: {undocumented}"
    for probe in sorted((ROOT / "tools" / "probes").glob("*.py")):
        tree = ast.parse(probe.read_text())
        assert ast.get_docstring(tree), f"{probe.name} has no docstring (tools/diag.py lists its head)"
        assert 'if __name__ == "__main__":' in probe.read_text(), f"{probe.name} does not run as a script"


def test_gpu_sh_lists_every_step_it_runs():
    """``bash tools/gpu.sh`` alone prints its header, which names every step of its case
    statement, and exits 2 without touching the machine."""
    text = (ROOT / "tools" / "gpu.sh").read_text()
    steps = re.findall(r"^    ([a-z-]+)(?::\*)?\)", text[text.index('for step in "$@"') :], re.M)
    assert {"suite", "random", "bench", "probe", "compare", "device"} <= set(steps)
    r = subprocess.run(["bash", str(ROOT / "tools" / "gpu.sh")], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    missing = [s for s in steps if not re.search(rf"^  {re.escape(s)}\b", r.stdout, re.M)]
    assert not missing, f"steps tools/gpu.sh runs but its header does not list: {missing}"


# endregion
