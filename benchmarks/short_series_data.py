"""Data, split rule, statistical anchors and cells of the short-series benchmark (``short_series.py``).

Simulated processes (Gaussian noise of variance 1, 1,000 burn-in steps; seed s draws its path with
``numpy.random.default_rng([code, s])``): ``ar2_cycle`` y_t = 1.6454 y_{t-1} - 0.9025 y_{t-2} + e_t,
roots 0.95 exp(+-2 pi i / 12) (a damped 12-step cycle); ``seasonal_ar`` SARIMA(1,0,0)(1,0,0)_24,
(1 - 0.5 B)(1 - 0.8 B^24) y_t = e_t, roots 0.5 and 0.9908 exp(2 pi i k / 24); ``arma21``
(1 - 0.9 B)(1 - 0.5 B) y_t = (1 + 0.6 B) e_t, roots 0.9 and 0.5.

``split_rule`` (length n, horizon h, season m): validation = the last v = max(ceil(1.5 h), n // 10)
steps; input = the largest multiple of g up to (n - v) / 3, from g to 96 (g = m if m <= 48, else 8);
m is used only when n >= 2 m. Statistical anchors: maximum likelihood on the n raw training steps,
then one Kalman filter pass over the test part with the parameters fixed; each origin's forecast
comes from the state predicted there (``origin_forecasts``: no refit, no look ahead).
"""
from __future__ import annotations

import dataclasses
import math
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

LENGTHS = (200, 500, 1000, 2000)
BURN_IN = 1000
SIM_HORIZON = 24
SIM_TEST = 480  # steps of the simulated test part (457 stride-1 windows of 24)
MAX_INPUT = 96


# ---------------------------------------------------------------------- simulated processes
@dataclass(frozen=True)
class Process:
    name: str
    code: int  # part of the random seed of its paths
    ar: tuple[float, ...]  # phi_1..phi_p
    ma: tuple[float, ...]  # theta_1..theta_q
    seasonal_ar: float = 0.0  # Phi of (1 - Phi B^s)
    s: int = 0  # seasonal lag (0: none)
    season: int | None = None  # season the anchors and the split rule use
    text: str = ""

    def ar_polynomial(self) -> np.ndarray:
        """The full AR polynomial in B, ascending powers."""
        poly = np.r_[1.0, -np.asarray(self.ar, dtype=float)]
        if self.s:
            poly = np.polymul(poly[::-1], np.r_[-self.seasonal_ar, np.zeros(self.s - 1), 1.0])[::-1]
        return poly

    def roots(self) -> np.ndarray:
        """Characteristic roots of the AR part (of z^P - phi_1 z^(P-1) - ...), inside the unit circle."""
        return np.roots(self.ar_polynomial())

    def orders(self) -> tuple[tuple, tuple]:
        return (len(self.ar), 0, len(self.ma)), ((1, 0, 0, self.s) if self.s else (0, 0, 0, 0))

    def true_params(self) -> np.ndarray:
        """The generating coefficients in SARIMAX's order (ar, ma, seasonal ar); no constant, scale 1."""
        return np.array([*self.ar, *self.ma, *([self.seasonal_ar] if self.s else [])])


_RHO, _PERIOD = 0.95, 12
PROCESSES = {p.name: p for p in (
    Process("ar2_cycle", 1, (2 * _RHO * math.cos(2 * math.pi / _PERIOD), -_RHO ** 2), (),
            text="AR(2), roots 0.95·e^{±2πi/12} (a damped cycle of 12 steps): φ = (1.6454, −0.9025)"),
    Process("seasonal_ar", 2, (0.5,), (), seasonal_ar=0.8, s=24, season=24,
            text="SARIMA(1,0,0)(1,0,0)₂₄: φ = 0.5, Φ = 0.8; roots 0.5 and 0.9908·e^{2πik/24}"),
    Process("arma21", 3, (1.4, -0.45), (0.6,),
            text="ARMA(2,1): (1 − 0.9B)(1 − 0.5B) y = (1 + 0.6B) e, φ = (1.4, −0.45), θ = 0.6; roots 0.9, 0.5"),
)}


