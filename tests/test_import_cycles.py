"""Imports point one way (docs/DEVELOPING.md, STYLE.md): no import cycle inside
``bulkred_dialect``, counting the imports inside functions (a lazy import is a cycle
postponed to the first call, not removed), and no module of ``passes/`` imports after its
first statement that is not an import (a registry filled by imports at a module's bottom).

The graph is read from the source with ``ast``, nothing is imported. Its edges are the
``import`` / ``from ... import`` statements anywhere in a module (at module level, in
functions, classes, ``if``, ``try``, ``with``, loops, ``match``), but not those of an ``if
TYPE_CHECKING:`` block; and the dynamic imports, ``importlib.import_module(...)``: of a
string, or of an f-string whose first part is a prefix, completed by the module's own
string constants that make a module name (a registry's table of lazy factories, as
``passes/__init__.py``'s). A dynamic import the checker cannot resolve fails the test.
``from pkg import sub`` is an edge to the submodule ``pkg.sub``, ``from pkg import name``
one to ``pkg``. The implicit import of a module's parent packages is not an edge (a
package's ``__init__`` importing its own submodules is the one-way form of a registry).
The module-level graph (what runs at import) is checked too, with the same walker
stopped at function bodies.
"""

from __future__ import annotations

import ast
import functools
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

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


def _is_type_checking(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


Walker = Callable[[list[ast.stmt]], Iterator[ast.AST]]


def _walk(body: list[ast.stmt], at_import: bool) -> Iterator[ast.AST]:
    """The nodes of ``body`` that can run, less the bodies of ``if TYPE_CHECKING:`` blocks
    (their ``else`` runs); ``at_import``: only what runs when the module is imported, so
    stopped at function and lambda bodies (a decorator, a default value or a class body
    itself runs at import)."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if _is_type_checking(node):
            children: list[ast.AST] = [node.test, *node.orelse]  # type: ignore[attr-defined]
        elif at_import and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            decorators = [] if isinstance(node, ast.Lambda) else node.decorator_list
            children = [*decorators, *node.args.defaults, *(d for d in node.args.kw_defaults if d)]
        else:
            children = list(ast.iter_child_nodes(node))
        stack.extend(reversed(children))


def every_node(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node that can run: all of them (``ast.walk``), less the bodies of ``if
    TYPE_CHECKING:`` blocks."""
    return _walk(body, at_import=False)


def module_level_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes that run when the module is imported (see :func:`_walk`)."""
    return _walk(body, at_import=True)


def _from_module(name: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name of ``from <module> import ...`` in module ``name``."""
    if not node.level:
        return node.module or ""
    base = name.split(".") if is_package else name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _dynamic_targets(call: ast.Call, constants: frozenset[str], mods: dict[str, Path]) -> set[str] | None:
    """The modules an ``import_module(...)`` / ``__import__(...)`` call may import; None
    when it is not one; raise when it cannot be resolved."""
    f = call.func
    fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    if fname not in ("import_module", "__import__") or not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return {arg.value}
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        prefix = str(arg.values[0].value)
        found = {prefix + c for c in constants if prefix + c in mods}
        if found:
            return found
    raise AssertionError(f"a dynamic import the checker cannot resolve, line {call.lineno}: {ast.unparse(call)}")


@functools.cache
def _parsed(text: str, filename: str) -> tuple[ast.Module, frozenset[str]]:
    """The module's tree and its string constants, parsed once per text (the graphs of
    the tests above walk the same files; nothing here changes a tree)."""
    tree = ast.parse(text, filename)
    return tree, frozenset(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str))


