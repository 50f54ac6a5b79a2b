"""Data, metrics and statistical references of the M4 benchmark (``m4.py``).

The files are the competition's release (``<data dir>/m4/{Hourly,Weekly}-{train,test}.csv``): one
row per series, ``V1`` the id, the values in ``V2..`` padded on the right with NaN. They carry no
dates, so time is the integer position inside each series (``ds`` = 0, 1, ...; ``freq=1``).

Conventions of the competition's guide (Makridakis et al. 2020, IJF, and its benchmark code,
github.com/Mcompetitions/M4-methods):

- horizon h = 48 (Hourly), 13 (Weekly); season m = 24 (Hourly), 1 (Weekly: M4 treats weekly data
  as non-seasonal in MASE and in its benchmarks);
- sMAPE = 200/h sum |y - yhat| / (|y| + |yhat|) and MASE = MAE / in-sample MAE of the lag-m naive,
  both per series, then averaged over series (``tsrsa.metrics.smape`` and ``mase`` are exactly these
  per-series definitions and are reused);
- Naive2: the naive forecast of the seasonally adjusted series, re-seasonalised. A series is
  seasonal when |r_m| > 1.645 sqrt((1 + 2 sum_{k<m} r_k^2) / n) (a 90% autocorrelation test at lag
  m, needing n >= 3m); then classical multiplicative decomposition (R's ``decompose``) gives the
  seasonal indices;
- OWA = (sMAPE / sMAPE_Naive2 + MASE / MASE_Naive2) / 2 over the whole set.
"""
from __future__ import annotations

import json
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tsrsa.metrics import mase, smape

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Frequency:
    name: str
    h: int  # forecast horizon (the competition's)
    m: int  # season of MASE and Naive2 (the competition's)
    input_size: int  # input window of the neural models
    period: int  # the series' natural cycle in steps, for reference (24 hours, 52 weeks)


#: input 168 = 7 days of hours; 52 = one year of weeks (every Weekly series has >= 67 values before
#: the validation horizon, so every series can be forecast from a full window)
FREQUENCIES = {
    "Hourly": Frequency("Hourly", h=48, m=24, input_size=168, period=24),
    "Weekly": Frequency("Weekly", h=13, m=1, input_size=52, period=52),
}

#: the competition's winner (Smyl's ES-RNN), per frequency, as published (M4 paper, Makridakis et al.
#: 2020, IJF): sMAPE, MASE, OWA. Only the Hourly figures are quoted here.
WINNER = {"Hourly": {"smape": 9.328, "mase": 0.893, "owa": 0.440}}


def data_dir(explicit=None) -> Path:
    """``--data-dir``, else ``TSRSA_DATA_DIR``, else ``../shared/datasets`` beside the checkout."""
    if explicit:
        return Path(explicit)
    if os.environ.get("TSRSA_DATA_DIR"):
        return Path(os.environ["TSRSA_DATA_DIR"])
    return HERE.parents[1] / "shared" / "datasets"


def read_wide(path) -> dict[str, np.ndarray]:
    """``{id: values}`` from an M4 file (trailing NaN padding dropped; a NaN inside is an error)."""
    frame = pd.read_csv(path)
    ids = frame.iloc[:, 0].astype(str).to_numpy()
    values = frame.iloc[:, 1:].to_numpy(dtype=np.float64)
    out = {}
    for sid, row in zip(ids, values):
        n = int(np.flatnonzero(~np.isnan(row))[-1]) + 1 if (~np.isnan(row)).any() else 0
        if n == 0 or np.isnan(row[:n]).any():
            raise ValueError(f"{path}: series {sid} is empty or has a missing value inside it")
        out[sid] = row[:n]
    return out


def long_frame(series: dict[str, np.ndarray], start=None) -> pd.DataFrame:
    """Long frame (unique_id, ds, y) with integer time; ``start[id]`` is each series' first ds."""
    ids, ds, ys = [], [], []
    for sid, y in series.items():
        s = 0 if start is None else int(start[sid])
        ids.append(np.full(len(y), sid, dtype=object))
        ds.append(np.arange(s, s + len(y), dtype=np.int64))
        ys.append(y)
    return pd.DataFrame({"unique_id": np.concatenate(ids), "ds": np.concatenate(ds), "y": np.concatenate(ys)})


@dataclass
class Split:
    """Histories and the horizon after them: the official test, or the last h of each history."""
    frequency: Frequency
    history: dict[str, np.ndarray]
    future: dict[str, np.ndarray]

    @property
    def ids(self) -> list[str]:
        return list(self.history)

    def frame(self) -> pd.DataFrame:
        return long_frame(self.history)

    def actuals(self) -> np.ndarray:
        return np.stack([self.future[sid] for sid in self.ids])  # (S, h)