def simulate(process: Process, length: int, seed: int) -> np.ndarray:
    """One path of ``length`` steps (after the burn-in) of ``process``, data seed ``seed``."""
    from statsmodels.tsa.arima_process import ArmaProcess

    rng = np.random.default_rng([process.code, int(seed)])
    arma = ArmaProcess(ar=process.ar_polynomial(), ma=np.r_[1.0, process.ma])
    return arma.generate_sample(nsample=int(length), scale=1.0, distrvs=rng.standard_normal, burnin=BURN_IN)


# ---------------------------------------------------------------------- classic series
@dataclass(frozen=True)
class Classic:
    file: str
    h: int
    season: int | None
    test: int  # steps of the test part (the end of the series)
    text: str
    end: str | None = None  # last date used


CLASSIC = {
    "AirPassengers": Classic("AirPassengers.csv", 12, 12, 24, "monthly, 144 steps"),
    "monthly_milk": Classic("monthly-milk.csv", 12, 12, 24, "monthly, 168 steps"),
    "ausbeer": Classic("ausbeer.csv", 8, 4, 11, "quarterly, 211 steps"),
    "co2": Classic("co2_mm_mlo.csv", 12, 12, 48, "monthly Mauna Loa CO₂ (average), 789 steps"),
    "sunspots": Classic("monthly-sunspots.csv", 12, None, 120, "monthly, 2,820 steps; ~11-year cycle, no fixed season"),
    "daily_min_temperatures": Classic("daily-min-temperatures.csv", 14, None, 365,
                                      "daily, 3,652 steps (2 missing days interpolated); yearly season not modelled"),
    "us_gasoline": Classic("us_gasoline.csv", 13, 52, 104, "weekly, up to 2019 (1,508 steps; 2020's collapse in "
                           "demand is a break no history forecasts)", end="2019-12-31"),
    "taylor": Classic("taylor.csv", 48, 48, 336, "half-hourly electricity demand, 4,032 steps (daily season 48)"),
    "taxi": Classic("taxi_new_york_passengers.csv", 48, 48, 336, "half-hourly NYC taxi demand, 10,320 steps"),
}


def read_classic(name: str, folder) -> pd.Series:
    """Series ``name`` from ``folder`` (the ``classic`` data folder), with a regular datetime index."""
    path = Path(folder) / CLASSIC[name].file
    raw = pd.read_csv(path)
    if name == "co2":
        index, values = pd.to_datetime(dict(year=raw["year"], month=raw["month"], day=1)), raw["average"]
    elif name == "ausbeer":
        index, values = pd.to_datetime(raw["date"]), raw["Y"]
    elif name == "taylor":
        index, values = pd.date_range("2000-06-05", periods=len(raw), freq="30min"), raw["Y"]
    elif name == "us_gasoline":
        index, values = pd.to_datetime(raw["Week"], format="%m/%d/%Y"), raw["Gasoline"]
    else:
        index, values = pd.to_datetime(raw.iloc[:, 0]), raw.iloc[:, 1]
    series = pd.Series(values.to_numpy(dtype=np.float64), index=pd.DatetimeIndex(index)).sort_index()
    series = series[: CLASSIC[name].end].asfreq(pd.infer_freq(series.index[:60]))  # regular steps
    series = series.interpolate(limit=2)  # daily_min_temperatures lacks 1984-12-31 and 1988-12-31
    if series.isna().any():
        raise ValueError(f"{path} is not a regular, complete series")
    return series


# ---------------------------------------------------------------------- the split rule
@dataclass(frozen=True)
class Split:
    n: int  # training steps (validation included)
    h: int
    input_size: int
    val_size: int
    season: int | None  # the season used at this length (None: too long for the training part)

    @property
    def train_windows(self) -> int:
        return self.n - self.val_size - self.input_size - self.h + 1


