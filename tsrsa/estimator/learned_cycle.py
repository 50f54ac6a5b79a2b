"""A neural forecaster's learned cycle (``covariates={"cycle": ...}``; the network's part is
:mod:`tsrsa.nn.cycle`, where each window sits in it :mod:`tsrsa.data.cycles`): its period.

The period is given (an integer number of steps) or "auto": the seasonal period the panel's estimate
ranks first (:func:`tsrsa.init.heads.estimate_panel`, the estimate RSA's data-initialised REM heads start
from), or no cycle where none is found.
"""
from __future__ import annotations


def cycle_period(option, panel, fit_lengths) -> tuple[int | None, str]:
    """(the period in steps or None, why) of ``option`` (None, "auto" or an integer) on ``panel``'s training
    parts (``fit_lengths``)."""
    if option is None:
        return None, "no cycle asked for"
    if option != "auto":
        return int(option), f"cycle={int(option)} as given"
    from tsrsa.init.heads import estimate_panel

    found = estimate_panel(panel.values, panel.offsets, fit_lengths, freq=panel.freq).periods
    if not found:
        return None, "cycle='auto' found no seasonal period in the training parts: no cycle"
    return int(found[0]), f"cycle='auto': the seasonal period {found[0]} the panel's estimate ranks first"


def check_period(period: int, fit_lengths) -> None:
    """ValueError when a series' training part is shorter than one whole cycle (the table would learn
    positions it never sees)."""
    if int(fit_lengths.min()) < period:
        raise ValueError(f"cycle={period} is longer than the shortest training part ({int(fit_lengths.min())} "
                         f"steps): each series must cover the cycle at least once; use a shorter cycle or "
                         f"leave it out (covariates={{'cycle': None}})")