def load_split(name: str, split: str, folder=None) -> Split:
    """``split`` "test": the full training series and the official test; "validation": each training
    series without its last h values, and those values."""
    freq = FREQUENCIES[name]
    folder = data_dir(folder) / "m4"
    train = read_wide(folder / f"{name}-train.csv")
    if split == "validation":
        return Split(freq, {k: v[: -freq.h] for k, v in train.items()}, {k: v[-freq.h:] for k, v in train.items()})
    if split != "test":
        raise ValueError(f"split={split!r}: 'validation' or 'test'")
    test = read_wide(folder / f"{name}-test.csv")
    if list(test) != list(train) or any(len(v) != freq.h for v in test.values()):
        raise ValueError(f"{folder}: {name}-test.csv does not hold h={freq.h} values for each training series")
    return Split(freq, train, test)


def available(folder=None) -> bool:
    folder = data_dir(folder) / "m4"
    return all((folder / f"{n}-{s}.csv").exists() for n in FREQUENCIES for s in ("train", "test"))


# ---------------------------------------------------------------------- metrics
def scores(split: Split, forecasts: np.ndarray) -> dict[str, float]:
    """Mean sMAPE and MASE over the series of ``split`` for forecasts (S, h) in its id order."""
    forecasts = np.asarray(forecasts, dtype=np.float64)
    y = split.actuals()
    if forecasts.shape != y.shape or not np.isfinite(forecasts).all():
        raise ValueError(f"forecasts have shape {forecasts.shape} (finite: {np.isfinite(forecasts).all()}); "
                         f"expected finite values of shape {y.shape}")
    m = split.frequency.m
    s = [smape(y[i], forecasts[i]) for i in range(len(y))]
    q = [mase(y[i], forecasts[i], split.history[sid], m) for i, sid in enumerate(split.ids)]
    return {"smape": float(np.mean(s)), "mase": float(np.mean(q))}


def owa(score: dict, naive2: dict) -> float:
    """Overall weighted average relative to Naive2's scores on the same set."""
    return 0.5 * (score["smape"] / naive2["smape"] + score["mase"] / naive2["mase"])


# ---------------------------------------------------------------------- Naive2 and its season test
def acf(y: np.ndarray, nlags: int) -> np.ndarray:
    """Autocorrelations r_1..r_nlags as R's ``acf`` computes them (mean removed, denominator n)."""
    x = np.asarray(y, dtype=np.float64) - np.mean(y)
    denom = np.dot(x, x)
    return np.array([np.dot(x[: len(x) - k], x[k:]) / denom for k in range(1, nlags + 1)])


def is_seasonal(y: np.ndarray, m: int) -> bool:
    """M4's 90% test: |r_m| above 1.645 / sqrt(n) * sqrt(1 + 2 sum_{k<m} r_k^2); needs n >= 3m."""
    n = len(y)
    if m <= 1 or n < 3 * m:
        return False
    r = acf(y, m)
    limit = 1.645 / np.sqrt(n) * np.sqrt(1.0 + 2.0 * np.sum(r[: m - 1] ** 2))
    return bool(abs(r[m - 1]) > limit)


def seasonal_indices(y: np.ndarray, m: int) -> np.ndarray:
    """Multiplicative seasonal indices (m,) of R's ``decompose``: index j belongs to positions t with
    t mod m == j (t counted from the series' start); they average to 1."""
    y = np.asarray(y, dtype=np.float64)
    weights = np.r_[0.5, np.ones(m - 1), 0.5] / m if m % 2 == 0 else np.ones(m) / m
    half = len(weights) // 2
    trend = np.full(len(y), np.nan)
    trend[half: len(y) - half] = np.convolve(y, weights, mode="valid")  # centred moving average
    ratio = y / trend
    figure = np.array([np.nanmean(ratio[j::m]) for j in range(m)])
    return figure / figure.mean()


