"""Sequence-mixing kinds by name: ``build_attention(name, ...)``, the estimators' ``attention=`` hyperparameter.

The kinds' contract (the :class:`~tsrsa.nn.attention.Attention` base class, ``KindOps``,
``register_attention``) is :mod:`tsrsa.nn.attention`; this module, above the kinds, finds them by name:
a built-in kind's module is imported on first use (``_BUILTIN``), and registers its class as it is
imported. A new kind is one new module that decorates its class with ``@register_attention(name)``
plus one line in ``_BUILTIN`` below, so that ``build_attention(name, ...)`` finds it by name and the
conformance suite (``tests/test_attention_kinds.py``) checks it.
"""
from __future__ import annotations

import importlib

from tsrsa.nn.attention import REGISTERED, Attention, KindOps, register_attention  # noqa: F401 (the kinds' API)
from tsrsa.nn.state import LayerState

# name -> module whose import registers it (imported on first use)
_BUILTIN = {
    "softmax": "tsrsa.nn.softmax",
    "rsa": "tsrsa.nn.rsa",
    "linear": "tsrsa.nn.linear_attention",
    "fast_weight": "tsrsa.nn.fast_weight",
    "t2r": "tsrsa.nn.t2r",
    "block_recurrent": "tsrsa.nn.block_recurrent",
}
_KINDS = REGISTERED  # the classes registered so far, by name (one dict with tsrsa.nn.attention's)


def attention_kinds() -> list[str]:
    """Names of every attention kind that ``build_attention`` accepts."""
    return sorted(set(_KINDS) | set(_BUILTIN))


def get_attention(name: str) -> type:
    """The class registered under ``name``."""
    if not isinstance(name, str):
        raise TypeError(f"attention must be the name of a kind, one of {attention_kinds()}; got {name!r}")
    if name not in _KINDS and name in _BUILTIN:
        importlib.import_module(_BUILTIN[name])
    if name not in _KINDS:
        raise ValueError(f"unknown attention kind {name!r}; choose one of {attention_kinds()}")
    return _KINDS[name]


def build_attention(name: str, d_model: int, n_heads: int, *, dropout: float = 0.0,
                    causal: bool = False, **options) -> Attention:
    """Instantiate the attention kind ``name`` (its options checked by the kind)."""
    cls = get_attention(name)
    if not causal and not cls.bidirectional:
        raise ValueError(f"attention kind {name!r} is causal only; use causal=True")
    return cls(d_model, n_heads, dropout=dropout, causal=causal, **cls.check_options(options))


def load_builtin_kinds() -> None:
    """Import every built-in kind (each defines its layer state class as it is imported)."""
    for kind in attention_kinds():
        get_attention(kind)


# a flat dict of a kind not imported yet is read by loading the built-in kinds first
LayerState.loaders.append(load_builtin_kinds)
