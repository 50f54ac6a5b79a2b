"""Options in groups: one argument holds a family of options, as ``trainer=`` holds where a fit runs.

A neural forecaster keeps what to build in arguments of its own and gathers the options that belong
together into one argument each, a frozen dataclass or a dict of its fields, as Lightning's ``Trainer``
and Hugging Face's ``TrainingArguments`` hold theirs::

    RSAForecaster(h=24, rem=tsrsa.REM(n_cyclic=2), start=tsrsa.Start(weight=0.5),
                  covariates={"future": ["promo"], "calendar": "auto"}, trainer=tsrsa.Trainer(num_threads=2))

:class:`OptionGroup` is the base of those dataclasses (:class:`~tsrsa.estimator.trainer.Trainer`,
:class:`~tsrsa.estimator.groups.Start`, :class:`~tsrsa.estimator.groups.Covariates`,
:class:`~tsrsa.forecasters.rem_options.REM`): each field checked when the value is made (a
``ValueError`` or ``TypeError`` naming the group and the field), a ``repr`` of the fields that differ
from their defaults, the JSON a saved model keeps. The estimator keeps the value as given (sklearn's
rule: a dict stays a dict, checked at ``fit``) and reads it through :meth:`OptionGroup.coerce`.

The options were arguments of their own before (``start_weight=0.5``, ``n_cyclic=2``): a class names
where each old name lives now (``moved_params``: old name -> (group, field)), and :func:`fold_params`
folds them in, with a ``DeprecationWarning`` naming the new spelling when a user's call passed them,
silently for a saved model's parameters and the command line. Once a name is removed (it leaves
``moved_params``) it is an unknown argument, whose error names the group option it is close to.
``set_params`` also takes sklearn's nested spelling, ``set_params(rem__n_cyclic=2)``.
"""
from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping

from tsrsa.estimator.params import suggest_names

#: the release that removes the flat names deprecated in 0.15 and 0.16 (``start_weight=0.5``, ``n_cyclic=2``)
REMOVED_IN = "0.19"


def _same(a, b) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


class OptionGroup:
    """Base of a frozen dataclass of options (module docstring): subclasses define fields and ``check``."""

    def __post_init__(self):
        try:
            self.check()
        except (TypeError, ValueError) as error:
            raise type(error)(f"{type(self).__name__}: {error}") from None

    def check(self) -> None:
        """Check every field (``ValueError`` or ``TypeError`` naming it); nothing to check here."""

    def __repr__(self) -> str:
        changed = [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
                   if not _same(getattr(self, f.name), f.default)]
        return f"{type(self).__name__}({', '.join(changed)})"

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def field_defaults(cls) -> dict:
        return {f.name: f.default for f in dataclasses.fields(cls)}

    @classmethod
    def shorthand(cls, value) -> dict | None:
        """The options a value that is not the group itself stands for ({} for None: the defaults), or None
        when ``value`` is no shorthand. :class:`~tsrsa.estimator.groups.Start` reads a kind's name so."""
        return {} if value is None else None

    @classmethod
    def own_field(cls) -> str | None:
        """The field a shorthand of the group's argument stands for (``start="ar"``: ``kind``), or None."""
        return None

    @classmethod
    def is_instance(cls, value) -> bool:
        return isinstance(value, cls)

    @classmethod
    def spell(cls, options: dict) -> str:
        return f"tsrsa.{cls.__name__}({', '.join(f'{k}={v!r}' for k, v in options.items())})"

    @classmethod
    def example(cls) -> str:
        """An example of the group's spelling, for messages."""
        name, default = next(iter(cls.field_defaults().items()))
        return f"tsrsa.{cls.__name__}({name}={default!r})"

    @classmethod
    def coerce(cls, value, what: str):
        """``value`` (the argument ``what``) as a checked instance: the instance itself, a shorthand (None:
        the defaults), or a dict of its options (an unknown key refused with the closest names)."""
        if isinstance(value, cls):
            return value
        options = cls.shorthand(value)
        if options is not None:
            return cls(**options)
        if isinstance(value, Mapping):
            return cls(**checked_keys(cls, value, what))
        raise TypeError(f"{what} must be None, a tsrsa.{cls.__name__} or a dict of its options, got {value!r} "
                        f"({type(value).__name__}); e.g. {what}={cls.example()}")

    def to_json(self) -> dict:
        """Every option as JSON holds it, for a saved model."""
        return {name: self.saved_option(name, getattr(self, name)) for name in self.field_names()}

    @classmethod
    def saved_option(cls, name: str, value):
        return list(value) if isinstance(value, tuple) else value

    @classmethod
    def saved(cls, value, what: str):
        """What a saved model's config.json keeps of the argument ``value``, checked first: a shorthand as it
        is, a dict its options, an instance the JSON object of all its options (:meth:`to_json`)."""
        options = cls.coerce(value, what)
        if isinstance(value, cls):
            return options.to_json()
        if isinstance(value, Mapping):
            return {name: cls.saved_option(name, option) for name, option in value.items()}
        return value


class DictGroup:
    """A group kept as a plain dict of named options with these ``defaults`` (``RSAForecaster``'s
    ``attention_options``: the kind's options beside the REM's), read as the dict with the defaults filled."""

    def __init__(self, name: str, defaults: Mapping):
        self.__name__, self.defaults = name, dict(defaults)

    def field_names(self) -> tuple[str, ...]:
        return tuple(self.defaults)

    def field_defaults(self) -> dict:
        return dict(self.defaults)

    def shorthand(self, value) -> dict | None:
        return {} if value is None else None

    def own_field(self) -> None:
        return None

    def is_instance(self, value) -> bool:
        return False

    def spell(self, options: dict) -> str:
        return repr(dict(options))

    def example(self) -> str:
        name, default = next(iter(self.defaults.items()))
        return repr({name: default})

    def coerce(self, value, what: str) -> dict:
        if value is None:
            return dict(self.defaults)
        if isinstance(value, Mapping):
            return {**self.defaults, **checked_keys(self, value, what)}
        raise TypeError(f"{what} must be None or a dict of options, got {value!r} ({type(value).__name__}); e.g. "
                        f"{what}={self.example()}")

    def saved(self, value, what: str):
        self.coerce(value, what)
        return None if value is None else dict(value)


