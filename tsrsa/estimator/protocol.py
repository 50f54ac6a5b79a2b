"""sklearn's estimator protocol for forecasters: parameters named in ``__init__`` and stored as given.

``get_params``/``set_params`` read and write them by name, so ``sklearn.base.clone``, Optuna
searches and pipelines see every option; ``repr`` shows the ones that differ from their defaults.
"""
from __future__ import annotations

import inspect

import numpy as np

from tsrsa.estimator.option_groups import fold_params
from tsrsa.estimator.params import suggest_names


def store_init_args(estimator, values: dict) -> None:
    """``__init__`` body of every forecaster: keep each argument under its own name."""
    for name in type(estimator).param_names():
        setattr(estimator, name, values[name])


def keyword_init(positional: tuple[str, ...], keyword: tuple[tuple[str, object], ...]):
    """An ``__init__`` whose signature is ``positional`` (no defaults) then, keyword-only, each (name, default)
    of ``keyword`` in order, and that stores each argument under its name (nothing else).

    The neural forecasters build theirs from their own arguments and the shared ones
    (:data:`tsrsa.estimator.common_params.COMMON_PARAMS`), so that the common part is written once;
    ``inspect.signature``, ``help``, ``get_params`` and ``sklearn.base.clone`` see the whole signature.
    Names of an earlier version that the class still takes (``moved_params``) are folded into their
    option groups by its ``upgrade_params`` first, with a DeprecationWarning
    (:mod:`tsrsa.estimator.option_groups`).
    """
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    parameters += [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in positional]
    parameters += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
                   for name, default in keyword]
    signature = inspect.Signature(parameters)

    def __init__(self, *args, **kwargs):
        cls = type(self)
        if cls.moved_params and any(name in kwargs for name in cls.moved_params):
            kwargs = cls.upgrade_params(kwargs, owner=cls.__name__)
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in bound.arguments.items():
            if name != "self":
                setattr(self, name, value)

    __init__.__signature__ = signature
    return __init__


class Estimator:
    """The parameter protocol (see the module docstring); forecasters add fit and predict."""

    #: the option groups among the parameters: name -> the group's class
    #: (:class:`~tsrsa.estimator.option_groups.OptionGroup`, or a ``DictGroup`` for one kept as a dict)
    option_groups: dict = {}
    #: parameter names of an earlier version, each an option of a group now: old name -> (group, field).
    #: The constructor and ``set_params`` still take them, with a DeprecationWarning, until their removal
    moved_params: dict = {}

    def __new__(cls, *args, **kwargs):
        if args or kwargs:  # a constructor call (copy and pickle create the object bare)
            _check_arguments(cls, args, {k: v for k, v in kwargs.items() if k not in cls.moved_params})
        return super().__new__(cls)

    @classmethod
    def upgrade_params(cls, params: dict, *, owner: str | None = None, current=None, nested: bool = False,
                       stacklevel: int = 2) -> dict:
        """``params`` with the names of ``moved_params`` folded into their groups (``current``, a dict of
        parameters, gives a group's value where ``params`` does not) and, with ``nested``, each
        ``group__field`` (:func:`~tsrsa.estimator.option_groups.fold_params`). ``owner`` names the call that
        passed them and warns (a DeprecationWarning at ``stacklevel``, counted as ``warnings.warn`` counts
        from the function that calls this one: 2 is its caller); None folds silently (a saved model's
        parameters, the command line's ``-p``)."""
        if not cls.option_groups:
            return params
        return fold_params(cls, params, owner=owner, current=current, nested=nested, stacklevel=stacklevel + 1)

    @classmethod
    def name_hint(cls, name: str, value) -> str:
        """What to say of a parameter ``name`` (given ``value``) that the class does not take: the closest
        names of the same kind (:func:`~tsrsa.estimator.params.suggest_names`)."""
        return suggest_names(name, cls.param_names(), value=value, defaults=cls.param_defaults())

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
        """Set constructor arguments by name (as sklearn's ``set_params``); returns self. An option of a group
        is set by sklearn's nested name (``set_params(rem__n_cyclic=2)``), or, until its removal, by its old
        name (deprecated). A call that raises changes nothing."""
        if self.option_groups and any(name in self.moved_params or "__" in name for name in params):
            params = self.upgrade_params(params, owner=f"{type(self).__name__}.set_params",
                                         current=self.get_params(deep=False), nested=True)
        valid = self.param_names()
        unknown = [name for name in params if name not in valid]
        if unknown:
            raise ValueError(f"{type(self).__name__} has no parameter {unknown[0]!r}; "
                             f"{self.name_hint(unknown[0], params[unknown[0]])}")
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
                        f"{cls.name_hint(unknown[0], kwargs[unknown[0]])}")
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
