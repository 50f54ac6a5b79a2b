"""The statistical forecasters on M3 (monthly and quarterly by default), scored as the competition scored them.

    python benchmarks/m3_statistical.py --subsets quarterly
    python benchmarks/m3_statistical.py --subsets monthly --every 2 --models ETS,ETS-additive,ARIMA
    python benchmarks/m3_statistical.py --table            # the table of results/m3_statistical.csv
    python benchmarks/m3_statistical.py --models sf-Theta,sf-AutoETS,sf-AutoARIMA --sf-python /work/sf-venv/bin/python
    python benchmarks/m3_statistical.py --subsets yearly --models ETS,sf-AutoETS --origin validation --sf-python ...

Protocol. M3 monthly (1,428 series, h 18, season 12) and quarterly (756 series, h 8, season 4), and with
``--subsets yearly,other`` the yearly (645, h 6) and other (174, h 8) series without a season, from
``$TSRSA_DATA_DIR/m3`` (default ``../shared/datasets/m3``): the last h values of each series are the
test part, as the competition scored them, and the values before are the training part, the only
part a model sees. Each model is one estimator fitted on the panel of training parts (integer time,
``season_length`` the subset's season), its forecasts scored against the test parts:

- sMAPE by M3's formula, 200·|y − ŷ| / (|y| + |ŷ|), averaged over the horizons of a series, then over
  the series (Makridakis and Hibon 2000);
- MASE: the mean absolute error over the in-sample mean absolute seasonal difference (lag m; lag 1
  where a training part holds no more than m values), averaged over the series.

Models (the library's, at their defaults unless named): ``ETS`` (``ETSForecaster``: the 15 admissible
forms by AICc), ``ETS-additive`` (``error="add", criterion="aic"``: the six additive forms by AIC, the
default before 0.16), ``Theta`` (``ThetaForecaster``: the M3 method), ``ARIMA`` (``ARIMAForecaster``)
and ``SeasonalNaive``; their references, statsforecast's ``sf-AutoETS``, ``sf-AutoARIMA`` and ``sf-Theta``
(its ``Theta``: the standard theta model of Fiorucci et al. 2016, the M3 method), each at its defaults with the
season, run in their own environment (``--sf-python``; ``m3_statsforecast.py``) and are scored the same way.
``--origin validation`` scores the same way on the block before the test: each training part without its
last h values is fitted and those h values are scored (series left with fewer than 10 values, ThetaForecaster's
minimum without a season, are dropped there: 192 yearly and 52 quarterly ones). A difference between two models
that holds on the test but not on this block is the test block's, not a method's.
``--level`` also scores the models' own prediction intervals (ETS, ARIMA, Theta; ``predict(level=[80, 95])``):
the share of test values inside each, and the 95 % interval's MSIS (the M4 competition's mean scaled interval
score: width plus 2/alpha times each miss, over MASE's in-sample scale).
``--every k`` keeps every k-th series of a subset (in the file's order, the
first included): a deterministic subset where the whole one does not fit the time at hand.

Rows go to ``results/m3_statistical.csv`` as each (model, subset) ends: one row with the scores, the
fit seconds (the wall time of ``fit`` on the panel, with ``n_jobs`` processes), the parameters, the origin, the
date and the library's version and commit; each series' scores go to
``results/m3_statistical_series.csv``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from tsrsa.benchmarking.m3_sample import package_identity
from tsrsa.benchmarking.results import append_rows

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "results" / "m3_statistical.csv"
SERIES_OUTPUT = HERE / "results" / "m3_statistical_series.csv"
HORIZON = {"monthly": 18, "quarterly": 8, "yearly": 6, "other": 8}
SEASON = {"monthly": 12, "quarterly": 4, "yearly": 1, "other": 1}
MODELS = ("SeasonalNaive", "Theta", "ETS", "ETS-additive", "ARIMA")
COLUMNS = ("date", "tsrsa_version", "tsrsa_commit", "subset", "model", "series", "every", "horizon", "season",
           "smape", "mase", "fit_seconds", "n_jobs", "failed", "params", "origin", "coverage_80", "coverage_95",
           "msis_95")
SERIES_COLUMNS = ("subset", "model", "unique_id", "smape", "mase", "origin")
#: the interval levels ``--level`` scores (the models' own intervals: ETS, ARIMA, Theta)
LEVELS = (80, 95)
#: where a model is scored: M3's test, or the validation block before it (rows written before 0.19.3 are "test")
ORIGINS = ("test", "validation")
#: the fewest values a training part keeps at the validation origin (ThetaForecaster's minimum without a season);
#: shorter series are left out there
VALIDATION_MIN = 10

#: published sMAPE (M3's formula) of the competition's Theta on M3, horizons 1-18 (monthly) and 1-8
#: (quarterly): {method: (monthly, quarterly, source)}
ANCHORS = {
    "Theta": (13.85, 8.96, "Makridakis & Hibon (2000), The M3-Competition: results, conclusions and implications, "
                           "IJF 16(4) 451-476, average sMAPE tables by frequency; the monthly 13.85 is recalculated "
                           "as 13.94 from the submitted forecasts by Autobox's note on the M3 monthly figures, and "
                           "Hyndman's Mcomp vignette finds recalculations of the published figures slightly lower "
                           "(all 3,003 series: 13.01 published, 12.76 recalculated)"),
}


def data_folder() -> Path:
    return Path(os.environ.get("TSRSA_DATA_DIR", HERE.parents[1] / "shared" / "datasets")) / "m3"


def read_subset(subset: str, every: int, origin: str = "test") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, test) long frames of every ``every``-th series of the subset, integer time 0.. per series; at
    ``origin="validation"`` the last h values of each training part are the "test" and the values before them
    the training part, for the series where at least :data:`VALIDATION_MIN` values remain."""
    if origin not in ORIGINS:
        raise ValueError(f"origin={origin!r}: choose among {ORIGINS}")
    frame = pd.read_csv(data_folder() / f"M3-{subset}.csv", dtype={"unique_id": str})
    ids = frame["unique_id"].drop_duplicates().to_numpy()[::every]
    frame = frame[frame["unique_id"].isin(ids)].copy()
    frame["ds"] = frame.groupby("unique_id", sort=False).cumcount()
    h, n = HORIZON[subset], frame.groupby("unique_id", sort=False)["ds"].transform("size")
    if origin == "validation":  # M3's test left out, the training part's last h values held out in its place
        keep = (frame["ds"] < n - h) & (n - 2 * h >= VALIDATION_MIN)
        frame, n = frame[keep], n[keep] - h
    test = frame["ds"] >= n - h
    return frame[~test].reset_index(drop=True), frame[test].reset_index(drop=True)


