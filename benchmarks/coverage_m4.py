"""Intervals on M4 Hourly and the short series: coverage, width and interval score, beside neuralforecast's.

    python benchmarks/coverage_m4.py --nf-python /work/nf-venv/bin/python    # every run, in priority order
    python benchmarks/coverage_m4.py --runs RSA-conformal,short-series
    python benchmarks/coverage_m4.py --tables-only      # the RESULTS.md section from results/coverage_m4.csv

M4 Hourly (414 series, h 48), the M4 benchmark's protocol (``tsrsa.benchmarking.m4_global``): one
global model fitted on the validation histories (each training series without its last 48 values,
early stopping on their last 48, input 168, the library's defaults otherwise), forecasting the test
from the full training series with ``level=[80, 95]``. Runs:

- ``RSA-conformal``: ``conformal_windows=k``, the last k horizons of every validation history held out
  to calibrate (k = 5: at most 5, and no more than the shortest validation history, 652 values, holds
  beyond input + h + validation = 264; chosen from the lengths alone, never from the test);
- ``NHITS-conformal``: neuralforecast's NHITS at the M4 benchmark's settings (``m4_neuralforecast.py``,
  its own environment, ``--nf-python``) with ``PredictionIntervals(n_windows=k, step_size=48)``: the
  same k held-out horizons as ours (neuralforecast's default ``step_size=1`` would take k windows one
  step apart; ``NHITS-conformal-step1`` runs that default too);
- ``RSA-quantile``: ``loss="quantile", quantiles=[0.025, 0.1, 0.5, 0.9, 0.975]``, its own quantiles
  as the 80 % (10-90) and 95 % (2.5-97.5) intervals; ``RSA-student_t``: ``loss="student_t"``, the
  exact quantiles 2.5, 10, 90, 97.5 of its forecast distribution; ``RSA-normal`` likewise with
  ``loss="normal"``. For these two, also the CRPS of ``SAMPLES`` sample paths per series (``sample``).

Per level: coverage (share of the 414 x 48 test values inside the interval), mean width in MASE units
(each series' width over its in-sample lag-24 naive MAE on the full training series, as
``naive_units``), MSIS (the M4 mean scaled interval score: width + 2/alpha x the miss, same units);
WQL (``tsrsa.metrics.weighted_quantile_loss``) over the quantiles 2.5, 10, 50, 90, 97.5, the
interval bounds and the point forecast as the median, a coarse CRPS approximation; the CRPS itself
(``tsrsa.metrics.crps_ensemble``, same units) for the distribution losses; MASE of the point forecast.

``short-series``: RSA at the defaults of the short-series protocol (``tsrsa.benchmarking.short_series``:
``make_cell``, ``split_rule``; seed 0) on the classic series at the lengths 200 and 500 they reach,
with ``conformal_windows=k``, k = 20 (one series: 19 residuals per step are the fewest for a 95 %
interval) or, where the n training steps do not hold 20 horizons beyond input + h + validation, the
largest k that they hold (a cell holding fewer than 2 is left out and named). Coverage and width over
every stride-1 test window, in the cell's scaled units (training mean and standard deviation); a
level that needs more residuals than the cell gives is left blank.

Rows go to ``results/coverage_m4.csv`` as each run ends; the section "conformal-coverage-m4" of
RESULTS.md is rendered from the latest row of each (data set, run, seed).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from tsrsa.benchmarking.results import append_rows  # noqa: E402
from tsrsa.metrics import crps_ensemble, weighted_quantile_loss  # noqa: E402

CSV = HERE / "results" / "coverage_m4.csv"
LEVELS = (80, 95)
M4_WINDOWS = 5  # held-out horizons per M4 series (at most; see windows_that_fit)
SHORT_WINDOWS = 20  # held-out horizons per short series (at most)
LENGTHS = (200, 500)
QUANTILE_LEVELS = (0.025, 0.1, 0.5, 0.9, 0.975)
M4_RUNS = {"RSA-conformal": {}, "NHITS-conformal": {}, "NHITS-conformal-step1": {},
           "RSA-quantile": {"loss": "quantile", "quantiles": [0.025, 0.1, 0.5, 0.9, 0.975]},
           "RSA-student_t": {"loss": "student_t", "quantiles": [0.025, 0.1, 0.9, 0.975]},
           "RSA-normal": {"loss": "normal", "quantiles": [0.025, 0.1, 0.9, 0.975]}}
#: the priority order of a full run
ORDER = ("RSA-conformal", "NHITS-conformal", "short-series", "RSA-quantile", "RSA-student_t", "RSA-normal",
         "NHITS-conformal-step1")
#: sample paths per series for the CRPS of a distribution loss
SAMPLES = 200
COLUMNS = ("date", "dataset", "run", "model", "seed", "k", "residuals_per_step", "coverage_80", "coverage_95",
           "width_80", "width_95", "msis_80", "msis_95", "wql", "mase", "mse", "values", "fit_seconds",
           "predict_seconds", "machine", "params", "crps")
KEY = ["dataset", "run", "seed"]


# ---------------------------------------------------------------------- scores (pure)
def windows_that_fit(length: int, need: int, h: int, target: int) -> int:
    """Held-out horizons of ``h`` steps: ``target``, or as many as ``length`` holds beyond ``need``."""
    return int(max(0, min(target, (length - need) // h)))


def interval_scores(y, lower, upper, scale, level: float) -> dict:
    """Coverage, mean width and mean scaled interval score of one central interval.

    Parameters
    ----------
    y, lower, upper : array (S, h)
        Actual values and the interval's bounds.
    scale : array (S,)
        Each series' unit (the in-sample naive MAE for MASE units; ones for none).
    level : float
        The nominal level in percent; the interval score is width + 2/alpha x (lower - y) when y is
        below, + 2/alpha x (y - upper) when above, alpha = 1 - level / 100 (M4's MSIS at 95).

    Returns
    -------
    dict
        ``coverage`` (share of the values inside, bounds included), ``width`` and ``msis`` (means over
        every value of width / scale and interval score / scale), ``values``.
    """
    y, lo, hi = (np.asarray(a, dtype=np.float64) for a in (y, lower, upper))
    unit = np.asarray(scale, dtype=np.float64)[:, None]
    alpha = 1.0 - level / 100.0
    miss = np.maximum(lo - y, 0.0) + np.maximum(y - hi, 0.0)
    return {"coverage": float(((y >= lo) & (y <= hi)).mean()), "width": float(((hi - lo) / unit).mean()),
            "msis": float(((hi - lo + 2.0 / alpha * miss) / unit).mean()), "values": int(y.size)}


def summary(y, point, bounds: dict, scale, wql: bool = True) -> dict:
    """A row's scores: per level of :data:`LEVELS` coverage, width and MSIS (NaN for a level absent
    from ``bounds`` ``{level: (lower, upper)}``), and, when both levels are there and ``wql``, the
    weighted quantile loss over 2.5, 10, 50, 90, 97.5 with ``point`` as the median."""
    out = {"values": int(np.asarray(y).size)}
    for level in LEVELS:
        got = interval_scores(y, *bounds[level], scale, level) if level in bounds else {}
        for name in ("coverage", "width", "msis"):
            out[f"{name}_{level}"] = got.get(name, float("nan"))
    out["wql"] = float("nan")
    if wql and all(level in bounds for level in LEVELS):
        (lo80, hi80), (lo95, hi95) = bounds[80], bounds[95]
        out["wql"] = weighted_quantile_loss(y, [lo95, lo80, point, hi80, hi95], QUANTILE_LEVELS)
    return out


def quantile_bound_columns(level: float) -> tuple[str, str]:
    """The quantile columns that bound a central interval: 80 -> ('yhat_q10', 'yhat_q90')."""
    return tuple(f"yhat_q{100 * round(q, 6):g}" for q in (0.5 - level / 200, 0.5 + level / 200))


# ---------------------------------------------------------------------- M4 Hourly
def fit_rsa_m4(val, test, run: str, seed: int, k: int, num_threads: int) -> tuple:
    """One global RSA fitted on the validation histories, forecasting the test with its intervals:
    (params, fit s, predict s, point (S, h), {level: (lower, upper)}, residuals per step)."""
    from tsrsa.benchmarking.m4_global import forecast_matrix, forecaster_class
    from tsrsa.estimator.conformal import interval_columns
    from tsrsa.estimator.trainer import flat_params

    f = val.frequency
    conformal = run == "RSA-conformal"
    params = {"h": f.h, "input_size": f.input_size, "freq": 1, "val_size": f.h, "random_state": seed,
              "trainer": {"num_threads": num_threads}, **M4_RUNS[run],
              **({"conformal_windows": k} if conformal else {})}
    model = forecaster_class("RSA")(**params)
    need = model.input_size + model.h + model.val_size + (k * f.h if conformal else 0)
    frame = val.frame()
    began = time.perf_counter()
    model.fit(frame[frame["unique_id"].isin({s for s in val.ids if len(val.history[s]) >= need})])
    fit_seconds = time.perf_counter() - began
    began = time.perf_counter()
    out = model.predict(df=test.frame(), **({"level": list(LEVELS)} if conformal else {}))
    predict_seconds = time.perf_counter() - began
    columns = interval_columns if conformal else quantile_bound_columns
    bounds = {level: tuple(forecast_matrix(out, test.ids, f.h, column=c) for c in columns(level)) for level in LEVELS}
    residuals = len(model.conformal_.residuals) if conformal else ""
    samples = None
    if model.loss in ("normal", "student_t"):  # sample paths for the CRPS
        paths = model.sample(SAMPLES, df=test.frame(), random_state=seed)
        by_series = {sid: g["yhat"].to_numpy() for sid, g in paths.groupby("unique_id", sort=False)}
        samples = np.stack([by_series[sid].reshape(SAMPLES, -1)[:, : f.h].T for sid in test.ids])  # (S, h, n)
    # the trainer's options one by one, as the rows made before 0.15 name them
    return (flat_params(model.get_params(), type(model)), fit_seconds, predict_seconds,
            forecast_matrix(out, test.ids, f.h), bounds, residuals, samples)


def fit_nhits_m4(val, test, run: str, seed: int, k: int, num_threads: int, nf_python: str) -> tuple:
    """NHITS in neuralforecast's environment with its conformal intervals; as :func:`fit_rsa_m4`."""
    from m4_neuralforecast import run_nf

    h = val.frequency.h
    intervals = {"level": list(LEVELS), "n_windows": k, "step_size": 1 if run.endswith("step1") else h}
    params, fit_seconds, _, forecasts = run_nf(val, test, "NHITS", seed, {}, nf_python, num_threads,
                                               intervals=intervals)
    point, predict_seconds, columns = forecasts["test"]
    bounds = {level: (columns[f"NHITS-lo-{level}"], columns[f"NHITS-hi-{level}"]) for level in LEVELS}
    return params, fit_seconds, predict_seconds, point, bounds, len(val.ids) * k, None


