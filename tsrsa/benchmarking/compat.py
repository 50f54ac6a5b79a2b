"""Constructor arguments for the tsrsa being run, this one or an earlier release.

Some benchmark scripts also run against releases before 0.15 (0.13.0, 0.14.0, put first on
``PYTHONPATH``), whose neural forecasters take the trainer's options as arguments of their own
(``num_threads=1``); from 0.15 they take them in one argument, ``trainer={"num_threads": 1}``, and the
old spelling is deprecated. :func:`trainer_kwargs` writes what the class at hand takes, so that one
script builds the same model on either side, while its rows keep naming the options one by one.

This module imports nothing outside the standard library (not even tsrsa), so that a harness loaded
from this checkout by path beside an earlier release can load it the same way.
"""
from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping

#: the trainer's options (``tsrsa.Trainer``'s fields; the neural forecasters' own arguments before 0.15)
TRAINER_OPTIONS = ("accelerator", "devices", "strategy", "precision", "compile", "num_threads", "callbacks",
                   "checkpoint_dir", "verbose")


def _takes_trainer(cls) -> bool:
    """Whether the forecaster class ``cls`` has a ``trainer`` argument (a neural forecaster of tsrsa 0.15 on)."""
    try:
        return "trainer" in inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return False


def trainer_kwargs(cls, params: Mapping) -> dict:
    """``params`` (constructor arguments; the trainer's options among them by their own names, as
    tsrsa 0.14 took them) as ``cls`` of the tsrsa being run takes them.

    Where ``cls`` has a ``trainer`` argument, the options of :data:`TRAINER_OPTIONS` in ``params`` go into
    it, over a ``trainer`` that ``params`` already holds (a dict, or a ``tsrsa.Trainer``, replaced field by
    field); otherwise (a release before 0.15, or a class without a trainer, such as a statistical model,
    whose ``verbose`` is its own) ``params`` come back as they are. The other arguments are kept, in order.

    >>> class Old:
    ...     def __init__(self, h, num_threads=None): ...
    >>> class New:
    ...     def __init__(self, h, trainer=None): ...
    >>> trainer_kwargs(Old, {"num_threads": 1})
    {'num_threads': 1}
    >>> trainer_kwargs(New, {"num_threads": 1})
    {'trainer': {'num_threads': 1}}
    >>> trainer_kwargs(New, {"h": 3, "num_threads": 1, "trainer": {"verbose": 0}})
    {'h': 3, 'trainer': {'verbose': 0, 'num_threads': 1}}
    """
    params = dict(params)
    if not _takes_trainer(cls):
        return params
    options = {name: params.pop(name) for name in list(params) if name in TRAINER_OPTIONS}
    if not options:
        return params
    given = params.get("trainer")
    if given is None:
        params["trainer"] = options
    elif dataclasses.is_dataclass(given) and not isinstance(given, type):
        params["trainer"] = dataclasses.replace(given, **options)
    elif isinstance(given, Mapping):
        params["trainer"] = {**given, **options}
    else:
        raise TypeError(f"trainer must be None, a dict or a tsrsa.Trainer to take {sorted(options)}, got {given!r}")
    return params


__all__ = ["TRAINER_OPTIONS", "trainer_kwargs"]
