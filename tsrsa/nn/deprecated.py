"""Names the ops' modules had before every op returned ``(output, state)``: each resolves to its new
spelling with a ``DeprecationWarning`` that names it, or, where the dict states it worked on are gone,
raises an ``AttributeError`` that names what replaces it."""
from __future__ import annotations

import warnings


def resolve(module: str, name: str, renamed: dict, gone: dict):
    """The object ``renamed[name]()`` builds (with a warning), or an AttributeError naming the replacement."""
    if name in renamed:
        new, build = renamed[name]
        warnings.warn(f"{module}.{name} is deprecated; use {module}.{new}", DeprecationWarning, stacklevel=3)
        return build()
    if name in gone:
        raise AttributeError(f"{module}.{name} is gone: {gone[name]}")
    raise AttributeError(f"module {module!r} has no attribute {name!r}")