def run_m4(run: str, seed: int, data_dir: Path, num_threads: int, nf_python: str | None) -> dict:
    """The row of one M4 Hourly run."""
    from tsrsa.benchmarking.m4 import load_split, scores
    from tsrsa.benchmarking.m4_global import naive_units

    val, test = load_split("Hourly", "validation", data_dir), load_split("Hourly", "test", data_dir)
    f = val.frequency
    need = f.input_size + 2 * f.h  # input + h + validation of the protocol
    k = windows_that_fit(min(len(v) for v in val.history.values()), need, f.h, M4_WINDOWS)
    if run.startswith("NHITS"):
        params, fit_s, pred_s, point, bounds, residuals, samples = fit_nhits_m4(val, test, run, seed, k, num_threads,
                                                                                nf_python)
    else:
        params, fit_s, pred_s, point, bounds, residuals, samples = fit_rsa_m4(val, test, run, seed, k, num_threads)
    conformal = "conformal" in run
    return {"dataset": "M4 Hourly", "run": run, "model": run.split("-")[0], "seed": seed, "k": k if conformal else "",
            "residuals_per_step": residuals, **summary(test.actuals(), point, bounds, naive_units(test)[1]),
            "mase": scores(test, point)["mase"], "fit_seconds": fit_s, "predict_seconds": pred_s,
            "params": params, "crps": "" if samples is None else scaled_crps(test.actuals(), samples,
                                                                             naive_units(test)[1])}


