"""M3 sample: AutoForecaster's rules (the best candidate, the mean or the weighted mean of the best two,
per series; and for the panel as a whole) against each statistical candidate alone, one model per series.

    python benchmarks/auto_m3_sample.py --series-limit 60 --n-windows 1
    python benchmarks/auto_m3_sample.py --summary

The sample, the origins and the scores are :mod:`tsrsa.benchmarking.m3_sample`'s (MASE over the in-sample
seasonal-naive MAE, M3's sMAPE). Candidates: SeasonalNaive, ETS, ARIMA and Theta at their defaults with the
season (12 monthly, 4 quarterly). At each origin (``val1``: the training part without its last ``h``
values; ``test``: the whole training part) each candidate is validated inside the fit part as
AutoForecaster validates it (its ``cross_validate(n_windows, step_size=h, refit=False)``; MASE over the
seasonal-naive scale of the part before the validation block) and fitted on the whole fit part. One row
per (candidate, series, origin) holds both, the forecast included, and is appended to ``--output`` as each
series finishes (a stopped run resumes).

``--summary`` then applies each rule with AutoForecaster's own arithmetic
(:func:`tsrsa.estimator.model_choice.choice_weights`, :func:`~tsrsa.estimator.model_choice.combined`) to
the series of each subset and origin taken as one panel (a series on which fewer than two candidates could
be validated ranks them by their mean over the panel; a candidate that could not be fitted on a series is
blocked there, as AutoForecaster's refit skips it), so each candidate is fitted once for the three rules
(tests/test_auto.py pins AutoForecaster's forecasts to its candidates' forecasts fitted alone). Which
``combine`` is the default (per series) is decided on ``val1``, a later block than the inner windows the
rules chose on: the rule of lowest mean val1 MASE. The panel rules and ``test`` are reported beside it;
no choice reads them.
"""
from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "results" / "auto_m3_sample.csv"
CANDIDATES = {"SeasonalNaive": "SeasonalNaiveForecaster", "ETS": "ETSForecaster", "ARIMA": "ARIMAForecaster",
              "Theta": "ThetaForecaster"}
#: rule -> (choose, combine): the combine rules per series (which is the default is decided here), and the
#: same for the panel as a whole (reported beside them)
RULES = {"Auto-best": ("series", None), "Auto-mean2": ("series", "mean"), "Auto-weighted2": ("series", "weighted"),
         "Auto-panel-best": ("panel", None), "Auto-panel-mean2": ("panel", "mean")}
SERIES_RULES = [rule for rule, (choose, _) in RULES.items() if choose == "series"]
ORIGINS = ("val1", "test")
COLUMNS = ("model", "unique_id", "subset", "origin", "n_windows", "val_mase", "mase", "smape", "forecast",
           "seconds", "error")


def data_folder(given) -> Path:
    import os

    if given:
        return Path(given)
    if os.environ.get("TSRSA_DATA_DIR"):
        return Path(os.environ["TSRSA_DATA_DIR"]) / "m3"
    return HERE.parent.parent / "shared" / "datasets" / "m3"


class _Single:
    """One series in the form :func:`tsrsa.estimator.model_choice.naive_scale` reads."""

    def __init__(self, values):
        self.values, self.n_series = values, 1

    def series(self, i):
        return self.values


def scores(part, yhat, season) -> dict:
    from tsrsa.benchmarking import m3_sample as m3

    if yhat is None or not np.isfinite(yhat).all():
        return {"mase": "", "smape": ""}
    return {"mase": round(m3.mase(part.target, yhat, part.fit.to_numpy(), season), 6),
            "smape": round(m3.smape(part.target, yhat), 6)}


def one_series(series: pd.Series, info, origin_name: str, n_windows: int,
               candidates=tuple(CANDIDATES)) -> list[dict]:
    """One row per candidate on one origin of one series: its validation MASE inside the fit part, its
    forecast of the origin's targets and their scores."""
    import tsrsa
    from tsrsa.benchmarking import m3_sample as m3
    from tsrsa.estimator.model_choice import naive_scale

    h, subset = int(info["horizon"]), info["subset"]
    season = m3.SEASON[subset]
    part = m3.origin(series, h, origin_name)
    inner_end = len(part.fit) - h * n_windows
    scale = naive_scale(_Single(part.fit.to_numpy()), np.array([max(inner_end, 1)]), season)[0]
    rows = []
    for name in candidates:
        model = getattr(tsrsa, CANDIDATES[name])(h=h, season_length=season)
        began, errors, yhat, val = time.perf_counter(), [], None, ""
        try:
            yhat = model.clone().fit(part.fit).predict()["yhat"].to_numpy()
        except Exception as err:  # noqa: BLE001 - a refusal is a result: the candidate is skipped here
            errors.append(f"fit: {type(err).__name__}: {err}"[:300])
        try:
            cv = model.cross_validate(part.fit, n_windows=n_windows, step_size=h)
            val = round(float(np.mean(np.abs(cv["y"].to_numpy() - cv["yhat"].to_numpy())) / scale), 6)
        except Exception as err:  # noqa: BLE001
            errors.append(f"validation: {type(err).__name__}: {err}"[:300])
        rows.append({"model": name, "unique_id": series.name, "subset": subset, "origin": origin_name,
                     "n_windows": n_windows, "val_mase": val, **scores(part, yhat, season),
                     "forecast": "" if yhat is None else json.dumps([float(f"{v:.8g}") for v in yhat]),
                     "seconds": round(time.perf_counter() - began, 3), "error": " | ".join(errors)})
    return rows


