"""Checks of constructor arguments, run at the entry of ``fit`` (sklearn style), and the names suggested
for a misspelt one."""
from __future__ import annotations

import difflib
import numbers

import numpy as np


def check_int(name: str, value, minimum: int = 1, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        kind = "None or an int" if allow_none else "an int"
        raise TypeError(f"{name} must be {kind} >= {minimum}, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name}={value} must be >= {minimum}")


def check_float(name: str, value, minimum: float = 0.0, *, strict: bool = False, maximum: float | None = None,
                allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r} ({type(value).__name__})")
    if not np.isfinite(value):
        raise ValueError(f"{name}={value} must be finite")
    if value < minimum or (strict and value == minimum):
        raise ValueError(f"{name}={value} must be {'>' if strict else '>='} {minimum}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name}={value} must be <= {maximum}")


def check_bool(name: str, value) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")


def check_choice(name: str, value, choices, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, str) or value not in choices:
        extra = " or None" if allow_none else ""
        raise ValueError(f"{name}={value!r} is not supported; use one of {tuple(choices)}{extra}")


def check_str(name: str, value) -> None:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{name} must be a non-empty string, got {value!r}")


def check_sequence_model(model) -> None:
    """Checks shared by the token/step models: ``patch_len``, ``dropout``, ``revin``."""
    check_int("patch_len", model.patch_len)
    if model.patch_len > model.resolved_input_size:
        raise ValueError(f"patch_len={model.patch_len} is longer than input_size={model.resolved_input_size}: the window "
                         f"would be a single token, mostly padding; use patch_len <= input_size (or a longer "
                         f"input_size)")
    check_float("dropout", model.dropout, maximum=1.0)
    if model.dropout == 1.0:
        raise ValueError("dropout=1.0 drops everything; use a value in [0, 1)")
    check_bool("revin", model.revin)


def quantile_levels(quantiles) -> tuple[float, ...]:
    """The requested quantile levels, sorted, unique, each in (0, 1)."""
    if isinstance(quantiles, (str, bytes)) or not hasattr(quantiles, "__iter__"):
        raise TypeError(f"quantiles must be a list of levels in (0, 1), got {quantiles!r}")
    levels = []
    for q in quantiles:
        if isinstance(q, (bool, np.bool_)) or not isinstance(q, numbers.Real):
            raise TypeError(f"quantiles must be numbers in (0, 1), got {q!r}")
        if not 0.0 < float(q) < 1.0:
            raise ValueError(f"quantile {q} is outside (0, 1); use levels such as 0.1, 0.5, 0.9")
        levels.append(float(q))
    if not levels:
        raise ValueError("quantiles is empty; give at least one level in (0, 1)")
    return tuple(sorted(set(levels)))


def quantile_column(q: float) -> str:
    """The output column of level q: 0.1 -> 'yhat_q10', 0.025 -> 'yhat_q2.5'."""
    return f"yhat_q{100 * q:g}"


# ---------------------------------------------------------------------- misspelt parameter names
#: parameter names of other libraries -> the tsrsa parameter they mean (suggested when the estimator has it)
ALIASES = {"lr": "learning_rate", "epochs": "max_epochs", "n_epochs": "max_epochs", "seed": "random_state",
           "horizon": "h", "prediction_length": "h", "lookback": "input_size", "context_length": "input_size",
           "window_size": "input_size", "hidden_size": "d_model", "num_layers": "n_layers", "nhead": "n_heads"}
#: name endings that say what a parameter names (a column, a list of covariate columns): only a name that
#: speaks of the same thing is offered one of them
ROLES = {"_col": "col", "_covariates": "covar"}
_UNSET = object()


def _kind(value) -> str | None:
    """What sort of value a parameter holds, from a value of it (None: any, e.g. a None or "auto" default)."""
    if value is None or (isinstance(value, str) and value == "auto"):
        return None
    if isinstance(value, (bool, np.bool_)):
        return "flag"
    if isinstance(value, numbers.Number):
        return "number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (list, tuple, set, dict, np.ndarray)):
        return "collection"
    return None


def suggest_names(name: str, valid, *, value=_UNSET, defaults: dict | None = None) -> str:
    """"did you mean 'n_layers'?" for a misspelt parameter ``name`` of an estimator whose parameters are
    ``valid``, else the list of them.

    Only names of the same estimator and of the same kind are suggested: one whose default holds the
    sort of value given (``value``; a number is not offered a column name: ``DLinearForecaster(d_model=16)``
    gets no ``id_col``), and a column or covariate parameter only for a name that speaks of columns or
    covariates (or is the start of it: ``target`` for ``target_col``). A name from another library that
    means one of ``valid`` (``lr``: ``learning_rate``) is suggested whatever its spelling.
    """
    valid = list(valid)
    defaults = defaults or {}
    alias = ALIASES.get(name.lower())
    if alias in valid:
        return f"did you mean {alias!r}?"
    given = None if value is _UNSET else _kind(value)

    def same_kind(candidate: str) -> bool:
        role = next((word for ending, word in ROLES.items() if candidate.endswith(ending)), None)
        if role is not None and role not in name.lower() and not candidate.startswith(name.lower()):
            return False
        known = _kind(defaults.get(candidate))
        return given is None or known is None or known == given

    close = difflib.get_close_matches(name, [c for c in valid if same_kind(c)], n=3, cutoff=0.6)
    return f"did you mean {' or '.join(repr(c) for c in close)}?" if close else f"valid parameters: {valid}"