def scaled_crps(y, samples, scale) -> float:
    """Mean CRPS of sample paths ``samples`` (S, h, n) against ``y`` (S, h), each series over ``scale`` (S,)."""
    return float((crps_ensemble(y, samples) / np.asarray(scale, dtype=np.float64)[:, None]).mean())


# ---------------------------------------------------------------------- short series
def short_cells(folder: Path, seed: int) -> tuple[list, list]:
    """(cells to run as (cell, k), notes on the cells left out) of the classic series at :data:`LENGTHS`."""
    from tsrsa.benchmarking.classic import CLASSIC
    from tsrsa.benchmarking.short_series import make_cell, reached_lengths

    cells, notes = [], []
    for dataset in CLASSIC:
        for n in reached_lengths(dataset, LENGTHS, folder):
            cell = make_cell(dataset, n, seed, folder)
            s = cell.split
            k = windows_that_fit(n, s.input_size + s.h + s.val_size, s.h, SHORT_WINDOWS)
            if k < 2:
                notes.append(f"{dataset} at n = {n} (h {s.h}, input {s.input_size}, validation {s.val_size}) holds "
                             f"{k} held-out horizon(s) beyond input + h + validation: left out")
            else:
                cells.append((cell, k))
    return cells, notes


def run_short(cell, k: int, seed: int) -> dict:
    """The row of one short-series cell: RSA with ``conformal_windows=k``, every stride-1 test window."""
    from tsrsa.benchmarking.short_series import build_forecaster, window_forecasts
    from tsrsa.estimator.conformal import interval_columns, residuals_needed
    from tsrsa.estimator.trainer import flat_params

    model = build_forecaster("RSA", cell, seed, {"conformal_windows": k})
    z, n = cell.z, cell.n
    began = time.perf_counter()
    model.fit(pd.DataFrame({"unique_id": cell.dataset, "ds": cell.index[:n], "y": z[:n]}))
    fit_seconds = time.perf_counter() - began
    origins = cell.origins("test", model.h)
    yhat = window_forecasts(model, z, origins, model.h)  # (m, h)
    y = z[origins[:, None] + np.arange(model.h)[None, :]]
    calibration = model.conformal_
    levels = tuple(float(v) for v in LEVELS if residuals_needed(v) <= len(calibration.residuals))
    raw = calibration.intervals(yhat, np.full(len(origins), calibration.scale[0]), levels) if levels else {}
    bounds = {int(v): tuple(raw[c] for c in interval_columns(v)) for v in levels}
    explicit = {key: v for key, v in flat_params(model.get_params(), type(model)).items() if key != "verbose"}
    return {"dataset": f"{cell.dataset} n={n}", "run": "short-series", "model": "RSA", "seed": seed, "k": k,
            "residuals_per_step": len(calibration.residuals),
            **summary(y, yhat, bounds, np.ones(len(origins)), wql=False),
            "mse": float(np.square(yhat - y).mean()), "fit_seconds": fit_seconds, "predict_seconds": "",
            "params": explicit}


