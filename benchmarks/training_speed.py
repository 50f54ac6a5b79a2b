"""The training-speed part of bench_training.py: one epoch of tsrsa's forecasters, of the same
networks in a bare PyTorch loop, and of the peers (``training_peers.py``), and its RESULTS.md table.

speed    training windows per second of one epoch (ETTh1 OT rows 0-8640, or ETTm1 OT rows 0-34560;
         input 96, horizon 24, batch 64), best of the repeats;
patch    windows per second per ``patch_len``.

The functions measure and return tables; bench_training.py writes them.
"""
from __future__ import annotations

import functools
import sys
import time

import numpy as np
import pandas as pd

from training_peers import BATCH, H, INPUT, PEERS, ROWS, nf_epoch, peer_epoch

OURS = {"LSTM": "LSTMForecaster", "Transformer": "TransformerForecaster", "RSA": "RSAForecaster",
        "DLinear": "DLinearForecaster"}


# ---------------------------------------------------------------------- data
def target_series(dataset: str) -> np.ndarray:
    """The OT column of the data set's training rows (float64)."""
    import tsrsa

    df = tsrsa.datasets.load(dataset)
    y = df.loc[df["unique_id"] == "OT", "y"].to_numpy()[: ROWS[dataset]]
    return y


def n_windows(y: np.ndarray) -> int:
    return len(y) - INPUT - H + 1


# ---------------------------------------------------------------------- tsrsa and the bare loop
def ours_epoch(name: str, y: np.ndarray, accelerator: str, seed: int, **params) -> tuple[float, int]:
    """(seconds of one training epoch, parameters) of a tsrsa forecaster with default settings."""
    import tsrsa

    series = pd.Series(y, index=pd.RangeIndex(len(y)), name="OT")
    model = getattr(tsrsa, OURS[name])(h=H, input_size=INPUT, batch_size=BATCH, max_epochs=1,
                                       trainer={"accelerator": accelerator}, random_state=seed, **params)
    model.fit(series)
    return float(model.fit_history_["seconds"].iloc[0]), sum(p.numel() for p in model.network_.parameters())


