"""Choosing among candidate forecasters on validation windows: the scale, the errors, the choice, the weights.

The numbers :class:`~tsrsa.forecasters.auto.AutoForecaster` decides with, as plain arrays:

- ``naive_scale(panel, ends, m)``: MASE's scale of each series, the mean absolute seasonal difference
  ``|y[t] - y[t - m]|`` over its first ``ends[i]`` values (the in-sample part, before the validation
  block); 1-step differences where the part holds no whole season or the seasonal ones are all zero, and
  1 where those are zero too (a constant series: the error is then the plain mean absolute error);
- ``validation_targets(panel, ends, n_windows, step, h)``: the actual values (S, W, h) of the windows;
- ``scaled_errors(yhat, y, scale)``: each candidate's mean absolute scaled error per series, NaN where it
  has no finite forecast;
- ``choice_weights(errors, by, combine, top_k)``: (S, C) weights of the candidates kept for each series:
  the best one (weight 1), or the best ``top_k`` by their mean (equal weights) or by validation weights
  (each the inverse of its error, normalised); ranked by the series' own errors, or by the panel's mean
  errors (``by="panel"``, a series on which fewer than two candidates could be validated, and a series on
  which its own best does not beat the panel's best by a margin: ``within_noise``); with that margin, a
  candidate joins the best only where the validation cannot tell the two apart (``told_apart``);
- ``last_window_rule(signed, ...)``: with ``combine="auto"``, the rule the weights follow: margin's gate
  unless one of the means of each series' best 2, 3 or 4 (``rule_options``), chosen on the windows before the
  last, beats it on the last window by more than the margin's standard errors over the series;
- ``combined(weights, yhat)``: the kept candidates' forecasts combined by those weights.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tsrsa.data.validation import format_id

#: how candidates are kept for each series, and how several are combined
CHOOSE_BY = ("series", "panel")
COMBINE = ("auto", "mean", "weighted")
#: combine="auto": besides margin's gate, the rules the last validation window may choose: the mean of each
#: series' best k (ranked by its own errors, without the gate), for these k
AUTO_TOP_K = (2, 3, 4)
#: an error below this counts as this much when weighting by inverse errors (a perfect fit on validation)
SMALLEST_ERROR = 1e-12
#: a series with fewer candidates validated than this chooses by the panel's mean errors instead
MIN_VALIDATED = 2


def naive_scale(panel, ends: np.ndarray, m: int) -> np.ndarray:
    """(S,) MASE's scale of each series from its first ``ends[i]`` values (module docstring)."""
    scale = np.ones(panel.n_series)
    for i in range(panel.n_series):
        y = panel.series(i)[: int(ends[i])]
        for lag in dict.fromkeys((m, 1)):
            if len(y) > lag:
                value = float(np.mean(np.abs(y[lag:] - y[:-lag])))
                if np.isfinite(value) and value > 0:
                    scale[i] = value
                    break
    return scale


def validation_targets(panel, ends: np.ndarray, n_windows: int, step: int, h: int) -> np.ndarray:
    """(S, W, h) the actual values of validation window w of each series: the h steps after its first
    ``ends[i] + w * step`` values."""
    starts = panel.offsets[:-1, None] + ends[:, None] + step * np.arange(n_windows)[None, :]  # (S, W)
    positions = starts[:, :, None] + np.arange(h)[None, None, :]  # (S, W, h)
    return panel.values[np.minimum(positions, len(panel.values) - 1)]  # clipped: a series too short has none