# ---------------------------------------------------------------------- rows and the section
def append(row: dict, path: Path = CSV) -> None:
    """Append one finished row (numbers rounded, params as JSON), the header first in a new file."""
    row = {**row, "date": dt.date.today().isoformat(), "params": json.dumps(row["params"], sort_keys=True, default=str)}
    row["machine"] = row.get("machine") or machine()
    cells = {c: round(row[c], 5) if isinstance(row.get(c), float) else row.get(c, "") for c in COLUMNS}
    append_rows(path, [cells], columns=COLUMNS)


def machine() -> str:
    from tsrsa.benchmarking.results import machine_description

    return machine_description() + ", 1 thread"


def training(params: str) -> str:
    """How a tsrsa row was trained ("loss=mae, lr_schedule=onecycle"; "" for neuralforecast): rows made
    before a change of the library's defaults keep what they ran."""
    ran = json.loads(params) if isinstance(params, str) and params.startswith("{") else {}
    return f"loss={ran['loss']}, lr_schedule={ran.get('lr_schedule')}" if "scaler" in ran else ""


def read_rows(path: Path = CSV) -> pd.DataFrame:
    """The latest row of each (data set, run, seed, training)."""
    if not path.exists() or path.stat().st_size == 0:
        return pd.DataFrame(columns=list(COLUMNS) + ["training"])
    rows = pd.read_csv(path)
    rows["training"] = [training(p) for p in rows["params"]]
    return rows.drop_duplicates(subset=KEY + ["training"], keep="last").reset_index(drop=True)


