"""Global models on many short series: M4 Hourly (414 series, h 48) and Weekly (359 series, h 13).

    python benchmarks/m4.py --models SeasonalNaive,Naive2,Theta,ETS,ETS-adjusted   # the statistical references
    python benchmarks/m4.py --models RSA,Transformer,LSTM,DLinear --seeds 0 --num-threads 1
    python benchmarks/m4.py --models NHITS,NBEATS --nf-python /work/nf-venv/bin/python
    python benchmarks/m4.py --models RSA --frequencies Hourly --splits validation --set learning_rate=1e-4
    python benchmarks/m4.py --tables-only                  # the RESULTS.md section from results/m4.csv

Protocol. ``validation``: each training series without its last h values is the history, those h
values the target; configurations are compared there only. ``test``: the official test, scored
once per configuration. A neural model is one global model over all series of the frequency,
fitted once on the validation histories, with early stopping on their last h steps (``val_size=h``,
patience 3, at most 10 epochs, the best epoch kept) and the library's defaults otherwise; input 168
(Hourly: 7 days) or 52 (Weekly: a year). That one model forecasts the validation target from the
validation histories and the test from the full training series (``predict(df=full train)``: the
last h training values reach it as inputs, not as training data), so one fit gives both rows.
Series shorter than input + h + val_size (65 Weekly series) are left out of training and forecast
by the same model from their last input values (``predict(df=...)`` takes series the model has not
seen). Statistical models are fitted per series, on the validation histories for the validation
rows and on the full training series for the test rows. neuralforecast's NHITS
and NBEATS run in their own environment (``--nf-python``) with a robust scaler, the same input and
early stopping on the same validation horizon, fitted and used like ours. Rows go to ``results/m4.csv`` as each run ends, with every parameter that ran
(``params``) and the validation curve (``history``: per epoch [train loss, validation loss] for
tsrsa; per check [step, validation loss] for neuralforecast, whose ``epochs`` and ``best_epoch``
count optimisation steps).
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
CSV = HERE / "results" / "m4.csv"
COLUMNS = ("date", "frequency", "model", "label", "seed", "split", "smape", "mase", "owa", "fit_seconds",
           "predict_seconds", "epochs", "best_epoch", "series_trained", "machine", "params", "history")
KEY = ["frequency", "model", "label", "seed", "split"]
NEURAL = {"RSA": "RSAForecaster", "Transformer": "TransformerForecaster", "LSTM": "LSTMForecaster",
          "DLinear": "DLinearForecaster"}
STATISTICAL = ("SeasonalNaive", "Naive2", "Theta", "ETS", "ETS-adjusted")
NF_MODELS = ("NHITS", "NBEATS")
#: the protocol's settings of every neural model (the rest at the library's defaults)
PROTOCOL = {"max_epochs": 10, "early_stopping_patience": 3}
#: the options every neural run sets itself (never an earlier default)
RUN_KEYS = {"h", "input_size", "freq", "val_size", "random_state", "num_threads", *PROTOCOL}
#: neuralforecast as a practitioner sets it up for a panel of differently scaled series
NF_SETTINGS = {"scaler_type": "robust", "max_steps": 1000, "val_check_steps": 50, "early_stop_patience_steps": 5}


# ---------------------------------------------------------------------- runs
def forecast_matrix(frame, ids, h: int, column: str = "yhat"):
    """A long forecast frame -> (S, h) in the order of ``ids``."""
    wide = frame.sort_values(["unique_id", "ds"]).groupby("unique_id", sort=False)[column].apply(list)
    return np.array([wide[sid][:h] for sid in ids], dtype=np.float64)


def naive_units(split) -> tuple[np.ndarray, np.ndarray]:
    """Per series (S,): the history's mean and its in-sample lag-m naive MAE (MASE's denominator)."""
    m = split.frequency.m
    loc = np.array([split.history[s].mean() for s in split.ids])
    scale = np.array([np.mean(np.abs(split.history[s][m:] - split.history[s][:-m])) for s in split.ids])
    return loc, np.where(scale > 0, scale, 1.0)


def run_neural(val, test, name: str, seed: int, overrides: dict, num_threads: int,
               naive_scaling: bool = False) -> tuple:
    """One global tsrsa model fitted on the validation histories; (params, fit seconds, extra,
    {split: (forecasts (S, h), predict seconds)}) with the test forecasts when ``test`` is given.
    With ``naive_scaling`` each series enters as (y - mean) / naive MAE of its validation history,
    with ``scaler="identity"`` unless set, so that the training loss is in MASE's units."""
    import tsrsa

    f = val.frequency
    cls = getattr(tsrsa, NEURAL[name])
    params = {"h": f.h, "input_size": f.input_size, "freq": 1, "val_size": f.h, "random_state": seed,
              "num_threads": num_threads, **PROTOCOL, **({"scaler": "identity"} if naive_scaling else {}),
              **overrides}
    model = cls(**params)
    loc, scale = naive_units(val) if naive_scaling else (np.zeros(len(val.ids)), np.ones(len(val.ids)))

    def frame(split):
        out = split.frame()
        position = out["unique_id"].map({s: i for i, s in enumerate(split.ids)}).to_numpy()
        out["y"] = (out["y"].to_numpy() - loc[position]) / scale[position]
        return out

    need = model.input_size + model.h + model.val_size
    trained = [s for s in val.ids if len(val.history[s]) >= need]
    history_frame = frame(val)
    began = time.perf_counter()
    model.fit(history_frame[history_frame["unique_id"].isin(set(trained))])
    fit_seconds = time.perf_counter() - began
    forecasts = {}
    for split_name, split in (("validation", val), ("test", test)):
        if split is not None:
            began = time.perf_counter()
            fc = forecast_matrix(model.predict(df=frame(split)), split.ids, f.h) * scale[:, None] + loc[:, None]
            forecasts[split_name] = (fc, time.perf_counter() - began)
    history = model.fit_history_
    losses = history["val_loss"].to_numpy(dtype=float)
    extra = {"epochs": len(history), "best_epoch": int(history["epoch"].iloc[int(np.nanargmin(losses))]),
             "series_trained": len(trained),
             "history": json.dumps([[round(a, 5), round(b, 5)] for a, b in zip(history["train_loss"], losses)])}
    params = model.get_params()
    if naive_scaling:
        params["benchmark_scaling"] = "(y - mean) / in-sample lag-m naive MAE of the validation history, per series"
    return params, fit_seconds, extra, forecasts


