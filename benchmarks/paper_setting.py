"""The RSA paper's own setting, bounded: a vanilla transformer, one token per time step, no RevIN, with and
without REM heads, on ETTh1's OT (univariate) at horizons 24, 48 and 168.

    python benchmarks/paper_setting.py                       # horizons 24,48,168, seeds 0,1
    python benchmarks/paper_setting.py --horizons 24 --seeds 0 --no-write

Both models are the library's patch transformer at ``patch_len=1`` (one token per step) and
``revin=False``: ``TransformerForecaster`` (softmax attention) and ``RSAForecaster`` (the same network
with REM heads, started from the data), the library's defaults otherwise (input 96 steps, the training
budget in optimiser steps, early stopping on the protocol's validation rows). The data are the
long-horizon protocol's (12 months of training, 4 of validation, 4 of test, scaled on the training
rows); scores are MSE and MAE over every stride-1 test window, in those scaled units. Each finished
run appends a row to ``benchmarks/results/paper_setting.csv`` with its explicit parameters.
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

import tsrsa  # noqa: E402
from tsrsa.benchmarking.protocol import fit_frame, load_protocol_data, prepare, validation_size  # noqa: E402
from tsrsa.benchmarking.results import append_rows, machine_description, replace_section  # noqa: E402
from tsrsa.benchmarking.runner import best_epoch  # noqa: E402
from tsrsa.benchmarking.scoring import window_views  # noqa: E402
from tsrsa.estimator.trainer import flat_params  # noqa: E402

CSV = HERE / "results" / "paper_setting.csv"
MODELS = {"Transformer": tsrsa.TransformerForecaster, "RSA": tsrsa.RSAForecaster}
SETTING = {"patch_len": 1, "revin": False, "input_size": 96}
COLUMNS = ("date", "horizon", "model", "seed", "mse", "mae", "best_epoch", "fit_seconds", "machine", "params")


def univariate(channel: str = "OT"):
    """ETTh1's ``channel`` alone, split and scaled as the long-horizon protocol does."""
    data = load_protocol_data("ETTh1")
    j = data.channels.index(channel)
    raw = data.scaled[:, [j]] * data.std[j] + data.mean[j]
    return prepare("ETTh1", raw, [channel], SETTING["input_size"])


def scores(model, data, h: int) -> tuple[float, float]:
    memory = model.memory_
    x, y = window_views(data, 0, h, lookback=memory.tails.shape[1])  # (n, T), (n, h)
    ones = np.ones(len(x))
    yhat = np.asarray(model.forecast_windows(x, memory.loc[0] * ones, memory.scale[0] * ones, h)["yhat"])
    return float(np.square(yhat - y).mean()), float(np.abs(yhat - y).mean())


def run(data, h: int, name: str, seed: int) -> dict:
    v = validation_size(data, h)
    frame = fit_frame(data, 0, data.borders.train_end + v)
    model = MODELS[name](h=h, val_size=v, random_state=seed, trainer={"num_threads": 1}, **SETTING)
    began = time.perf_counter()
    model.fit(frame)
    seconds = time.perf_counter() - began
    mse, mae = scores(model, data, h)
    return {"date": dt.date.today().isoformat(), "horizon": h, "model": name, "seed": seed, "mse": round(mse, 6),
            "mae": round(mae, 6), "best_epoch": best_epoch(model), "fit_seconds": round(seconds, 1),
            "machine": machine_description() + ", 1 thread",
            # every option by its own name, as before 0.15
            "params": json.dumps(flat_params(model.get_params(), type(model)), sort_keys=True, default=str)}


def section(table: pd.DataFrame) -> str:
    lines = ["What: the RSA paper's setting, bounded: the patch transformer at one token per step "
             "(`patch_len=1`), without RevIN (`revin=False`), input 96, softmax (Transformer) against REM heads "
             "(RSA), the library's defaults otherwise, on ETTh1's OT alone (the long-horizon protocol's split and "
             "scaling). Test MSE / MAE, mean over seeds.\n",
             "| h | seeds | Transformer MSE | RSA MSE | RSA / Transformer | Transformer MAE | RSA MAE | RSA wins |",
             "|---|---|---|---|---|---|---|---|"]
    for h, g in table.groupby("horizon"):
        wide = g.pivot_table(index="seed", columns="model", values=["mse", "mae"])
        if ("mse", "RSA") not in wide or ("mse", "Transformer") not in wide:
            continue
        paired = wide.dropna()
        t, r = paired[("mse", "Transformer")], paired[("mse", "RSA")]
        lines.append(f"| {h} | {len(paired)} | {t.mean():.4f} | {r.mean():.4f} | {r.mean() / t.mean():.3f} | "
                     f"{paired[('mae', 'Transformer')].mean():.4f} | {paired[('mae', 'RSA')].mean():.4f} | "
                     f"{int((r < t).sum())}/{len(paired)} |")
    lines.append(f"\nCommand: `python benchmarks/paper_setting.py`. Date: {table['date'].max()}. Machine: "
                 f"{table['machine'].iloc[-1]}. Rows: "
                 "[`benchmarks/results/paper_setting.csv`](results/paper_setting.csv).")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizons", default="24,48,168")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--models", default="Transformer,RSA")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--tables-only", action="store_true", help="the RESULTS.md section from the CSV")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    data = None if args.tables_only else univariate()
    for seed in ([] if args.tables_only else (int(s) for s in args.seeds.split(","))):
        for h in (int(x) for x in args.horizons.split(",")):
            for name in args.models.split(","):
                row = run(data, h, name, seed)
                print({k: row[k] for k in COLUMNS if k not in ("params", "machine")}, flush=True)
                if not args.no_write:
                    append_rows(CSV, [row], columns=COLUMNS)  # one row per finished run
    if not args.no_write and CSV.exists():
        text = section(pd.read_csv(CSV))
        print(text)
        replace_section(HERE / "RESULTS.md", "paper-setting", text,
                        title="The paper's own setting: one token per step, no RevIN")


if __name__ == "__main__":
    main()
