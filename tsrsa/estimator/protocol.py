"""sklearn's estimator protocol for forecasters: parameters named in ``__init__`` and stored as given.

``get_params``/``set_params`` read and write them by name, so ``sklearn.base.clone``, Optuna
searches and pipelines see every option; ``repr`` shows the ones that differ from their defaults.
"""
from __future__ import annotations

import inspect

import numpy as np

from tsrsa.estimator.params import suggest_names


def store_init_args(estimator, values: dict) -> None:
    """``__init__`` body of every forecaster: keep each argument under its own name."""
    for name in type(estimator).param_names():
        setattr(estimator, name, values[name])


def specialised_init(base: type, *, drop=(), after: str, extra: dict):
    """An ``__init__`` that takes ``base``'s parameters without ``drop`` and with ``extra`` (name ->
    default, keyword-only) inserted after ``after``, and stores each under its name.

    A named estimator that fixes some of a general one's parameters (RSAForecaster: the
    transformer with the "rsa" kind) keeps one argument list with it instead of a copy;
    ``inspect.signature``, ``get_params`` and ``sklearn.base.clone`` see the full signature.
    """
    parameters = []
    for p in inspect.signature(base.__init__).parameters.values():
        if p.name in drop:
            continue
        parameters.append(p)
        if p.name == after:
            parameters += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
                           for name, default in extra.items()]
    signature = inspect.Signature(parameters)

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in bound.arguments.items():
            if name != "self":
                setattr(self, name, value)

    __init__.__signature__ = signature
    return __init__


class Estimator:
    """The parameter protocol (see the module docstring); forecasters add fit and predict."""

    def __new__(cls, *args, **kwargs):
        if args or kwargs:  # a constructor call (copy and pickle create the object bare)
            _check_arguments(cls, args, kwargs)
        return super().__new__(cls)

    @classmethod
    def param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return [
            p.name for p in signature.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]

    @classmethod
    def param_defaults(cls) -> dict:
        """The constructor's defaults, by argument name (the arguments that have one)."""
        return {p.name: p.default for p in inspect.signature(cls.__init__).parameters.values()
                if p.default is not inspect.Parameter.empty}

    def get_params(self, deep: bool = True) -> dict:
        """The constructor arguments, as sklearn's ``get_params``."""
        return {name: getattr(self, name) for name in self.param_names()}

    def set_params(self, **params):
        """Set constructor arguments by name (as sklearn's ``set_params``); returns self."""
        valid = self.param_names()
        unknown = [name for name in params if name not in valid]
        if unknown:
            raise ValueError(f"{type(self).__name__} has no parameter {unknown[0]!r}; "
                             f"{suggest_names(unknown[0], valid, value=params[unknown[0]], defaults=self.param_defaults())}")
        for name, value in params.items():
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = self.param_defaults()
        shown = []
        for name, value in self.get_params().items():
            if name not in defaults or not _same(value, defaults[name]):
                shown.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    @classmethod
    def search_space(cls, trial, estimator=None) -> dict:
        """Parameters ``tsrsa.tune`` samples by default (none here: nothing to tune)."""
        return {}


def _check_arguments(cls, args: tuple, kwargs: dict) -> None:
    """The TypeError Python would raise for a bad constructor call, naming the estimator and, for a
    misspelt keyword, the closest valid names (as ``set_params`` does)."""
    valid = cls.param_names()
    unknown = [name for name in kwargs if name not in valid]
    if unknown:
        raise TypeError(f"{cls.__name__} got an unexpected keyword argument {unknown[0]!r}; "
                        f"{suggest_names(unknown[0], valid, value=kwargs[unknown[0]], defaults=cls.param_defaults())}")
    try:
        inspect.signature(cls.__init__).bind(None, *args, **kwargs)
    except TypeError as err:
        positional = [p.name for p in inspect.signature(cls.__init__).parameters.values()
                      if p.kind == p.POSITIONAL_OR_KEYWORD and p.name != "self"]
        raise TypeError(f"{cls.__name__}: {err}; pass {', '.join(positional) or 'nothing'} by position "
                        f"and every other parameter by name") from None


def _same(a, b) -> bool:
    try:
        return bool(a == b) if not isinstance(a, np.ndarray) else False
    except Exception:
        return False