def deseasonalise(y: np.ndarray, m: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    """(the seasonally adjusted history, the indices of the h steps after it); indices of 1 when
    the series is not seasonal by :func:`is_seasonal`."""
    n = len(y)
    if not is_seasonal(y, m):
        return np.asarray(y, dtype=np.float64), np.ones(h)
    figure = seasonal_indices(y, m)
    return y / figure[np.arange(n) % m], figure[np.arange(n, n + h) % m]


def naive2(y: np.ndarray, m: int, h: int) -> np.ndarray:
    """The competition's Naive2: last seasonally adjusted value, re-seasonalised."""
    adjusted, future_index = deseasonalise(y, m, h)
    return adjusted[-1] * future_index


# ---------------------------------------------------------------------- statsmodels, per series
def theta(y: np.ndarray, m: int, h: int) -> tuple[np.ndarray, dict]:
    """statsmodels' ThetaModel (SES with drift, theta = 2) on the series seasonally adjusted as
    for Naive2, re-seasonalised: the competition's Theta benchmark."""
    from statsmodels.tsa.forecasting.theta import ThetaModel

    adjusted, future_index = deseasonalise(y, m, h)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ThetaModel(adjusted, period=1, deseasonalize=False).fit()
        fc = np.asarray(res.forecast(h, theta=2.0))
    return fc * future_index, {"seasonal": bool(future_index.std() > 0), "theta": 2.0}


#: ETS forms (error, trend, damped, season) among which AIC chooses: with a season of m steps for
#: a series seasonal by :func:`is_seasonal`, without one otherwise
ETS_FORMS = (("add", None, False), ("add", "add", True), ("mul", None, False), ("mul", "add", True))
ETS_SEASONAL_FORMS = tuple(form + (season,) for form, season in zip(ETS_FORMS, ("add", "add", "mul", "mul")))


def _best_ets(y: np.ndarray, forms, h: int, **options) -> tuple[np.ndarray | None, tuple | None]:
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    best, best_form = None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for form in forms:
            error, trend, damped, season = (form + (None,))[:4]
            try:
                res = ETSModel(y, error=error, trend=trend, damped_trend=damped, seasonal=season,
                               **(options if season else {})).fit(disp=False)
            except Exception:  # noqa: BLE001 - a form that does not fit is skipped
                continue
            if np.isfinite(res.aic) and (best is None or res.aic < best.aic):
                best, best_form = res, form
        fc = np.asarray(best.forecast(h)) if best is not None else None
    if fc is None or not np.isfinite(fc).all():
        return None, None
    return fc, best_form


def ets(y: np.ndarray, m: int, h: int) -> tuple[np.ndarray, dict]:
    """statsmodels' ETSModel, the form of smallest AIC: among :data:`ETS_SEASONAL_FORMS` (season m,
    initial states by statsmodels' heuristic, which keeps 24 seasonal states out of the
    optimiser) for a seasonal series, among :data:`ETS_FORMS` otherwise. The naive forecast where
    no form fits."""
    if is_seasonal(y, m):
        fc, form = _best_ets(y, ETS_SEASONAL_FORMS, h, seasonal_periods=m, initialization_method="heuristic")
    else:
        fc, form = _best_ets(y, ETS_FORMS, h)
    if fc is None:
        return np.full(h, y[-1]), {"form": "naive (no form fitted)"}
    return fc, {"form": ",".join(str(part) for part in form)}


def ets_adjusted(y: np.ndarray, m: int, h: int) -> tuple[np.ndarray, dict]:
    """Non-seasonal ETS (:data:`ETS_FORMS`, AIC) on the series seasonally adjusted as for Naive2,
    re-seasonalised: the way M4's SES, Holt and Damped benchmarks treat seasonality."""
    adjusted, future_index = deseasonalise(y, m, h)
    fc, form = _best_ets(adjusted, ETS_FORMS, h)
    if fc is None:
        return adjusted[-1] * future_index, {"seasonal": bool(future_index.std() > 0), "form": "naive"}
    return fc * future_index, {"seasonal": bool(future_index.std() > 0), "form": ",".join(str(p) for p in form)}


# ---------------------------------------------------------------------- one run of a per-series method
def run_statistical(split, name: str) -> tuple:
    """(forecasts (S, h), params, fit seconds, predict seconds) of a per-series method on ``split``."""
    from tsrsa import SeasonalNaiveForecaster

    f = split.frequency
    if name == "SeasonalNaive":
        model = SeasonalNaiveForecaster(h=f.h, season_length=f.m, freq=1)
        began = time.perf_counter()
        model.fit(split.frame())
        fitted = time.perf_counter()
        by_id = model.predict().sort_values(["unique_id", "ds"]).groupby("unique_id")["yhat"]
        fc = np.stack([by_id.get_group(s).to_numpy() for s in split.ids])
        return fc, model.get_params(), fitted - began, time.perf_counter() - fitted
    began = time.perf_counter()
    if name == "Naive2":
        fc = np.stack([naive2(split.history[s], f.m, f.h) for s in split.ids])
        params = {"m": f.m, "season_test": "M4 90% acf test at lag m", "decomposition": "classical multiplicative"}
    else:
        method = {"Theta": theta, "ETS": ets, "ETS-adjusted": ets_adjusted}[name]
        out = [method(split.history[s], f.m, f.h) for s in split.ids]
        fc = np.stack([o[0] for o in out])
        chosen: dict = {}
        for _, info in out:
            key = json.dumps(info, sort_keys=True)
            chosen[key] = chosen.get(key, 0) + 1
        params = {"m": f.m, "per_series": chosen}
        if name in ("Theta", "ETS-adjusted"):
            params["deseasonalised"] = "as for Naive2 where seasonal"
        if name.startswith("ETS"):
            params.update(forms=[list(x) for x in ETS_FORMS], selection="AIC")
        if name == "ETS":
            params.update(seasonal_forms=[list(x) for x in ETS_SEASONAL_FORMS],
                          seasonal_initialization="heuristic")
    return fc, params, time.perf_counter() - began, 0.0
