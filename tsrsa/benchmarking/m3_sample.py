"""One model per series on a stratified sample of M3's monthly and quarterly series.

The sample (:func:`draw_sample`, committed as ``benchmarks/configs/m3_sample.csv``): 200 monthly and 100
quarterly series drawn with ``numpy.random.default_rng(SAMPLE_SEED)`` from the series whose training
part holds two horizons and two more values (:func:`eligible`), each subset's share spread over its
categories in proportion to their sizes (largest remainders, at least one each). The list is ordered
so that every prefix is itself close to stratified: the j-th of a stratum's k series sits at
(j + 0.5) / k, and the strata are interleaved by that position, so each takes its turns in
proportion to its size.

Origins of a series of ``n`` values, horizon ``h`` (M3's: 18 monthly, 8 quarterly; the last ``h``
values are the competition's test part and the training part is the ``n - h`` before):

- ``val1``: fit on the training part without its last ``h`` values, forecast those ``h``;
- ``val2``: fit on the training part without its last ``2 h`` values, forecast the ``h`` before val1's;
- ``test``: fit on the whole training part, forecast the test part. Reported beside the validation
  origins; no choice reads it.

Each (variant, model, series, origin, seed) is one fit of a fresh estimator on that fit part, given as
a ``pd.Series`` with monthly ("MS") or quarterly ("QS-OCT") dates and the series id as its name. Scores
(:func:`mase`, :func:`smape`): MASE over the in-sample seasonal-naive MAE of the fit part (season 12
monthly, 4 quarterly; lag 1 when the fit part holds no more than a season) and M3's sMAPE, 200·|y − ŷ| /
(|y| + |ŷ|) averaged over the horizon. A model that refuses a fit part (too short for its defaults)
leaves a row with empty scores and its message in ``error``.

This module imports only numpy, pandas, tsrsa's public forecasters and :mod:`tsrsa.benchmarking.compat`
(the standard library only; beside an earlier release, the file of this checkout), so that it runs
against an earlier release of the package too (``benchmarks/m3_defaults.py`` loads it from the checkout
then).
"""
from __future__ import annotations

import csv
import datetime as dt
import json
import math
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

SAMPLE_SEED = 20240503
SAMPLE_SIZES = {"monthly": 200, "quarterly": 100}
HORIZON = {"monthly": 18, "quarterly": 8}
SEASON = {"monthly": 12, "quarterly": 4}
FREQ = {"monthly": "MS", "quarterly": "QS-OCT"}
ORIGINS = ("val1", "val2", "test")
VALIDATION = ("val1", "val2")
SAMPLE_COLUMNS = ("unique_id", "subset", "category", "n", "horizon")

#: benchmark name -> tsrsa estimator class name
MODELS = {"RSA": "RSAForecaster", "Transformer": "TransformerForecaster", "LSTM": "LSTMForecaster",
          "DLinear": "DLinearForecaster", "ETS": "ETSForecaster", "ARIMA": "ARIMAForecaster",
          "Theta": "ThetaForecaster", "SeasonalNaive": "SeasonalNaiveForecaster"}
#: the models told the season (``season_length``): those without a network
SEASONAL = ("ETS", "ARIMA", "Theta", "SeasonalNaive")
ROW_COLUMNS = ("date", "tsrsa_version", "tsrsa_commit", "variant", "params", "model", "unique_id", "subset",
               "category", "origin", "seed", "fit_length", "horizon", "mase", "smape", "fit_seconds",
               "predict_seconds", "error")


# ---------------------------------------------------------------------- data and the sample
def read_info(folder) -> pd.DataFrame:
    """``M3-info.csv`` of the folder holding the M3 files: unique_id, subset, n, horizon, category."""
    return pd.read_csv(Path(folder) / "M3-info.csv", dtype={"unique_id": str})


def eligible(info: pd.DataFrame) -> pd.DataFrame:
    """The monthly and quarterly series whose val2 fit part holds at least two values (n ≥ 3 h + 2)."""
    mine = info[info["subset"].isin(list(SAMPLE_SIZES))]
    return mine[mine["n"] >= 3 * mine["horizon"] + 2]


def allocate(sizes: pd.Series, total: int) -> dict:
    """{stratum: count} summing to ``total``, proportional to ``sizes`` (largest remainders), each ≥ 1."""
    if total < len(sizes):
        raise ValueError(f"{total} series cannot cover {len(sizes)} strata")
    exact = sizes / sizes.sum() * total
    counts = np.maximum(np.floor(exact).astype(int), 1)
    order = (exact - np.floor(exact)).sort_values(ascending=False, kind="stable").index
    i = 0
    while counts.sum() < total:
        counts[order[i % len(order)]] += 1
        i += 1
    while counts.sum() > total:  # the floor of one raised a stratum above its share
        over = (counts - exact).sort_values(ascending=False, kind="stable").index
        counts[next(k for k in over if counts[k] > 1)] -= 1
    return {k: int(min(counts[k], sizes[k])) for k in sizes.index}


