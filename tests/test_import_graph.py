"""No import circle anywhere in tsrsa, imports inside functions included.

Every module under ``tsrsa/`` is parsed with ``ast``. An edge A -> B is any import of a tsrsa module B
by A, wherever it sits: at module level, inside a function or a class, under ``if TYPE_CHECKING:``
(a circle that only type checkers see is still a knot to untie), and a module name handed to
``importlib`` as a string literal (a dotted name such as ``"tsrsa.nn.rsa"``: a registry that loads its entries by name depends on
them).
``from x import y`` is the module ``x.y`` when there is one, else ``x``; relative imports resolve from
the importing module's package. Importing ``a.b`` runs ``a/__init__`` first, but that is no edge: a
parent package that imports its own children would otherwise be a circle by construction. Imports of
anything outside tsrsa (numpy, optional dependencies) are not part of the graph.

The test fails naming each circle as a chain of modules, with the file and line of every edge.
"""
from __future__ import annotations

import ast
from collections import defaultdict, deque
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "tsrsa"


def module_names(root: Path, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted name -> file of every module of ``package`` under ``root``."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports_of(module: str, path: Path, known: dict[str, Path]) -> list[tuple[str, int]]:
    """(imported tsrsa module, line) of every import in ``module``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []

    def target(base: str, name: str) -> str:
        return f"{base}.{name}" if f"{base}.{name}" in known else base

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # from . import x / from ..a import x
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found += [(target(base, alias.name), node.lineno) for alias in node.names]
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value
              and node.value in known):
            found.append((node.value, node.lineno))  # a module name for importlib
    return [(name, line) for name, line in found if name in known and name != module]


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, dict[str, int]]:
    """module -> {imported module: the line of its first import}."""
    known = module_names(root, package)
    graph: dict[str, dict[str, int]] = defaultdict(dict)
    for module, path in known.items():
        for imported, line in imports_of(module, path, known):
            graph[module].setdefault(imported, line)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One shortest circle (a chain of modules that ends where it starts) through each strongly
    connected component of more than one module (Tarjan's components, then a breadth-first search)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(v: str) -> None:  # recursive Tarjan: the graph is a few hundred modules deep at most
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(set(graph) | {w for ws in graph.values() for w in ws}):
        if v not in index:
            connect(v)
    found = []
    for component in components:
        start = min(component)
        came_from = {start: None}
        queue = deque([start])
        while queue:
            v = queue.popleft()
            if start in graph.get(v, ()):  # start -> ... -> v -> start (no module imports itself)
                chain = [start]
                while v is not None:
                    chain.append(v)
                    v = came_from[v]
                found.append(chain[::-1])
                break
            for w in sorted(graph.get(v, ())):
                if w in component and w not in came_from:
                    came_from[w] = v
                    queue.append(w)
    return sorted(found)


def describe(chain: list[str], graph: dict[str, dict[str, int]], known: dict[str, Path]) -> str:
    steps = [f"  {a} -> {b}  ({known[a].relative_to(ROOT) if known[a].is_relative_to(ROOT) else known[a]}:"
             f"{graph[a][b]})" for a, b in zip(chain, chain[1:])]
    return " -> ".join(chain) + "\n" + "\n".join(steps)


# ---------------------------------------------------------------------- the reader itself
def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, code in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)
    return tmp_path


def test_the_reader_sees_every_kind_of_import(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "a/__init__.py": "from . import b\n",
        "a/b.py": "import numpy\nfrom ..c import helper\n",
        "a/d.py": "def later():\n    from pkg.a.b import thing\n    import pkg.e\n",
        "a/f.py": "import importlib\nLOADED = importlib.import_module('pkg.e')\nfrom pkg.a import d\n",
        "c.py": "if TYPE_CHECKING:\n    from pkg.a import f\n",
        "e.py": "",
    })
    graph = import_graph(root, "pkg")
    assert dict(graph["pkg.a"]) == {"pkg.a.b": 1}  # from . import b: the module pkg.a.b
    assert dict(graph["pkg.a.b"]) == {"pkg.c": 2}  # numpy is not part of the graph
    assert dict(graph["pkg.a.d"]) == {"pkg.a.b": 2, "pkg.e": 3}  # inside a function
    assert dict(graph["pkg.a.f"]) == {"pkg.e": 2, "pkg.a.d": 3}  # a name for importlib; from pkg.a import d
    assert dict(graph["pkg.c"]) == {"pkg.a.f": 2}  # under TYPE_CHECKING


def test_a_circle_is_found_and_named(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "base.py": "def save():\n    from pkg.persistence import write\n",
        "persistence.py": "from pkg.neural import Neural\n",
        "neural.py": "from pkg.base import Base\n",
        "leaf.py": "from pkg import base\n",
    })
    graph = import_graph(root, "pkg")
    assert circles(graph) == [["pkg.base", "pkg.persistence", "pkg.neural", "pkg.base"]]
    message = describe(circles(graph)[0], graph, module_names(root, "pkg"))
    assert "pkg.base -> pkg.persistence  (" in message and "base.py:2)" in message
    assert circles({"a": {"b": 1}, "b": {}}) == []


# ---------------------------------------------------------------------- the package
def test_the_graph_covers_the_package():
    graph = import_graph()
    known = module_names(ROOT)
    assert {"tsrsa.forecasters.rsa", "tsrsa.estimator.base", "tsrsa.nn.registry"} <= set(known)
    assert "tsrsa.estimator.base" in graph["tsrsa.forecasters.naive"]
    assert "tsrsa.estimator.persistence" in graph["tsrsa.estimator.base"]  # an import inside save()


def test_tsrsa_has_no_import_circle():
    graph = import_graph()
    known = module_names(ROOT)
    found = [describe(chain, graph, known) for chain in circles(graph)]
    assert not found, ("import circles in tsrsa (move what both sides need into a module of its own, or "
                       "hand the upper module's object down as an argument or as class data):\n"
                       + "\n".join(found))