def import_graph(root: Path, package: str, walker: Walker = every_node) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (the nodes ``walker`` yields)."""
    mods = modules(root, package)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        tree, constants = _parsed(path.read_text(), str(path))
        edges: set[str] = set()
        for node in walker(tree.body):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in mods)
            elif isinstance(node, ast.ImportFrom):
                source = _from_module(name, path.name == "__init__.py", node)
                for a in node.names:
                    if f"{source}.{a.name}" in mods:
                        edges.add(f"{source}.{a.name}")
                    elif source in mods:
                        edges.add(source)
            elif isinstance(node, ast.Call) and (targets := _dynamic_targets(node, constants, mods)) is not None:
                edges.update(t for t in targets if t in mods)
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
    body = _parsed(path.read_text(), str(path))[0].body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    header = True
    late = []
    for node in body:
        is_import = isinstance(node, ast.Import | ast.ImportFrom) or _is_type_checking(node)
        if not is_import:
            header = False
        elif not header:
            late.append(node.lineno)
    return late


# endregion


def _found(graph: dict[str, set[str]]) -> list[str]:
    return [" -> ".join(one_cycle(graph, c)) for c in cycles(graph)]


def test_no_import_cycle_counting_imports_inside_functions():
    """Not even a lazy one: the front door (functions -> api -> reductions -> torch_ops)
    points one way; api imports neither reductions nor torch_ops."""
    graph = import_graph(PACKAGE_DIR.parent, "bulkred_dialect")
    assert "bulkred_dialect.passes.variants" in graph  # the graph covers the package
    assert "bulkred_dialect.passes.lower_to_ptx" in graph["bulkred_dialect.passes"]  # ALL_PASSES's lazy imports
    found = _found(graph)
    assert not found, "import cycles (counting imports inside functions):\n" + "\n".join(found)
    assert not graph["bulkred_dialect.api"] & {"bulkred_dialect.reductions", "bulkred_dialect.torch_ops"}
    assert "bulkred_dialect.api" in graph["bulkred_dialect.torch_ops"]


def test_bulkred_dialect_has_no_module_level_import_cycle():
    """What runs at import (a subset of the above: the message names the cycle that
    breaks importing the package, should the test above fail)."""
    graph = import_graph(PACKAGE_DIR.parent, "bulkred_dialect", module_level_nodes)
    found = _found(graph)
    assert not found, "module-level import cycles:\n" + "\n".join(found)


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
    graph = import_graph(tmp_path, "pkg", module_level_nodes)
    assert graph["pkg.reg"] == {"pkg.reg.one"}
    assert graph["pkg.reg.one"] == {"pkg.reg"}
    assert graph["pkg.c"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.reg", "pkg.reg.one"]]
    assert one_cycle(graph, ["pkg.a", "pkg.b", "pkg.c"]) == ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]
    assert late_imports(tmp_path / "pkg/reg/__init__.py") == [3]
    assert late_imports(tmp_path / "pkg/b.py") == []


def test_the_checker_leaves_out_what_does_not_run_at_import(tmp_path):
    """At module level, TYPE_CHECKING blocks, function-level imports and the implicit
    import of a parent package make no edge; importing a submodule of a package is an edge to it alone."""
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
    graph = import_graph(tmp_path, "pkg", module_level_nodes)
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.sub.leaf"}, "pkg.b": {"pkg.a"}, "pkg.sub": set(), "pkg.sub.leaf": set()}
    assert cycles(graph) == []
    assert late_imports(tmp_path / "pkg/a.py") == []


def test_the_checker_counts_lazy_imports_anywhere_but_type_checking(tmp_path):
    """Imports in a function, a method, a ``with`` in a loop, a ``match`` case, the
    ``else`` of ``if TYPE_CHECKING:``, and ``import_module`` of a string or of a
    registry's f-string are edges; the body of ``if TYPE_CHECKING:`` is not, and a lazy
    import is no edge of the module-level graph."""
    _write(
        tmp_path,
        {
            "pkg/__init__.py": (
                "from importlib import import_module\n"
                "TABLE = {'x': 'one', 'y': 'two'}\n"
                "def load(k):\n    return import_module(f'pkg.reg.{TABLE[k]}')\n"
            ),
            "pkg/reg/__init__.py": "",
            "pkg/reg/one.py": "",
            "pkg/reg/two.py": "",
            "pkg/a.py": "class C:\n    def m(self):\n        import pkg.b\n",
            "pkg/b.py": "def f(xs):\n    for x in xs:\n        with x:\n            from pkg import c\n",
            "pkg/c.py": "def g(v):\n    match v:\n        case 1:\n            from . import d\n",
            "pkg/d.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n"
                "else:\n    import importlib\n    importlib.import_module('pkg.e')\n"
            ),
            "pkg/e.py": "X = [i for i in range(3)]\n",
        },
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg"] == {"pkg.reg.one", "pkg.reg.two"}
    assert graph["pkg.a"] == {"pkg.b"}
    assert graph["pkg.b"] == {"pkg.c"}
    assert graph["pkg.c"] == {"pkg.d"}
    assert graph["pkg.d"] == {"pkg.e"}
    assert cycles(graph) == []
    _write(tmp_path, {"pkg/e.py": "def h():\n    from pkg import a\n"})
    graph = import_graph(tmp_path, "pkg")
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.e"]]
    assert cycles(import_graph(tmp_path, "pkg", module_level_nodes)) == []


def test_the_checker_refuses_a_dynamic_import_it_cannot_resolve(tmp_path):
    _write(tmp_path, {"pkg/__init__.py": "import importlib\ndef f(n):\n    return importlib.import_module(n)\n"})
    with pytest.raises(AssertionError, match="cannot resolve, line 3"):
        import_graph(tmp_path, "pkg")


# endregion
