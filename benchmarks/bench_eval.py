"""Evaluation figures: quantile coverage on ETTh1's test split, and cross-validation speed.

    python benchmarks/bench_eval.py [--models DLinear,LSTM] [--horizon 96] [--num-threads 1]
                                    [--only coverage|cv]

Coverage: each model (its long-horizon configuration in benchmarks/configs/, with
``loss="quantile"`` and levels 0.1/0.5/0.9) fits ETTh1's seven channels (train rows, the last
``val_size`` of the train+validation rows held out for early stopping, as benchmarks/ltsf.py does)
and forecasts every test window of every channel; the table gives the share of test values inside
the 10-90% band (nominal 0.80), below q10 and above q90 (nominal 0.10 each), the mean pinball
loss and the median's MSE/MAE on the scaled values.

Cross-validation speed: a TransformerForecaster (one epoch) on ETTh1's train+validation rows;
``cross_validate(n_windows=W, step_size=1)`` without refitting scores W cutoffs per channel. The
time it spends beyond its one fit is compared with one validation pass over the same number of
windows (the training loop's ``evaluate_loss`` with the model's inference batches).

Writes benchmarks/results/quantile_coverage.csv, benchmarks/results/cv_speed.csv and the
"quantile-coverage" and "cv-speed" sections of benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from tsrsa.benchmarking import load_protocol_data
from tsrsa.benchmarking.configs import load_config
from tsrsa.benchmarking.protocol import fit_frame, validation_size
from tsrsa.benchmarking.results import machine_description, replace_section
from tsrsa.benchmarking.runner import build_estimator
from tsrsa.benchmarking.scoring import window_views
from tsrsa.estimator.params import quantile_column
from tsrsa.metrics import mae, mse, pinball

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parents[1] / "shared" / "datasets"  # the shared data folder beside the checkout
LEVELS = (0.1, 0.5, 0.9)


def coverage_row(name: str, data, h: int, seed: int, num_threads: int | None) -> dict:
    """Fit one quantile model on ``data`` and score its bands over every test window."""
    config = load_config(name, HERE / "configs")
    v = validation_size(data, h)
    model = build_estimator(config, data, h, seed=seed, overrides={"loss": "quantile", "quantiles": list(LEVELS)},
                            val_size=v, num_threads=num_threads)
    began = time.perf_counter()
    model.fit(fit_frame(data, 0, data.borders.train_end + v))
    seconds = time.perf_counter() - began
    memory = model.memory_
    where = memory.ids.get_indexer(data.channels)
    parts = []  # (targets, q10, q50, q90) of every test window of each channel
    for c, i in enumerate(where):
        x, y = window_views(data, c, h, lookback=memory.tails.shape[1])
        n = len(x)
        cols = model.forecast_windows(x, np.full(n, memory.loc[i]), np.full(n, memory.scale[i]), h)
        parts.append([y.ravel(), *(np.ravel(cols[quantile_column(q)]) for q in LEVELS)])
    y, lo, mid, hi = (np.concatenate(column) for column in zip(*parts))
    return {"dataset": data.name, "horizon": h, "model": type(model).__name__, "seed": seed,
            "coverage_10_90": float(np.mean((y >= lo) & (y <= hi))), "below_q10": float(np.mean(y < lo)),
            "above_q90": float(np.mean(y > hi)),
            "pinball": float(np.mean([pinball(y, pred, q) for q, pred in zip(LEVELS, (lo, mid, hi))])),
            "mse_q50": mse(y, mid), "mae_q50": mae(y, mid), "n_values": y.size, "train_seconds": round(seconds, 1)}


def cv_speed_row(data, h: int, n_windows: int, num_threads: int | None, repeats: int = 3) -> dict:
    """Seconds of cross-validation beyond its fit versus one validation pass of as many windows."""
    import torch

    from tsrsa import TransformerForecaster
    from tsrsa.data.scalers import scale_values
    from tsrsa.data.validation import build_panel
    from tsrsa.data.windows import validation_windows
    from tsrsa.nn.losses import make_loss
    from tsrsa.training import WindowLoader, evaluate_loss

    v = h + n_windows - 1  # as many validation windows per channel as cutoffs
    model = TransformerForecaster(h=h, input_size=data.input_size, max_epochs=1, val_size=v,
                                  trainer={"num_threads": num_threads, "accelerator": "cpu"}, random_state=0)
    frame = fit_frame(data, 0, data.borders.val_end)
    model.fit(frame)

    # one validation pass as the training loop runs it, on the fitted network
    panel = build_panel(frame, model.frame_spec)
    memory = model.memory_
    scaled = scale_values(panel.values, panel.offsets, memory.loc, memory.scale)
    windows = validation_windows(scaled, panel.offsets, panel.lengths - v, data.input_size, h)
    cpu = torch.device("cpu")
    loader = WindowLoader(windows, model.resolved_trainer.inference_batch_size, shuffle=False, device=cpu,
                          drop_uneven=False)
    loss = make_loss("mse")
    torch.set_num_threads(num_threads or torch.get_num_threads())
    with torch.inference_mode():
        evaluate_loss(model.network_, loss, loader, cpu, "32")  # warm-up
        val_seconds = []
        for _ in range(repeats):
            began = time.perf_counter()
            evaluate_loss(model.network_, loss, loader, cpu, "32")
            val_seconds.append(time.perf_counter() - began)

    # cross-validation: time its fit separately (the clone's fit_panel) and the rest
    fit_seconds: list[float] = []
    original = type(model).fit_panel

    def timed_fit(self, panel, **options):
        began = time.perf_counter()
        try:
            return original(self, panel, **options)
        finally:
            fit_seconds.append(time.perf_counter() - began)

    cv_seconds = []
    type(model).fit_panel = timed_fit
    try:
        for _ in range(repeats):
            began = time.perf_counter()
            cv = model.cross_validate(frame, n_windows=n_windows, step_size=1)
            cv_seconds.append(time.perf_counter() - began)
    finally:
        type(model).fit_panel = original
    scoring = min(total - fit for total, fit in zip(cv_seconds, fit_seconds))
    best_val = min(val_seconds)
    return {"dataset": data.name, "horizon": h, "model": "TransformerForecaster", "channels": len(data.channels),
            "cutoffs_per_channel": n_windows, "windows": len(windows), "cv_rows": len(cv),
            "validation_pass_s": round(best_val, 3), "cv_beyond_fit_s": round(scoring, 3),
            "ratio": round(scoring / best_val, 2), "cv_fit_s": round(min(fit_seconds), 2)}


def coverage_section(rows: pd.DataFrame, command: str) -> str:
    lines = ["| model | horizon | seed | in 10–90% band | below q10 | above q90 | pinball | q50 MSE / MAE | train s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows.itertuples():
        lines.append(f"| {r.model} | {r.horizon} | {r.seed} | {r.coverage_10_90:.3f} | {r.below_q10:.3f} | "
                     f"{r.above_q90:.3f} | {r.pinball:.4f} | {r.mse_q50:.3f} / {r.mae_q50:.3f} | {r.train_seconds:.0f} |")
    return (
        "ETTh1, all seven channels, input 96; each model's long-horizon configuration with "
        "`loss=\"quantile\", quantiles=[0.1, 0.5, 0.9]`; every test window of every channel "
        f"(values scaled as the protocol does). Nominal: 0.80 inside the band, 0.10 on each side. "
        f"{machine_description()}.\n\n" + "\n".join(lines) + f"\n\nCommand: `{command}`"
    )


def cv_section(row: dict, command: str) -> str:
    return (
        f"`cross_validate(n_windows={row['cutoffs_per_channel']}, step_size=1)` (no refit) of a one-epoch "
        f"TransformerForecaster on ETTh1's train+validation rows ({row['channels']} channels, horizon "
        f"{row['horizon']}): {row['cv_rows']:,} forecast rows from {row['windows']:,} windows. Beyond its one "
        f"fit ({row['cv_fit_s']} s) it takes {row['cv_beyond_fit_s']} s; one validation pass over the same "
        f"number of windows (the training loop's `evaluate_loss`) takes {row['validation_pass_s']} s: "
        f"**{row['ratio']}×** (target ≤ 1.5×). Best of 3; {machine_description()}.\n\nCommand: `{command}`"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="DLinear,LSTM")
    parser.add_argument("--horizon", type=int, default=96)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cv-windows", type=int, default=500)
    parser.add_argument("--num-threads", type=int, default=None)
    parser.add_argument("--only", choices=["coverage", "cv"], default=None)
    args = parser.parse_args(argv)
    command = "python benchmarks/bench_eval.py " + " ".join(sys.argv[1:] if argv is None else argv)
    if "TSRSA_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
        os.environ["TSRSA_DATA_DIR"] = str(SHARED_DATA)
    data = load_protocol_data("ETTh1")
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    if args.only in (None, "coverage"):
        rows = pd.DataFrame([coverage_row(m, data, args.horizon, args.seed, args.num_threads)
                             for m in args.models.split(",")])
        rows.to_csv(out / "quantile_coverage.csv", index=False)
        replace_section(HERE / "RESULTS.md", "quantile-coverage", coverage_section(rows, command.strip()),
                        title="Quantile forecasts: coverage on ETTh1's test split")
        print(rows.to_string(index=False))
    if args.only in (None, "cv"):
        row = cv_speed_row(data, args.horizon, args.cv_windows, args.num_threads)
        pd.DataFrame([row]).to_csv(out / "cv_speed.csv", index=False)
        replace_section(HERE / "RESULTS.md", "cv-speed", cv_section(row, command.strip()),
                        title="Cross-validation speed")
        print(row)


if __name__ == "__main__":
    main()
