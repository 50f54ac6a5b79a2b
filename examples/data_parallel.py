"""Data-parallel training (torch DistributedDataParallel) on one machine or several.

One machine, k devices: ``fit`` spawns k worker processes itself (nccl on GPUs, gloo on CPUs)::

    python examples/data_parallel.py --accelerator gpu --devices 4      # GPUs 0-3
    python examples/data_parallel.py --accelerator cpu --devices 2      # two CPU processes

Processes started by torchrun: each runs this script, ``fit`` joins them (one device each)::

    torchrun --standalone --nproc-per-node=4 examples/data_parallel.py --accelerator gpu

Several machines (run the same line on every one; HOST0:29500 reachable from all of them)::

    torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=HOST0:29500 \\
        examples/data_parallel.py --accelerator gpu

A global batch is ``batch_size`` windows, split evenly over the ranks, so a run on k devices
takes the steps a one-device run takes on the same batches (raise ``batch_size`` with k to
keep each device busy). Every rank ends with the same fitted model; rank 0 writes it.
Scripts that spawn need the ``if __name__ == "__main__":`` guard below.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from tsrsa import Trainer, TransformerForecaster


def demo_panel(n_series: int = 8, length: int = 2000) -> pd.DataFrame:
    """Hourly series with a daily and a weekly cycle (used when no ETTm1 file is at hand)."""
    rng = np.random.default_rng(0)
    t = np.arange(length)
    frames = [pd.DataFrame({
        "unique_id": f"s{i}", "ds": pd.date_range("2024-01-01", periods=length, freq="h"),
        "y": 10 + np.sin(2 * np.pi * t / 24 + i) + 0.5 * np.sin(2 * np.pi * t / 168) + 0.2 * rng.standard_normal(length),
    }) for i in range(n_series)]
    return pd.concat(frames, ignore_index=True)


def load_data(data_dir: str | None) -> pd.DataFrame:
    """ETTm1's seven channels as series (its training rows), or the demo panel."""
    import tsrsa

    try:
        df = tsrsa.datasets.load("ETTm1", data_dir=data_dir)
    except Exception:  # no file and no network: the demo panel shows the same mechanics
        return demo_panel()
    return df.groupby("unique_id").head(34560)


def main(argv=None):
    p = argparse.ArgumentParser(description="Train one TransformerForecaster data-parallel.")
    p.add_argument("--accelerator", default="auto", help="cpu, gpu or auto (default)")
    p.add_argument("--devices", type=int, default=None,
                   help="devices of this machine to spawn workers on (leave out under torchrun)")
    p.add_argument("--batch-size", type=int, default=256, help="global batch, split over the ranks")
    p.add_argument("--max-epochs", type=int, default=5)
    p.add_argument("--data-dir", default=None, help="folder with ETTm1.csv (else $TSRSA_DATA_DIR)")
    p.add_argument("--tiny", action="store_true",
                   help="a seconds-long smoke run: small demo panel and network, dropout off")
    p.add_argument("--output-dir", type=Path, default=None, help="rank 0 saves the fitted model here")
    args = p.parse_args(argv)

    if args.tiny:
        df = demo_panel(n_series=3, length=60)
        params = dict(h=4, input_size=8, patch_len=2, d_model=8, n_heads=2, n_layers=1, d_ff=16, dropout=0.0)
    else:
        df = load_data(args.data_dir)
        params = dict(h=96, input_size=96)
    model = TransformerForecaster(**params, batch_size=args.batch_size, max_epochs=args.max_epochs,
                                  trainer=Trainer(accelerator=args.accelerator, devices=args.devices), random_state=0)
    began = time.perf_counter()
    model.fit(df)
    seconds = time.perf_counter() - began
    if int(os.environ.get("RANK", 0)) == 0:  # every rank holds the same model; one writes it
        print(model.fit_history_.to_string(index=False))
        print(f"fit in {seconds:.1f} s on {args.devices or 'torchrun'} device(s)")
        if args.output_dir is not None:
            model.save(args.output_dir, overwrite=True)  # a second run replaces the model it saved
    return model


if __name__ == "__main__":
    main()
