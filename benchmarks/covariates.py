"""Do covariates pay? Past covariates on ETT ("MS" against "S") and calendar features on an hourly-cycled series.

    python benchmarks/covariates.py --part ett --dataset ETTh1,ETTh2 --models RSA,Transformer --seeds 0,1,2
    python benchmarks/covariates.py --part calendar --models RSA,Transformer --seeds 0,1,2
    python benchmarks/covariates.py --tables-only

ETT, Time-Series-Library's "MS" setting against "S": the target is OT alone in both; "MS" adds the six
load columns (HUFL, HULL, MUFL, MULL, LUFL, LULL) as past covariates (``past_covariates``), read over
the look-back only, normalised per window (the default ``covariate_norm``); "MS/fit" scales them by
the training part's statistics alone (``covariate_norm="fit"``). The protocol is the long-horizon one (``tsrsa.benchmarking.protocol``: the
ETT splits, every channel scaled on the training rows, input 96, the validation rows held out for
early stopping); each model runs its benchmark configuration (``benchmarks/configs``), the same in
both settings; test MSE and MAE are over every test window of OT, in scaled units.

Calendar: the New York taxi series (half-hourly, July 2014 to January 2015, daily and weekly cycles,
US holidays in the test months) split 70/10/20 in time; horizon 48 (a day), input 336 (a week);
the library's defaults with ``val_size`` = the validation part; "none" against ``calendar="auto"``
and against ``calendar="auto", holidays="US"``, the known-future features reaching the forecast
through the readout term (the default) or as decoder tokens (``known_future="tokens"``). Errors are
in units of the training part's standard deviation.

Rows go to ``benchmarks/results/covariates.csv`` as each fit ends (its explicit parameters with it);
the RESULTS.md section "covariates" sets each setting against the one without covariates, seed by
seed.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parents[1] / "shared" / "datasets"
CSV = HERE / "results" / "covariates.csv"
COLUMNS = ("date", "part", "dataset", "horizon", "input_size", "model", "setting", "seed", "mse", "mae",
           "n_windows", "val_loss", "epochs", "fit_seconds", "params")
ETT_COVARIATES = ("HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL")
TAXI = "classic/taxi_new_york_passengers.csv"
CALENDAR_SETTINGS = {"none": {}, "calendar": {"calendar": "auto"},
                     "calendar+holidays": {"calendar": "auto", "holidays": "US"},
                     "calendar+holidays/tokens": {"calendar": "auto", "holidays": "US", "known_future": "tokens"}}


def ett_frame(data, setting: str) -> pd.DataFrame:
    """Long frame of OT (integer time = row number, scaled values) and, for "MS", the load columns."""
    index = {c: i for i, c in enumerate(data.channels)}
    frame = pd.DataFrame({"unique_id": "OT", "ds": np.arange(len(data.scaled), dtype=np.int64),
                          "y": data.scaled[:, index["OT"]]})
    if setting.startswith("MS"):
        for name in ETT_COVARIATES:
            frame[name] = data.scaled[:, index[name]]
    return frame


def score(model, frame: pd.DataFrame, first: int, n: int, h: int, chunk: int = 512) -> tuple[float, float, int]:
    """MSE and MAE of forecasts from cutoffs ``first - 1 .. first + n - 2`` (the windows whose targets start at
    row ``first`` ... ``first + n - 1``) against the frame's target, in the frame's units."""
    panel = model.to_panel(frame.iloc[: first + n - 1 + h], fitted=True)
    y = panel.values
    squares, absolutes = 0.0, 0.0
    for a in range(0, n, chunk):
        cut = first - 1 + np.arange(a, min(a + chunk, n))  # (c,)
        yhat = model.forecast_cutoffs(panel, cut[None, :], h)["yhat"]  # (c, h)
        truth = y[cut[:, None] + 1 + np.arange(h)[None, :]]
        squares += float(np.square(yhat - truth).sum())
        absolutes += float(np.abs(yhat - truth).sum())
    return squares / (n * h), absolutes / (n * h), n


def _row(part, dataset, h, model, setting, seed, estimator, mse, mae, n, seconds) -> dict:
    from tsrsa.benchmarking.results import explicit_params
    from tsrsa.benchmarking.runner import best_val_loss

    return {"date": datetime.date.today().isoformat(), "part": part, "dataset": dataset, "horizon": h,
            "input_size": estimator.resolved_input_size, "model": type(estimator).__name__, "setting": setting,
            "seed": seed, "mse": round(mse, 6), "mae": round(mae, 6), "n_windows": n,
            "val_loss": best_val_loss(estimator), "epochs": len(estimator.fit_history_),
            "fit_seconds": round(seconds, 1), "params": explicit_params(estimator)}


def run_ett(data, model: str, h: int, seed: int, setting: str, *, num_threads: int | None = 1,
            overrides: dict | None = None, max_test_windows: int | None = None) -> dict:
    from tsrsa.benchmarking.configs import load_config
    from tsrsa.benchmarking.protocol import validation_size
    from tsrsa.benchmarking.runner import build_estimator

    b = data.borders
    v = validation_size(data, h)
    params = dict(overrides or {})
    if setting.startswith("MS"):
        params["past_covariates"] = list(ETT_COVARIATES)
    if setting == "MS/fit":
        params["covariate_norm"] = "fit"
    estimator = build_estimator(load_config(model, HERE / "configs"), data, h, seed=seed, overrides=params,
                                val_size=v, num_threads=num_threads)
    frame = ett_frame(data, setting)
    began = time.perf_counter()
    estimator.fit(frame.iloc[: b.train_end + v])
    seconds = time.perf_counter() - began
    n = b.n_windows("test", h) if max_test_windows is None else min(b.n_windows("test", h), max_test_windows)
    mse, mae, n = score(estimator, frame, b.val_end, n, h)
    return _row("ett", data.name, h, model, setting, seed, estimator, mse, mae, n, seconds)


def taxi_frame(data_dir: Path = SHARED_DATA) -> tuple[pd.DataFrame, int, int]:
    """The taxi series as a long frame scaled by its training part, and the first validation and test rows."""
    raw = pd.read_csv(data_dir / TAXI)
    y = raw["#Passengers"].to_numpy(np.float64)
    train_end, val_end = int(len(y) * 0.7), int(len(y) * 0.8)
    mean, std = y[:train_end].mean(), y[:train_end].std()
    frame = pd.DataFrame({"unique_id": "taxi", "ds": pd.to_datetime(raw["time"]), "y": (y - mean) / std})
    return frame, train_end, val_end


def run_calendar(frame: pd.DataFrame, train_end: int, val_end: int, model: str, seed: int, setting: str, *,
                 h: int = 48, input_size: int = 336, num_threads: int | None = 1, overrides: dict | None = None,
                 max_test_windows: int | None = None) -> dict:
    import tsrsa
    from tsrsa.benchmarking.compat import grouped_kwargs

    cls = getattr(tsrsa, f"{model}Forecaster")
    params = dict(h=h, input_size=input_size, val_size=val_end - train_end, random_state=seed,
                  trainer={"num_threads": num_threads}, **CALENDAR_SETTINGS[setting], **(overrides or {}))
    estimator = cls(**grouped_kwargs(cls, params))  # calendar, holidays: options of covariates
    began = time.perf_counter()
    estimator.fit(frame.iloc[:val_end])
    seconds = time.perf_counter() - began
    n = len(frame) - val_end - h + 1
    n = n if max_test_windows is None else min(n, max_test_windows)
    mse, mae, n = score(estimator, frame, val_end, n, h)
    return _row("calendar", "taxi", h, model, setting, seed, estimator, mse, mae, n, seconds)


def table(path: Path) -> str:
    runs = pd.read_csv(path).drop_duplicates(["part", "dataset", "horizon", "model", "setting", "seed"], keep="last")
    lines = ["| data set | H | model | setting | seeds | MSE | MAE | MSE ÷ no covariates (per seed) | epochs |",
             "|---|---|---|---|---|---|---|---|---|"]
    baseline = {"ett": "S", "calendar": "none"}
    for (part, dataset, h, model), cell in runs.groupby(["part", "dataset", "horizon", "model"], sort=True):
        base = cell[cell.setting == baseline[part]].set_index("seed")
        for setting in sorted(cell.setting.unique(), key=lambda s: (s != baseline[part], s)):
            rows = cell[cell.setting == setting].set_index("seed")
            seeds = sorted(rows.index)
            paired = [s for s in seeds if s in base.index]
            ratio = "—" if setting == baseline[part] or not paired else \
                f"{np.exp(np.mean(np.log(rows.loc[paired, 'mse'] / base.loc[paired, 'mse']))):.3f} (" + \
                ", ".join(f"{rows.loc[s, 'mse'] / base.loc[s, 'mse']:.3f}" for s in paired) + ")"
            lines.append(f"| {dataset} | {h} | {model.replace('Forecaster', '')} | {setting} | "
                         f"{', '.join(map(str, seeds))} | {rows['mse'].mean():.4f} | {rows['mae'].mean():.4f} | "
                         f"{ratio} | {', '.join(str(int(e)) for e in rows['epochs'])} |")
    dates = ", ".join(sorted(runs["date"].astype(str).unique()))
    choices = validation_choices(runs)
    summary = "\n\n" + "\n".join(choices) if choices else ""
    return ("Test error with covariates against the same model without them, means over the seeds given; the "
            "ratio is the geometric mean over the paired seeds (below 1: the covariates help). ETT: OT at input "
            "96 on the long-horizon protocol, *S* = OT alone, *MS* = OT with the six load columns as past "
            "covariates normalised per window (`covariate_norm=\"window\"`, the default), *MS/fit* = the same "
            "scaled by the training part's statistics alone (`covariate_norm=\"fit\"`; rows whose parameters do not "
            "name the option ran this way), each model's benchmark configuration. Taxi: horizon 48, input 336, the library's "
            "defaults; *calendar* = `calendar=\"auto\"` (hour of day, day of week, day of month, week and month "
            "of year, as sine/cosine pairs), *+holidays* adds the US public-holiday flag, */tokens* feeds these "
            "known-future features as decoder tokens (`known_future=\"tokens\"`) instead of the readout term. "
            "Every row's parameters "
            "are in `benchmarks/results/covariates.csv`.\n\n" + "\n".join(lines) + "\n\n"
            f"Made by `python benchmarks/covariates.py` on {dates}." + summary)


def validation_choices(runs: pd.DataFrame) -> list[str]:
    """The choices the defaults rest on, read on validation loss only: per pair of settings, the
    geometric mean over the cells (data set, horizon, model, seed) where both ran of the ratio of
    their best validation losses, overall and per data set."""
    pairs = [("ett", "MS", "MS/fit", "`covariate_norm`: *MS* (window) against *MS/fit*"),
             ("ett", "MS", "S", "covariates at all: *MS* against *S*"),
             ("calendar", "calendar", "none", "calendar features: *calendar* against *none*"),
             ("calendar", "calendar+holidays", "none", "calendar and holidays: *calendar+holidays* against *none*"),
             ("calendar", "calendar+holidays/tokens", "calendar+holidays",
              "`known_future`: decoder tokens against the readout term (*calendar+holidays*)")]
    keys = ["dataset", "horizon", "model", "seed"]
    lines = []
    for part, a, b, what in pairs:
        cells = runs[runs.part == part].pivot_table(index=keys, columns="setting", values="val_loss")
        if a not in cells or b not in cells:
            continue
        both = cells[[a, b]].dropna()
        if both.empty:
            continue
        ratio = np.log(both[a] / both[b])
        per = ", ".join(f"{name} {np.exp(r.mean()):.3f}" for name, r in ratio.groupby(level="dataset"))
        lines.append(f"- {what}: validation loss ratio {np.exp(ratio.mean()):.3f} over {len(both)} cells "
                     f"({per}); below 1 favours the first.")
    return (["Validation, where the defaults are chosen:"] + lines) if lines else []


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", default="ett,calendar")
    parser.add_argument("--dataset", default="ETTh1,ETTh2")
    parser.add_argument("--models", default="RSA,Transformer")
    parser.add_argument("--horizons", default="96,192,336,720")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--settings", default=None,
                        help="ett: S,MS,MS/fit; calendar: none,calendar,calendar+holidays,calendar+holidays/tokens")
    parser.add_argument("--num-threads", type=int, default=1)
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args(argv)
    if "TSRSA_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
        os.environ["TSRSA_DATA_DIR"] = str(SHARED_DATA)
    from tsrsa.benchmarking.protocol import load_protocol_data
    from tsrsa.benchmarking.results import replace_section, row_writer

    write = row_writer(CSV, COLUMNS)

    if not args.tables_only:
        seeds = [int(x) for x in args.seeds.split(",")]
        models = args.models.split(",")
        parts = args.part.split(",")
        if "ett" in parts:
            settings = args.settings.split(",") if args.settings else ["S", "MS", "MS/fit"]
            for seed in seeds:
                for dataset in args.dataset.split(","):
                    data = load_protocol_data(dataset)
                    for h in (int(x) for x in args.horizons.split(",")):
                        for model in models:
                            for setting in settings:
                                write(run_ett(data, model, h, seed, setting, num_threads=args.num_threads))
        if "calendar" in parts:
            settings = args.settings.split(",") if args.settings else list(CALENDAR_SETTINGS)
            frame, train_end, val_end = taxi_frame(Path(os.environ.get("TSRSA_DATA_DIR", SHARED_DATA)))
            for seed in seeds:
                for model in models:
                    for setting in settings:
                        write(run_calendar(frame, train_end, val_end, model, seed, setting,
                                           num_threads=args.num_threads))
    if CSV.exists():
        replace_section(HERE / "RESULTS.md", "covariates", table(CSV),
                        title="Covariates: past covariates on ETT (MS against S) and calendar features")
    return 0


if __name__ == "__main__":
    sys.exit(main())
