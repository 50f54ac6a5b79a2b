"""Coverage levels of prediction intervals and the columns that hold them.

A level is a percentage in (0, 100) (``level=[80, 95]``); the interval of level 80 lies in the columns
``yhat_lo_80`` and ``yhat_hi_80`` (a level that is not whole keeps its digits: ``yhat_lo_97.5``). The
conformal intervals, a head's quantile intervals and hierarchical reconciliation read and write them.
"""
from __future__ import annotations

import numbers

import numpy as np


def check_levels(level) -> tuple[float, ...]:
    """``level`` checked: distinct percentages in [1, 100), in increasing order; () for None. A level in (0, 1)
    is refused with the hint that levels are percentages (0.8 means a 0.8 % interval, never what is meant)."""
    if level is None:
        return ()
    if not isinstance(level, (list, tuple, np.ndarray)) or (isinstance(level, np.ndarray) and level.ndim != 1):
        raise TypeError(f"level must be a list of coverage percentages in (0, 100), e.g. level=[80, 95]; got "
                        f"{level!r} ({type(level).__name__})")
    levels: list[float] = []
    for value in level:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"level must hold numbers in (0, 100), got {value!r} ({type(value).__name__}); e.g. "
                            f"level=[80, 95]")
        if not 0.0 < float(value) < 100.0:  # NaN too
            raise ValueError(f"level {value!r} is outside (0, 100): a level is the percentage of values the "
                             f"interval should hold, e.g. level=[80, 95]")
        if float(value) < 1.0:
            raise ValueError(f"level {value!r} would give a {float(value):g} % interval: levels are percentages, "
                             f"not fractions; write level=[{100 * float(value):g}] for {100 * float(value):g} %")
        if float(value) in levels:
            raise ValueError(f"level lists {value!r} twice; give each level once")
        levels.append(float(value))
    if not levels:
        raise ValueError("level is empty; give at least one percentage, e.g. level=[80, 95], or leave it out")
    return tuple(sorted(levels))


def level_name(level: float) -> str:
    """How a level is written in column names: 80 -> '80', 97.5 -> '97.5'."""
    return str(int(level)) if float(level).is_integer() else repr(float(level))


def interval_columns(level: float) -> tuple[str, str]:
    """The (lower, upper) column names of a level: ('yhat_lo_80', 'yhat_hi_80')."""
    name = level_name(level)
    return f"yhat_lo_{name}", f"yhat_hi_{name}"
