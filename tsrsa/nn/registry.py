"""Sequence-mixing kinds: the one slot of the encoder block that differs between models.

Every kind is an ``nn.Module`` subclass of :class:`Attention` with

- constructor ``(d_model, n_heads, *, dropout=0.0, causal=False, **options)``; the keyword
  arguments after ``causal`` are the kind's own options (``Attention.option_defaults()`` lists
  them), checked by the constructor, which also initialises every parameter the kind owns
  (``reset_parameters()``);
- ``forward(x)``: the parallel form, ``(B, T, d_model) -> (B, T, d_model)``; with
  ``causal=True`` every branch of the kind is causal (the output at token t reads tokens <= t);
- where the kind has one (``recurrent = True``), a recurrent form for streaming:
  ``init_state(batch_size)`` returns the state of an empty history, a flat dict of tensors whose
  first dimension is the batch, and ``stream(x, state) -> (y, state)`` advances it over ``n``
  new tokens ``x (B, n, d_model)``. ``y`` equals the causal parallel form over the whole history
  at those tokens. The state is a value: ``stream`` returns a new dict and never changes the
  one it is given.

A new kind is one new module that decorates its class with ``@register_attention(name)`` plus
one line in ``_BUILTIN`` below, so that ``build_attention(name, ...)`` finds it by name and the
conformance suite (``tests/test_attention_kinds.py``) checks it.
"""
from __future__ import annotations

import importlib
import inspect

from torch import nn

# name -> module whose import registers it (imported on first use)
_BUILTIN = {
    "softmax": "tsrsa.nn.softmax",
    "rsa": "tsrsa.nn.rsa",
    "linear": "tsrsa.nn.linear_attention",
    "fast_weight": "tsrsa.nn.fast_weight",
    "t2r": "tsrsa.nn.t2r",
    "block_recurrent": "tsrsa.nn.block_recurrent",
}
_KINDS: dict[str, type] = {}
_SLOT_ARGUMENTS = ("self", "d_model", "n_heads", "dropout", "causal")


class Attention(nn.Module):
    """Base class of sequence-mixing kinds (see the module docstring for the contract)."""

    kind: str = ""
    #: has ``init_state``/``stream``, equal to the causal parallel form
    recurrent: bool = False
    #: accepts ``causal=False`` (tokens also read later tokens)
    bidirectional: bool = True
    #: a model trained on windows from the empty state may stream across them (False: the streaming
    #: configuration trains it with the state carried between windows, see ``block_recurrent``)
    streams_across_windows: bool = True

    @classmethod
    def option_defaults(cls) -> dict:
        """The kind's own options and their defaults (its constructor's arguments after ``causal``)."""
        return {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items()
                if name not in _SLOT_ARGUMENTS and p.kind is p.KEYWORD_ONLY}

    @classmethod
    def check_options(cls, options) -> dict:
        """``options`` as a dict, or a TypeError naming what the kind does not take."""
        if options is None:
            return {}
        if not isinstance(options, dict):
            raise TypeError(f"the options of attention kind {cls.kind!r} must be a dict, got {type(options).__name__}")
        known = cls.option_defaults()
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise TypeError(f"attention kind {cls.kind!r} has no option(s) {unknown}; its options are "
                            f"{sorted(known) or 'none'}")
        return dict(options)

    @classmethod
    def search_space(cls, trial, *, causal: bool = False) -> dict:
        """Options ``tsrsa.tune`` samples for this kind by default (none)."""
        return {}

    def reset_parameters(self) -> None:
        """Initialise every parameter the kind owns (called by the constructor)."""

    def parameter_groups(self) -> dict[str, list[nn.Parameter]]:
        """Named groups of parameters an optimiser may treat apart (none by default)."""
        return {}

    def state_size(self, n_tokens: int) -> int:
        """Numbers the recurrent state holds per sequence after ``n_tokens`` tokens."""
        raise NotImplementedError(f"attention kind {self.kind!r} has no recurrent form")

    def check_streamable(self) -> None:
        """ValueError unless the layer is causal: only then does a recurrent form equal it."""
        if not getattr(self, "causal", False):
            raise ValueError(f"attention kind {self.kind!r} streams only when built with causal=True")

    def init_state(self, batch_size: int, *, device=None, dtype=None) -> dict:
        raise NotImplementedError(f"attention kind {self.kind!r} has no recurrent form")

    def stream(self, x, state: dict):
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