def draw_sample(info: pd.DataFrame, seed: int = SAMPLE_SEED, sizes: dict | None = None) -> pd.DataFrame:
    """The stratified, prefix-stratified sample (see the module docstring): SAMPLE_COLUMNS, in its order."""
    rng = np.random.default_rng(seed)
    pool = eligible(info)
    picked = []
    for subset, total in (sizes or SAMPLE_SIZES).items():
        part = pool[pool["subset"] == subset]
        counts = allocate(part.groupby("category").size(), total)
        for category, k in sorted(counts.items()):
            ids = part.loc[part["category"] == category, "unique_id"].to_numpy()
            chosen = rng.choice(ids, size=k, replace=False)  # in a random order
            rows = part.set_index("unique_id").loc[chosen].reset_index()
            rows["position"] = (np.arange(k) + 0.5) / k
            rows["stratum"] = f"{subset}/{category}"
            picked.append(rows)
    frame = pd.concat(picked, ignore_index=True).sort_values(["position", "stratum"], kind="stable")
    return frame.loc[:, list(SAMPLE_COLUMNS)].reset_index(drop=True)


def read_sample(path) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"unique_id": str})


def read_series(folder, sample: pd.DataFrame) -> dict:
    """{unique_id: pd.Series of the whole series (test part included), dated, named by its id}."""
    out = {}
    for subset in sorted(set(sample["subset"])):
        frame = pd.read_csv(Path(folder) / f"M3-{subset}.csv", dtype={"unique_id": str}, parse_dates=["ds"])
        frame = frame[frame["unique_id"].isin(set(sample["unique_id"]))]
        for sid, group in frame.groupby("unique_id", sort=False):
            index = pd.DatetimeIndex(group["ds"].to_numpy(), freq=FREQ[subset])
            out[sid] = pd.Series(group["y"].to_numpy(dtype=np.float64), index=index, name=sid)
    missing = set(sample["unique_id"]) - set(out)
    if missing:
        raise ValueError(f"the M3 files in {folder} lack the series {sorted(missing)[:5]}")
    return out


# ---------------------------------------------------------------------- scores
def mase(actual, forecast, fitted, season: int) -> float:
    """MAE over the in-sample seasonal-naive MAE of ``fitted`` (lag 1 when it holds no more than a season)."""
    fitted = np.asarray(fitted, dtype=np.float64)
    m = season if len(fitted) > season else 1
    scale = float(np.mean(np.abs(fitted[m:] - fitted[:-m]))) if len(fitted) > m else math.nan
    if not scale > 0:
        return math.nan
    return float(np.mean(np.abs(np.asarray(actual) - np.asarray(forecast)))) / scale


def smape(actual, forecast) -> float:
    """M3's sMAPE in percent: the mean of 200·|y − ŷ| / (|y| + |ŷ|) (0 where both are 0)."""
    a, f = np.asarray(actual, dtype=np.float64), np.asarray(forecast, dtype=np.float64)
    denom = np.abs(a) + np.abs(f)
    return float(np.mean(np.divide(200.0 * np.abs(a - f), denom, out=np.zeros_like(denom), where=denom > 0)))


# ---------------------------------------------------------------------- one fit
@dataclass(frozen=True)
class Origin:
    name: str
    fit: pd.Series  # the values the model sees
    target: np.ndarray  # (h,) the values it forecasts


def origin(series: pd.Series, h: int, name: str) -> Origin:
    """The fit part and the targets of one origin (``ORIGINS``) of a whole series (test part included)."""
    train_end = len(series) - h
    end = {"test": train_end, "val1": train_end - h, "val2": train_end - 2 * h}[name]
    return Origin(name, series.iloc[:end], series.to_numpy()[end:end + h])


def build(model: str, h: int, subset: str, seed: int | None, params: dict):
    """A fresh estimator: ``h``, the season for SEASONAL models, ``random_state`` and ``num_threads=1`` for
    the networks (the trainer's option, in ``trainer`` from tsrsa 0.15 on), ``params`` over them. Returns
    (estimator, what was passed: the trainer's options by their own names, as the rows record them)."""
    import tsrsa.forecasters as forecasters

    cls = getattr(forecasters, MODELS[model])
    passed = {"h": h}
    if model in SEASONAL:
        passed["season_length"] = SEASON[subset]
    else:
        passed.update(random_state=seed, num_threads=1)
    passed.update(params)
    return cls(**compat().trainer_kwargs(cls, passed)), passed


def compat():
    """:mod:`tsrsa.benchmarking.compat` of the package imported, else the file beside this one (a release
    before 0.15 imported, this module loaded from the checkout by path)."""
    try:
        from tsrsa.benchmarking import compat as module
    except ImportError:
        import importlib.util
        import sys

        name = "m3_harness_compat"
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("compat.py"))
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules[name] = module
        module = sys.modules[name]
    return module