def run_nf(val, test, name: str, seed: int, overrides: dict, nf_python: str, num_threads: int) -> tuple:
    """NHITS or NBEATS in neuralforecast's own environment (``nf_worker`` there), fitted and used
    as :func:`run_neural` fits and uses ours; the same return value."""
    f = val.frequency
    params = {"h": f.h, "input_size": f.input_size, "random_seed": seed, **NF_SETTINGS, **overrides}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        val.frame().to_csv(tmp / "validation.csv", index=False)
        if test is not None:
            test.frame().to_csv(tmp / "test.csv", index=False)
        (tmp / "job.json").write_text(json.dumps({"model": name, "params": params, "val_size": f.h,
                                                  "num_threads": num_threads}))
        subprocess.run([nf_python, str(Path(__file__).resolve()), "--nf-worker", str(tmp)], check=True)
        out = json.loads((tmp / "out.json").read_text())
        forecasts = {
            split_name: (forecast_matrix(pd.read_csv(tmp / f"forecast_{split_name}.csv"), split.ids, f.h, column=name),
                         out["predict"][split_name])
            for split_name, split in (("validation", val), ("test", test)) if split is not None}
    valid = out["valid"]  # (step, validation loss) at every check
    best = min(valid, key=lambda v: v[1])[0] if valid else ""
    extra = {"epochs": out["steps"], "best_epoch": best, "series_trained": len(val.ids), "history": json.dumps(valid)}
    return {**params, **out["trainer"], "neuralforecast": out["version"]}, out["fit"], extra, forecasts


