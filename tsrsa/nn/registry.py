"""Attention kinds: the one slot of the encoder block that differs between models.

Every kind is an ``nn.Module`` subclass of :class:`Attention` with

- constructor ``(d_model, n_heads, *, dropout=0.0, causal=False, **options)``;
- ``forward(x)``: the parallel form, ``(B, T, d_model) -> (B, T, d_model)``;
- optionally a recurrent form for streaming: ``init_state(batch_size, device, dtype)`` and
  ``step(x_t, state) -> (y_t, state)`` with ``x_t`` of shape ``(B, d_model)``, declared by
  ``supports_recurrence = True``.

A new kind is one new module that decorates its class with ``@register_attention(name)`` plus
one line in ``_BUILTIN`` below, so that ``build_attention(name, ...)`` can find it by name.
"""
from __future__ import annotations

import importlib

from torch import nn

# name -> module whose import registers it (imported on first use)
_BUILTIN = {
    "softmax": "tsrsa.nn.softmax",
    "rsa": "tsrsa.nn.rsa",
}
_KINDS: dict[str, type] = {}


class Attention(nn.Module):
    """Base class of attention kinds (see the module docstring for the contract)."""

    kind: str = ""
    supports_recurrence: bool = False

    def init_state(self, batch_size, device=None, dtype=None):
        raise NotImplementedError(f"attention kind {self.kind!r} has no recurrent form")

    def step(self, x_t, state):
        raise NotImplementedError(f"attention kind {self.kind!r} has no recurrent form")


def register_attention(name: str):
    """Class decorator that makes an :class:`Attention` subclass available under ``name``."""

    def register(cls):
        if not (isinstance(cls, type) and issubclass(cls, Attention)):
            raise TypeError(f"@register_attention({name!r}) needs a subclass of tsrsa.nn.Attention")
        if _KINDS.get(name, cls) is not cls:
            raise ValueError(f"attention kind {name!r} is already registered by {_KINDS[name].__qualname__}")
        cls.kind = name
        _KINDS[name] = cls
        return cls

    return register


def attention_kinds() -> list[str]:
    """Names of every attention kind that ``build_attention`` accepts."""
    return sorted(set(_KINDS) | set(_BUILTIN))


def get_attention(name: str) -> type:
    """The class registered under ``name``."""
    if name not in _KINDS and name in _BUILTIN:
        importlib.import_module(_BUILTIN[name])
    if name not in _KINDS:
        raise ValueError(f"unknown attention kind {name!r}; choose one of {attention_kinds()}")
    return _KINDS[name]


def build_attention(name: str, d_model: int, n_heads: int, *, dropout: float = 0.0,
                    causal: bool = False, **options) -> Attention:
    """Instantiate the attention kind ``name``."""
    return get_attention(name)(d_model, n_heads, dropout=dropout, causal=causal, **options)
