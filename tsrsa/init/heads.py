"""From AR roots and seasonal periods (per time step) to initial REM head values (per token).

The stride s is ``patch_len``: a per-step quantity maps to tokens as lam_token = lam ** s,
theta_token = theta * s, and a period of p steps spans p / s tokens (see "Tokens and REM
units" in the architecture). Head slots follow RSAAttention's layout and are filled strongest
estimate first:

- regular heads: real roots, |lam| clipped to 0.99, lam_token = lam ** s;
- cyclic pairs: complex roots with theta * s < pi (gamma_token = |root| ** s, theta_token =
  theta * s), then seasonal periods p spanning at least 2 tokens (theta_token = 2 pi s / p,
  gamma_token from the autocorrelation at lag p);
- dilated regular heads: seasonal periods, and the periods of complex roots too fast for a
  token-level cycle, with dilation d = round(p / s) tokens; or the dilations given. A dilated
  head reads the token d tokens back, d * s steps back (d * s is p only when s divides p), so
  its lam is the autocorrelation at its own lag of d * s steps (the decay from one season to
  the next): the season's own autocorrelation where d * s = p, else the pooled ACF at d * s;
  a given dilation takes the seasonal period it carries (round(p / s) = d), if one was found,
  as its label;
- dilated cyclic pairs: the next seasonal periods as dilations, gamma the autocorrelation at the
  pair's lag d * s, theta as in the paper (pi / 4).

Values come one per head parameter: lam one per regular head, gamma and theta one per cyclic
pair, or one per cyclic head when the pair does not share them (``share_cyclic=False``; both
heads of a pair then start from the pair's values). A slot with no estimate, or whose estimate
is unusable (a root on or outside the unit circle), keeps the paper's initialisation; the report
says which and why.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

MAX_RADIUS = 0.99
MIN_DECAY = 0.05
PAPER_THETA = math.pi / 4
_REAL_TOL = 1e-8


@dataclass
class Estimates:
    """What the training data say, per time step."""

    roots: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.complex128))  # by modulus
    periods: list[int] = field(default_factory=list)  # strongest first
    period_acf: list[float] = field(default_factory=list)  # autocorrelation at each period
    acf: np.ndarray = field(default_factory=lambda: np.zeros(0))  # pooled autocorrelation at lags 0, 1, ... steps
    notes: list[str] = field(default_factory=list)  # why something is missing


@dataclass
class HeadInit:
    """Initial values for one layer's REM parameters (NaN: keep the paper's value)."""

    lam: np.ndarray  # (n_eta,) per token
    gamma: np.ndarray  # (n_cyclic_params,) per token: one per pair, or per cyclic head when unshared
    theta: np.ndarray  # (n_cyclic_params,) radians per token-lag
    dilations: list[int]  # one per dilated head or pair, in tokens
    report: list[dict]  # one record per REM head


def _clip(value: float, lo: float, hi: float) -> float:
    return float(min(max(value, lo), hi))


def _autocorrelation(estimates: Estimates, lag: int, period: float | None) -> float | None:
    """The autocorrelation at ``lag`` steps: the season's own (``period_acf``) when ``lag`` is the
    seasonal ``period``; else the pooled ACF where it reaches, else the decay per step of
    ``period``'s autocorrelation carried to ``lag`` (None without either)."""
    at_period = dict(zip(estimates.periods, estimates.period_acf)).get(period) if period is not None else None
    if at_period is not None and lag == period:
        return float(at_period)
    if 0 < lag < len(estimates.acf) and np.isfinite(estimates.acf[lag]):
        return float(estimates.acf[lag])
    if period is None:
        return None
    return _clip(0.5 if at_period is None else at_period, MIN_DECAY, MAX_RADIUS) ** (lag / period)


