"""What the streaming configuration costs in accuracy, against the fixed-window backbone.

    python benchmarks/streaming_accuracy.py --dataset ETTh1,ETTh2 --models RSA,Transformer --horizons 96,336 \\
        --seeds 0,1,2 --num-threads 1
    python benchmarks/streaming_accuracy.py --tables-only

Each run fits the model's benchmark configuration (``benchmarks/configs/<model>.json``) with
``stream=True`` on the long-horizon protocol (input 96, the Time-Series-Library splits) and scores
the test windows two ways:

- window: each test window's 96 inputs from a fresh state, the protocol's own scoring, so the
  model sees exactly the context of the fixed-window model (this is its ``ltsf.csv`` row, variant
  ``stream=True``);
- streamed: each channel streamed from its first row, each test window forecast from the state
  after the row before it, the predictor ``update()`` serves (every row of history in its state).

Rows go to ``benchmarks/results/streaming_accuracy.csv`` (both scores, with the parameters that
ran, and the network configuration they resolved to, attention options included) and ``ltsf.csv``
(the window score); the RESULTS.md section "streaming-accuracy" pairs them by seed with the
fixed-window rows of the same configuration.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parents[1] / "shared" / "datasets"
CSV = HERE / "results" / "streaming_accuracy.csv"
COLUMNS = ("date", "dataset", "horizon", "model", "label", "seed", "val_loss", "mse_window", "mae_window",
           "mse_streamed", "mae_streamed", "train_seconds", "best_epoch", "device", "params", "network")


def run(dataset: str, model: str, h: int, seed: int, num_threads: int | None, extra: dict | None = None) -> dict:
    from tsrsa.benchmarking.configs import load_config
    from tsrsa.benchmarking.protocol import fit_frame, load_protocol_data, validation_size
    from tsrsa.benchmarking.results import explicit_params
    from tsrsa.benchmarking.runner import best_epoch, best_val_loss, build_estimator, device_label
    from tsrsa.benchmarking.scoring import score_model, score_streamed

    config = load_config(model, HERE / "configs")
    data = load_protocol_data(dataset)
    v = validation_size(data, h)
    overrides = {"stream": True, **(extra or {})}
    estimator = build_estimator(config, data, h, seed=seed, overrides=overrides, val_size=v, num_threads=num_threads)
    began = time.perf_counter()
    estimator.fit(fit_frame(data, 0, data.borders.train_end + v))
    seconds = time.perf_counter() - began
    window, streamed = score_model(estimator, data, h), score_streamed(estimator, data, h)
    return {
        "date": datetime.date.today().isoformat(), "dataset": dataset, "horizon": h, "model": type(estimator).__name__,
        "label": config.variant_label("default", overrides), "seed": seed,
        "val_loss": round(best_val_loss(estimator), 6), "mse_window": round(window.mse, 6),
        "mae_window": round(window.mae, 6),
        "mse_streamed": round(streamed.mse, 6), "mae_streamed": round(streamed.mae, 6),
        "train_seconds": round(seconds, 1), "best_epoch": best_epoch(estimator), "device": device_label(estimator),
        "params": explicit_params(estimator),
        "network": json.dumps(dataclasses.asdict(estimator.network_.config), sort_keys=True),
        "_ltsf": {"dataset": dataset, "horizon": h, "model": type(estimator).__name__,
                  "variant": config.variant_label("default", overrides), "seed": seed, "mse": window.mse,
                  "mae": window.mae, "input_size": data.input_size, "train_fraction": 1.0,
                  "device": device_label(estimator), "train_seconds": round(seconds, 2),
                  "best_epoch": best_epoch(estimator), "val_loss": best_val_loss(estimator),
                  "params": explicit_params(estimator)},
    }


@functools.cache
def _config(name: str):
    """The benchmark configuration of ``name`` (read once)."""
    from tsrsa.benchmarking.configs import load_config

    return load_config(name, HERE / "configs")


def named_run(model: str, params: str, stream: bool = True) -> str:
    """A run's configuration named against today's benchmark configuration (``stream=False``: the
    fixed-window variant, in ``ltsf.csv``, that it differs from only in ``stream``); a run made before
    the statistical start existed ran without one (``start=null``). ``readout_tokens`` is left out: a
    stream forecasts from every token, and the fixed-window rows' names do not carry it."""
    from tsrsa.benchmarking.configs import HARNESS_PARAMS

    config = _config(model.removesuffix("Forecaster"))
    ran = {"start": None, **json.loads(params)}
    ran = {k: v for k, v in ran.items()
           if k not in HARNESS_PARAMS and k != "readout_tokens" and (stream or k != "stream")}
    return config.variant_label("default", ran)


