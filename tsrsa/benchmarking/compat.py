"""Constructor arguments for the tsrsa being run, this one or an earlier release.

Some benchmark scripts also run against earlier releases (0.13.0, 0.14.0, 0.15.0, put first on
``PYTHONPATH``), whose neural forecasters take as arguments of their own what later ones gather into
option groups: the trainer's options before 0.15 (``num_threads=1``; ``trainer={"num_threads": 1}``
since), the REM's, the statistical start's, the covariates', the softmax branch's and three of the
loop's before 0.16 (``n_cyclic=2``, ``start_weight=0.5``, ``past_covariates=[...]``, ``cache_size=8``,
``batches_per_epoch=2``; ``rem={"n_cyclic": 2}``, ``start={"weight": 0.5}``, ``covariates={"past":
[...]}``, ``attention_options={"cache_size": 8}``, ``trainer={"batches_per_epoch": 2}`` since).
:func:`grouped_kwargs` writes what the class at hand takes, either way, so that one script builds the
same model on every side, while its rows keep naming the options one by one.

This module imports nothing outside the standard library (not even tsrsa), so that a harness loaded
from this checkout by path beside an earlier release can load it the same way.
"""
from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping

#: the trainer's options (``tsrsa.Trainer``'s fields; the neural forecasters' own arguments before 0.15, the
#: last three before 0.16)
TRAINER_OPTIONS = ("accelerator", "devices", "strategy", "precision", "compile", "num_threads", "callbacks",
                   "checkpoint_dir", "verbose", "batches_per_epoch", "early_stopping_patience", "inference_batch_size")
#: every option an option group holds, by its old name: old name -> (group, field). The same table as the
#: classes' ``moved_params`` (a test holds the two together)
MOVED = {
    **{name: ("trainer", name) for name in TRAINER_OPTIONS},
    "start_learning_rate": ("start", "learning_rate"), "start_margin": ("start", "margin"),
    "start_weight": ("start", "weight"),
    "past_covariates": ("covariates", "past"), "future_covariates": ("covariates", "future"),
    "static_covariates": ("covariates", "static"), "calendar": ("covariates", "calendar"),
    "holidays": ("covariates", "holidays"), "unknown_categories": ("covariates", "unknown_categories"),
    "covariate_norm": ("covariates", "norm"),
    **{name: ("rem", name) for name in ("n_regular", "n_cyclic", "n_dilated_regular", "n_dilated_cyclic", "dilations",
                                        "gate", "share_cyclic", "max_lag", "gate_init")},
    "rem_mask": ("rem", "mask"), "rem_init": ("rem", "init"), "rem_learning_rate": ("rem", "learning_rate"),
    **{name: ("attention_options", name) for name in ("cache_size", "cache_policy", "cache_sinks", "t2r_features")},
}
#: the field a plain value of a group's own argument stands for (``start="ar"``: the start's kind)
SHORTHAND = {"start": "kind"}


def _arguments(cls) -> set[str]:
    try:
        return set(inspect.signature(cls.__init__).parameters)
    except (TypeError, ValueError):
        return set()


def accepted_names(cls) -> set[str]:
    """The arguments of ``cls``, and every option's old name whose group ``cls`` takes (what
    :func:`grouped_kwargs` folds in)."""
    names = _arguments(cls)
    return names | {old for old, (group, _) in MOVED.items() if group in names and old not in names}


def _options(value) -> dict:
    """A group's value as a dict of the options it sets: a dataclass's fields, a dict's items, a plain value (a
    start's kind) as that field, None as none."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return dict(value)
    return {}


def _folded(group: str, given, options: dict):
    if dataclasses.is_dataclass(given) and not isinstance(given, type):
        return dataclasses.replace(given, **options)
    if isinstance(given, Mapping):
        return {**given, **options}
    if group in SHORTHAND and (given is None or isinstance(given, str)):
        return {**({} if given == "auto" else {SHORTHAND[group]: given}), **options}
    if given is None:
        return dict(options)
    raise TypeError(f"{group} must be None, a dict or a tsrsa option group to take {sorted(options)}, got {given!r}")


def grouped_kwargs(cls, params: Mapping) -> dict:
    """``params`` (constructor arguments, each option by its old name or in its group) as ``cls`` of the tsrsa
    being run takes them.

    An option named on its own that ``cls`` takes in a group goes into that group (over a value ``params``
    already gives it: a dict, or a dataclass replaced field by field; a start's kind ``"ar"`` becomes
    ``{"kind": "ar"}``); a group that ``cls`` does not take (an earlier release) is written out as its
    options' old names. A class that takes an option by its own name (an earlier release, or a statistical
    model, whose ``verbose`` is its own) gets it so. The other arguments are kept, in order.

    >>> class Old:
    ...     def __init__(self, h, num_threads=None, n_cyclic=1): ...
    >>> class New:
    ...     def __init__(self, h, trainer=None, rem=None): ...
    >>> grouped_kwargs(Old, {"num_threads": 1})
    {'num_threads': 1}
    >>> grouped_kwargs(New, {"num_threads": 1, "n_cyclic": 2})
    {'trainer': {'num_threads': 1}, 'rem': {'n_cyclic': 2}}
    >>> grouped_kwargs(New, {"h": 3, "num_threads": 1, "trainer": {"verbose": 0}})
    {'h': 3, 'trainer': {'verbose': 0, 'num_threads': 1}}
    >>> grouped_kwargs(Old, {"rem": {"n_cyclic": 2}})
    {'n_cyclic': 2}
    """
    names = _arguments(cls)
    out, groups = {}, {}
    for key, value in params.items():
        moved = MOVED.get(key)
        old = {field: name for name, (group, field) in MOVED.items() if group == key}
        takes_old = any(name in names for name in old.values())  # the group's options by their own names
        plain = not isinstance(value, Mapping) and not dataclasses.is_dataclass(value)
        if moved is not None and key not in names and moved[0] in names:
            groups.setdefault(moved[0], {})[moved[1]] = value
        elif old and takes_old and (key not in names or key in SHORTHAND) and not plain:
            for field, option in _options(value).items():  # an earlier release: the options one by one
                out[key if SHORTHAND.get(key) == field else old.get(field, field)] = option
        else:
            out[key] = value
    for group, options in groups.items():
        out[group] = _folded(group, out.get(group, params.get(group) if group in names else None), options)
    return out


def trainer_kwargs(cls, params: Mapping) -> dict:
    """:func:`grouped_kwargs` (its name before 0.16, when the trainer was the only group)."""
    return grouped_kwargs(cls, params)


__all__ = ["MOVED", "TRAINER_OPTIONS", "accepted_names", "grouped_kwargs", "trainer_kwargs"]
