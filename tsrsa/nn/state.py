"""Typed recurrent states, and the one code path that moves, cuts, joins and saves every one of them.

A recurrent form carries a state: a small frozen dataclass per kind or cache policy
(``KeyValueState``, ``BoundedCacheState``, ``LinearState``, ``FastWeightState``, ``RSAState``,
``BlockRecurrentState``) and, for a whole streaming network, ``StreamingState``. Its fields are

- tensors whose first dimension is the batch (B, ...), or None where a configuration has no such part;
- a nested layer state (``nested_state()``: RSA's softmax or T2R branch), saved under its own names;
- a tuple of layer states, one per layer (``layer_states(prefix)``), saved as ``{prefix}.{i}.{name}``.

Every state, whatever its class, goes through the same methods of :class:`State`: ``select`` (some
sequences of the batch), ``State.concat`` (states stacked along the batch), ``to`` (a device),
``detach``, ``map`` (any function of each tensor), and ``tensors`` / ``from_tensors``, the flat
``{name: tensor}`` form that a saved model holds (a field's name, or the one ``saved_as`` gives it).
A flat dict of a layer names its class by its names alone: ``LayerState.from_tensors`` finds the one
layer state class whose fields they are, so a file can be read without the network that wrote it.

States are values: no method changes a state, and a recurrent form returns a new one.
"""
from __future__ import annotations

import functools
from dataclasses import field, fields
from typing import Callable

import torch


__all__ = ["LayerState", "State", "layer_states", "nested_state", "saved_as"]

_SAVED_AS, _NESTED, _LAYERS = "saved_as", "nested", "layers"


def saved_as(name: str, **options):
    """A tensor field saved under ``name`` instead of its own (e.g. ``norm.mean``)."""
    return field(metadata={_SAVED_AS: name}, **options)


def nested_state():
    """A field holding a layer state whose names are saved as they are, beside the owner's own."""
    return field(metadata={_NESTED: True})


def layer_states(prefix: str):
    """A field holding one layer state per layer, saved as ``{prefix}.{i}.{name}``."""
    return field(metadata={_LAYERS: prefix})


@functools.cache
def _names(cls) -> tuple[str, ...]:
    """The field names of a state class, in order (read on every call of the one path, so kept)."""
    return tuple(f.name for f in fields(cls))


@functools.cache
def _layout(cls) -> tuple[tuple[str, str, str, bool], ...]:
    """(field, role, saved name, optional) of every field of a state class: the role is "tensor",
    "nested" (a layer state saved under its own names) or "layers" (saved as ``{name}.{i}.``)."""
    layout = []
    for f in fields(cls):
        role = "layers" if _LAYERS in f.metadata else "nested" if _NESTED in f.metadata else "tensor"
        layout.append((f.name, role, f.metadata.get(_LAYERS, f.metadata.get(_SAVED_AS, f.name)), f.default is None))
    return tuple(layout)


def _map(value, fn):
    if isinstance(value, torch.Tensor):
        return fn(value)
    if value is None:
        return None
    if isinstance(value, State):
        return value.map(fn)
    return tuple(_map(v, fn) for v in value)


def _join(values: list):
    first = values[0]
    if isinstance(first, torch.Tensor):
        return torch.cat(values, dim=0)
    if first is None:
        if any(v is not None for v in values):
            raise ValueError("cannot join states of which only some hold a part")
        return None
    if isinstance(first, State):
        return type(first).concat(values)
    if isinstance(first, tuple):
        if len({len(v) for v in values}) != 1:
            raise ValueError("cannot join states with different numbers of layers")
        return tuple(_join(list(column)) for column in zip(*values))
    raise TypeError(f"a state holds tensors, None, states or tuples of states, not {type(first).__name__}")