def assign_heads(estimates: Estimates, *, stride: int, n_tokens: int, n_regular: int, n_cyclic: int,
                 n_dilated_regular: int = 0, n_dilated_cyclic: int = 0, dilations=None,
                 default_dilation: int = 2, share_cyclic: bool = True) -> HeadInit:
    """Fill the REM head slots of one layer from ``estimates`` (see the module docstring).

    ``dilations`` (one int, one per dilated head/pair, or None) fixes the dilations; None lets
    the seasonal periods choose them (``default_dilation`` where none is found).
    ``share_cyclic`` as the layer's: False gives gamma and theta one value per cyclic head.
    """
    s = int(stride)
    roots = np.asarray(estimates.roots, dtype=np.complex128)
    real = [r.real for r in roots if abs(r.imag) <= _REAL_TOL]
    pairs = [r for r in roots if r.imag > _REAL_TOL]
    acf_at = dict(zip(estimates.periods, estimates.period_acf))
    report: list[dict] = []
    nan = float("nan")

    def record(kind, source, estimate, lam=nan, gamma=nan, theta=nan, dilation=1, note=""):
        report.append({"rem_type": kind, "source": source, "estimate": estimate, "lambda_init": float(lam),
                       "gamma_init": float(gamma), "theta_init": float(theta), "dilation": int(dilation),
                       "note": note})

    def missing(kind, dilation=1):
        note = "; ".join(estimates.notes) or "no estimate left for this head"
        return record(kind, "paper", "", dilation=dilation, note=note)

    # ---- regular heads: real roots, strongest first
    lam = np.full(n_regular + n_dilated_regular, np.nan)
    for slot in range(n_regular):
        if slot < len(real):
            root = real[slot]
            if abs(root) >= 1.0:
                record("regular", "paper", f"real root {root:.4f}", note="non-stationary root (|root| >= 1)")
                continue
            step = _clip(root, -MAX_RADIUS, MAX_RADIUS)
            lam[slot] = step**s
            record("regular", "ar_root", f"real root {root:.4f}", lam=lam[slot])
        else:
            missing("regular")

    # ---- cyclic pairs: complex roots a token grid can carry, then seasonal periods
    cyclic_sources, too_fast = [], []
    for root in pairs:
        angle, radius = float(np.angle(root)), float(abs(root))
        if radius >= 1.0:
            cyclic_sources.append(("paper", f"complex root {root:.4f}", nan, nan, "non-stationary root (|root| >= 1)"))
        elif angle * s < math.pi:
            cyclic_sources.append(("ar_root", f"complex root {root:.4f} (period {2 * math.pi / angle:.2f} steps)",
                                   _clip(radius, 0.0, MAX_RADIUS) ** s, angle * s, ""))
        else:
            too_fast.append(2 * math.pi / angle)  # shorter than 2 tokens: a dilated head may carry it
    for p in estimates.periods:
        if p >= 2 * s:
            decay = _clip(acf_at.get(p, 0.5), MIN_DECAY, MAX_RADIUS) ** (s / p)
            cyclic_sources.append(("seasonal_period", f"period {p} steps", decay, 2 * math.pi * s / p, ""))
    n_cyc = n_cyclic + n_dilated_cyclic
    gamma, theta = np.full(n_cyc, np.nan), np.full(n_cyc, np.nan)
    for slot in range(n_cyclic):
        if slot < len(cyclic_sources):
            source, estimate, g, t, note = cyclic_sources[slot]
            if source == "paper":
                for kind in ("cyclic_cos", "cyclic_sin"):
                    record(kind, "paper", estimate, note=note)
                continue
            gamma[slot], theta[slot] = g, t
            for kind in ("cyclic_cos", "cyclic_sin"):
                record(kind, source, estimate, gamma=g, theta=t)
        else:
            for kind in ("cyclic_cos", "cyclic_sin"):
                missing(kind)

    # ---- dilated heads: seasonal periods (and roots too fast for a token-level cycle)
    n_units = n_dilated_regular + n_dilated_cyclic
    fixed = [dilations] * n_units if isinstance(dilations, int) else (list(dilations) if dilations else None)
    seasonal = [(p, f"period {p} steps") for p in estimates.periods] + \
               [(p, f"root period {p:.2f} steps") for p in too_fast]
    usable = [(p, label) for p, label in seasonal if 1 <= round(p / s) <= n_tokens - 1]
    chosen_dilations = []
    for unit in range(n_units):
        regular_unit = unit < n_dilated_regular
        if fixed:  # the period this dilation carries, if one was found
            d = int(fixed[unit])
            source = next(((p, label) for p, label in usable if round(p / s) == d), None)
        else:
            source = usable[unit] if unit < len(usable) else None
            d = max(1, round(source[0] / s)) if source else default_dilation
        chosen_dilations.append(int(d))
        lag = d * s  # steps between a token and the one this head reads
        # no period and no dilation given: the paper's value at the default dilation
        value = None if source is None and not fixed else _autocorrelation(estimates, lag, source and source[0])
        if value is None:
            if regular_unit:
                missing("regular", d)
            else:
                for kind in ("cyclic_cos", "cyclic_sin"):
                    missing(kind, d)
            continue
        if source is None:
            origin, label = "autocorrelation", f"lag {lag} steps"
        else:
            p, label = source
            origin = "seasonal_period"
            label = label if lag == p else f"{label}, read at lag {lag} steps"
        decay = _clip(value, MIN_DECAY, MAX_RADIUS)
        if regular_unit:
            lam[n_regular + unit] = decay
            record("regular", origin, label, lam=decay, dilation=d)
        else:
            k = n_cyclic + unit - n_dilated_regular
            gamma[k], theta[k] = decay, PAPER_THETA
            for kind in ("cyclic_cos", "cyclic_sin"):
                record(kind, origin, label, gamma=decay, theta=PAPER_THETA, dilation=d)
    if not share_cyclic:  # one value per cyclic head: both heads of a pair start from the pair's
        gamma, theta = np.repeat(gamma, 2), np.repeat(theta, 2)
    return HeadInit(lam=lam, gamma=gamma, theta=theta, dilations=chosen_dilations, report=report)