def accepted(model: str, params: dict) -> dict:
    """The part of ``params`` that the model's constructor takes (the options of its groups by their own
    names too: a trainer's ``num_threads``, where it takes them in ``trainer``)."""
    import inspect

    import tsrsa.forecasters as forecasters

    names = set(inspect.signature(getattr(forecasters, MODELS[model]).__init__).parameters)
    moved = getattr(compat(), "MOVED", {name: ("trainer", name) for name in compat().TRAINER_OPTIONS})
    names |= {old for old, (group, _) in moved.items() if group in names}
    return {k: v for k, v in params.items() if k in names}


def decimals(value: float, places: int) -> float:
    """``value`` written with ``places`` decimals, as the rows keep it."""
    return float(f"{value:.{places}f}")


def run_one(model: str, series: pd.Series, info: dict, origin_name: str, seed: int | None, params: dict) -> dict:
    """Fit one model on one origin's fit part and score its forecast; the row's measured columns."""
    h, subset = int(info["horizon"]), info["subset"]
    part = origin(series, h, origin_name)
    estimator, passed = build(model, h, subset, seed, accepted(model, params))
    row = {"params": json.dumps(passed, sort_keys=True, default=str), "fit_length": len(part.fit), "horizon": h,
           "mase": "", "smape": "", "fit_seconds": "", "predict_seconds": "", "error": ""}
    try:
        began = time.perf_counter()
        estimator.fit(part.fit)
        row["fit_seconds"] = decimals(time.perf_counter() - began, 3)
        began = time.perf_counter()
        yhat = estimator.predict()["yhat"].to_numpy(dtype=np.float64)
        row["predict_seconds"] = decimals(time.perf_counter() - began, 3)
    except Exception as error:  # noqa: BLE001 - a refusal or a failed fit is a result; the run goes on
        row["error"] = f"{type(error).__name__}: {error}"[:500]
        return row
    score = mase(part.target, yhat, part.fit.to_numpy(), SEASON[subset])
    row["mase"] = "" if math.isnan(score) else decimals(score, 6)
    row["smape"] = decimals(smape(part.target, yhat), 6)
    return row


# ---------------------------------------------------------------------- runs and rows
def package_identity() -> tuple[str, str]:
    """(version, commit) of the tsrsa package imported: the commit of the checkout that holds it,
    with "+dirty" when its ``tsrsa/`` has uncommitted changes; outside git ``TSRSA_COMMIT`` (a copy's
    commit, named by whoever made it), else "unknown"."""
    import tsrsa._version as version

    folder = Path(version.__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(folder), "rev-parse", "--short=7", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(folder), "status", "--porcelain", "--", "tsrsa"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return version.__version__, os.environ.get("TSRSA_COMMIT", "unknown")
    return version.__version__, commit + ("+dirty" if dirty else "")


def row_key(row: dict) -> tuple:
    return (str(row["variant"]), str(row["model"]), str(row["unique_id"]), str(row["origin"]), str(row["seed"]))


def done_keys(path) -> set:
    path = Path(path)
    if not path.exists():
        return set()
    with open(path, newline="") as fh:
        return {row_key(r) for r in csv.DictReader(fh)}


def append_row(path, row: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists() or path.stat().st_size == 0
    with open(path, "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=ROW_COLUMNS)
        if new:
            writer.writeheader()
        writer.writerow({k: row.get(k, "") for k in ROW_COLUMNS})
        fh.flush()
        os.fsync(fh.fileno())


def run(sample: pd.DataFrame, series: dict, models, origins, seeds, variant: str, params: dict, output,
        log=print) -> int:
    """Every (series, origin, model, seed) not yet in ``output``, series by series in the sample's order,
    appending each row as it finishes. Seeds apply to the networks; the other models run once (seed "").
    Returns the number of rows written."""
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise ValueError(f"unknown models {unknown}; choose from {', '.join(MODELS)}")
    bad = [o for o in origins if o not in ORIGINS]
    if bad:
        raise ValueError(f"unknown origins {bad}; choose from {', '.join(ORIGINS)}")
    unused = set(params) - {k for m in models for k in accepted(m, params)}
    if unused:
        raise ValueError(f"no model among {list(models)} takes the parameters {sorted(unused)}")
    version, commit = package_identity()
    done, written = done_keys(output), 0
    for info in sample.to_dict("records"):
        for origin_name in origins:
            for model in models:
                for seed in (seeds if model not in SEASONAL else [None]):
                    key = {"variant": variant, "model": model, "unique_id": info["unique_id"],
                           "origin": origin_name, "seed": "" if seed is None else seed}
                    if row_key(key) in done:
                        continue
                    measured = run_one(model, series[info["unique_id"]], info, origin_name, seed, params)
                    row = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                           "tsrsa_version": version, "tsrsa_commit": commit, **key,
                           "subset": info["subset"], "category": info["category"], **measured}
                    append_row(output, row)
                    written += 1
                    log(f"{variant} {model} {info['unique_id']} {origin_name} seed={key['seed']}: "
                        f"MASE {row['mase'] or '-'} fit {row['fit_seconds'] or '-'} s {row['error'][:80]}")
    return written
