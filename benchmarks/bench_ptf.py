"""RSATransformer inside pytorch-forecasting against its own models, on one TimeSeriesDataSet.

    python benchmarks/bench_ptf.py                        # all five models, 5 epochs each, ~7 minutes on one CPU thread
    python benchmarks/bench_ptf.py --models RSATransformer,NHiTS --max-epochs 1 --no-write   # a smoke run

One TimeSeriesDataSet from ETTh1's OT column (the target alone), scaled as the long-horizon protocol
does (StandardScaler on the training rows), rows of the standard split: training targets in rows
[0, 8640), validation [8640, 11520), test [11520, 14400), every stride-1 window of input 96 and
horizon 24, each part looking back 96 rows into the one before. Every model gets the same budget:
MAE loss, Adam at lr 1e-3, batch 64, gradient clipping at 1, --max-epochs epochs with the epoch of
the best validation loss kept (a ModelCheckpoint, reloaded with ``load_from_checkpoint``). The
models: tsrsa's RSATransformer and VanillaTransformer (defaults), and pytorch-forecasting's
TemporalFusionTransformer (hidden 32), NHiTS (defaults) and RecurrentNetwork (LSTM, 2 x 32).
Reports MAE and MSE of the point forecasts on every validation and test window (scaled units),
training seconds per epoch (median; validation excluded) and parameter counts.

Writes benchmarks/results/ptf_interop.csv and the "ptf-interop" section of benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parents[1] / "shared" / "datasets"  # the shared data folder beside the checkout
RESULTS_CSV = HERE / "results" / "ptf_interop.csv"
RESULTS_MD = HERE / "RESULTS.md"
TARGET = "OT"
MODELS = ("RSATransformer", "VanillaTransformer", "TemporalFusionTransformer", "NHiTS", "RecurrentNetwork")
#: pytorch-forecasting's models as bench_training.py sizes them (NHiTS: its defaults)
PEER_OPTIONS = {"TemporalFusionTransformer": {"hidden_size": 32},
                "RecurrentNetwork": {"cell_type": "LSTM", "hidden_size": 32, "rnn_layers": 2},
                "NHiTS": {}}


# ---------------------------------------------------------------------- data
def datasets(input_size: int, horizon: int):
    """(train, val, test) TimeSeriesDataSets of ETTh1 OT on the protocol's rows and scale."""
    from pytorch_forecasting import TimeSeriesDataSet
    from pytorch_forecasting.data import EncoderNormalizer

    from tsrsa.benchmarking.protocol import load_protocol_data

    data = load_protocol_data("ETTh1", input_size)
    b = data.borders
    frame = pd.DataFrame({"series": TARGET, "time_idx": np.arange(len(data.scaled)),
                          TARGET: data.scaled[:, data.channels.index(TARGET)].astype(np.float32)})
    train = TimeSeriesDataSet(
        frame.iloc[: b.train_end], time_idx="time_idx", target=TARGET, group_ids=["series"],
        max_encoder_length=input_size, max_prediction_length=horizon, min_prediction_length=horizon,
        time_varying_unknown_reals=[TARGET], target_normalizer=EncoderNormalizer(),
    )
    parts = [TimeSeriesDataSet.from_dataset(train, frame.iloc[start:stop], stop_randomization=True)
             for start, stop in zip(b.border1s[1:], b.border2s[1:])]
    for part, name in zip(parts, ("val", "test")):
        expected = b.n_windows(name, horizon)
        if len(part) != expected:
            raise RuntimeError(f"the {name} dataset has {len(part)} windows; the protocol has {expected}")
    return train, *parts


# ---------------------------------------------------------------------- models
def build(name: str, train):
    from pytorch_forecasting import NHiTS, RecurrentNetwork, TemporalFusionTransformer
    from pytorch_forecasting.metrics import MAE

    from tsrsa.integrations.pytorch_forecasting import RSATransformer, VanillaTransformer

    classes = {"RSATransformer": RSATransformer, "VanillaTransformer": VanillaTransformer,
               "TemporalFusionTransformer": TemporalFusionTransformer, "NHiTS": NHiTS,
               "RecurrentNetwork": RecurrentNetwork}
    cls = classes[name]
    return cls, cls.from_dataset(train, loss=MAE(), learning_rate=1e-3, optimizer="adam",
                                 **PEER_OPTIONS.get(name, {}))


def epoch_record():
    """A callback keeping each epoch's training seconds (from its start to its last batch, so
    validation excluded) and validation loss."""
    import lightning.pytorch as pl

    class EpochRecord(pl.Callback):
        def __init__(self):
            self.seconds, self.val_loss = [], []

        def on_train_epoch_start(self, trainer, module):
            self.start = time.perf_counter()

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            self.end = time.perf_counter()

        def on_train_epoch_end(self, trainer, module):
            self.seconds.append(self.end - self.start)

        def on_validation_epoch_end(self, trainer, module):
            if not trainer.sanity_checking:
                self.val_loss.append(float(trainer.callback_metrics["val_loss"]))

    return EpochRecord()


def scores(model, dataset, batch_size: int) -> tuple[float, float]:
    """(MAE, MSE) of the point forecasts over every window of ``dataset``."""
    out = model.predict(dataset, mode="prediction", return_y=True, batch_size=batch_size,
                        trainer_kwargs={"accelerator": "cpu", "logger": False})  # a fresh dict per call
    error = (out.output - out.y[0]).double()
    return float(error.abs().mean()), float((error**2).mean())