SAMPLE = HERE / "configs" / "m3_sample.csv"


def run(limit: int, n_windows: int, output: Path, data: Path, sample_file: Path = SAMPLE,
        candidates=tuple(CANDIDATES)) -> None:
    from tsrsa.benchmarking import m3_sample as m3

    sample = m3.read_sample(sample_file).head(limit)
    series = m3.read_series(data, sample)
    done = set()
    if output.exists():
        old = pd.read_csv(output, dtype={"unique_id": str})
        done = set(zip(old["unique_id"], old["origin"], old["n_windows"]))
    new_file = not output.exists()
    for _, info in sample.iterrows():
        for origin_name in ORIGINS:
            if (info["unique_id"], origin_name, n_windows) in done:
                continue
            rows = one_series(series[info["unique_id"]], info, origin_name, n_windows, candidates)
            with open(output, "a", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=COLUMNS)
                if new_file:
                    writer.writeheader()
                    new_file = False
                writer.writerows(rows)
            print(info["unique_id"], origin_name, " ".join(f"{r['model']}={r['val_mase']}/{r['mase']}" for r in rows),
                  flush=True)


def rule_rows(rows: pd.DataFrame, data: Path, sample_file: Path = SAMPLE) -> pd.DataFrame:
    """The rows of the three rules, each subset and origin one panel (module docstring)."""
    from tsrsa.benchmarking import m3_sample as m3
    from tsrsa.estimator.model_choice import choice_weights, combined

    names = [name for name in CANDIDATES if name in set(rows["model"])]
    sample = m3.read_sample(sample_file).set_index("unique_id")
    ids_all = sorted(set(rows["unique_id"]))
    series = m3.read_series(data, sample.loc[ids_all].reset_index())
    out = []
    for (subset, origin_name, windows), group in rows.groupby(["subset", "origin", "n_windows"]):
        table = group.pivot_table(index="unique_id", columns="model", values="val_mase", aggfunc="first")
        table = table.reindex(columns=names)
        ids = pd.Index(sorted(set(group["unique_id"])))
        h = int(sample.loc[ids[0], "horizon"])
        errors = table.reindex(ids).to_numpy(dtype=np.float64)
        forecasts = np.full((len(ids), len(names), h), np.nan)
        for _, row in group.iterrows():
            if isinstance(row["forecast"], str) and row["forecast"]:
                forecasts[ids.get_loc(row["unique_id"]), names.index(row["model"])] = json.loads(row["forecast"])
        blocked = ~np.isfinite(forecasts).all(axis=2)
        for rule, (choose, combine) in RULES.items():
            weights = choice_weights(errors, ids, names, by=choose, combine=combine, top_k=2, blocked=blocked)
            yhat = combined(weights, forecasts)
            for i, sid in enumerate(ids):
                part = m3.origin(series[sid], h, origin_name)
                kept = "+".join(names[c] for c in np.argsort(-weights[i], kind="stable") if weights[i, c] > 0)
                out.append({"model": rule, "unique_id": sid, "subset": subset, "origin": origin_name,
                            "n_windows": windows, **scores(part, yhat[i], m3.SEASON[subset]), "error": kept})
    return pd.DataFrame(out)


def summary(output: Path, data: Path, sample_file: Path = SAMPLE) -> pd.DataFrame:
    """Mean MASE and sMAPE per model and origin over the series every rule scored (``series``; a candidate
    that could not be fitted on a series leaves it out of its own mean: ``unfitted``), and the rule that
    validation (val1) chooses."""
    rows = pd.read_csv(output, dtype={"unique_id": str})
    both = pd.concat([rows, rule_rows(rows, data, sample_file)], ignore_index=True)
    both["mase"] = pd.to_numeric(both["mase"], errors="coerce")
    both["smape"] = pd.to_numeric(both["smape"], errors="coerce")
    table = both.groupby(["origin", "n_windows", "model"], sort=True).agg(
        series=("mase", "count"), unfitted=("mase", lambda s: int(s.isna().sum())), mase=("mase", "mean"),
        smape=("smape", "mean"), seconds=("seconds", "sum")).reset_index()
    val = table[(table.origin == "val1") & table.model.isin(SERIES_RULES)]
    if len(val):
        print("rule chosen on val1:", val.sort_values("mase").iloc[0]["model"])
    return table


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series-limit", type=int, default=60, help="the first N series of the sample")
    parser.add_argument("--n-windows", type=int, default=1, help="validation windows inside each fit part")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--candidates", default=",".join(CANDIDATES),
                        help="comma-separated, among " + ", ".join(CANDIDATES))
    parser.add_argument("--data-dir")
    parser.add_argument("--sample", type=Path, default=SAMPLE, help="the list of series (configs/m3_sample.csv)")
    parser.add_argument("--summary", action="store_true")
    args = parser.parse_args(argv)
    if args.summary:
        table = summary(args.output, data_folder(args.data_dir), args.sample)
        print(table.to_string(index=False, float_format="%.4f"))
        return
    candidates = [name.strip() for name in args.candidates.split(",")]
    unknown = [name for name in candidates if name not in CANDIDATES]
    if unknown:
        parser.error(f"unknown candidates {unknown}; choose from {', '.join(CANDIDATES)}")
    run(args.series_limit, args.n_windows, args.output, data_folder(args.data_dir), args.sample, candidates)


if __name__ == "__main__":
    main()