def nf_installed(nf_python: str | None) -> bool:
    """Whether ``nf_python`` runs and imports neuralforecast."""
    if not nf_python:
        return False
    try:
        done = subprocess.run([nf_python, "-c", "import neuralforecast"], capture_output=True, timeout=300)
    except OSError:
        return False
    return done.returncode == 0


def nf_worker(folder: str) -> None:
    """Fit and forecast in the neuralforecast environment (numpy, pandas, torch, neuralforecast only)."""
    import logging
    import warnings

    import torch

    warnings.filterwarnings("ignore")
    for logger in ("lightning", "lightning.pytorch", "lightning.fabric", "pytorch_lightning", "neuralforecast"):
        logging.getLogger(logger).setLevel(logging.ERROR)
    import neuralforecast
    from neuralforecast import NeuralForecast
    from neuralforecast.models import NBEATS, NHITS

    folder = Path(folder)
    job = json.loads((folder / "job.json").read_text())
    torch.set_num_threads(job["num_threads"])
    trainer = {"accelerator": "cpu", "enable_progress_bar": False, "logger": False,
               "enable_model_summary": False, "enable_checkpointing": False}
    model = {"NHITS": NHITS, "NBEATS": NBEATS}[job["model"]](**job["params"], **trainer)
    nf = NeuralForecast(models=[model], freq=1)
    began = time.perf_counter()
    nf.fit(pd.read_csv(folder / "validation.csv"), val_size=job["val_size"])
    fit_seconds = time.perf_counter() - began
    seconds = {}
    for split_name in ("validation", "test"):
        if (folder / f"{split_name}.csv").exists():
            began = time.perf_counter()
            forecast = nf.predict(df=pd.read_csv(folder / f"{split_name}.csv")).reset_index()
            seconds[split_name] = time.perf_counter() - began
            forecast[["unique_id", "ds", job["model"]]].to_csv(folder / f"forecast_{split_name}.csv", index=False)
    fitted_model = nf.models[0]
    train, valid = fitted_model.train_trajectories, fitted_model.valid_trajectories
    (folder / "out.json").write_text(json.dumps({
        "fit": fit_seconds, "predict": seconds, "steps": len(train),
        "valid": [[int(step), round(float(loss), 5)] for step, loss in valid], "version": neuralforecast.__version__,
        "trainer": {"accelerator": "cpu", "num_threads": job["num_threads"]}}))


