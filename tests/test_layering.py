"""The import graph of tsrsa against its layers (docs/architecture.md holds the same table).

Every module under ``tsrsa/`` is parsed; its imports of tsrsa are read wherever they sit (at
module level, inside functions, and module names handed to importlib as strings), since an import
deferred to first use is still a dependency. Each module belongs to a unit: its sub-package
(``tsrsa/nn/...`` -> ``nn``), its own name for a top-level module (``tsrsa/tuning.py`` ->
``tuning``), or ``tsrsa`` for the package's ``__init__``, the facade that loads the public names
on first use. The checks:

- every import between units is an edge of ``ALLOWED``, and every unit has a row there;
- the allowed edges form no cycle, and neither do the module-level imports between modules;
- no import closes a circle anywhere in the package: deferred into functions, under ``if
  TYPE_CHECKING:`` (a circle only type checkers see is still a knot to untie), or a module name handed to
  ``importlib``; the failure names each edge of the circle with its file and line;
- ``nn`` imports neither numpy nor pandas, and the numpy side (data, datasets, metrics, init)
  imports no torch;
- the scripts of ``benchmarks/``, which import one another by bare name, form no circle either.
"""
from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tsrsa"
DOC = ROOT / "docs" / "architecture.md"

#: unit -> the units it may import (besides its own modules), tier by tier from the bottom
ALLOWED: dict[str, set[str]] = {
    # tier 0: pure PyTorch networks, and the version string
    "nn": set(),
    "_version": set(),
    # tier 1: the numpy side (frames, data sets, scores, initial values) and the training loop
    "data": {"_version"},
    "datasets": {"_version", "data"},
    "metrics": {"_version", "data"},
    "init": {"_version", "data"},
    "training": {"_version", "nn", "data"},
    # tier 1 too: the statistical models per series (numpy and statsmodels)
    "statistical": {"_version", "data"},
    # tier 1 too: a fitted network as ONNX (the exporter reads a model by its public attributes) and its
    # forecasts on onnxruntime without torch
    "serving": {"_version", "nn", "data"},
    # tier 2: the estimators: the statistical start's algebra, the estimator's machinery, the models
    "start": {"_version", "data", "init", "statistical"},
    "estimator": {"_version", "nn", "data", "metrics", "init", "training", "statistical", "start", "serving"},
    "forecasters": {"_version", "nn", "data", "metrics", "init", "training", "statistical", "start", "estimator"},
    # tier 3: what is built on the estimators; only the command line and the facade reach across it
    "integrations": {"_version", "nn", "data", "datasets", "metrics", "init", "training", "statistical", "start",
                     "estimator", "forecasters"},
    "benchmarking": {"_version", "nn", "data", "datasets", "metrics", "init", "training", "statistical", "start",
                     "estimator", "forecasters"},
    "tuning": {"_version", "nn", "data", "datasets", "metrics", "init", "training", "statistical", "start",
               "estimator", "forecasters"},
    "convert": {"_version", "nn", "data", "datasets", "metrics", "init", "training", "statistical", "start",
                "estimator", "forecasters"},
    "cli": {"_version", "nn", "data", "datasets", "metrics", "init", "training", "statistical", "start", "estimator",
            "forecasters", "integrations", "benchmarking", "tuning", "convert", "tsrsa"},
    "__main__": {"cli"},
    # reconciles forecast frames of a hierarchy (pandas and hierarchicalforecast only)
    "hierarchy": {"_version", "data"},
    "tsrsa": {"_version", "nn", "data", "datasets", "metrics", "init", "training", "statistical", "start",
              "estimator", "forecasters", "integrations", "benchmarking", "tuning", "convert", "serving", "hierarchy"},
}

#: unit -> third-party packages it must not import
FORBIDDEN_THIRD_PARTY = {
    "nn": {"numpy", "pandas"},  # pure PyTorch: no pandas, no numpy-side state
    "data": {"torch"},  # the numpy side knows no models
    "datasets": {"torch"},
    "metrics": {"torch"},
    "init": {"torch"},
    "statistical": {"torch"},
    "start": {"torch"},
}