def run(name: str, train, val, test, args) -> dict:
    import lightning.pytorch as pl

    pl.seed_everything(args.seed, verbose=False)
    cls, model = build(name, train)
    record = epoch_record()
    with tempfile.TemporaryDirectory() as folder:
        best = pl.callbacks.ModelCheckpoint(dirpath=folder, monitor="val_loss", mode="min")
        trainer = pl.Trainer(max_epochs=args.max_epochs, accelerator="cpu", devices=1, logger=False,
                             enable_progress_bar=False, enable_model_summary=False, gradient_clip_val=1.0,
                             limit_train_batches=args.limit_train_batches, callbacks=[record, best])
        trainer.fit(model, train_dataloaders=train.to_dataloader(train=True, batch_size=args.batch_size),
                    val_dataloaders=val.to_dataloader(train=False, batch_size=args.batch_size * 4))
        model = cls.load_from_checkpoint(best.best_model_path, map_location="cpu")
    val_mae, val_mse = scores(model, val, args.batch_size * 4)
    test_mae, test_mse = scores(model, test, args.batch_size * 4)
    library = "tsrsa" if name in ("RSATransformer", "VanillaTransformer") else "pytorch-forecasting"
    return {"model": name, "library": library, "parameters": sum(p.numel() for p in model.parameters()),
            "epochs": len(record.seconds), "best_epoch": int(np.argmin(record.val_loss)) + 1,
            "seconds_per_epoch": float(np.median(record.seconds)), "train_windows": len(train),
            "val_mae": val_mae, "val_mse": val_mse, "test_mae": test_mae, "test_mse": test_mse,
            "input_size": args.input_size, "horizon": args.horizon, "seed": args.seed}


# ---------------------------------------------------------------------- report
def section(table: pd.DataFrame, args, command: str, machine: str) -> str:
    import pytorch_forecasting

    threads = f"{args.num_threads} CPU thread" + ("s" if args.num_threads > 1 else "")
    lines = [
        f"ETTh1 `{TARGET}` as one pytorch-forecasting {pytorch_forecasting.__version__} `TimeSeriesDataSet` "
        f"(the target alone, scaled on the training rows as the long-horizon protocol does, "
        f"`EncoderNormalizer` inside), input {args.input_size}, horizon {args.horizon}, the standard split's "
        f"rows: {table['train_windows'].iloc[0]:,} training windows, every validation and test window "
        f"(stride 1). The same budget for all: MAE loss, Adam lr 1e-3, batch {args.batch_size}, gradient "
        f"clipping 1, {args.max_epochs} epochs, the best validation epoch kept and reloaded with "
        f"`load_from_checkpoint`; one seed ({args.seed}), {threads}. tsrsa's models at "
        f"their defaults (d_model 64, 4 heads, 2 layers, patches of 4; RSA from the paper's REM values); "
        f"TemporalFusionTransformer hidden 32, RecurrentNetwork LSTM 2 × 32, NHiTS its defaults. "
        f"MAE / MSE of the point forecasts on the scaled data; seconds: one training epoch (median, "
        f"validation excluded), which includes pytorch-forecasting's batch assembly from the "
        f"`TimeSeriesDataSet`, the same for every model (tsrsa's own loop over these windows: "
        f"\"Training speed (CPU)\" above).\n",
        "| library | model | parameters | val MAE | val MSE | test MAE | test MSE | s / epoch | best epoch |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        lines.append(f"| {r.library} | `{r.model}` | {r.parameters:,} | {r.val_mae:.3f} | {r.val_mse:.3f} | "
                     f"{r.test_mae:.3f} | {r.test_mse:.3f} | {r.seconds_per_epoch:.1f} | {r.best_epoch} |")
    lines.append(f"\nMachine: {machine}. Command: `{command}`\n")
    return "\n".join(lines)


def quiet() -> None:
    """No progress or banner output from lightning; its warnings about this set-up are expected."""
    import lightning.pytorch  # noqa: F401 - sets its loggers' levels on import, so before ours

    warnings.filterwarnings("ignore")
    for name in ("lightning", "lightning.pytorch", "lightning.fabric", "pytorch_lightning"):
        logging.getLogger(name).setLevel(logging.ERROR)


def main(argv=None) -> pd.DataFrame:
    if "TSRSA_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
        os.environ["TSRSA_DATA_DIR"] = str(SHARED_DATA)
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    p.add_argument("--max-epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--input-size", type=int, default=96)
    p.add_argument("--horizon", type=int, default=24)
    p.add_argument("--limit-train-batches", type=float, default=1.0,
                   help="fraction (<= 1) or number (> 1) of training batches per epoch")
    p.add_argument("--num-threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-write", action="store_true", help="print only; leave the CSV and RESULTS.md alone")
    args = p.parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        p.error(f"unknown model(s) {unknown}; choose from {', '.join(MODELS)}")
    if args.limit_train_batches > 1:
        args.limit_train_batches = int(args.limit_train_batches)

    import torch

    from tsrsa.benchmarking.results import machine_description, replace_section

    torch.set_num_threads(args.num_threads)
    quiet()
    train, val, test = datasets(args.input_size, args.horizon)
    rows = []
    for name in models:
        rows.append(run(name, train, val, test, args))
        r = rows[-1]
        print(f"{name}: test MAE {r['test_mae']:.4f} MSE {r['test_mse']:.4f}, {r['seconds_per_epoch']:.1f} s/epoch",
              file=sys.stderr, flush=True)
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    if not args.no_write:
        command = "python benchmarks/bench_ptf.py " + " ".join(shlex.quote(a) for a in argv)
        RESULTS_CSV.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(RESULTS_CSV, index=False)
        replace_section(RESULTS_MD, "ptf-interop", section(table, args, command.strip(), machine_description()),
                        title="Inside pytorch-forecasting (ETTh1)")
    return table


if __name__ == "__main__":
    main()
