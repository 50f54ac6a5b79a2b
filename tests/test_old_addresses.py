"""The modules that left ``tsrsa/forecasters/`` in 0.15 keep their old addresses until 0.16.

Each old module (``tsrsa.forecasters.moved.MOVED``) imports without a warning; each name read from it
is the object at its new address and warns (``DeprecationWarning``) naming that address. Nothing in
tsrsa, the benchmarks or the examples reads an old address.
"""
from __future__ import annotations

import ast
import importlib
import warnings
from pathlib import Path

import pytest

from tsrsa.forecasters.moved import MOVED, MOVED_NAMES, new_address

ROOT = Path(__file__).resolve().parents[1]
OLD = sorted(f"tsrsa.forecasters.{name}" for name in MOVED)


@pytest.mark.parametrize("old", OLD)
def test_an_old_address_imports_silently_and_each_name_warns_and_resolves(old):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        module = importlib.import_module(old)
    short = old.rpartition(".")[2]
    new = importlib.import_module(MOVED[short])
    names = [n for n in dir(new) if not n.startswith("_")][:5] + sorted(MOVED_NAMES.get(short, {}))
    assert names
    for name in names:
        home = new_address(short, name)
        with pytest.warns(DeprecationWarning, match=f"{old}.{name} is deprecated: use {home}.{name}"):
            value = getattr(module, name)
        assert value is getattr(importlib.import_module(home), name)
    with pytest.raises(AttributeError, match=f"module '{old}' has no attribute 'not_a_name'"):
        module.not_a_name  # noqa: B018


def test_the_old_names_of_persistence_resolve_where_they_went():
    from tsrsa.data import index_encoding
    from tsrsa.forecasters import load

    with pytest.warns(DeprecationWarning, match="use tsrsa.forecasters.load"):
        from tsrsa.forecasters.persistence import load as old_load
    with pytest.warns(DeprecationWarning, match="use tsrsa.data.index_encoding.encode_times"):
        from tsrsa.forecasters.persistence import encode_times
    assert old_load is load and encode_times is index_encoding.encode_times


def _imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def test_nothing_of_ours_reads_an_old_address():
    files = [p for folder in ("tsrsa", "benchmarks", "examples") for p in sorted((ROOT / folder).rglob("*.py"))
             if p.parent != ROOT / "tsrsa" / "forecasters" or p.stem not in MOVED]
    found = [f"{p.relative_to(ROOT)}: {name}" for p in files for name in sorted(_imported_modules(p) & set(OLD))]
    assert not found, "\n".join(found)