def checked_keys(cls, value: Mapping, what: str) -> dict:
    """``value``'s options as a dict, its keys checked: text, each a field of ``cls`` (else the closest)."""
    names = cls.field_names()
    for key in value:
        if not isinstance(key, str):
            raise TypeError(f"{what} keys are option names (text), got {key!r}; use e.g. {what}={cls.example()}")
        if key not in names:
            hint = suggest_names(key, names, value=value[key], defaults=cls.field_defaults())
            label = f"a tsrsa.{cls.__name__}'s" if isinstance(cls, type) else f"{what}'s"
            hint = f"; {hint}" if hint.startswith("did you mean") else ""
            raise ValueError(f"{what} has no option {key!r}{hint} ({label} options: {', '.join(names)})")
    return dict(value)


# ---------------------------------------------------------------------- the old flat names
def spelled(group: str, cls, options: dict) -> str:
    """``group=tsrsa.Cls(a=1)`` (or, for a group kept as a dict, ``group={'a': 1}``)."""
    return f"{group}={cls.spell(options)}"


def _merged(group: str, cls, base, options: dict):
    """The group's value ``base`` with ``options`` set: an instance stays one (``dataclasses.replace``, checked
    now), a shorthand, None or a dict becomes a dict (checked at fit, as every argument is)."""
    if cls.is_instance(base):
        return dataclasses.replace(base, **options)
    given = cls.shorthand(base)
    if given is None:
        if not isinstance(base, Mapping):
            cls.coerce(base, group)  # the TypeError of a value that is no such group
        given = dict(base)
    return {**given, **options}


def fold_params(cls, params: dict, *, owner: str | None = None, current: Mapping | None = None,
                nested: bool = False, stacklevel: int = 2) -> dict:
    """``params`` with each old flat name of ``cls`` (``cls.moved_params``) folded into its group, and, with
    ``nested``, each ``group__field`` (sklearn's nested spelling) too.

    The group's value is the one ``params`` gives when it is a shorthand (``start="ar"``), else ``current``'s
    (``set_params``: the estimator's), else the argument's default; a user's call that gives a group and one of
    its options apart is a ``ValueError`` (the command line's ``-p`` sets the option in the group given).
    ``owner`` names the user's call: an old name then warns (a ``DeprecationWarning`` at ``stacklevel``
    naming the new spelling); None folds silently (a saved model, the command line).
    """
    moved = dict(cls.moved_params)
    groups = dict(cls.option_groups)
    flat, rest = {}, {}
    for key, value in params.items():
        if key in moved:
            flat[key] = (*moved[key], value)
        elif nested and "__" in key and key.split("__", 1)[0] in groups:
            group, field = key.split("__", 1)
            flat[key] = (group, field, value)
        else:
            rest[key] = value
    if not flat:
        return params
    by_group: dict[str, dict] = {}
    for key, (group, field, value) in flat.items():
        by_group.setdefault(group, {})[field] = value
    defaults = cls.param_defaults()
    notes = []  # the warnings, given once every group is folded (a refused call warns of nothing)
    for group, options in by_group.items():
        group_cls = groups[group]
        checked_keys(group_cls, options, group)
        olds = [k for k, (g, _, _) in flat.items() if g == group]
        if group in rest:
            given = rest[group]
            if owner is not None and group_cls.shorthand(given) is None:  # the group itself, not a shorthand
                raise ValueError(f"{', '.join(olds)} and {group}= are given together; give each option once, in "
                                 f"{group} ({spelled(group, group_cls, options)} holds {', '.join(olds)})")
            base = given
        elif current is not None and group in current:
            base = current[group]
        else:
            base = defaults.get(group)
        merged = _merged(group, group_cls, base, options)
        if owner is not None:
            deprecated = [k for k in olds if k in moved]
            if deprecated:
                shown = merged if isinstance(merged, dict) else options
                notes.append(f"{owner}: {', '.join(f'{k}=' for k in deprecated)} "
                             f"{'is' if len(deprecated) == 1 else 'are'} deprecated (the old spelling goes in tsrsa "
                             f"{REMOVED_IN}); pass {spelled(group, group_cls, shown)}")
        rest[group] = merged
    for note in notes:
        warnings.warn(note, DeprecationWarning, stacklevel=stacklevel + 1)
    return rest


def flat_options(cls, params: dict) -> dict:
    """``params`` (``get_params()``) with each group written out as the old flat names of ``cls`` (the
    fields that have one; a group's own name keeps its shorthand field, such as ``start``'s kind):
    what records that compare runs across versions read (a checkpoint's fingerprint, a benchmark row)."""
    out = dict(params)
    for group, group_cls in cls.option_groups.items():
        if group not in params:
            continue
        olds = {field: k for k, (g, field) in cls.moved_params.items() if g == group}
        value = group_cls.coerce(params[group], group)
        del out[group]
        for field in group_cls.field_names():
            name = olds.get(field, group if field == group_cls.own_field() else field)
            out[name] = value[field] if isinstance(value, dict) else getattr(value, field)
    return out


__all__ = ["DictGroup", "OptionGroup", "REMOVED_IN", "checked_keys", "flat_options", "fold_params", "spelled"]