def split_rule(n: int, h: int, season: int | None) -> Split:
    """Input and validation sizes at training length ``n`` (see the module docstring)."""
    m = season if season and n >= 2 * season else None
    v = max(math.ceil(1.5 * h), n // 10)
    g = m if m and m <= 48 else 8
    cap = (MAX_INPUT // g) * g
    L = min(cap, max(g, int((n - v) / 3 // g) * g))
    split = Split(n=n, h=h, input_size=L, val_size=v, season=m)
    if split.train_windows < 1:
        raise ValueError(f"n={n} steps leave no training window for h={h} (input {L}, validation {v})")
    return split


# ---------------------------------------------------------------------- statistical anchors
@dataclass(frozen=True)
class ArimaSpec:
    order: tuple[int, int, int]
    seasonal_order: tuple[int, int, int, int] = (0, 0, 0, 0)
    trend: str = "n"
    fourier: tuple[int, int] | None = None  # (period, K): K sine/cosine pairs as regressors

    def exog(self, n: int) -> np.ndarray | None:
        if not self.fourier:
            return None
        period, K = self.fourier
        t = np.arange(n)[:, None] * np.arange(1, K + 1)[None, :] * (2 * np.pi / period)  # (n, K)
        return np.concatenate([np.sin(t), np.cos(t)], axis=1)  # (n, 2K)

    def model(self, y: np.ndarray, *, simple_differencing: bool = False):
        from statsmodels.tsa.statespace.sarimax import SARIMAX

        return SARIMAX(y, exog=self.exog(len(y)), order=self.order, seasonal_order=self.seasonal_order,
                       trend=self.trend, simple_differencing=simple_differencing, concentrate_scale=True)

    def fit(self, y: np.ndarray):
        """Maximum likelihood on ``y`` (on the differenced series: the same parameters, a faster fit)."""
        with warnings.catch_warnings(action="ignore"):
            return self.model(y, simple_differencing=True).fit(disp=False, cov_type="none")

    def forecasts(self, params, y_all: np.ndarray, origins, h: int) -> np.ndarray:
        """Forecasts from ``origins`` of the model with ``params`` fixed, filtered over ``y_all``."""
        with warnings.catch_warnings(action="ignore"):
            return origin_forecasts(self.model(y_all).filter(np.asarray(params)), origins, h)

    def describe(self) -> dict:
        return dataclasses.asdict(self)


def origin_forecasts(results, origins, h: int) -> np.ndarray:
    """(len(origins), h) forecasts of a linear Gaussian state-space model filtered once over the
    whole series: from origin t, E[y_{t..t+h-1} | y_{<t}], from the predicted state at t and the
    system matrices (design and transition constant in time; intercepts may vary: regressors)."""
    fr = results.filter_results
    origins = np.asarray(origins)
    for name in ("design", "transition"):
        matrix = getattr(fr, name)
        if not np.allclose(matrix, matrix[..., :1]):
            raise ValueError(f"origin_forecasts needs a constant {name} matrix")
    if origins.max() + h > fr.nobs:
        raise ValueError("the last origin's targets run past the filtered series")
    Z, T = fr.design[0, :, 0], fr.transition[:, :, 0]  # (k,), (k, k)
    d = np.broadcast_to(fr.obs_intercept[0], (fr.nobs,))  # (nobs,) regressors' part, or a constant
    c = np.broadcast_to(fr.state_intercept, (len(Z), fr.nobs))  # (k, nobs)
    a = fr.predicted_state[:, origins]  # (k, n) state at each origin given y_<t
    out = np.empty((len(origins), h))
    for j in range(h):
        out[:, j] = Z @ a + d[origins + j]
        a = T @ a + c[:, origins + j]
    return out


def differencing(y: np.ndarray, m: int | None) -> tuple[int, int]:
    """(d, D) as auto.arima chooses them: D = 1 when STL's seasonal strength exceeds 0.64, then
    d = 1 when KPSS rejects level stationarity (5 %) of the (seasonally differenced) series."""
    from statsmodels.tsa.seasonal import STL
    from statsmodels.tsa.stattools import kpss

    with warnings.catch_warnings(action="ignore"):
        fit = STL(y, period=m).fit() if m else None
        D = int(bool(m) and 1 - np.var(fit.resid) / max(np.var(fit.resid + fit.seasonal), 1e-300) > 0.64)
        z = y[m:] - y[:-m] if D else y
        d = int(kpss(z, regression="c", nlags="auto")[1] < 0.05)
    return d, D


#: seasons up to this are seasonal ARIMA terms and ETS seasonal states estimated by concentrating
#: the initial states out; longer ones are Fourier regressors (ARIMA) and heuristic starts (ETS)
SHORT_SEASON = 24
FOURIER_K = (2, 4, 6)


def fourier_pairs(y: np.ndarray, m: int) -> int:
    """K in FOURIER_K of lowest AIC of the least-squares fit of y on a constant and K pairs of period m."""
    import statsmodels.api as sm

    aic = {K: sm.OLS(y, sm.add_constant(ArimaSpec((0, 0, 0), fourier=(m, K)).exog(len(y)))).fit().aic
           for K in FOURIER_K}
    return min(aic, key=aic.get)


def arima_grid(m: int | None, d: int, D: int, K: int = 0) -> list[ArimaSpec]:
    """(p, q) in {0,1,2}^2 with d and D given; a season m <= 24 adds (P, Q) in {(0,0), (1,0), (0,1)},
    a longer one K Fourier pairs of period m as regressors. A constant when d + D = 0."""
    trend, pq = ("c" if d + D == 0 else "n"), [(p, q) for p in range(3) for q in range(3)]
    if m and m <= SHORT_SEASON:
        return [ArimaSpec((p, d, q), (P, D, Q, m), trend) for p, q in pq for P, Q in ((0, 0), (1, 0), (0, 1))]
    return [ArimaSpec((p, d, q), trend=trend, fourier=(m, K) if m else None) for p, q in pq]


def fit_arima(y: np.ndarray, m: int | None):
    """The ARIMA of lowest AIC over ``arima_grid`` (d, D from ``differencing``; a season above 24
    is carried by ``fourier_pairs`` regressors, not differenced); returns (spec, params, record)."""
    long_season = bool(m and m > SHORT_SEASON)
    d, D = differencing(y, None if long_season else m)
    best, best_spec = None, None
    grid = arima_grid(m, d, D, fourier_pairs(y, m) if long_season else 0)
    for spec in grid:
        try:
            res = spec.fit(y)
        except (np.linalg.LinAlgError, ValueError):
            continue
        if np.isfinite(res.aic) and (best is None or res.aic < best.aic):
            best, best_spec = res, spec
    if best is None:
        raise RuntimeError("no ARIMA of the grid could be fitted")
    return best_spec, best.params, {**best_spec.describe(), "aic": round(float(best.aic), 3),
                                    "selection": f"lowest AIC of {len(grid)}", "params": _named(best)}


def _named(res) -> dict:
    return {str(k): round(float(v), 6) for k, v in zip(res.model.param_names, np.asarray(res.params))}


def ets_forms(m: int | None) -> list[tuple[bool, bool, int | None]]:
    """(trend, damped, season): none / additive / damped trend, each without and with the season."""
    seasons = [None, m] if m else [None]
    return [(t, dmp, s) for s in seasons for t, dmp in ((False, False), (True, False), (True, True))]


def fit_ets(y: np.ndarray, m: int | None):
    """Additive-error ETS (statsmodels' state-space ExponentialSmoothing) of lowest AIC over
    ``ets_forms``; returns the fit and its record."""
    from statsmodels.tsa.statespace.exponential_smoothing import ExponentialSmoothing

    init = "heuristic" if m and m > SHORT_SEASON else "concentrated"
    best = None
    with warnings.catch_warnings(action="ignore"):
        for trend, damped, season in ets_forms(m):
            res = ExponentialSmoothing(y, trend=trend, damped_trend=damped, seasonal=season,
                                       initialization_method=init).fit(disp=False)
            if np.isfinite(res.aic) and (best is None or res.aic < best.aic):
                best = res
    mod = best.model
    return best, {"trend": mod.trend, "damped_trend": mod.damped_trend, "seasonal": mod.seasonal_periods,
                  "initialization": init, "aic": round(float(best.aic), 3),
                  "selection": f"lowest AIC of {len(ets_forms(m))} forms", "params": _named(best)}


def ets_forecasts(res, y_all: np.ndarray, origins, h: int) -> np.ndarray:
    """Run a fitted ETS over ``y_all`` from its own initial states (known: no look at the test part)."""
    from statsmodels.tsa.statespace.exponential_smoothing import ExponentialSmoothing

    mod = res.model
    init = np.asarray(res.initial_state, dtype=float).ravel()  # level, trend, seasonal states
    kwargs = {"initial_level": init[0], "initial_trend": init[1] if mod.trend else None,
              "initial_seasonal": init[-mod.seasonal_periods:] if mod.seasonal else None}
    with warnings.catch_warnings(action="ignore"):
        full = ExponentialSmoothing(y_all, trend=mod.trend, damped_trend=mod.damped_trend,
                                    seasonal=mod.seasonal_periods, initialization_method="known", **kwargs)
        return origin_forecasts(full.filter(res.params), origins, h)


# ---------------------------------------------------------------------- cells
@dataclass
class Cell:
    """One dataset at one training length and data seed: raw values, training part then test part."""

    dataset: str
    y: np.ndarray  # (n + test,) raw values
    index: pd.DatetimeIndex  # (n + test,)
    split: Split
    simulated: bool

    @property
    def n(self) -> int:
        return self.split.n

    @property
    def z(self) -> np.ndarray:
        """The values scaled by the training part's mean and standard deviation."""
        train = self.y[: self.n]
        return (self.y - train.mean()) / train.std()

    def origins(self, part: str, h: int | None = None) -> np.ndarray:
        """First target position of every stride-1 window of the validation or test part."""
        h = self.split.h if h is None else h
        if part == "val":
            return np.arange(self.n - self.split.val_size, self.n - h + 1)
        return np.arange(self.n, len(self.y) - h + 1)


def make_cell(dataset: str, n: int, seed: int, folder: Path | None) -> Cell:
    if dataset in PROCESSES:
        process = PROCESSES[dataset]
        path = simulate(process, max(*LENGTHS, n) + SIM_TEST, seed)  # one path for the lengths of the grid
        y = path[len(path) - n - SIM_TEST:]  # the same test part at every length
        index = pd.date_range("2000-01-01", periods=len(y), freq="h")
        return Cell(dataset, y, index, split_rule(n, SIM_HORIZON, process.season), True)
    spec = CLASSIC[dataset]
    series = read_classic(dataset, folder).iloc[-(n + spec.test):]
    return Cell(dataset, series.to_numpy(), series.index, split_rule(n, spec.h, spec.season), False)


def score(yhat: np.ndarray, z: np.ndarray, origins: np.ndarray) -> tuple[float, float]:
    targets = z[origins[:, None] + np.arange(yhat.shape[1])[None, :]]  # (n, h)
    err = yhat - targets
    return float(np.square(err).mean()), float(np.abs(err).mean())


def run_statistical(name: str, cell: Cell) -> dict:
    """ETS, ARIMA or the true model (MLE) on the n scaled training steps, or the true parameters on
    the raw ones, filtered forward over the test part; errors on the scaled values."""
    n, s, z = cell.n, cell.split, cell.z
    origins = cell.origins("test")
    began = time.perf_counter()
    if name == "ETS":
        res, record = fit_ets(z[:n], s.season)
        seconds = time.perf_counter() - began
        yhat = ets_forecasts(res, z, origins, s.h)
    elif name == "TrueParams":
        spec, process = ArimaSpec(*PROCESSES[cell.dataset].orders(), "n"), PROCESSES[cell.dataset]
        record = {**spec.describe(), "fit": "none", "params": dict(zip(spec.model(z[:n]).param_names,
                                                                       process.true_params().tolist()))}
        seconds = time.perf_counter() - began
        y = cell.y
        yhat = (spec.forecasts(process.true_params(), y, origins, s.h) - y[:n].mean()) / y[:n].std()
    else:
        if name == "ARIMA":
            spec, params, record = fit_arima(z[:n], s.season)
        else:
            spec = ArimaSpec(*PROCESSES[cell.dataset].orders(), "c")
            res = spec.fit(z[:n])
            params, record = res.params, {**spec.describe(), "fit": "maximum likelihood", "params": _named(res)}
        seconds = time.perf_counter() - began
        yhat = spec.forecasts(params, z, origins, s.h)
    return {"params": {**record, "fitted_on": "the n training steps, scaled", "test": "filtered forward, no refit"},
            "val_mse": None, "test": score(yhat, z, origins), "seconds": seconds, "best_epoch": None,
            "input_size": "", "val_size": ""}