# ---------------------------------------------------------------------- reading the graph
@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name
    imported: str  # dotted module name (a tsrsa module) or a top-level third-party package
    deferred: bool  # inside a function or ``if TYPE_CHECKING:``, or a module name given to importlib
    line: int
    typing_only: bool = False  # under ``if TYPE_CHECKING:``: a dependency, but it never runs


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@lru_cache(maxsize=1)
def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def unit(module: str) -> str:
    """``tsrsa.nn.rem`` -> ``nn``; ``tsrsa.tuning`` -> ``tuning``; ``tsrsa`` -> ``tsrsa``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "tsrsa"


def _target(base: str, name: str) -> str:
    """What ``from base import name`` imports: the module ``base.name``, or ``base`` itself."""
    return f"{base}.{name}" if f"{base}.{name}" in modules() else base


def imports_of(module: str) -> list[Import]:
    path = modules()[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, deferred: bool, typing_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            typing = typing_only or (isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test))
            inner = deferred or typing or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    name = alias.name if alias.name.startswith("tsrsa") else alias.name.split(".")[0]
                    found.append(Import(module, name, inner, child.lineno, typing))
            elif isinstance(child, ast.ImportFrom):
                if child.level:  # relative: from the package, one level up per extra dot
                    parent = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join(parent + ([child.module] if child.module else []))
                else:
                    base = child.module or ""
                if base.split(".")[0] == "tsrsa":
                    found.extend(Import(module, _target(base, a.name), inner, child.lineno, typing)
                                 for a in child.names)
                else:
                    found.append(Import(module, base.split(".")[0], inner, child.lineno, typing))
            elif (isinstance(child, ast.Constant) and isinstance(child.value, str)
                  and child.value.startswith("tsrsa.") and child.value in modules()):
                found.append(Import(module, child.value, True, child.lineno, typing))  # for importlib
            visit(child, inner, typing)

    visit(ast.parse(path.read_text(), filename=str(path)), False, False)
    return found


@lru_cache(maxsize=1)
def graph() -> list[Import]:
    return [edge for module in modules() for edge in imports_of(module)]


def internal() -> list[Import]:
    return [e for e in graph() if e.imported.split(".")[0] == "tsrsa" and e.imported != e.importer]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
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

    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            connect(v)
    return found


def _where(edge: Import) -> str:
    kind = "deferred" if edge.deferred else "module level"
    return f"{modules()[edge.importer].relative_to(ROOT)}:{edge.line} imports {edge.imported} ({kind})"


# ---------------------------------------------------------------------- the reader itself
def test_the_reader_sees_every_kind_of_import(tmp_path, monkeypatch):
    source = tmp_path / "tsrsa" / "forecasters" / "probe.py"
    source.parent.mkdir(parents=True)
    source.write_text(
        "import numpy as np\n"
        "from tsrsa.data import frames\n"
        "from . import base\n"
        "from ..nn.rem import rem_matrix\n"
        "if TYPE_CHECKING:\n"
        "    from tsrsa.init import ar\n"
        "def later():\n"
        "    import tsrsa.training.loop\n"
        "    return importlib.import_module('tsrsa.metrics')\n"
    )
    for module in ("__init__", "data/__init__", "data/frames", "forecasters/__init__", "forecasters/base",
                   "init/__init__", "init/ar", "nn/__init__", "nn/rem", "training/__init__", "training/loop",
                   "metrics"):
        path = tmp_path / "tsrsa" / f"{module}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "tsrsa")
    modules.cache_clear()
    try:
        seen = {(e.imported, e.deferred, e.typing_only) for e in imports_of("tsrsa.forecasters.probe")}
    finally:
        modules.cache_clear()
    assert seen == {("numpy", False, False), ("tsrsa.data.frames", False, False),
                    ("tsrsa.forecasters.base", False, False), ("tsrsa.nn.rem", False, False),
                    ("tsrsa.init.ar", True, True), ("tsrsa.training.loop", True, False),
                    ("tsrsa.metrics", True, False)}
    assert unit("tsrsa.nn.rem") == "nn" and unit("tsrsa.tuning") == "tuning" and unit("tsrsa") == "tsrsa"
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_is_read_from_the_whole_package():
    units = {unit(m) for m in modules()}
    assert {"nn", "data", "init", "training", "forecasters", "integrations", "benchmarking", "tuning",
            "cli", "tsrsa"} <= units
    assert any(e.deferred for e in internal()) and any(not e.deferred for e in internal())


# ---------------------------------------------------------------------- the layers
def test_every_unit_has_a_row_in_the_table():
    missing = sorted({unit(m) for m in modules()} - set(ALLOWED))
    assert not missing, f"place {missing} in ALLOWED here and in docs/architecture.md"


def test_imports_between_units_follow_the_table():
    wrong = [f"{_where(e)}: {unit(e.importer)} -> {unit(e.imported)}" for e in internal()
             if unit(e.importer) != unit(e.imported) and unit(e.imported) not in ALLOWED.get(unit(e.importer), set())]
    assert not wrong, "imports the layers do not allow:\n" + "\n".join(wrong)


def test_the_table_has_no_cycle():
    assert cycles({u: set(allowed) for u, allowed in ALLOWED.items()}) == []


def test_the_units_import_each_other_without_a_cycle():
    edges: dict[str, set[str]] = defaultdict(set)
    for e in internal():
        if unit(e.importer) != unit(e.imported):
            edges[unit(e.importer)].add(unit(e.imported))
    assert cycles(edges) == []


def test_module_level_imports_form_no_cycle():
    edges: dict[str, set[str]] = defaultdict(set)
    for e in internal():
        if not e.deferred:
            edges[e.importer].add(e.imported)
    assert cycles(edges) == []


def test_no_import_closes_a_circle_anywhere():
    edges: dict[str, set[str]] = defaultdict(set)
    first: dict[tuple[str, str], Import] = {}
    for e in internal():
        edges[e.importer].add(e.imported)
        first.setdefault((e.importer, e.imported), e)
    found = [[_where(first[a, b]) for a in circle for b in sorted(edges[a]) if b in circle]
             for circle in cycles(edges)]
    assert not found, ("import circles in tsrsa: move what both sides need into a module of its own, or hand the "
                       "upper module's object down as an argument or as class data:\n"
                       + "\n\n".join("\n".join(edge) for edge in found))


def benchmark_imports() -> dict[str, dict[str, int]]:
    """{script: {sibling script it imports: line}} over ``benchmarks/*.py``, imports anywhere in the file (a
    script run from ``benchmarks/`` imports its siblings by their bare names)."""
    folder = ROOT / "benchmarks"
    names = {path.stem for path in folder.glob("*.py")}
    out: dict[str, dict[str, int]] = {}
    for path in sorted(folder.glob("*.py")):
        found = out.setdefault(path.stem, {})
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                       [node.module] if isinstance(node, ast.ImportFrom) and not node.level and node.module else [])
            for target in targets:
                if target.split(".")[0] in names - {path.stem}:
                    found.setdefault(target.split(".")[0], node.lineno)
    return out


def test_the_benchmark_scripts_import_each_other_without_a_circle():
    imports = benchmark_imports()
    assert imports["auto_m3_study"].keys() >= {"auto_m3_data", "auto_m3_rules", "auto_m4_study"}  # the reader reads
    found = [[f"benchmarks/{a}.py:{imports[a][b]} imports {b}" for a in circle for b in sorted(imports[a])
              if b in circle] for circle in cycles({a: set(b) for a, b in imports.items()})]
    assert not found, ("import circles among the benchmark scripts: move what both need into a module of its own:\n"
                       + "\n\n".join("\n".join(edge) for edge in found))


def test_third_party_imports_stay_on_their_side():
    wrong = [_where(e) for e in graph() if e.imported in FORBIDDEN_THIRD_PARTY.get(unit(e.importer), set())]
    assert not wrong, "\n".join(wrong)


# ---------------------------------------------------------------------- the documented table
def _documented_table() -> dict[str, set[str]]:
    """The rows ``| `unit` | tier | `a`, `b` | why |`` of the architecture page's table."""
    text = DOC.read_text()
    section = text[text.index("## Allowed imports"):]
    rows = {}
    for line in section.splitlines():
        match = re.match(r"\|\s*`([\w.]+)`\s*\|\s*\d\s*\|([^|]*)\|", line)
        if match:
            rows[match[1]] = set(re.findall(r"`([\w.]+)`", match[2]))
    return rows


def test_the_architecture_page_shows_this_table():
    assert _documented_table() == ALLOWED
