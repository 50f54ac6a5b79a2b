"""Training on a GPU in bf16 mixed precision, then forecasting from the same model on the CPU.

    python examples/gpu_training.py                    # ETTm1 when found (else a synthetic panel)
    python examples/gpu_training.py --budget small     # a seconds-long smoke run

Where torch sees no CUDA device the script says so and exits with status 0: install a CUDA build
of torch first (README, "Install"). ``trainer=Trainer(accelerator="gpu")`` puts the network and every
batch on the GPU; the trainer's ``precision="bf16-mixed"`` runs the forward pass in bfloat16 under autocast while the
weights and the optimiser stay in float32 (no loss scaling needed; "16-mixed" is float16 with a
gradient scaler, for GPUs without bf16). The saved model loads on the CPU. For several GPUs see
examples/data_parallel.py.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import tsrsa
from tsrsa import RSAForecaster, Trainer


def synthetic_panel(n_series: int, length: int) -> pd.DataFrame:
    """Hourly series with a daily and a weekly cycle (used when no ETTm1 file is at hand)."""
    rng = np.random.default_rng(0)
    t = np.arange(length)
    return pd.concat([pd.DataFrame({
        "unique_id": f"s{i}", "ds": pd.date_range("2024-01-01", periods=length, freq="h"),
        "y": 10 + np.sin(2 * np.pi * t / 24 + i) + 0.5 * np.sin(2 * np.pi * t / 168)
             + 0.2 * rng.standard_normal(length),
    }) for i in range(n_series)], ignore_index=True)


def load_data(small: bool, data_dir) -> pd.DataFrame:
    if small:
        return synthetic_panel(4, 600)
    try:  # ETTm1's training rows (12 months of 15-minute steps, 7 series)
        return tsrsa.datasets.load("ETTm1", data_dir=data_dir).groupby("unique_id").head(34560)
    except (OSError, ValueError):  # no file and no network
        return synthetic_panel(64, 4000)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", choices=("small", "full"), default="full", help="small: a seconds-long smoke run")
    parser.add_argument("--data-dir", default=None, help="folder with ETTm1.csv (else $TSRSA_DATA_DIR)")
    parser.add_argument("--precision", default=None, choices=("32", "bf16-mixed", "16-mixed"),
                        help="default bf16-mixed where the GPU supports it, else 16-mixed")
    args = parser.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("skipped: torch sees no CUDA device (this torch is "
              f"{torch.__version__}); install a CUDA build of torch to train on a GPU")
        return None
    precision = args.precision or ("bf16-mixed" if torch.cuda.is_bf16_supported() else "16-mixed")
    small = args.budget == "small"
    df = load_data(small, args.data_dir)
    shape = dict(h=24, input_size=96, d_model=32, max_epochs=2) if small else dict(h=96, input_size=96, max_epochs=10)
    model = RSAForecaster(**shape, batch_size=256, trainer=Trainer(accelerator="gpu", precision=precision), random_state=0)

    began = time.perf_counter()
    model.fit(df)
    seconds = time.perf_counter() - began
    print(f"{df['unique_id'].nunique()} series, {len(df)} rows; fit on {torch.cuda.get_device_name(0)} "
          f"in {precision} in {seconds:.1f} s")
    print(model.fit_history_.to_string(index=False))
    on_gpu = model.predict()

    with tempfile.TemporaryDirectory() as folder:  # the same model, on the CPU
        model.save(Path(folder) / "model")
        on_cpu = tsrsa.load(Path(folder) / "model").predict()
    gap = float(np.max(np.abs(on_cpu["yhat"].to_numpy() - on_gpu["yhat"].to_numpy())))
    size = float(np.max(np.abs(on_gpu["yhat"].to_numpy())))
    print(f"CPU reload: largest difference from the GPU forecast {gap:.2e} (forecasts up to {size:.2f}; "
          f"the GPU ran the forward pass in {precision}, the CPU in float32)")
    return {"model": model, "gap": gap, "size": size}


if __name__ == "__main__":
    main()
