"""Sequence-mixing kinds: the one slot of the encoder block that differs between models.

Every kind is an ``nn.Module`` subclass of :class:`Attention` with

- constructor ``(d_model, n_heads, *, dropout=0.0, causal=False, **options)``; the keyword
  arguments after ``causal`` are the kind's own options (``Attention.option_defaults()`` lists
  them), checked by the constructor, which also initialises every parameter the kind owns
  (``reset_parameters()``);
- ``forward(x)``: the parallel form, ``(B, T, d_model) -> (B, T, d_model)``; with
  ``causal=True`` every branch of the kind is causal (the output at token t reads tokens <= t);
- its capabilities as class data, read from there: ``recurrent``, ``bidirectional``,
  ``streams_across_windows`` (below), and for a kind with a recurrent form ``state_type`` (the
  typed state its recurrent form carries, a :class:`~tsrsa.nn.state.LayerState`) and ``ops``
  (its mathematics apart from the module: a :class:`KindOps` of plain functions with one
  signature, ``op(..., state=None, output_state=True) -> (output, final state)``);
- where the kind has one (``recurrent = True``), a recurrent form for streaming:
  ``init_state(batch_size)`` returns the ``state_type`` of an empty history, and
  ``stream(x, state) -> (y, state)`` advances it over ``n`` new tokens ``x (B, n, d_model)``;
  ``parallel(x, state=None) -> (y, state)`` is the parallel or chunked form from a state, with
  the state it ends in. ``y`` equals the causal parallel form over the whole history at those
  tokens, and either method takes the state either returns. The state is a value: a call returns
  a new one and never changes the one it is given.

A kind's module imports this one (never :mod:`tsrsa.nn.registry`, which loads the built-in kinds by
name: so the registry stands above the kinds and no import closes a circle) and decorates its class
with ``@register_attention(name)``.
"""
from __future__ import annotations

import inspect
from typing import Callable, NamedTuple

from torch import nn

#: name -> the class registered under it (``register_attention``; :mod:`tsrsa.nn.registry` reads it)
REGISTERED: dict[str, type] = {}
_SLOT_ARGUMENTS = ("self", "d_model", "n_heads", "dropout", "causal")


class KindOps(NamedTuple):
    """A kind's mathematics apart from its module: plain functions of the kind's inputs (queries,
    keys, values, ...) with one signature, ``op(..., state=None, output_state=True) -> (output,
    final state)``, ``state`` the kind's typed state (None: the empty history; the final state is
    None when ``output_state`` is False, for a training pass that does not read it). Each form
    takes the state either returns."""

    parallel: Callable  # the parallel or chunked form (training)
    recurrent: Callable  # the recurrent form (one token, or a few, at a time)


class Attention(nn.Module):
    """Base class of sequence-mixing kinds (see the module docstring for the contract)."""

    kind: str = ""
    #: has ``init_state``/``stream``/``parallel``, equal to the causal parallel form
    recurrent: bool = False
    #: accepts ``causal=False`` (tokens also read later tokens)
    bidirectional: bool = True
    #: a model trained on windows from the empty state may stream across them (False: the streaming
    #: configuration trains it with the state carried between windows, see ``block_recurrent``)
    streams_across_windows: bool = True
    #: the typed state of the recurrent form (a ``tsrsa.nn.state.LayerState`` subclass); None without one
    state_type: type | None = None
    #: the kind's ops (``KindOps``); None without a recurrent form
    ops: KindOps | None = None
    #: every branch reads only the current and earlier tokens (set by the constructor)
    causal: bool = False

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
        if not self.causal:
            raise ValueError(f"attention kind {self.kind!r} streams only when built with causal=True")

    def init_state(self, batch_size: int, *, device=None, dtype=None):
        """The ``state_type`` of an empty history, batch first."""
        raise NotImplementedError(f"attention kind {self.kind!r} has no recurrent form")

    def stream(self, x, state):
        """The recurrent form over new tokens x (B, n, D): (y (B, n, D), the state after them)."""
        raise NotImplementedError(f"attention kind {self.kind!r} has no recurrent form")

    def parallel(self, x, state=None, *, output_state: bool = True):
        """The parallel or chunked form over x (B, T, D) from ``state`` (None: the empty history):
        (y (B, T, D), the state after them; None without ``output_state``, and for a layer built with
        ``causal=False``, which is no recurrence)."""
        raise NotImplementedError(f"attention kind {self.kind!r} has no recurrent form")


def register_attention(name: str):
    """Class decorator that makes an :class:`Attention` subclass available under ``name``."""

    def register(cls):
        if not (isinstance(cls, type) and issubclass(cls, Attention)):
            raise TypeError(f"@register_attention({name!r}) needs a subclass of tsrsa.nn.Attention")
        if REGISTERED.get(name, cls) is not cls:
            raise ValueError(f"attention kind {name!r} is already registered by {REGISTERED[name].__qualname__}")
        cls.kind = name
        REGISTERED[name] = cls
        return cls

    return register