def estimator(model: str, h: int, m: int, n_jobs: int):
    import tsrsa

    common = {"h": h, "season_length": m, "freq": 1}
    if model == "SeasonalNaive":
        return tsrsa.SeasonalNaiveForecaster(**common)
    if model == "Theta":
        return tsrsa.ThetaForecaster(**common, n_jobs=n_jobs)
    if model == "ETS":
        return tsrsa.ETSForecaster(**common, n_jobs=n_jobs)
    if model == "ETS-additive":
        return tsrsa.ETSForecaster(**common, error="add", criterion="aic", n_jobs=n_jobs)
    if model == "ARIMA":
        return tsrsa.ARIMAForecaster(**common, n_jobs=n_jobs)
    if model.startswith("sf-"):
        return None  # statsforecast's, fitted by m3_statsforecast.run_sf in its own environment
    raise ValueError(f"unknown model {model!r}; choose among {MODELS} or sf-AutoETS, sf-AutoARIMA, sf-Theta")


def smape(y: np.ndarray, yhat: np.ndarray) -> float:
    """M3's sMAPE of one series: 200·|y − ŷ| / (|y| + |ŷ|) averaged over the horizon."""
    return float(np.mean(200.0 * np.abs(y - yhat) / (np.abs(y) + np.abs(yhat))))


def naive_scale(train: np.ndarray, m: int) -> float:
    """MASE's scale: the in-sample mean absolute seasonal difference (lag 1 where ``train`` holds m values or fewer)."""
    lag = m if len(train) > m else 1
    return float(np.mean(np.abs(train[lag:] - train[:-lag])))


def mase(y: np.ndarray, yhat: np.ndarray, train: np.ndarray, m: int) -> float:
    return float(np.mean(np.abs(y - yhat))) / naive_scale(train, m)


