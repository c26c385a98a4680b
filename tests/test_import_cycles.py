"""Imports point one way (docs/DEVELOPING.md, STYLE.md): no module-level import cycle
inside ``bulkred_dialect``, and no module of ``passes/`` imports after its first
statement that is not an import (a registry filled by imports at a module's bottom).

The graph is read from the source with ``ast``, nothing is imported. Its edges are the
explicit ``import`` / ``from ... import`` statements at module level, including those
inside a module-level ``if``, ``try`` or ``with``, but not those of an
``if TYPE_CHECKING:`` block nor those inside functions or classes; ``from pkg import
sub`` is an edge to the submodule ``pkg.sub``, ``from pkg import name`` one to ``pkg``.
The implicit import of a module's parent packages is not an edge (a package's
``__init__`` importing its own submodules is the one-way form of a registry).
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

import bulkred_dialect

PACKAGE_DIR = Path(bulkred_dialect.__file__).parent


# region The checker


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` (a directory under ``root``), by dotted name."""
    found = {}
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def module_level_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is imported."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node):
                yield from module_level_imports(node.body)
            yield from module_level_imports(node.orelse)
        elif isinstance(node, ast.Try | ast.TryStar):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from module_level_imports(block)
        elif isinstance(node, ast.With):
            yield from module_level_imports(node.body)


def _from_module(name: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name of ``from <module> import ...`` in module ``name``."""
    if not node.level:
        return node.module or ""
    base = name.split(".") if is_package else name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports at module level."""
    mods = modules(root, package)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        edges: set[str] = set()
        for node in module_level_imports(ast.parse(path.read_text(), str(path)).body):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in mods)
                continue
            source = _from_module(name, path.name == "__init__.py", node)
            for a in node.names:
                if f"{source}.{a.name}" in mods:
                    edges.add(f"{source}.{a.name}")
                elif source in mods:
                    edges.add(source)
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def one_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest import path from the component's first module back to itself."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    return [*paths[v], start]
                if w not in paths:
                    paths[w] = [*paths[v], w]
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"{component} is not a cycle")


def late_imports(path: Path) -> list[int]:
    """Lines of top-level imports after the module's first statement that is neither an
    import, nor its docstring, nor an ``if TYPE_CHECKING:`` block."""
    body = ast.parse(path.read_text(), str(path)).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    header = True
    late = []
    for node in body:
        is_import = isinstance(node, ast.Import | ast.ImportFrom) or (
            isinstance(node, ast.If) and _is_type_checking(node)
        )
        if not is_import:
            header = False
        elif not header:
            late.append(node.lineno)
    return late


# endregion


def test_bulkred_dialect_has_no_import_cycle():
    graph = import_graph(PACKAGE_DIR.parent, "bulkred_dialect")
    assert "bulkred_dialect.passes.variants" in graph  # the graph covers the package
    found = [" -> ".join(one_cycle(graph, c)) for c in cycles(graph)]
    assert not found, "module-level import cycles:\n" + "\n".join(found)


def every_import(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that runs, those inside functions and classes too (a lazy
    import is an edge all the same: it runs at the first call), not those of an ``if
    TYPE_CHECKING:`` block."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node):
            yield from every_import(node.orelse)
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                yield from every_import([n for n in getattr(node, field, []) if isinstance(n, ast.AST)])



def test_no_import_cycle_counting_imports_inside_functions(monkeypatch):
    """Not even a lazy one: the front door (functions -> api -> reductions -> torch_ops)
    points one way; api imports neither reductions nor torch_ops."""
    monkeypatch.setattr(__import__(__name__), "module_level_imports", every_import)
    graph = import_graph(PACKAGE_DIR.parent, "bulkred_dialect")
    found = [" -> ".join(one_cycle(graph, c)) for c in cycles(graph)]
    assert not found, "import cycles (counting imports inside functions):\n" + "\n".join(found)
    assert not graph["bulkred_dialect.api"] & {"bulkred_dialect.reductions", "bulkred_dialect.torch_ops"}
    assert "bulkred_dialect.api" in graph["bulkred_dialect.torch_ops"]


def test_passes_have_no_module_bottom_import():
    passes = modules(PACKAGE_DIR.parent, "bulkred_dialect.passes")
    assert len(passes) > 10
    late = {name: lines for name, path in passes.items() if (lines := late_imports(path))}
    assert not late, f"imports after the module's first statement (line numbers): {late}"


# region The checker on a package written here


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_the_checker_finds_a_cycle_through_a_package_and_a_relative_import(tmp_path):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/reg/__init__.py": '"""A registry that imports its entries at the bottom."""\nTABLE = []\nfrom pkg.reg import one  # noqa: E402\n',
            "pkg/reg/one.py": "from pkg.reg import TABLE\n",
            "pkg/a.py": "try:\n    from .b import x\nexcept ImportError:\n    pass\n",
            "pkg/b.py": "import pkg.c\nx = 1\n",
            "pkg/c.py": "if True:\n    from pkg import a\n",
        },
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.reg"] == {"pkg.reg.one"}
    assert graph["pkg.reg.one"] == {"pkg.reg"}
    assert graph["pkg.c"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.reg", "pkg.reg.one"]]
    assert one_cycle(graph, ["pkg.a", "pkg.b", "pkg.c"]) == ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]
    assert late_imports(tmp_path / "pkg/reg/__init__.py") == [3]
    assert late_imports(tmp_path / "pkg/b.py") == []


def test_the_checker_leaves_out_what_does_not_run_at_import(tmp_path):
    """TYPE_CHECKING blocks, function-level imports and the implicit import of a parent
    package make no edge; importing a submodule of a package is an edge to it alone."""
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg import a\n",
            "pkg/a.py": (
                '"""Doc."""\nfrom __future__ import annotations\n\nfrom typing import TYPE_CHECKING\n\n'
                "import pkg.sub.leaf\n\nif TYPE_CHECKING:\n    from pkg import b\n\n\n"
                "def f():\n    from pkg import b\n"
            ),
            "pkg/b.py": "import pkg.a\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/leaf.py": "X = 1\n",
        },
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.sub.leaf"}, "pkg.b": {"pkg.a"}, "pkg.sub": set(), "pkg.sub.leaf": set()}
    assert cycles(graph) == []
    assert late_imports(tmp_path / "pkg/a.py") == []


# endregion



def test_the_checker_finds_a_cycle_through_an_import_inside_a_function(tmp_path, monkeypatch):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/api.py": "def call():\n    from pkg import ops\n    return ops\n",
            "pkg/ops.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import typed\nimport pkg.api\n",
            "pkg/typed.py": "import pkg.ops\n",
        },
    )
    assert cycles(import_graph(tmp_path, "pkg")) == []  # module level: none
    monkeypatch.setattr(__import__(__name__), "module_level_imports", every_import)
    graph = import_graph(tmp_path, "pkg")
    assert cycles(graph) == [["pkg.api", "pkg.ops"]]  # the lazy one, not the TYPE_CHECKING one
