"""What the statistical start costs, and what its forecasts are worth, against the start of a reference commit.

    python benchmarks/start_cost.py accuracy --code new --series 50 --hourly 20    # this tree's start (minutes)
    python benchmarks/start_cost.py accuracy --code old --series 50 --hourly 5 --limit 20 --ett-files ETTh1,ETTh2
    python benchmarks/start_cost.py compare                 # new over old, per source and overall
    python benchmarks/start_cost.py cost --repeats 3        # fresh-process timings of the four regimes
    python benchmarks/start_cost.py cost --code old --repeats 1

``accuracy``: each series of a sample as one user with that series would fit a forecaster at its
defaults: the training part scaled by its mean and standard deviation, the window two horizons
(``input_size``'s default), the season the timestamps' natural period, ``val_size=0`` (the candidates
chosen on the training part's last window) and the candidates of one series at the automatic budget
(an ARIMA too below 2,000 training windows; a panel's two for the panel). ``fit_start("auto", ...)``
and each candidate alone are fitted, BLAS on one thread as a forecaster runs them, and each map
forecasts every h-th window whose targets lie in the held-out end (scaled mean squared error). Sources:
M3 monthly and quarterly series evenly spread over their ids (``--series`` of each; the last 18 and 8
steps held out, h the same), the OT column of the ETT files (training part: the first 12 months; held
out: the 4 after; h 24 hourly, 96 at 15 minutes), M4 Hourly series fitted one at a time (``--hourly``;
the training file's last 48 held out, h 48) and one panel of 20 M4 Hourly series at 200 training steps
(the next 24 held out, h 24). ``--code old`` loads the start's three modules (``start.py``,
``start_arima.py``, ``start_maps.py``) as they were at ``--reference`` (git), the rest of the package
as it is in this tree; ``--tail-steps`` and ``--ar-tail-steps`` run this tree's start with other tail
bounds (``tsrsa.start.maps``). A series already in ``--out`` for the same code is skipped
and ``--limit`` caps the new fits per source, so that the slow reference can be run in parts. Rows (one
per series and code, dated, with their parameters) go to ``results/start_accuracy.csv`` as they finish;
``compare`` pairs them by series and prints the mean, geometric mean and median of new/old per source.

``cost``: each regime fitted in a fresh process (so that imports count), ``--repeats`` times, the
default start and ``start=None`` alternating: the seconds of the start (the call of ``fit_start``, the
modules it imports included) and of the fit, wall and CPU (on a shared machine the process's CPU
time, BLAS and torch on one thread, is the steadier measure). Regimes: ``air`` (AirPassengers, 144
monthly steps, the LSTM at its defaults), ``ett1000`` and ``ett8640`` (ETTh1's OT, its first 1,000 and
8,640 hourly steps, one LSTM epoch, h 24) and ``panel`` (20 M4 Hourly series x 200 steps, DLinear, 2
epochs, h 24); ``--default-fits`` adds each regime's fit at the automatic budget. Rows go to
``results/start_cost.csv``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

ACCURACY = HERE / "results" / "start_accuracy.csv"
COST = HERE / "results" / "start_cost.csv"
#: the commit whose start ``--code old`` runs: the last before the start read a bounded tail
REFERENCE = "722d416"
SOURCES = ("m3_monthly", "m3_quarterly", "ett", "m4_hourly", "m4_hourly_panel")
START_MODULES = ("start", "start_arima", "start_maps")


def data_folder() -> Path:
    return Path(os.environ.get("TSRSA_DATA_DIR", ROOT.parent / "shared" / "datasets"))


def today() -> str:
    return dt.date.today().isoformat()


def append_row(path: Path, row: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame([row])
    frame.to_csv(path, mode="a", header=not path.exists(), index=False)


# ---------------------------------------------------------------------- the code under test
def start_module(code: str, reference: str):
    """``tsrsa.start.fit`` of this tree (``code="new"``) or, for "old", its three modules as they
    were at the commit ``reference``, loaded under another package name."""
    if code == "new":
        return importlib.import_module("tsrsa.start.fit")
    folder = Path(tempfile.mkdtemp(prefix="start_reference_"))
    package = folder / "start_reference"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in START_MODULES:
        text = subprocess.run(["git", "show", f"{reference}:tsrsa/forecasters/{name}.py"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout
        for other in START_MODULES:
            text = text.replace(f"tsrsa.forecasters.{other} ", f"start_reference.{other} ")
            text = text.replace(f"tsrsa.forecasters.{other}\n", f"start_reference.{other}\n")
        (package / f"{name}.py").write_text(text)
    sys.path.insert(0, str(folder))
    return importlib.import_module("start_reference.start")


# ---------------------------------------------------------------------- the series
def m3(kind: str, count: int) -> list[tuple[str, np.ndarray]]:
    frame = pd.read_csv(data_folder() / "m3" / f"M3-{kind}.csv")
    ids = sorted(frame["unique_id"].unique())
    chosen = [ids[i] for i in np.unique(np.linspace(0, len(ids) - 1, count).round().astype(int))]
    groups = frame.groupby("unique_id")["y"]
    return [(i, groups.get_group(i).to_numpy(np.float64)) for i in chosen]


def m4_hourly(count: int) -> list[tuple[str, np.ndarray]]:
    raw = pd.read_csv(data_folder() / "m4" / "Hourly-train.csv")
    rows = np.unique(np.linspace(0, len(raw) - 1, count).round().astype(int))
    return [(str(raw.iloc[r, 0]), raw.iloc[r, 1:].dropna().to_numpy(np.float64)) for r in rows]


def cases(sources: list[str], count: int, hourly: int, ett_files: list[str]):
    """(source, name, training parts, held-out targets, h, season, panel) of every fit of the sample."""
    for source in sources:
        if source in ("m3_monthly", "m3_quarterly"):
            h, season = (18, 12) if source == "m3_monthly" else (8, 4)
            for name, y in m3(source.split("_")[1], count):
                yield source, name, [y[:-h]], [y[-h:]], h, season, False
        elif source == "ett":
            for file in ett_files:
                steps = h = season = 24 if file.startswith("ETTh") else 96
                y = pd.read_csv(data_folder() / f"{file}.csv")["OT"].to_numpy(np.float64)
                n = 12 * 30 * steps
                yield source, f"{file}_OT", [y[:n]], [y[n:n + 4 * 30 * steps]], h, season, False
        elif source == "m4_hourly":
            for name, y in m4_hourly(hourly):
                yield source, name, [y[:-48]], [y[-48:]], 48, 24, False
        elif source == "m4_hourly_panel":
            series = m4_hourly(20)
            yield (source, "20x200", [y[-224:-24] for _, y in series], [y[-24:] for _, y in series], 24, 24, True)
        else:
            raise ValueError(f"unknown source {source!r}")


def window_errors(start, train: list[np.ndarray], test: list[np.ndarray], h: int) -> float:
    """Mean squared error of ``start``'s forecasts of the windows whose targets lie in the held-out parts,
    every h steps (scaled units)."""
    window = start.weight.shape[1]
    errors = []
    for z, t in zip(train, test):
        y = np.concatenate([z, t])
        for origin in range(len(z), len(y) - h + 1, h):
            errors.append(np.mean((start(y[None, origin - window:origin])[0] - y[origin:origin + h]) ** 2))
    return float(np.mean(errors))


def accuracy(args) -> None:
    from threadpoolctl import threadpool_limits

    module = start_module(args.code, args.reference)
    code = "new" if args.code == "new" else f"old@{args.reference}"
    if args.tail_steps is not None or args.ar_tail_steps is not None:  # the tail rule's other constants
        from tsrsa.start import maps as start_maps

        start_maps.TAIL_STEPS = args.tail_steps or start_maps.TAIL_STEPS
        start_maps.AR_TAIL_STEPS = args.ar_tail_steps or start_maps.AR_TAIL_STEPS
        code = f"new:tail_steps={start_maps.TAIL_STEPS},ar_tail_steps={start_maps.AR_TAIL_STEPS}"
    out = Path(args.out)
    done = set()
    if out.exists():
        rows = pd.read_csv(out)
        done = set(zip(rows["code"], rows["source"], rows["series"].astype(str)))
    fitted: dict[str, int] = {}
    for source, name, train, test, h, season, panel in cases(args.sources.split(","), args.series, args.hourly,
                                                             args.ett_files.split(",")):
        if (code, source, name) in done or fitted.get(source, 0) >= args.limit:
            continue
        fitted[source] = fitted.get(source, 0) + 1
        scaled_train, scaled_test = [], []
        for z, t in zip(train, test):
            loc, scale = z.mean(), z.std() or 1.0
            scaled_train.append((z - loc) / scale)
            scaled_test.append((t - loc) / scale)
        window = 2 * h
        windows = sum(len(z) - window - h + 1 for z in scaled_train)
        candidates = ("ar", "ets") if panel or windows >= 2000 else ("ar", "ets", "arima")
        if any(len(z) < window + h for z in scaled_train):
            continue
        held_out = [np.empty(0) for _ in scaled_train]
        limit = threadpool_limits(limits=1, user_api="blas")  # as a forecaster runs its start (num_threads=1)
        began, cpu = time.perf_counter(), time.process_time()
        chosen = module.fit_start("auto", scaled_train, window, h, season, held_out, candidates)
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        row = {"date": today(), "code": code, "source": source, "series": name, "n_train": len(scaled_train[0]),
               "panel": len(scaled_train), "h": h, "window": window, "season": season,
               "candidates": "+".join(candidates), "chosen": chosen.record["model"],
               "tail": chosen.record.get("tail"), "seconds": round(seconds, 4), "cpu_seconds": round(cpu, 4),
               "mse_auto": window_errors(chosen, scaled_train, scaled_test, h)}
        for model in candidates:
            try:
                alone = module.fit_start(model, scaled_train, window, h, season)
                row[f"mse_{model}"] = window_errors(alone, scaled_train, scaled_test, h)
            except (ValueError, RuntimeError):
                row[f"mse_{model}"] = np.nan
        limit.restore_original_limits()
        append_row(out, row)
        print(json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)


def compare(args) -> None:
    rows = pd.concat([pd.read_csv(path) for path in args.out], ignore_index=True)
    rows = rows.drop_duplicates(["code", "source", "series"], keep="last")
    old = rows[rows["code"].str.startswith("old")].set_index(["source", "series"])
    new = rows[rows["code"] == args.new].set_index(["source", "series"])
    both = old.join(new, lsuffix="_old", rsuffix="_new", how="inner")
    print(f"{len(both)} series fitted by both ({args.new!r} over the old start); ratios new/old of the scaled "
          f"MSE on the held-out windows")
    for column in ("mse_auto", "mse_ar", "mse_ets", "mse_arima"):
        ratio = (both[f"{column}_new"] / both[f"{column}_old"]).replace([np.inf, -np.inf], np.nan).dropna()
        if ratio.empty:
            continue
        table = ratio.groupby(level="source").agg(["count", "mean", lambda r: float(np.exp(np.log(r).mean())),
                                                   "median"])
        table.columns = ["series", "mean", "geometric mean", "median"]
        print(f"\n{column}: overall mean {ratio.mean():.4f}, geometric mean {np.exp(np.log(ratio).mean()):.4f}, "
              f"median {ratio.median():.4f} ({ratio.count()} series)")
        print(table.round(4).to_string())
    seconds = both[["seconds_old", "seconds_new"]].groupby(level="source").mean().round(3)
    print("\nmean wall seconds of fit_start('auto') per fit (a panel's for the whole panel)\n" + seconds.to_string())
    changed = (both["chosen_old"] != both["chosen_new"]).groupby(level="source").mean().round(3)
    print("\nshare of fits whose chosen model changed\n" + changed.to_string())


# ---------------------------------------------------------------------- cost in fresh processes
REGIMES = {
    "air": dict(model="LSTMForecaster", epochs="auto", h=12),
    "ett1000": dict(model="LSTMForecaster", epochs=1, h=24),
    "ett8640": dict(model="LSTMForecaster", epochs=1, h=24),
    "panel": dict(model="DLinearForecaster", epochs=2, h=24),
}


def regime_frame(regime: str):
    folder = data_folder()
    if regime == "air":
        raw = pd.read_csv(folder / "classic" / "AirPassengers.csv")
        return pd.Series(raw.iloc[:, 1].to_numpy(np.float64), index=pd.date_range("1949-01-01", periods=len(raw),
                                                                                   freq="MS"))
    if regime.startswith("ett"):
        raw = pd.read_csv(folder / "ETTh1.csv", parse_dates=["date"]).iloc[:int(regime[3:])]
        return pd.Series(raw["OT"].to_numpy(np.float64), index=raw["date"])
    raw = pd.read_csv(folder / "m4" / "Hourly-train.csv")
    parts = [pd.DataFrame({"unique_id": raw.iloc[k, 0], "ds": pd.date_range("2000-01-01", periods=200, freq="h"),
                           "y": raw.iloc[k, 1:].dropna().to_numpy(np.float64)[-200:]}) for k in range(20)]
    return pd.concat(parts, ignore_index=True)


def one_fit(regime: str, start: str, epochs, code: str, reference: str) -> dict:
    """One fit in this (fresh) process: the seconds of the fit and of its ``fit_start`` call (the start of
    ``code``, as :func:`start_module` loads it), and which packages that call imported."""
    import torch

    torch.set_num_threads(1)
    import tsrsa
    import tsrsa.estimator.started as started

    spec = REGIMES[regime]
    frame = regime_frame(regime)
    options = dict(h=spec["h"], random_state=0, trainer={"num_threads": 1})
    if epochs != "auto":
        options["max_epochs"] = int(epochs)
    if start == "none":
        options["start"] = None
    original, seen = start_module(code, reference).fit_start, {}

    def timed(*a, **k):
        before = set(sys.modules)
        began, cpu = time.perf_counter(), time.process_time()
        out = original(*a, **k)
        seen["seconds"], seen["cpu"] = time.perf_counter() - began, time.process_time() - cpu
        seen["imported"] = sorted({m.split(".")[0] for m in set(sys.modules) - before})
        seen["record"] = {key: out.record.get(key) for key in ("model", "tail", "chosen_by")}
        return out

    started.fit_start = timed
    began, cpu = time.perf_counter(), time.process_time()
    getattr(tsrsa, spec["model"])(**options).fit(frame)
    fit_seconds, fit_cpu = time.perf_counter() - began, time.process_time() - cpu
    return {"fit_seconds": round(fit_seconds, 3), "fit_cpu_seconds": round(fit_cpu, 3),
            "start_seconds": round(seen.get("seconds", 0.0), 3), "start_cpu_seconds": round(seen.get("cpu", 0.0), 3),
            "start_imported": " ".join(seen.get("imported", [])), "start_record": json.dumps(seen.get("record"))}


def cost(args) -> None:
    for repeat in range(args.repeats):
        for regime in args.regimes.split(","):
            epochs = REGIMES[regime]["epochs"]
            runs = [(start, epochs) for start in ("default", "none")]
            if args.default_fits and epochs != "auto":
                runs.append(("default", "auto"))
            for start, budget in runs:
                command = [sys.executable, __file__, "one-fit", regime, start, str(budget), "--code", args.code,
                           "--reference", args.reference]
                out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
                if out.returncode:
                    raise RuntimeError(out.stderr[-2000:])
                result = json.loads(out.stdout.strip().splitlines()[-1])
                load = os.getloadavg()[0]
                code = "new" if args.code == "new" else f"old@{args.reference}"
                row = {"date": today(), "code": code, "regime": regime, "model": REGIMES[regime]["model"],
                       "h": REGIMES[regime]["h"], "epochs": budget, "start": start, "repeat": repeat,
                       "load_1min": round(load, 2), **result}
                append_row(Path(args.cost_out), row)
                print(json.dumps(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    acc = sub.add_parser("accuracy")
    acc.add_argument("--code", choices=("new", "old"), default="new")
    acc.add_argument("--reference", default=REFERENCE)
    acc.add_argument("--sources", default=",".join(SOURCES))
    acc.add_argument("--series", type=int, default=50, help="series per M3 source")
    acc.add_argument("--hourly", type=int, default=20, help="M4 Hourly series fitted one at a time")
    acc.add_argument("--ett-files", default="ETTh1,ETTh2,ETTm1,ETTm2")
    acc.add_argument("--limit", type=int, default=10 ** 6, help="at most this many new fits per source (a series "
                     "already in --out for this code is skipped)")
    acc.add_argument("--tail-steps", type=int, default=None, help="the new start with this TAIL_STEPS")
    acc.add_argument("--ar-tail-steps", type=int, default=None, help="the new start with this AR_TAIL_STEPS")
    acc.add_argument("--out", default=str(ACCURACY))
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("--out", nargs="+", default=[str(ACCURACY)])
    cmp_.add_argument("--new", default="new", help="the code label to set against the old start's rows")
    cst = sub.add_parser("cost")
    cst.add_argument("--regimes", default=",".join(REGIMES))
    cst.add_argument("--repeats", type=int, default=3)
    cst.add_argument("--default-fits", action="store_true")
    cst.add_argument("--code", choices=("new", "old"), default="new")
    cst.add_argument("--reference", default=REFERENCE)
    cst.add_argument("--cost-out", default=str(COST))
    one = sub.add_parser("one-fit")
    one.add_argument("regime")
    one.add_argument("start")
    one.add_argument("epochs")
    one.add_argument("--code", choices=("new", "old"), default="new")
    one.add_argument("--reference", default=REFERENCE)
    args = parser.parse_args()
    if args.command == "accuracy":
        accuracy(args)
    elif args.command == "compare":
        compare(args)
    elif args.command == "cost":
        cost(args)
    else:
        print(json.dumps(one_fit(args.regime, args.start, args.epochs, args.code, args.reference)))


if __name__ == "__main__":
    main()