def estimate_panel(values: np.ndarray, offsets: np.ndarray, fit_lengths: np.ndarray, *, freq=None,
                   max_series: int = 32, k: int = 2, seed: int = 0, max_lag: int | None = None) -> Estimates:
    """AR roots, seasonal periods and the autocorrelation of a panel's training parts, pooled over
    its series.

    Pooling: up to ``max_series`` series (a random sample drawn with ``seed`` when there are
    more, so the result is deterministic). The AR roots come from one
    Yule-Walker fit on the series' pooled autocovariance (each series standardised), its order
    by BIC; the seasonal periods are voted: each sampled series proposes its own
    (``seasonal_periods``) and the periods proposed most often win, ties broken by the summed
    autocorrelation. The autocorrelation at lags 0..``max_lag`` steps (default: a third of the
    longest series) is ``pooled_acf`` of the same series: a dilated head reads it at its own lag.
    Never raises: problems become notes and leave the estimates empty.
    """
    import warnings

    from tsrsa.init.ar import pooled_ar_roots
    from tsrsa.init.seasonality import pooled_acf, seasonal_periods

    estimates = Estimates()
    starts = offsets[:-1]
    usable = [i for i in range(len(fit_lengths))
              if fit_lengths[i] >= 16 and np.std(values[starts[i] : starts[i] + fit_lengths[i]]) > 1e-12]
    if not usable:
        estimates.notes.append("every series is constant or shorter than 16 training steps")
        return estimates
    if len(usable) > max_series:
        usable = sorted(np.random.default_rng(seed).choice(usable, size=max_series, replace=False).tolist())
    series = [values[starts[i] : starts[i] + fit_lengths[i]] for i in usable]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reach = max(len(y) for y in series) // 3 if max_lag is None else int(max_lag)
        estimates.acf = pooled_acf(series, max(reach, 1))
        try:
            estimates.roots = pooled_ar_roots(series)
            if estimates.roots.size == 0:
                estimates.notes.append("the information criterion chose AR order 0")
        except Exception as error:  # any estimation failure falls back to the paper's values
            estimates.notes.append(f"AR fit failed ({type(error).__name__}: {error})")
        votes: dict[int, list[float]] = {}
        for y in series:
            try:
                found, strength = seasonal_periods(y, k=k, freq=freq, return_strength=True)
            except Exception as error:
                estimates.notes.append(f"seasonal periods failed ({type(error).__name__}: {error})")
                break
            for p, r in zip(found, strength):
                votes.setdefault(p, []).append(r)
    ranked = sorted(votes.items(), key=lambda item: (-len(item[1]), -float(np.sum(item[1]))))[:k]
    estimates.periods = [p for p, _ in ranked]
    estimates.period_acf = [float(np.median(r)) for _, r in ranked]
    if not estimates.periods:
        estimates.notes.append("no seasonal period found")
    return estimates
