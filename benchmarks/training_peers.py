"""The peer libraries' side of bench_training.py: one epoch of pytorch-forecasting and neuralforecast.

Both train on the windows tsrsa's forecasters train on (one series, input ``INPUT``, horizon
``H``, ``BATCH`` windows per step) and are timed by a callback from the epoch's first step to
its last, set-up excluded. neuralforecast runs in an interpreter of its own environment (it
pulls ray and pyarrow, which would change pandas' string dtype in tsrsa's): ``nf_epoch`` starts
this file there as a script, which needs only numpy, pandas and neuralforecast:

    NF_ENV/bin/python benchmarks/training_peers.py --nf-probe ETTh1.csv 8640 0
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
INPUT, H, BATCH = 96, 24, 64
ROWS = {"ETTh1": 8640, "ETTm1": 34560}  # the standard training rows

#: the pytorch-forecasting model raced against each of tsrsa's (RSA is raced against the TFT too)
PEERS = {"LSTM": "RecurrentNetwork", "Transformer": "TemporalFusionTransformer"}


# ---------------------------------------------------------------------- pytorch-forecasting
def peer_epoch(name: str, y: np.ndarray, accelerator: str, seed: int) -> tuple[float, int, int]:
    """(seconds, windows, parameters) of one epoch of a pytorch-forecasting model, timed from the
    epoch's start to its end by a callback (dataset and trainer set-up excluded)."""
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    for logger in ("lightning", "lightning.pytorch", "lightning.fabric", "pytorch_lightning"):
        logging.getLogger(logger).setLevel(logging.ERROR)
    import lightning.pytorch as pl
    from pytorch_forecasting import RecurrentNetwork, TemporalFusionTransformer, TimeSeriesDataSet

    pl.seed_everything(seed, verbose=False)
    frame = pd.DataFrame({"series": "OT", "time_idx": np.arange(len(y)), "OT": y.astype(np.float32)})
    dataset = TimeSeriesDataSet(
        frame, time_idx="time_idx", target="OT", group_ids=["series"], max_encoder_length=INPUT,
        min_encoder_length=INPUT, max_prediction_length=H, min_prediction_length=H,
        time_varying_unknown_reals=["OT"],
    )
    if name == "RecurrentNetwork":
        model = RecurrentNetwork.from_dataset(dataset, cell_type="LSTM", hidden_size=32, rnn_layers=2)
    else:
        model = TemporalFusionTransformer.from_dataset(dataset, hidden_size=32)

    class EpochClock(pl.Callback):
        def on_train_epoch_start(self, trainer, module):
            self.windows, self.start = 0, time.perf_counter()

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            self.windows += batch[0]["encoder_target"].shape[0]

        def on_train_epoch_end(self, trainer, module):
            self.seconds = time.perf_counter() - self.start

    clock = EpochClock()
    trainer = pl.Trainer(max_epochs=1, accelerator="gpu" if accelerator in ("gpu", "cuda") else "cpu", devices=1,
                         logger=False, enable_progress_bar=False, enable_checkpointing=False,
                         enable_model_summary=False, callbacks=[clock])
    loader = dataset.to_dataloader(train=True, batch_size=BATCH, num_workers=0)
    trainer.fit(model, train_dataloaders=loader)
    return clock.seconds, clock.windows, sum(p.numel() for p in model.parameters())


# ---------------------------------------------------------------------- neuralforecast
def nf_probe(csv: str, rows: int, seed: int) -> dict:
    """One epoch's worth of steps (windows / 64) of neuralforecast's LSTM (2 x 32 encoder, 32
    decoder: 14k parameters), 64 windows per step, timed from the first step's start to the
    last step's end. Runs in an interpreter that has neuralforecast (its own environment:
    neuralforecast pulls ray and pyarrow, which would change pandas' string dtype here)."""
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    import pytorch_lightning as pl
    from neuralforecast import NeuralForecast
    from neuralforecast.models import LSTM

    raw = pd.read_csv(csv, nrows=rows)
    frame = pd.DataFrame({"unique_id": "OT", "ds": pd.to_datetime(raw["date"]), "y": raw["OT"].astype(float)})
    steps = -(-(len(frame) - INPUT - H + 1) // BATCH)
    clock = {"steps": 0}

    class StepClock(pl.Callback):
        def on_train_batch_start(self, trainer, module, batch, batch_idx):
            clock.setdefault("start", time.perf_counter())

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            clock["steps"] += 1
            clock["end"] = time.perf_counter()

    model = LSTM(h=H, input_size=INPUT, encoder_n_layers=2, encoder_hidden_size=32, decoder_hidden_size=32,
                 decoder_layers=2, batch_size=1, windows_batch_size=BATCH, max_steps=steps, val_check_steps=10**6,
                 random_seed=seed, enable_progress_bar=False, logger=False, enable_model_summary=False,
                 enable_checkpointing=False, callbacks=[StepClock()], accelerator="cpu")
    nf = NeuralForecast(models=[model], freq="h")
    nf.fit(frame)
    return {"seconds": clock["end"] - clock["start"], "windows": clock["steps"] * BATCH,
            "parameters": sum(p.numel() for p in nf.models[0].parameters())}


def nf_epoch(python: str, dataset: str, seed: int) -> tuple[float, int, int]:
    """(seconds, windows, parameters) of ``nf_probe`` run by ``python`` (neuralforecast's environment)."""
    from tsrsa.datasets import benchmark_file

    csv = benchmark_file(dataset)
    out = subprocess.run([python, __file__, "--nf-probe", str(csv), str(ROWS[dataset]), str(seed)],
                         capture_output=True, text=True, check=True, cwd=HERE)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["seconds"], result["windows"], result["parameters"]


def main(argv: list[str]) -> None:
    if argv[:1] != ["--nf-probe"] or len(argv) != 4:
        raise SystemExit("usage: training_peers.py --nf-probe CSV ROWS SEED")
    print(json.dumps(nf_probe(argv[1], int(argv[2]), int(argv[3]))))


if __name__ == "__main__":
    main(sys.argv[1:])