def pct(value) -> str:
    return "" if value != value else f"{100 * value:.1f} %"


def gap(value, level) -> str:
    return "" if value != value else f"{100 * value - level:+.1f}"


def num(value, digits=3) -> str:
    return "" if value != value or value == "" else f"{float(value):.{digits}f}"


def section(rows: pd.DataFrame, command: str, notes=()) -> str:
    """The RESULTS.md section "conformal-coverage-m4" from the rows."""
    described = {"RSA-conformal": "conformal, k held-out horizons", "NHITS-conformal":
                 "neuralforecast conformal, n_windows = k, step 48", "NHITS-conformal-step1":
                 "neuralforecast conformal, n_windows = k, step 1 (its default)",
                 "RSA-quantile": "quantile loss (2.5, 10, 50, 90, 97.5)",
                 "RSA-student_t": "Student-t loss, its quantiles", "RSA-normal": "Normal loss, its quantiles"}
    out = ["What: prediction intervals on M4 Hourly's test (414 series, h 48; the M4 benchmark's global-model "
           "protocol, fitted on the validation histories, the test forecast from the full training series) and on "
           "the classic short series (the short-series protocol, RSA at its defaults, seed 0). Training: the loss "
           "and schedule a tsrsa row ran at, the library's defaults when it ran (loss=mse without a schedule before "
           "2026-11-27's change to loss=mae with a one-cycle schedule); every parameter is in the CSV. Coverage: "
           "the share of test values inside the interval (gap: coverage minus nominal, points; the target is within "
           "±3). M4 width and MSIS in MASE units (each series over its in-sample lag-24 naive MAE); WQL over the "
           "quantiles 2.5/10/50/90/97.5 (interval bounds, the point forecast as the median); CRPS of a distribution "
           f"loss from {SAMPLES} sample paths per series (`sample`), in MASE units; MASE of the point "
           "forecast. k = 5 held-out horizons per M4 series (no more than the shortest validation history holds "
           "beyond input + h + validation; chosen from lengths, not the test). neuralforecast's intervals are per "
           "series (its scores of the k windows of each series, `conformal_distribution`); ours pool every series' "
           "errors divided by its scale, per horizon step.\n",
           "**M4 Hourly**\n",
           "| model | intervals | training | k | coverage 80 % | gap 80 | width 80 % | MSIS 80 | coverage 95 % | "
           "gap 95 | width 95 % | MSIS 95 | WQL | CRPS | MASE | fit (s) |", "|---" * 16 + "|"]
    m4 = rows[rows["dataset"] == "M4 Hourly"]
    m4 = m4.assign(order=[ORDER.index(r) for r in m4["run"]]).sort_values(["order", "training"], kind="stable")
    for _, r in m4.iterrows():
        k = "" if r.k != r.k or r.k == "" else int(r.k)
        out.append(f"| {r.model} | {described.get(r.run, r.run)} | {r.training} | {k} | {pct(r.coverage_80)} | "
                   f"{gap(r.coverage_80, 80)} | {num(r.width_80)} | {num(r.msis_80)} | {pct(r.coverage_95)} | "
                   f"{gap(r.coverage_95, 95)} | {num(r.width_95)} | {num(r.msis_95)} | {num(r.wql, 4)} | "
                   f"{num(r.get('crps', ''))} | {num(r.mase)} | {r.fit_seconds:.0f} |")
    short = rows[rows["run"] == "short-series"].sort_values("training", kind="stable")
    out += ["", "**Short series** (RSA, `conformal_windows` = k: 20, or the most the training steps hold beyond input "
            "+ h + validation; one series, so k residuals per step: 80 % needs 4, 95 % needs 19; width and interval "
            "score in the cell's scaled units)\n",
            "| series | n | training | k | coverage 80 % | gap 80 | width 80 % | coverage 95 % | gap 95 | width 95 % | "
            "test MSE | test values | fit (s) |", "|---" * 13 + "|"]
    for _, r in short.iterrows():
        name, n = r.dataset.rsplit(" n=", 1)
        out.append(f"| {name} | {n} | {r.training} | {int(r.k)} | {pct(r.coverage_80)} | {gap(r.coverage_80, 80)} | "
                   f"{num(r.width_80)} | {pct(r.coverage_95)} | {gap(r.coverage_95, 95)} | {num(r.width_95)} | "
                   f"{num(r.mse)} | {int(r['values'])} | {r.fit_seconds:.0f} |")
    for how, level in ((how, level) for how in dict.fromkeys(short["training"]) for level in LEVELS):
        got = short.loc[short["training"] == how, ["values", f"coverage_{level}"]].dropna()
        covered = got[f"coverage_{level}"]
        if len(got):
            pooled = (covered * got["values"]).sum() / got["values"].sum()
            out += ["", f"Short series ({how}), {level} %: {len(got)} cells; mean coverage over cells "
                        f"{pct(covered.mean())} (gap {gap(covered.mean(), level)}), pooled over their test values "
                        f"{pct(pooled)} (gap {gap(pooled, level)}); within ±3 points in "
                        f"{int((abs(100 * covered - level) <= 3).sum())} of {len(got)} cells."]
    out += [""] + [f"- {note}." for note in notes]
    dates = ", ".join(sorted(set(rows["date"].astype(str))))
    out.append(f"\nCommand: `{command}`. Dates: {dates}. Machine: {'; '.join(sorted(set(rows['machine'])))}. Rows: "
               f"[`benchmarks/results/coverage_m4.csv`](results/coverage_m4.csv).")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    from tsrsa.benchmarking.folders import data_folder
    from tsrsa.benchmarking.results import replace_section

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=",".join(ORDER), help=f"a subset of {', '.join(ORDER)}, run in that order")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-threads", type=int, default=1)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--nf-python", default=None, help="python of an environment with neuralforecast")
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args(argv)
    folder = data_folder(args.data_dir, HERE.parents[1] / "shared" / "datasets")
    runs = [r for r in args.runs.split(",") if r]
    unknown = set(runs) - set(ORDER)
    if unknown:
        parser.error(f"unknown runs {sorted(unknown)}; choose from {', '.join(ORDER)}")
    cells, notes = short_cells(folder / "classic", args.seed) if (folder / "classic").exists() else ([], [])
    if not args.tables_only:
        import torch

        torch.set_num_threads(args.num_threads)
        for run in runs:
            if run == "short-series":
                for cell, k in cells:
                    row = run_short(cell, k, args.seed)
                    append(row)
                    print({c: row[c] for c in COLUMNS if c in row and c != "params"}, flush=True)
                continue
            if run.startswith("NHITS") and not args.nf_python:
                print(f"{run} skipped: no --nf-python", flush=True)
                continue
            row = run_m4(run, args.seed, folder, args.num_threads, args.nf_python)
            append(row)
            print({c: row[c] for c in COLUMNS if c in row and c != "params"}, flush=True)
    rows = read_rows()
    if len(rows):
        command = "python benchmarks/coverage_m4.py --nf-python /work/nf-venv/bin/python"
        replace_section(HERE / "RESULTS.md", "conformal-coverage-m4", section(rows, command, notes),
                        title="Intervals on M4 Hourly and the short series: coverage and width")
    return 0


if __name__ == "__main__":
    sys.exit(main())
