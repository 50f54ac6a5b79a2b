"""T2R: swap a trained softmax forecaster's attention for learned relu features, then finetune.

    python benchmarks/bench_t2r.py --dataset ETTh1,ETTh2 --horizons 96,336 --seeds 0,1,2 --feature-sizes 16,32,64
    python benchmarks/bench_t2r.py --tables-only

Per data set, horizon and seed, on the long-horizon protocol (input 96, Time-Series-Library's
splits, the model's file in ``benchmarks/configs/``):

- original: the configuration in the streaming configuration (``stream=True``: causal softmax,
  ALiBi positions, latest-state readout), so that the conversion changes the kernel alone;
- converted: ``tsrsa.convert.to_recurrent(original, training frame, feature_size=k)``, finetuned
  with the configuration's own budget (at most 10 epochs, patience 3, its learning rate); the
  original's ALiBi slopes become the decay of the T2R state (the table's "T2R positions");
- scratch: the converted architecture (``clone``) trained from its initialisation for as many
  epochs as the original and the finetuning ran together (patience as configured).

Each row keeps the test MSE/MAE of the protocol's windows, the best validation loss, the epochs
run and the best epoch; a converted row also the first finetuning epoch whose validation loss is
within 1% of the original's best (empty when none is). Rows go to ``benchmarks/results/t2r.csv``
as each fit ends; the RESULTS.md section "t2r" pairs them by seed. The cost of a streaming update
against the history's length, softmax cache against T2R state, is ``bench_streaming.py``'s table
(``--kinds softmax,t2r``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parents[1] / "shared" / "datasets"
CSV = HERE / "results" / "t2r.csv"
COLUMNS = ("date", "dataset", "horizon", "model", "seed", "role", "feature_size", "val_loss", "mse", "mae",
           "epochs_run", "best_epoch", "epochs_to_1pct", "train_seconds", "params")
WITHIN = 0.01  # "near the original": a validation loss within 1% of its best


def epochs_to_within(history, target: float) -> int | None:
    """The first epoch whose validation loss is at most ``(1 + WITHIN) * target``; None if none is."""
    reached = history.loc[history["val_loss"] <= (1 + WITHIN) * target, "epoch"]
    return int(reached.iloc[0]) if len(reached) else None


def _row(role: str, estimator, data, h: int, seed: int, seconds: float, feature_size=None, target=None) -> dict:
    from tsrsa.benchmarking.results import explicit_params
    from tsrsa.benchmarking.runner import best_epoch, best_val_loss
    from tsrsa.benchmarking.scoring import score_model

    score = score_model(estimator, data, h)
    history = estimator.fit_history_
    return {"date": datetime.date.today().isoformat(), "dataset": data.name, "horizon": h,
            "model": type(estimator).__name__, "seed": seed, "role": role,
            "feature_size": "" if feature_size is None else feature_size,
            "val_loss": round(best_val_loss(estimator), 6), "mse": round(score.mse, 6), "mae": round(score.mae, 6),
            "epochs_run": len(history), "best_epoch": best_epoch(estimator),
            "epochs_to_1pct": "" if target is None else (epochs_to_within(history, target) or ""),
            "train_seconds": round(seconds, 1), "params": explicit_params(estimator)}


def run_cell(data, model: str, h: int, seed: int, feature_sizes, *, num_threads: int | None = 1,
             params: dict | None = None, configs=HERE / "configs", write=None) -> list[dict]:
    """The original, then per feature size the converted and the from-scratch model; ``write(row)``
    sees each row as its fit ends. Returns the rows."""
    from sklearn.base import clone

    from tsrsa.benchmarking.configs import load_config
    from tsrsa.benchmarking.protocol import fit_frame, validation_size
    from tsrsa.benchmarking.runner import build_estimator
    from tsrsa.convert import to_recurrent

    write = write or (lambda row: None)
    config = load_config(model, configs)
    v = validation_size(data, h)
    frame = fit_frame(data, 0, data.borders.train_end + v)
    original = build_estimator(config, data, h, seed=seed, overrides={"stream": True, **(params or {})}, val_size=v,
                               num_threads=num_threads)
    began = time.perf_counter()
    original.fit(frame)
    rows = [_row("original", original, data, h, seed, time.perf_counter() - began)]
    write(rows[-1])
    target = rows[0]["val_loss"]
    for k in feature_sizes:
        began = time.perf_counter()
        converted = to_recurrent(original, frame, feature_size=k)
        rows.append(_row("converted", converted, data, h, seed, time.perf_counter() - began, k, target))
        write(rows[-1])
        budget = rows[0]["epochs_run"] + rows[-1]["epochs_run"]
        scratch = clone(converted).set_params(max_epochs=budget)
        began = time.perf_counter()
        scratch.fit(frame)
        rows.append(_row("scratch", scratch, data, h, seed, time.perf_counter() - began, k, target))
        write(rows[-1])
    return rows


def positions(params: str) -> str:
    """How a T2R row's model places its tokens: "ALiBi decay" (the original's ALiBi slopes as the
    state's decay) or "none" (causal order alone, as T2R was first written); "" for a softmax row."""
    ran = json.loads(params)
    if ran.get("t2r_features") is not None:  # RSA's T2R branch: the streaming configuration's ALiBi applies
        return "ALiBi decay" if ran.get("stream") else "none"
    if ran.get("attention") != "t2r":
        return ""
    return "ALiBi decay" if (ran.get("attention_options") or {}).get("alibi") else "none"