# ---------------------------------------------------------------------- rows
def append(row: dict, path: Path = CSV) -> None:
    import csv

    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists() or path.stat().st_size == 0
    with open(path, "a", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        if new:
            writer.writerow(COLUMNS)
        writer.writerow([row.get(c, "") for c in COLUMNS])


def make_row(split, name, label, seed, split_name, fc, params, fit_s, predict_s, extra) -> dict:
    import m4_data
    from tsrsa.benchmarking.results import machine_description

    f = split.frequency
    score = m4_data.scores(split, fc)
    naive2 = m4_data.scores(split, np.stack([m4_data.naive2(split.history[s], f.m, f.h) for s in split.ids]))
    return {"date": datetime.date.today().isoformat(), "frequency": f.name, "model": name, "label": label,
            "seed": seed, "split": split_name, "smape": round(score["smape"], 4), "mase": round(score["mase"], 4),
            "owa": round(m4_data.owa(score, naive2), 4), "fit_seconds": round(fit_s, 2),
            "predict_seconds": round(predict_s, 2), "machine": machine_description(),
            "params": json.dumps(params, sort_keys=True, default=str), **extra}


# ---------------------------------------------------------------------- tables
def earlier_defaults(model: str, label: str, params: str) -> str:
    """Where a tsrsa row ran at parameters that are today no longer its class's defaults: the
    options set neither by the protocol, nor by the run, nor by its label, that differ from the
    current constructor's defaults ("batch_size=64"), or "" when none do. A row made before a change
    of defaults keeps what it ran, so it is never shown, nor averaged, as today's default."""
    import inspect

    if model not in NEURAL or not isinstance(params, str) or not params.startswith("{"):
        return ""
    import tsrsa

    ran = json.loads(params)
    named = {item.split("=")[0] for item in str(label).split(",")} - {"default"}
    if "naive_scaling" in named:
        named.add("scaler")
    signature = inspect.signature(getattr(tsrsa, NEURAL[model]).__init__)
    defaults = {name: p.default for name, p in signature.parameters.items() if p.default is not inspect.Parameter.empty}
    skip = RUN_KEYS | named
    differ = [f"{name}={ran[name]}" for name in sorted(ran) if name in defaults and name not in skip
              and json.dumps(ran[name], default=str) != json.dumps(defaults[name], default=str)]
    return ",".join(differ)


def read_rows(path: Path = CSV):
    """The results, one row per (frequency, model, label, seed, split, parameters that are no longer
    the defaults): a re-run replaces the row it repeats, not one made at earlier defaults."""
    if not path.exists() or path.stat().st_size == 0:
        return pd.DataFrame(columns=list(COLUMNS) + ["ran"])
    rows = pd.read_csv(path, dtype={"label": str, "model": str, "frequency": str, "split": str})
    rows["ran"] = [earlier_defaults(m, lab, par) for m, lab, par in zip(rows["model"], rows["label"], rows["params"])]
    return rows.drop_duplicates(subset=KEY + ["ran"], keep="last").reset_index(drop=True)


def _mean(values, digits=3) -> str:
    values = [v for v in values if v == v]
    if not values:
        return ""
    text = f"{np.mean(values):.{digits}f}"
    return text + (f" ± {np.std(values, ddof=1):.{digits}f}" if len(values) > 1 else "")


ORDER = ("SeasonalNaive", "Naive2", "Theta", "ETS", "ETS-adjusted", "DLinear", "LSTM", "Transformer", "RSA", "NHITS", "NBEATS")


def chosen_on_validation(part, model: str):
    """``model``'s configuration (label, ran) of lowest mean validation OWA among those that also
    have test rows, and those test rows; None when it has none."""
    rows = part[part["model"] == model]
    best = None
    for key, g in rows.groupby(["label", "ran"], sort=False):
        val, test = g[g["split"] == "validation"], g[g["split"] == "test"]
        if len(val) and len(test) and (best is None or val["owa"].mean() < best[0]):
            best = (val["owa"].mean(), key, test)
    return None if best is None else (best[1], best[2])


def tables(rows) -> str:
    """The RESULTS.md section: per frequency, validation and test figures per (model, label)."""
    import m4_data

    out = [
        "Global models on many short series: M4 Hourly (414 series, horizon 48, m = 24) and Weekly (359 series, "
        "horizon 13, m = 1 as in M4), the competition's train/test files.\n",
        "- Splits: *validation* scores the last h values of every training series from the values before "
        "them; *test* is the official test. Configurations are chosen on the validation columns only (a "
        "label's test columns are shown when it ran on both).",
        "- Metrics: sMAPE and MASE averaged over series, OWA relative to Naive2 on the same split. Our Naive2 "
        "reproduces the competition's published Naive2 (Hourly 18.383 / 2.395, Weekly 9.161 / 2.777).",
        "- Neural models: one global model per frequency, fitted once on the validation histories (input 168 "
        "Hourly, 52 Weekly; early stopping on the last h steps of each history, patience 3, at most 10 epochs, "
        "the library's defaults otherwise); the same model forecasts the test from the full training series. "
        "`naive_scaling`: each series enters in units of its in-sample naive MAE (MASE's units), "
        "`scaler=identity`. A label followed by \"ran at ...\" names the options at which a row ran where the "
        "library's default has changed since (every row's parameters are in the CSV).",
        "- Per series, refitted on the full training series for the test: Theta (statsmodels' ThetaModel, the "
        "competition's Theta) on the data seasonally adjusted as for Naive2; ETS (statsmodels' ETSModel, the "
        "smallest AIC of four forms, A/M errors, no or damped trend, with a season of m where the M4 test finds "
        "one, heuristic initial states); ETS-adjusted: the non-seasonal forms on the adjusted data.",
        "- NHITS and NBEATS: neuralforecast 3.3 in its own environment, robust scaler, input as ours, at most "
        "1,000 steps, early stopping on the same validation horizon, used as ours.",
        "- Wall time: fit + predict of all series on one CPU thread of a shared 2-core machine (mean over "
        "seeds); mean ± std over seeds elsewhere.\n"]
    for freq in [f for f in m4_data.FREQUENCIES if f in set(rows["frequency"])]:
        part = rows[rows["frequency"] == freq]
        out += [f"**{freq}**\n", "| model | label | seeds | validation sMAPE | validation MASE | validation OWA | "
                "test sMAPE | test MASE | test OWA | wall time (s) |", "|---|---|---|---|---|---|---|---|---|---|"]
        groups = part.groupby(["model", "label", "ran"], sort=False)
        keys = sorted(groups.groups, key=lambda k: (ORDER.index(k[0]) if k[0] in ORDER else 99, k[1] != "default",
                                                    k[1], k[2] != "", k[2]))
        for model, label, ran in keys:
            g = groups.get_group((model, label, ran))
            val, test = g[g["split"] == "validation"], g[g["split"] == "test"]
            wall = (test if len(test) else val)
            shown = f"{label} (ran at {ran})" if ran else label
            out.append(f"| {model} | {shown} | {max(len(val), len(test))} | {_mean(val['smape'])} | "
                       f"{_mean(val['mase'])} | {_mean(val['owa'])} | {_mean(test['smape'])} | {_mean(test['mase'])} | "
                       f"{_mean(test['owa'])} | {(wall['fit_seconds'] + wall['predict_seconds']).mean():.0f} |")
        winner = m4_data.WINNER.get(freq)
        if winner:
            out.append(f"| winner (Smyl, ES-RNN), published | | | | | | {winner['smape']:.3f} | {winner['mase']:.3f} | "
                       f"{winner['owa']:.3f} | |")
            chosen = chosen_on_validation(part, "RSA")
            if chosen is not None:
                (label, ran), rsa = chosen
                shown = f"{label}{f' ran at {ran}' if ran else ''}"
                out.append(f"\nGap of RSA ({shown}: the lowest validation OWA of its rows with a test) to the winner "
                           f"on the test: sMAPE {rsa['smape'].mean() - winner['smape']:+.3f}, MASE "
                           f"{rsa['mase'].mean() - winner['mase']:+.3f}, OWA {rsa['owa'].mean() - winner['owa']:+.3f}.")
        else:
            out.append("\nThe winner's Weekly figure is not quoted here (not checked against the M4 paper).")
        out.append("")
    dates = sorted(set(rows["date"].astype(str)))
    machines = sorted(set(rows["machine"].astype(str)))
    out.append(
        "Commands: `python benchmarks/m4.py --models SeasonalNaive,Naive2,Theta,ETS,ETS-adjusted`; `python benchmarks/m4.py "
        "--models RSA,Transformer,LSTM,DLinear --seeds 0 --num-threads 1`; `python benchmarks/m4.py --models "
        "NHITS,NBEATS --nf-python /work/nf-venv/bin/python` (neuralforecast in its own environment: "
        "`benchmarks/requirements-neuralforecast.txt`); a label other than `default` names the options changed "
        "(`--set name=value`). Every row's parameters are in `benchmarks/results/m4.csv`; this section: "
        f"`python benchmarks/m4.py --tables-only`. Runs of {', '.join(dates)} on {'; '.join(machines)}.")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------- command line
def parse_overrides(items: list[str]) -> dict:
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        try:
            out[name] = json.loads(value)
        except json.JSONDecodeError:
            out[name] = value
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frequencies", default="Hourly,Weekly")
    parser.add_argument("--models", default="SeasonalNaive,Naive2,Theta,ETS")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--splits", default="validation,test")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a neural model option")
    parser.add_argument("--naive-scaling", action="store_true",
                        help="neural models: series in units of their in-sample naive MAE (MASE's units)")
    parser.add_argument("--num-threads", type=int, default=1)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--nf-python", default=None, help="python of an environment with neuralforecast")
    parser.add_argument("--results", type=Path, default=CSV)
    parser.add_argument("--forecasts-dir", type=Path, default=None, help="also save each run's forecasts (.npz)")
    parser.add_argument("--tables-only", action="store_true")
    parser.add_argument("--nf-worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.nf_worker:
        nf_worker(args.nf_worker)
        return 0
    sys.path.insert(0, str(HERE))
    import m4_data
    from tsrsa.benchmarking.results import replace_section

    overrides = parse_overrides(args.set)
    models = args.models.split(",")
    if not args.tables_only and any(m in NF_MODELS for m in models) and not nf_installed(args.nf_python):
        print(f"neuralforecast not installed (--nf-python {args.nf_python or 'not given'}): "
              f"{', '.join(m for m in models if m in NF_MODELS)} skipped")
        models = [m for m in models if m not in NF_MODELS]
    items = sorted([item.strip() for item in args.set] + (["naive_scaling"] if args.naive_scaling else []))
    label = ",".join(items) or "default"  # options as written: learning_rate=1e-4
    if not args.tables_only:
        if not m4_data.available(args.data_dir):
            print(f"M4 files not found under {m4_data.data_dir(args.data_dir) / 'm4'}; nothing to run")
            return 0
        splits = args.splits.split(",")
        for freq in args.frequencies.split(","):
            loaded = {name: m4_data.load_split(freq, name, args.data_dir) for name in ("validation", "test")}
            for name in models:
                for seed in ([0] if name in STATISTICAL else [int(s) for s in args.seeds.split(",")]):
                    val, test = loaded["validation"], loaded["test"] if "test" in splits else None
                    if name in STATISTICAL:
                        runs, row_label = {}, "default"
                        for split_name in splits:
                            fc, params, fit_s, pred_s = m4_data.run_statistical(loaded[split_name], name)
                            runs[split_name] = (fc, params, fit_s, pred_s, {"series_trained": len(val.ids)})
                    else:
                        if name in NF_MODELS:
                            params, fit_s, extra, forecasts = run_nf(val, test, name, seed, overrides, args.nf_python,
                                                                     args.num_threads)
                        else:
                            params, fit_s, extra, forecasts = run_neural(val, test, name, seed, overrides,
                                                                         args.num_threads, args.naive_scaling)
                        runs = {k: (fc, params, fit_s, pred_s, extra) for k, (fc, pred_s) in forecasts.items()}
                        row_label = label
                    for split_name, (fc, params, fit_s, pred_s, extra) in runs.items():
                        split = loaded[split_name]
                        row = make_row(split, name, row_label, seed, split_name, fc, params, fit_s, pred_s, extra)
                        append(row, args.results)
                        if args.forecasts_dir:
                            args.forecasts_dir.mkdir(parents=True, exist_ok=True)
                            np.savez(args.forecasts_dir / f"{freq}_{split_name}_{name}_{row_label}_{seed}.npz",
                                     ids=np.array(split.ids), forecasts=fc, actuals=split.actuals())
                        print(f"{freq} {split_name} {name} [{row_label}] seed {seed}: sMAPE {row['smape']:.3f} "
                              f"MASE {row['mase']:.3f} OWA {row['owa']:.3f} ({fit_s + pred_s:.0f} s)", flush=True)
    rows = read_rows(args.results)
    if len(rows) and args.results == CSV:
        replace_section(HERE / "RESULTS.md", "m4", tables(rows), title="Global models on M4 (Hourly, Weekly)")
    elif len(rows):
        print(tables(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