def bare_epoch(name: str, y: np.ndarray, accelerator: str, seed: int, **params) -> float:
    """Seconds of one epoch of the same network in a plain PyTorch loop: the series as one tensor,
    a shuffled index per epoch, a gather per batch, AdamW (fused, as tsrsa's loop), clipping."""
    import torch

    import tsrsa
    from tsrsa.training.devices import resolve_device

    device = resolve_device(accelerator)
    forecaster = getattr(tsrsa, OURS[name])(h=H, input_size=INPUT, **params)
    torch.manual_seed(seed)
    network = forecaster.build_network(forecaster.network_config()).to(device)
    values = torch.from_numpy(((y - y.mean()) / y.std()).astype(np.float32)).to(device)
    span = torch.arange(INPUT + H, device=device)
    try:
        optimizer = torch.optim.AdamW(network.parameters(), lr=1e-3, weight_decay=1e-4, fused=True)
    except RuntimeError:
        optimizer = torch.optim.AdamW(network.parameters(), lr=1e-3, weight_decay=1e-4)
    n = n_windows(y)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).to(device)
    network.train()
    _sync(device)
    start = time.perf_counter()
    for s in range(0, n, BATCH):
        block = values[order[s : s + BATCH, None] + span]  # (B, L + h)
        x, target = block[:, :INPUT], block[:, INPUT:]
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(network(x)[..., 0], target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(network.parameters(), 1.0)
        optimizer.step()
    _sync(device)
    return time.perf_counter() - start


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


#: non-default configurations timed beside the defaults (--variants): the per-step forms, and
#: an LSTM of pytorch-forecasting's size, so that a like-for-like race is in the table too
VARIANTS = {"LSTM": [{"patch_len": 1}, {"patch_len": 1, "hidden_size": 32}], "Transformer": [{"patch_len": 1}]}


def _label(name: str, params: dict) -> str:
    return OURS[name] + (f"({', '.join(f'{k}={v}' for k, v in params.items())})" if params else "")


def speed(args) -> pd.DataFrame:
    """The speed table: per (library, model), the best of ``args.repeats`` epochs."""
    y = target_series(args.dataset)
    n = n_windows(y)
    best: dict[tuple, dict] = {}

    def keep(library, model, seconds, windows, params, pair, peak=float("nan")):
        row = {"dataset": args.dataset, "library": library, "model": model, "parameters": params,
               "windows": windows, "seconds": seconds, "windows_per_s": windows / seconds, "pair": pair,
               "device": _device_label(args.accelerator), "peak_gpu_mb": peak}
        if (library, model) not in best or seconds < best[(library, model)]["seconds"]:
            best[(library, model)] = row

    def measured(fn, *a, **kw):
        return gpu_peak(args.accelerator, functools.partial(fn, *a, **kw))

    for repeat in range(args.repeats):
        for name in args.models:
            (seconds, params), peak = measured(ours_epoch, name, y, args.accelerator, repeat)
            keep("tsrsa", OURS[name], seconds, n, params, name, peak)
            if not args.no_bare:
                seconds, peak = measured(bare_epoch, name, y, args.accelerator, repeat)
                keep("bare PyTorch loop", OURS[name], seconds, n, params, name, peak)
            for variant in VARIANTS.get(name, []) if args.variants else []:
                (seconds, params), peak = measured(ours_epoch, name, y, args.accelerator, repeat, **variant)
                keep("tsrsa", _label(name, variant), seconds, n, params, name, peak)
            if not args.no_peers and name in PEERS:
                (seconds, windows, params), peak = measured(peer_epoch, PEERS[name], y, args.accelerator, repeat)
                keep("pytorch-forecasting", PEERS[name], seconds, windows, params, name, peak)
            if args.neuralforecast_python and name == "LSTM":
                seconds, windows, params = nf_epoch(args.neuralforecast_python, args.dataset, repeat)
                keep("neuralforecast", "LSTM", seconds, windows, params, name)
            print(f"repeat {repeat}: {name} done", file=sys.stderr, flush=True)
    return pd.DataFrame(best.values())


def gpu_peak(accelerator: str, fn):
    """``fn()``'s result and the most CUDA memory allocated while it ran, above what was held before,
    in MB (NaN off a CUDA device): the peak of an epoch, its model and data included."""
    import torch

    if accelerator not in ("gpu", "cuda") or not torch.cuda.is_available():
        return fn(), float("nan")
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    torch.cuda.synchronize()
    return out, (torch.cuda.max_memory_allocated() - held) / 2**20


def _device_label(accelerator: str) -> str:
    import torch

    if accelerator in ("gpu", "cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return f"cpu ({torch.get_num_threads()} threads)"


# ---------------------------------------------------------------------- patch length
def patch_speed(args) -> pd.DataFrame:
    """Windows per second of ``args.models`` per patch length (best of ``args.repeats`` epochs)."""
    y = target_series(args.dataset)
    rows = []
    for name in args.models:
        for p in args.patch_lens:
            seconds = min(ours_epoch(name, y, args.accelerator, r, patch_len=p)[0] for r in range(args.repeats))
            rows.append({"model": OURS[name], "patch_len": p, "windows_per_s": n_windows(y) / seconds,
                         "device": _device_label(args.accelerator)})
            print(f"{name} patch_len={p}: {rows[-1]['windows_per_s']:.0f} windows/s", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------- RESULTS.md
def speed_section(table: pd.DataFrame, command: str) -> str:
    """The speed table of one run (its rows' own machine where they record it, else this one's)."""
    from tsrsa.benchmarking.results import machine_description

    machine = table["machine"].iloc[0] if "machine" in table else machine_description()
    lines = [
        f"{table['dataset'].iloc[0]} OT (training rows), input {INPUT}, horizon {H}, batch {BATCH}, one epoch "
        f"(best of the repeats); {table['device'].iloc[0]}; {machine}. tsrsa's forecasters with default "
        "settings (and, below each, the per-step forms); the bare loop trains the same network with the same "
        "optimiser (fused AdamW, clipping at 1) gathering batches from one tensor; pytorch-forecasting 1.8 "
        "through a lightning Trainer on a TimeSeriesDataSet of the same windows, neuralforecast 3.3 (in its own "
        "environment) with 64 windows per step; peers' epochs are timed by a callback, set-up excluded.\n",
    ]
    gpu = "peak_gpu_mb" in table and table["peak_gpu_mb"].notna().any()
    lines += ["| library | model | parameters | windows/s | ÷ pytorch-forecasting | ÷ neuralforecast | loop overhead vs bare |"
              + (" peak GPU MB |" if gpu else ""), "|---|---|---|---|---|---|---|" + ("---|" if gpu else "")]
    rate = {(r.library, r.model): r.windows_per_s for r in table.itertuples()}
    order = {"tsrsa": 0, "bare PyTorch loop": 1, "pytorch-forecasting": 2, "neuralforecast": 3}
    rows = sorted(table.itertuples(), key=lambda r: (list(OURS).index(r.pair), order[r.library], "(" in r.model))
    for r in rows:
        ptf = rate.get(("pytorch-forecasting", PEERS.get(r.pair, PEERS["Transformer"])))  # RSA: the TFT too
        nf = rate.get(("neuralforecast", "LSTM")) if r.pair == "LSTM" else None
        bare = rate.get(("bare PyTorch loop", r.model))
        ours = r.library == "tsrsa"
        lines.append("| " + " | ".join([
            r.library, f"`{r.model}`", f"{r.parameters:,}", f"{r.windows_per_s:,.0f}",
            f"{r.windows_per_s / ptf:.1f}×" if ours and ptf else "",
            f"{r.windows_per_s / nf:.1f}×" if ours and nf else "",
            f"{bare / r.windows_per_s - 1:+.1%}" if ours and bare else "",
            *([f"{r.peak_gpu_mb:,.0f}" if r.peak_gpu_mb == r.peak_gpu_mb else ""] if gpu else []),
        ]) + " |")
    where = (", where NF_ENV is a separate environment for the neuralforecast peer (`python -m venv NF_ENV && "
             "NF_ENV/bin/pip install torch==2.13.0 neuralforecast==3.3.0`: it pulls ray and pyarrow, which would "
             "change pandas' string dtype in tsrsa's own)") if "neuralforecast" in set(table["library"]) else ""
    peak = (" *Peak GPU MB*: the most CUDA memory allocated during the call (network, data and one epoch) above "
            "what was held before it.") if gpu else ""
    lines.append(f"\nCommand: `{command}`{where}.{peak}\n")
    return "\n".join(lines)