def run(subset: str, model: str, every: int, n_jobs: int, output: Path, series_output: Path,
        sf_python: str | None = None, origin: str = "test", level: bool = False) -> dict:
    train, test = read_subset(subset, every, origin)
    h, m = HORIZON[subset], SEASON[subset]
    est = estimator(model, h, m, n_jobs)
    if est is None:
        from m3_statsforecast import run_sf

        forecast, seconds, params = run_sf(model, train, h, m, sf_python)
        n_jobs = 1
    else:
        start = time.perf_counter()
        est.fit(train)
        seconds = time.perf_counter() - start
        forecast = est.predict(level=list(LEVELS) if level and est.model_intervals else None)
        params = {k: v for k, v in est.get_params().items() if k not in ("id_col", "time_col", "target_col", "verbose")}
    joined = test.merge(forecast, on=["unique_id", "ds"], how="left", validate="one_to_one")
    per_series, failed, banded = [], 0, []  # banded: (y, {level: (lower, upper)}, scale) of each series
    for uid, part in joined.groupby("unique_id", sort=False):
        y, yhat = part["y"].to_numpy(float), part["yhat"].to_numpy(float)
        history = train.loc[train["unique_id"] == uid, "y"].to_numpy(float)
        if not np.isfinite(yhat).all():
            failed += 1
            continue
        if f"yhat_lo_{LEVELS[0]}" in part:
            banded.append((y, {v: (part[f"yhat_lo_{v}"].to_numpy(float), part[f"yhat_hi_{v}"].to_numpy(float))
                               for v in LEVELS}, naive_scale(history, m)))
        per_series.append({"subset": subset, "model": model, "unique_id": uid, "smape": round(smape(y, yhat), 6),
                           "mase": round(mase(y, yhat, history, m), 6), "origin": origin})
    version, commit = package_identity()
    row = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M"), "tsrsa_version": version,
           "tsrsa_commit": commit, "subset": subset, "model": model, "series": len(per_series), "every": every,
           "horizon": h, "season": m, "smape": round(float(np.mean([r["smape"] for r in per_series])), 4),
           "mase": round(float(np.mean([r["mase"] for r in per_series])), 4), "fit_seconds": round(seconds, 1),
           "n_jobs": n_jobs, "failed": failed, "params": json.dumps(params, sort_keys=True, default=str),
           "origin": origin, **interval_columns(banded)}
    append_rows(series_output, per_series, SERIES_COLUMNS)
    append_rows(output, [row], COLUMNS)
    return row


def interval_columns(banded: list) -> dict:
    """``coverage_80``, ``coverage_95`` and ``msis_95`` over every series' test values (``coverage_m4``'s
    ``interval_scores``), empty where no series has intervals."""
    if not banded:
        return {f"coverage_{v}": "" for v in LEVELS} | {"msis_95": ""}
    from coverage_m4 import interval_scores

    y, scale = np.stack([b[0] for b in banded]), np.array([b[2] for b in banded])
    scores = {v: interval_scores(y, *(np.stack([b[1][v][k] for b in banded]) for k in (0, 1)), scale, v)
              for v in LEVELS}
    return {f"coverage_{v}": round(scores[v]["coverage"], 4) for v in LEVELS} | {
        "msis_95": round(scores[95]["msis"], 4)}


def table(output: Path) -> str:
    rows = pd.read_csv(output)
    rows["origin"] = rows["origin"].fillna("test") if "origin" in rows else "test"
    lines = ["| subset | origin | model | series | sMAPE | MASE | fit s | n_jobs | date | version |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in rows.iterrows():
        every = "" if r.every == 1 else f" (every {r.every})"
        lines.append(f"| {r.subset} | {r.origin} | {r.model} | {r.series}{every} | {r.smape:.2f} | {r.mase:.3f} | "
                     f"{r.fit_seconds:.0f} | {r.n_jobs} | {r.date} | {r.tsrsa_version} ({r.tsrsa_commit}) |")
    lines.append("")
    lines.append("Published anchors (sMAPE, M3's formula): " + "; ".join(
        f"{k} monthly {v[0]}, quarterly {v[1]} ({v[2]})" for k, v in ANCHORS.items()))
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subsets", default="quarterly,monthly")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--every", type=int, default=1, help="keep every k-th series (deterministic subset)")
    parser.add_argument("--n-jobs", type=int, default=1, help="processes of the statistical fits")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--series-output", type=Path, default=SERIES_OUTPUT)
    parser.add_argument("--sf-python", help="the Python of an environment with statsforecast (the sf-* models; "
                        "benchmarks/requirements-statsforecast.txt)")
    parser.add_argument("--origin", choices=ORIGINS, default="test",
                        help="score on M3's test, or on the last h values of each training part (validation)")
    parser.add_argument("--level", action="store_true",
                        help="also score the models' own 80 %% and 95 %% intervals (ETS, ARIMA, Theta): coverage "
                             "of the test values and the 95 %% interval's MSIS")
    parser.add_argument("--table", action="store_true", help="print the table of --output and stop")
    args = parser.parse_args(argv)
    if args.table:
        print(table(args.output))
        return
    for subset in [s for s in args.subsets.split(",") if s]:
        for model in [m for m in args.models.split(",") if m]:
            row = run(subset, model, args.every, args.n_jobs, args.output, args.series_output, args.sf_python,
                      args.origin, args.level)
            covered = (f" coverage 80/95 {row['coverage_80']}/{row['coverage_95']} MSIS {row['msis_95']}"
                       if args.level else "")
            print(f"{subset} {model} ({args.origin}): sMAPE {row['smape']:.3f} MASE {row['mase']:.3f} ({row['series']} "
                  f"series, {row['failed']} failed) in {row['fit_seconds']:.0f} s{covered}", flush=True)


if __name__ == "__main__":
    main()