class State:
    """Base of every typed state (a frozen dataclass; see the module docstring)."""

    # ------------------------------------------------------------------ one function of every tensor
    def map(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> "State":
        """A state of the same class and layout with ``fn(t)`` for every tensor t."""
        return type(self)(*[_map(getattr(self, name), fn) for name in _names(type(self))])

    def select(self, index) -> "State":
        """The sequences ``index`` (a LongTensor, a list or a slice) of the batch."""
        return self.map(lambda t: t[index])

    @classmethod
    def concat(cls, states: list["State"]) -> "State":
        """States of one class and layout stacked along the batch, in order (one state: itself, as
        states are values)."""
        first = states[0]
        if len(states) == 1:
            return first
        if any(type(s) is not type(first) for s in states):
            raise TypeError(f"cannot join states of classes {sorted({type(s).__name__ for s in states})}")
        return type(first)(*[_join([getattr(s, name) for s in states]) for name in _names(type(first))])

    def to(self, device) -> "State":
        """Every tensor on ``device`` (dtypes kept; the state itself when it is there already)."""
        device = torch.device(device)
        if all(t.device == device for t in self.tensors().values()):
            return self
        return self.map(lambda t: t.to(device))

    def detach(self) -> "State":
        """Every tensor without its gradient history."""
        return self.map(torch.Tensor.detach)

    @property
    def batch_size(self) -> int:
        return next(iter(self.tensors().values())).size(0)

    # ------------------------------------------------------------------ the flat form (saving)
    def tensors(self) -> dict[str, torch.Tensor]:
        """``{name: tensor}``: what a saved model holds of this state."""
        flat: dict[str, torch.Tensor] = {}
        for name, role, saved, _ in _layout(type(self)):
            value = getattr(self, name)
            if value is None:
                continue
            if role == "layers":
                for i, layer in enumerate(value):
                    flat.update({f"{saved}.{i}.{inner}": t for inner, t in layer.tensors().items()})
            elif role == "nested":
                flat.update(value.tensors())
            else:
                flat[saved] = value
        return flat

    @classmethod
    def own_names(cls) -> tuple[set[str], set[str]]:
        """The flat names of the class's own tensor fields: (required, optional)."""
        required = {saved for _, role, saved, optional in _layout(cls) if role == "tensor" and not optional}
        optional = {saved for _, role, saved, optional in _layout(cls) if role == "tensor" and optional}
        return required, optional

    @classmethod
    def from_tensors(cls, tensors: dict[str, torch.Tensor]) -> "State":
        """The state whose ``tensors()`` are ``tensors`` (ValueError when they are not one)."""
        required, optional = cls.own_names()
        missing = sorted(required - set(tensors))
        if missing:
            raise ValueError(f"a {cls.__name__} needs the tensors {missing}; got {sorted(tensors)}")
        rest = {name: t for name, t in tensors.items() if name not in required | optional}
        values = {}
        for name, role, saved, _ in _layout(cls):
            if role == "layers":
                prefix = saved + "."
                groups: dict[int, dict] = {}
                for key in [n for n in rest if n.startswith(prefix)]:
                    index, _, inner = key[len(prefix):].partition(".")
                    if not index.isdigit() or not inner:
                        raise ValueError(f"{key!r} is not a name of a layer's state ({prefix}<i>.<name>)")
                    groups.setdefault(int(index), {})[inner] = rest.pop(key)
                if sorted(groups) != list(range(len(groups))):
                    raise ValueError(f"the layers of {prefix}<i> are not numbered 0 .. n - 1: {sorted(groups)}")
                values[name] = tuple(LayerState.from_tensors(groups[i]) for i in range(len(groups)))
            elif role == "nested":
                values[name], rest = LayerState.from_tensors(rest), {}
            else:
                values[name] = tensors.get(saved)
        if rest:
            raise ValueError(f"a {cls.__name__} has no tensors {sorted(rest)}")
        return cls(**values)


class LayerState(State):
    """Base of the state of one sequence-mixing layer. Every subclass is known by its names, so that
    ``LayerState.from_tensors`` (on this base) builds the right class from a flat dict."""

    _classes: list[type] = []
    #: functions that import more modules defining layer states, run when a flat dict matches no class
    #: defined so far (:mod:`tsrsa.nn.registry` adds one that loads every built-in kind)
    loaders: list[Callable[[], None]] = []

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        LayerState._classes = [c for c in LayerState._classes if c.__qualname__ != cls.__qualname__
                               or c.__module__ != cls.__module__] + [cls]

    @property
    def kept_positions(self) -> torch.Tensor | None:
        """(B, H, K) the stream positions of the tokens a bounded cache keeps (None: no bounded cache)."""
        return None

    @classmethod
    def holds(cls, names: set[str]) -> bool:
        """Whether a flat dict with ``names`` is a state of this class."""
        required, optional = cls.own_names()
        if not required <= names:
            return False
        rest = names - required - optional
        if any(role == "nested" for _, role, _, _ in _layout(cls)):
            return bool(rest) and len(LayerState.classes_holding(rest)) == 1
        return not rest

    @staticmethod
    def classes_holding(names: set[str]) -> list[type]:
        return [c for c in LayerState._classes if c.holds(names)]

    @classmethod
    def from_tensors(cls, tensors: dict[str, torch.Tensor]) -> "LayerState":
        if cls is not LayerState:
            return super().from_tensors(tensors)
        names = set(tensors)
        found = LayerState.classes_holding(names)
        if not found:  # a kind not imported yet: load every registered kind (each defines its state) and look again
            for load in LayerState.loaders:
                load()
            found = LayerState.classes_holding(names)
        if len(found) != 1:
            what = "no layer state" if not found else f"several layer states ({[c.__name__ for c in found]})"
            raise ValueError(f"{what} holds the tensors {sorted(names)}")
        return found[0].from_tensors(tensors)