def table(csv_path: Path, ltsf_path: Path) -> str:
    import pandas as pd

    from tsrsa.benchmarking.results import read_results

    runs = pd.read_csv(csv_path).drop_duplicates(["dataset", "horizon", "model", "label", "seed"], keep="last")
    runs["label"] = [named_run(m, p) for m, p in zip(runs["model"], runs["params"])]
    runs["fixed"] = [named_run(m, p, stream=False) for m, p in zip(runs["model"], runs["params"])]
    fixed = read_results(ltsf_path)
    fixed = fixed[(fixed["train_fraction"] == 1.0) & (fixed["input_size"] == 96)]
    lines = ["| dataset | horizon | model | configuration | seeds | validation loss | fixed window "
             "| stream, window scoring | stream, streamed | window − fixed | streamed − fixed |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (dataset, h, model, label), group in runs.groupby(["dataset", "horizon", "model", "label"], sort=True):
        ref = fixed[(fixed["dataset"] == dataset) & (fixed["horizon"] == h) & (fixed["model"] == model)
                    & (fixed["variant"] == group["fixed"].iloc[-1])]
        both = group.merge(ref[["seed", "mse"]], on="seed", how="left")
        paired = both.dropna(subset=["mse"])

        def ms(values):
            values = pd.Series(values).dropna()
            if values.empty:
                return ""
            return f"{values.mean():.3f}" + (f" ± {values.std(ddof=1):.3f}" if len(values) > 1 else "")

        lines.append(f"| {dataset} | {h} | {model.replace('Forecaster', '')} | `{label}` | {len(group)} "
                     f"| {ms(group['val_loss'])} | {ms(both['mse'])} "
                     f"| {ms(group['mse_window'])} | {ms(group['mse_streamed'])} "
                     f"| {ms(paired['mse_window'] - paired['mse'])} | {ms(paired['mse_streamed'] - paired['mse'])} |")
    dates = sorted(runs["date"].unique())
    machine = runs["device"].iloc[0] if len(runs) else ""
    return (
        "Test MSE on the scaled data (input 96, Time-Series-Library protocol), mean ± std over seeds; the "
        "differences are paired by seed with the fixed-window rows of the same configuration (`ltsf.csv`, "
        "the variant named by the same options but `stream`). The streaming configuration: `stream=True` on "
        "the benchmark configuration "
        "(causal mixing without positions, running normalisation, every token forecasting the steps after "
        "it). *Window scoring* reads each test window's 96 inputs from a fresh state, as the fixed model "
        "does; *streamed* forecasts each window from the state after every earlier row, the predictor "
        "`update()` serves (the softmax cache unbounded).\n\n" + "\n".join(lines) + "\n\n"
        f"Runs: `python benchmarks/streaming_accuracy.py --dataset D --models RSA,Transformer --horizons 96,336 "
        f"--seeds 0,1,2 --num-threads 1 [--params JSON]` on {', '.join(dates)} ({machine}); the parameters of "
        f"every run are in "
        f"`benchmarks/results/streaming_accuracy.csv`; table: `python benchmarks/streaming_accuracy.py --tables-only`."
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="ETTh1,ETTh2")
    parser.add_argument("--models", default="RSA,Transformer")
    parser.add_argument("--horizons", default="96,336")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--num-threads", type=int, default=1)
    parser.add_argument("--params", type=json.loads, default={},
                        help="extra options on top of stream=True, as JSON (e.g. '{\"readout_tokens\": 1}')")
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args(argv)
    if "TSRSA_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
        os.environ["TSRSA_DATA_DIR"] = str(SHARED_DATA)
    from tsrsa.benchmarking.results import append_rows, replace_section

    if not args.tables_only:
        for dataset in args.dataset.split(","):
            for h in (int(x) for x in args.horizons.split(",")):
                for seed in (int(x) for x in args.seeds.split(",")):
                    for model in args.models.split(","):
                        row = run(dataset, model, h, seed, args.num_threads, args.params)
                        append_rows(HERE / "results" / "ltsf.csv", [row.pop("_ltsf")])
                        append_rows(CSV, [row], columns=COLUMNS)
                        print(f"{dataset} H{h} {model} seed {seed}: window {row['mse_window']:.4f} "
                              f"streamed {row['mse_streamed']:.4f} ({row['train_seconds']} s)", flush=True)
    if CSV.exists():
        replace_section(HERE / "RESULTS.md", "streaming-accuracy", table(CSV, HERE / "results" / "ltsf.csv"),
                        title="Streaming configuration: what it costs in accuracy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