def table(path: Path) -> str:
    import numpy as np
    import pandas as pd

    runs = pd.read_csv(path)
    runs["positions"] = [positions(p) for p in runs["params"]]
    runs = runs.drop_duplicates(["dataset", "horizon", "model", "seed", "role", "feature_size", "positions"],
                                keep="last")
    runs["feature_size"] = runs["feature_size"].fillna(-1).astype(int)
    original = runs[runs.role == "original"].set_index(["dataset", "horizon", "model", "seed"])
    lines = ["| data set | H | model | k | T2R positions | seeds | original MSE | converted MSE | scratch MSE "
             "| converted ÷ original | scratch ÷ original | finetune epochs to within 1% of the original's "
             "validation loss | scratch: best epoch of | epochs (original + finetune) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    keys = ["dataset", "horizon", "model", "feature_size", "positions"]
    for key, part in runs[runs.role != "original"].groupby(keys):
        conv = part[part.role == "converted"].set_index("seed")
        scratch = part[part.role == "scratch"].set_index("seed")
        seeds = sorted(set(conv.index) & set(scratch.index))
        orig = original.loc[[(key[0], key[1], key[2], s) for s in seeds]] if seeds else None
        if not seeds:
            continue
        o, c, s = orig["mse"].to_numpy(), conv.loc[seeds, "mse"].to_numpy(), scratch.loc[seeds, "mse"].to_numpy()
        reached = conv.loc[seeds, "epochs_to_1pct"]
        reached_text = ", ".join("not reached" if pd.isna(x) or x == "" else str(int(float(x))) for x in reached)
        best = ", ".join(f"{int(b)} of {int(e)}" for b, e in zip(scratch.loc[seeds, "best_epoch"],
                                                                 scratch.loc[seeds, "epochs_run"]))
        epochs = ", ".join(f"{int(a)} + {int(b)}" for a, b in zip(orig["epochs_run"], conv.loc[seeds, "epochs_run"]))
        lines.append(f"| {key[0]} | {key[1]} | {key[2].replace('Forecaster', '')} | {key[3]} | {key[4]} | "
                     f"{', '.join(map(str, seeds))} | {o.mean():.4f} | {c.mean():.4f} | {s.mean():.4f} | "
                     f"{np.exp(np.mean(np.log(c / o))):.3f} | {np.exp(np.mean(np.log(s / o))):.3f} | {reached_text} | "
                     f"{best} | {epochs} |")
    dates = ", ".join(sorted(runs["date"].astype(str).unique()))
    return ("Test MSE on the protocol's windows (input 96, scaled data), means over the seeds given; ratios are "
            "geometric means over those seeds. *original*: the benchmark configuration with `stream=True` (causal "
            "softmax with ALiBi positions); *converted*: `tsrsa.convert.to_recurrent(original, training frame, "
            "feature_size=k)`, T2R features per head, every other weight copied, then finetuned with the "
            "configuration's budget (at most 10 epochs, patience 3); *scratch*: the same T2R architecture trained "
            "from its initialisation for as many epochs as original and finetuning together. *T2R positions*: "
            "`ALiBi decay`, the original's ALiBi slopes m carried over as a decay of the T2R state by exp(−m) per "
            "token (the default); `none`, causal order alone. Every row's "
            "parameters are in `benchmarks/results/t2r.csv`.\n\n" + "\n".join(lines) + "\n\n"
            f"Made by `python benchmarks/bench_t2r.py` on {dates}. Update cost and memory against the history's "
            f"length: the section \"streaming-speed\" (kinds `softmax` and `t2r`).")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="ETTh1,ETTh2")
    parser.add_argument("--models", default="Transformer", help="configurations with softmax attention: "
                                                               "Transformer, RSA")
    parser.add_argument("--horizons", default="96,336")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--feature-sizes", default="32")
    parser.add_argument("--num-threads", type=int, default=1)
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args(argv)
    if "TSRSA_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
        os.environ["TSRSA_DATA_DIR"] = str(SHARED_DATA)
    from tsrsa.benchmarking.protocol import load_protocol_data
    from tsrsa.benchmarking.results import replace_section, row_writer

    write = row_writer(CSV, COLUMNS)

    if not args.tables_only:
        sizes = [int(x) for x in args.feature_sizes.split(",")]
        for dataset in args.dataset.split(","):
            data = load_protocol_data(dataset)
            for h in (int(x) for x in args.horizons.split(",")):
                for seed in (int(x) for x in args.seeds.split(",")):
                    for model in args.models.split(","):
                        run_cell(data, model, h, seed, sizes, num_threads=args.num_threads, write=write)
    if CSV.exists():
        replace_section(HERE / "RESULTS.md", "t2r", table(CSV),
                        title="T2R: a trained softmax forecaster turned recurrent (swap, then finetune)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
