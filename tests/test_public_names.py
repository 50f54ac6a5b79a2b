"""A name another module uses is public: no module reaches for a leading-underscore name of another.

Every module under ``tsrsa/`` and ``benchmarks/`` is parsed. A leading-underscore name (not a dunder)
is private to the module that defines it; the test fails on

- ``from elsewhere import _name``;
- ``obj._name`` (and ``getattr/hasattr/setattr(obj, "_name")``) on anything but ``self``, ``cls``,
  ``super()`` or ``type(self)``, when ``_name`` is a private name of tsrsa or the benchmarks and this
  module does not define it itself.

A class's private hooks called through ``self`` are the template pattern (sktime's ``_fit``): a subclass
in another module overrides them, which is not a use by another object. Private names of third-party
packages are not ours to rule on.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("tsrsa", "benchmarks")
OWN_OBJECTS = ("self", "cls")
ATTRIBUTE_CALLS = ("getattr", "hasattr", "setattr", "delattr")


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def defined_names(tree: ast.AST) -> set[str]:
    """The private names a module defines: functions, classes, variables, arguments, attributes of
    ``self``/``cls`` it sets, fields of its classes."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _own(node.value):
            names.add(node.attr)
        elif isinstance(node, ast.Call) and _attribute_call(node) and _own(node.args[0]) \
                and node.func.id in ("setattr",):
            names.add(node.args[1].value)
    return {name for name in names if private(name)}


def _own(value: ast.AST) -> bool:
    """``self``, ``cls``, ``super()`` or ``type(...)``: the object's own class or instance."""
    if isinstance(value, ast.Name):
        return value.id in OWN_OBJECTS
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("super", "type")


def _attribute_call(node: ast.Call) -> bool:
    return (isinstance(node.func, ast.Name) and node.func.id in ATTRIBUTE_CALLS and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str))


def uses(tree: ast.AST) -> list[tuple[int, str, ast.AST | None]]:
    """(line, private name, the object it is read from or None for an import) of every candidate use."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__":
            found += [(node.lineno, alias.name, None) for alias in node.names if private(alias.name)]
        elif isinstance(node, ast.Attribute) and private(node.attr) and not _own(node.value):
            found.append((node.lineno, node.attr, node.value))
        elif isinstance(node, ast.Call) and _attribute_call(node) and private(node.args[1].value) \
                and not _own(node.args[0]):
            found.append((node.lineno, node.args[1].value, node.args[0]))
    return found


def violations(sources: dict[str, str]) -> list[str]:
    """``path:line: what`` of every cross-module use of a private name among ``sources`` (path -> code)."""
    trees = {path: ast.parse(code) for path, code in sources.items()}
    defined = {path: defined_names(tree) for path, tree in trees.items()}
    ours = set().union(*defined.values())
    out = []
    for path, tree in trees.items():
        for line, name, value in uses(tree):
            if value is None:
                out.append((path, line, f"imports {name}"))
            elif name in ours and name not in defined[path]:
                out.append((path, line, f"{ast.unparse(value)}.{name}"))
    return [f"{path}:{line}: {what}" for path, line, what in sorted(out)]


def repository_sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
            for folder in FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))}


def test_the_rule_finds_each_kind_of_cross_module_use_and_allows_the_rest():
    sources = {
        "a.py": "class A:\n    def _hook(self):\n        return self._state\n    def run(self):\n"
                "        self._state = 1\n        return type(self)._hook(self)\n_helper = 3\n",
        "b.py": "from a import _helper\nfrom a import A\n\nclass B(A):\n    def _other(self):\n"
                "        return super()._hook() + self._hook()\n\ndef f(model):\n    model._state = 2\n"
                "    return getattr(model, '_hook')(), model._hook(), model.public, model._unknown\n",
    }
    assert violations(sources) == ["b.py:1: imports _helper", "b.py:9: model._state", "b.py:10: model._hook",
                                   "b.py:10: model._hook"]


def test_no_module_uses_a_private_name_of_another():
    found = violations(repository_sources())
    assert not found, ("a leading underscore means 'only inside this module'; make these public (and "
                       "document them) or keep the use inside the module:\n" + "\n".join(found))