def scaled_errors(yhat: np.ndarray, y: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """(S, C) mean absolute scaled error of each candidate's forecasts ``yhat`` (S, C, W, h) against ``y``
    (S, W, h); NaN where a candidate has no forecast or a non-finite one."""
    with np.errstate(invalid="ignore", over="ignore"):
        errors = np.mean(np.abs(yhat - y[:, None]), axis=(2, 3)) / scale[:, None]
    return np.where(np.isfinite(errors), errors, np.nan)


def _weights_of(errors: np.ndarray, kept: np.ndarray, combine) -> np.ndarray:
    """(C,) weights of the candidates ``kept`` (best first): equal, or with ``combine="weighted"`` each the
    inverse of its error, normalised."""
    weights = np.zeros(len(errors))
    if combine == "weighted":
        inverse = 1.0 / np.maximum(errors[kept], SMALLEST_ERROR)
        weights[kept] = inverse / inverse.sum()
    else:
        weights[kept] = 1.0 / len(kept)
    return weights


def told_apart(differences: np.ndarray, z: float) -> bool:
    """Whether paired errors ``differences`` (the other candidate's minus the best's) show the other to be
    worse by more than ``z`` standard errors of their mean (sd / sqrt(n), over the finite ones); False with
    fewer than two."""
    d = np.asarray(differences, dtype=np.float64).ravel()
    d = d[np.isfinite(d)]
    if d.size < 2:
        return False
    return float(np.mean(d)) > z * float(np.std(d, ddof=1)) / np.sqrt(d.size)


def _close_to_best(order: np.ndarray, top_k: int | None, paired: np.ndarray, margin) -> np.ndarray:
    """The first ``top_k`` of ``order`` (all of them for None) less those whose paired errors ``paired[c]``
    :func:`told_apart` shows to be worse than the best's by ``margin`` standard errors (none with ``margin``
    None)."""
    kept = order[:top_k]
    if margin is None or len(kept) < 2:
        return kept
    best = int(kept[0])
    return np.array([best] + [int(c) for c in kept[1:] if not told_apart(paired[c] - paired[best], margin)])


def ranked(errors: np.ndarray) -> np.ndarray:
    """The candidates with an error, best first (a tie keeps the candidates' order)."""
    valid = np.flatnonzero(np.isfinite(errors))
    return valid[np.argsort(errors[valid], kind="stable")]


def panel_means(errors: np.ndarray) -> np.ndarray:
    """(C,) each candidate's mean error over the series where it has one (NaN where it has none)."""
    counts = np.isfinite(errors).sum(axis=0)
    totals = np.where(np.isfinite(errors), errors, 0.0).sum(axis=0)
    return np.where(counts > 0, totals / np.maximum(counts, 1), np.nan)


def panel_rows(errors: np.ndarray, by: str = "series", least: int = MIN_VALIDATED) -> np.ndarray:
    """(S,) bool: the series that choose by the panel's mean errors: all with ``by="panel"``, else those
    with fewer than ``least`` candidates validated (as many as there are, when fewer)."""
    if by == "panel":
        return np.ones(len(errors), dtype=bool)
    return np.isfinite(errors).sum(axis=1) < min(least, errors.shape[1])


def no_candidate(sid, names, reasons: dict[str, str] | None = None) -> ValueError:
    """The error of a series that no candidate forecasts: each candidate's reason where ``reasons`` ({name:
    error}) holds one."""
    reasons = reasons or {}
    said = "; ".join(f"{name}: {reasons[name][:160]}" if name in reasons else name for name in names)
    return ValueError(f"series {format_id(sid)}: no candidate could forecast it ({said}); drop the series, or give "
                      f"a candidate that fits shorter or simpler series, e.g. ('naive', "
                      f"tsrsa.SeasonalNaiveForecaster(h, season_length=1))")


def choice_weights(errors: np.ndarray, ids, names, *, by: str = "series", combine=None, top_k: int | None = 2,
                   blocked: np.ndarray | None = None, also_panel: np.ndarray | None = None,
                   step_errors: np.ndarray | None = None, margin: float | None = None,
                   reasons: Callable[[int], dict[str, str]] | None = None) -> np.ndarray:
    """(S, C) weights of the candidates kept for each series (rows sum to 1).

    A series ranks the candidates by its own validation errors; with ``by="panel"``, or when fewer than
    :data:`MIN_VALIDATED` candidates could be validated on it (a series too short for the others'
    validation), or where ``also_panel`` (S,) is True (:func:`within_noise`), by their mean errors over the
    panel (:func:`panel_means`). ``blocked`` (S, C) marks the candidates a series may not keep (its refit
    failed there). With ``combine``, the best ``top_k`` (None: all) are combined; with ``margin`` too, a candidate joins
    the best only where the validation cannot tell it apart from the best (:func:`told_apart`): a series
    ranked by its own errors compares their paired step errors ``step_errors`` (S, C, W, h) there, a series
    ranked by the panel their paired errors over the series. ValueError naming a series left with no
    candidate (and each candidate's reason there, where ``reasons``, a function of the series' row, gives
    {name: error})."""
    S, C = errors.shape
    blocked = np.zeros((S, C), dtype=bool) if blocked is None else blocked
    means, by_panel = panel_means(errors), panel_rows(errors, by)
    if also_panel is not None:
        by_panel = by_panel | also_panel
    if step_errors is None and margin is not None:
        raise ValueError("choice_weights: a margin needs the step errors it compares (step_errors)")
    weights = np.zeros((S, C))
    for i in range(S):
        scores = np.where(blocked[i], np.nan, means if by_panel[i] else errors[i])
        order = ranked(scores)
        if not order.size:
            raise no_candidate(ids[i], names, None if reasons is None else reasons(i))
        paired = errors.T if by_panel[i] else (None if step_errors is None else step_errors[i])  # (C, ...)
        kept = _close_to_best(order, 1 if combine is None else top_k, paired, margin)
        weights[i] = _weights_of(scores, kept, combine)
    return weights


def panel_weights(errors: np.ndarray, allowed: np.ndarray, *, combine=None, top_k: int | None = 2,
                  margin: float | None = None) -> np.ndarray:
    """(C,) the weights of a series never validated (a new id): the ``allowed`` candidates ranked by their
    mean error over the series where they have one (with ``margin``, those the panel's errors cannot tell
    apart from the best, as :func:`choice_weights`)."""
    means = np.where(allowed, panel_means(errors), np.nan)
    kept = _close_to_best(ranked(means), 1 if combine is None else top_k, errors.T, margin)
    return _weights_of(means, kept, combine)


def within_noise(step_errors: np.ndarray, errors: np.ndarray, z: float = 1.0) -> np.ndarray:
    """(S,) bool: the series whose own best candidate does not beat the panel's best candidate on it (lowest
    mean error over the panel, :func:`panel_means`) by more than ``z`` standard errors.

    ``step_errors`` (S, C, W, h) are the scaled absolute errors of every validation step; on each series the
    paired differences d = own best - panel best over its W x h steps give the mean and its standard error
    sd(d) / sqrt(n). One or two windows of a short series rarely tell candidates apart: a series that cannot
    show its own best to be better keeps the panel's ranking instead. False where the series' own best is the
    panel's best (there is nothing to fall back from, and its own steps, not the panel's few series, say which
    others to combine with it: a panel of one series would otherwise combine every candidate), where the
    panel's best has no error on the series (its own ranking is all there is), and on series with fewer than
    two steps."""
    S = errors.shape[0]
    means = panel_means(errors)
    out = np.zeros(S, dtype=bool)
    panel_order = ranked(means)
    if not panel_order.size:
        return out
    best_panel = int(panel_order[0])
    for i in range(S):
        own = ranked(errors[i])
        if not own.size or int(own[0]) == best_panel or not np.isfinite(errors[i, best_panel]):
            continue
        d = step_errors[i, best_panel] - step_errors[i, int(own[0])]  # the panel's best against the own best
        if np.isfinite(d).sum() < 2:
            continue
        out[i] = not told_apart(d, z)
    return out


def rule_options(top_k: int | None, margin: float | None) -> list[tuple[str, int | None, float | None]]:
    """``combine="auto"``'s rules as (name, top_k, margin): margin's gate first ("gate": the mean of what it
    lets join each series' best, at most ``top_k``), then "best k": the mean of each series' best k without
    it (:data:`AUTO_TOP_K`, those up to ``top_k``)."""
    return [("gate", top_k, margin), *((f"best {k}", k, None) for k in AUTO_TOP_K if top_k is None or k <= top_k)]


def series_weights(errors: np.ndarray, step_errors: np.ndarray, ids, names, *, top_k: int | None,
                   margin: float | None, blocked: np.ndarray | None = None) -> np.ndarray:
    """(S, C) the weights of ``choose="series"``, ``combine="mean"`` at ``top_k`` and ``margin``: a series
    ranks by its own errors unless fewer than two candidates were validated on it or (with ``margin``)
    :func:`within_noise` sends it to the panel's ranking; with ``margin``, the gate."""
    by_panel = panel_rows(errors)
    if margin is not None:
        by_panel = by_panel | within_noise(step_errors, errors, margin)
    return choice_weights(errors, ids, names, combine="mean", top_k=top_k, blocked=blocked, also_panel=by_panel,
                          step_errors=step_errors, margin=margin)


def last_window_rule(signed: np.ndarray, ids, names, *, top_k: int | None,
                     margin: float) -> tuple[tuple[str, int | None, float | None], list[list]]:
    """``combine="auto"``: which of :func:`rule_options` the weights follow. Returns (that rule's (name, top_k,
    margin), one [name, mean MASE on the last window, standard errors by which it beats the gate there, the
    standard errors needed] per rule).

    ``signed`` (S, C, W, h): the validation step errors, (forecast - actual) / scale. Each rule chooses on the
    windows before the last (:func:`series_weights`) and its combination is scored on the last, over the
    series where two or more candidates have errors on the earlier windows and a forecast on the last; the
    paired differences from the gate's score give the standard errors. A rule that beats the gate by more
    than ``margin`` of them is kept (of several, the lowest mean), else the gate: always with one window or
    fewer than two such series (NaN scores). ``margin`` is read as Student's t over the series (the critical
    value of its one-sided normal level with one degree of freedom fewer than the series): 2 needs 2.02 over
    174 series, 2.9 over 5 and 14 over 2, where a few series' spread is itself a guess."""
    options = rule_options(top_k, margin)
    means, beats = np.full(len(options), np.nan), np.full(len(options), np.nan)
    needed = np.nan

    def result(r: int):
        return options[r], [[name, float(a), float(b), float(needed)]
                            for (name, _, _), a, b in zip(options, means, beats)]

    if signed.shape[2] < 2:
        return result(0)
    earlier, last = np.abs(signed[:, :, :-1]), signed[:, :, -1]
    with np.errstate(invalid="ignore"):
        errors = np.mean(earlier, axis=(2, 3))
    errors = np.where(np.isfinite(errors), errors, np.nan)
    usable = np.isfinite(errors) & np.isfinite(last).all(axis=2)  # (S, C)
    rows = np.flatnonzero(usable.sum(axis=1) >= MIN_VALIDATED)
    if rows.size < 2:
        return result(0)
    ids = np.asarray(ids, dtype=object)[rows]
    scores = np.stack([np.mean(np.abs(combined(series_weights(
        errors[rows], earlier[rows], ids, names, top_k=k, margin=m, blocked=~usable[rows]), last[rows])), axis=1)
        for _, k, m in options])  # (R, series)
    d = scores[0] - scores  # > 0 where a rule beats the gate
    mean, sd = d.mean(axis=1), d.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):  # no spread: beaten everywhere (inf) or nowhere (0)
        beats = np.where(sd > 0, mean / (sd / np.sqrt(rows.size)), np.where(mean > 0, np.inf, 0.0))
    means = scores.mean(axis=1)
    from scipy.stats import norm, t as student  # here, so that importing tsrsa does not load scipy.stats

    needed = float(student.ppf(norm.cdf(margin), df=rows.size - 1))
    better = [r for r in range(1, len(options)) if beats[r] > needed]
    return result(min(better, key=lambda r: means[r]) if better else 0)


def combined(weights: np.ndarray, yhat: np.ndarray) -> np.ndarray:
    """(S, ...) the forecasts ``yhat`` (S, C, ...) combined with ``weights`` (S, C); a candidate of weight 0
    is not read (its forecast may be NaN)."""
    used = weights > 0
    values = np.where(used.reshape(used.shape + (1,) * (yhat.ndim - 2)), yhat, 0.0)
    return np.einsum("sc,sc...->s...", weights, values)
