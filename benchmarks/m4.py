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
the best epoch kept) and the library's defaults otherwise, its budget included; input 168
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

The pieces are the library's: the files, splits and scores in ``tsrsa.benchmarking.m4``, Naive2 in
``tsrsa.benchmarking.naive2``, the statistical references in ``tsrsa.benchmarking.m4_references``,
the global model in ``tsrsa.benchmarking.m4_global``; neuralforecast's side is ``m4_neuralforecast.py``.
This script runs them, writes the rows and renders the RESULTS.md section.
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from m4_neuralforecast import NF_MODELS, nf_installed, run_nf
from tsrsa.benchmarking.folders import data_folder
from tsrsa.benchmarking.m4 import FREQUENCIES, WINNER, available, load_split, scores_with_owa
from tsrsa.benchmarking.m4_global import MODEL_SETS, NEURAL, RUN_KEYS, forecaster_class, run_global_model, run_model_set
from tsrsa.benchmarking.m4_references import REFERENCES as STATISTICAL
from tsrsa.benchmarking.m4_references import run_statistical
from tsrsa.benchmarking.results import machine_description, replace_section

HERE = Path(__file__).resolve().parent
CSV = HERE / "results" / "m4.csv"
COLUMNS = ("date", "frequency", "model", "label", "seed", "split", "smape", "mase", "owa", "fit_seconds",
           "predict_seconds", "epochs", "best_epoch", "series_trained", "machine", "params", "history")
KEY = ["frequency", "model", "label", "seed", "split"]


def data_dir(explicit=None) -> Path:
    """``--data-dir``, else ``TSRSA_DATA_DIR``, else ``../shared/datasets`` beside the checkout."""
    return data_folder(explicit, HERE.parents[1] / "shared" / "datasets")


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
    """The row of ``results/m4.csv`` of one run on one split (scores rounded to 4 decimals)."""
    f = split.frequency
    score = scores_with_owa(split, fc)
    return {"date": datetime.date.today().isoformat(), "frequency": f.name, "model": name, "label": label,
            "seed": seed, "split": split_name, "smape": round(score["smape"], 4), "mase": round(score["mase"], 4),
            "owa": round(score["owa"], 4), "fit_seconds": round(fit_s, 2),
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
    ran = json.loads(params)
    named = {item.split("=")[0] for item in str(label).split(",")} - {"default"}
    if "naive_scaling" in named:
        named.add("scaler")
    signature = inspect.signature(forecaster_class(model).__init__)
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


ORDER = ("SeasonalNaive", "Naive2", "Theta", "ETS", "ETS-adjusted", "DLinear", "LSTM", "Transformer", "RSA", "Auto",
         "NHITS", "NBEATS")


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
    out = [
        "Global models on many short series: M4 Hourly (414 series, horizon 48, m = 24) and Weekly (359 series, "
        "horizon 13, m = 1 as in M4), the competition's train/test files.\n",
        "- Splits: *validation* scores the last h values of every training series from the values before "
        "them; *test* is the official test. Configurations are chosen on the validation columns only (a "
        "label's test columns are shown when it ran on both).",
        "- Metrics: sMAPE and MASE averaged over series, OWA relative to Naive2 on the same split. Our Naive2 "
        "reproduces the competition's published Naive2 (Hourly 18.383 / 2.395, Weekly 9.161 / 2.777).",
        "- Neural models: one global model per frequency, fitted once on the validation histories (input 168 "
        "Hourly, 52 Weekly; early stopping on the last h steps of each history, the library's defaults "
        "otherwise, its budget included: 10 epochs of 400 batches, patience 3; rows before 2026-11-27 ran "
        "10 whole passes, `max_epochs=10`); the same model forecasts the test from the full training series. "
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
    for freq in [f for f in FREQUENCIES if f in set(rows["frequency"])]:
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
        winner = WINNER.get(freq)
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
    args = parser.parse_args(argv)
    overrides = parse_overrides(args.set)
    models = args.models.split(",")
    if not args.tables_only and any(m in NF_MODELS for m in models) and not nf_installed(args.nf_python):
        print(f"neuralforecast not installed (--nf-python {args.nf_python or 'not given'}): "
              f"{', '.join(m for m in models if m in NF_MODELS)} skipped")
        models = [m for m in models if m not in NF_MODELS]
    items = sorted([item.strip() for item in args.set] + (["naive_scaling"] if args.naive_scaling else []))
    label = ",".join(items) or "default"  # options as written: learning_rate=1e-4
    if not args.tables_only:
        if not available(data_dir(args.data_dir)):
            print(f"M4 files not found under {data_dir(args.data_dir) / 'm4'}; nothing to run")
            return 0
        splits = args.splits.split(",")
        for freq in args.frequencies.split(","):
            loaded = {name: load_split(freq, name, data_dir(args.data_dir)) for name in ("validation", "test")}
            for name in models:
                for seed in ([0] if name in STATISTICAL else [int(s) for s in args.seeds.split(",")]):
                    val, test = loaded["validation"], loaded["test"] if "test" in splits else None
                    if name in STATISTICAL:
                        runs, row_label = {}, "default"
                        for split_name in splits:
                            fc, params, fit_s, pred_s = run_statistical(loaded[split_name], name)
                            runs[split_name] = (fc, params, fit_s, pred_s, {"series_trained": len(val.ids)})
                    else:
                        if name in NF_MODELS:
                            params, fit_s, extra, forecasts = run_nf(val, test, name, seed, overrides, args.nf_python,
                                                                     args.num_threads)
                        elif name in MODEL_SETS:
                            params, fit_s, extra, forecasts = run_model_set(val, test, name, seed, overrides,
                                                                            args.num_threads)
                        else:
                            params, fit_s, extra, forecasts = run_global_model(val, test, name, seed, overrides,
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
