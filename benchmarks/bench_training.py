"""Training throughput, loop overhead, import time and memory, against pytorch-forecasting.

    python benchmarks/bench_training.py                      # everything below, CPU, ~10 minutes
    python benchmarks/bench_training.py --only speed --repeats 3
    python benchmarks/bench_training.py --only patch --patch-lens 1,2,4,8,16,24
    python benchmarks/bench_training.py --only speed --accelerator gpu --dataset ETTm1 --models Transformer,RSA --no-peers

speed    training windows per second of one epoch (ETTh1 OT rows 0-8640, or ETTm1 OT rows 0-34560;
         input 96, horizon 24, batch 64) for tsrsa's forecasters with default settings, the same
         networks in a bare PyTorch loop (the loop's overhead), and pytorch-forecasting's
         RecurrentNetwork (LSTM 2x32) and TemporalFusionTransformer (hidden 32) trained by a
         lightning Trainer on a TimeSeriesDataSet of the same windows; best of --repeats epochs.
imports  seconds to import tsrsa, a forecaster, torch + pandas and pytorch_forecasting in a fresh
         interpreter (best of 5).
memory   peak RSS of fitting (1 epoch, validation on) and predicting 10,000 series x 1,000 steps.
patch    windows per second of the --models per patch_len (ETTh1 OT, batch 64).

Writes CSVs under benchmarks/results/ and its sections of benchmarks/RESULTS.md (only those).
Time it on a quiet machine: other processes on the cores distort every figure. The peers' runners
(and the setup both sides share: input, horizon, batch, rows) are in training_peers.py.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from training_peers import BATCH, H, INPUT, PEERS, ROWS, nf_epoch, nf_probe, peer_epoch

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RESULTS_MD = HERE / "RESULTS.md"
SHARED_DATA = HERE.parents[1] / "shared" / "datasets"
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
                                       accelerator=accelerator, random_state=seed, **params)
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
    network = forecaster._build_network(forecaster._network_config()).to(device)
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
    table = pd.DataFrame(best.values())
    _append_csv(RESULTS / "training_speed.csv", table)
    return table


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


# ---------------------------------------------------------------------- import time
IMPORTS = {
    "import tsrsa": "import tsrsa",
    "from tsrsa import TransformerForecaster": "from tsrsa import TransformerForecaster",
    "import torch, pandas": "import torch, pandas",
    "import pytorch_forecasting": "import pytorch_forecasting",
}


def import_seconds(statement: str) -> float:
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def imports(args) -> pd.DataFrame:
    rows = []
    for label, statement in IMPORTS.items():
        times = [import_seconds(statement) for _ in range(args.import_repeats)]
        rows.append({"statement": label, "seconds": min(times)})
    table = pd.DataFrame(rows)
    _append_csv(RESULTS / "import_time.csv", table)
    return table


# ---------------------------------------------------------------------- memory
MEMORY_PARAMS = dict(h=H, input_size=INPUT, patch_len=24, d_model=8, n_heads=1, n_layers=1, d_ff=8,
                     max_epochs=1, batch_size=1024, val_size=H, num_threads=1, random_state=0, accelerator="cpu")


def memory_probe(n_series: int, length: int) -> dict:
    """Peak RSS (MiB) after making the data, after fit and after predict (run in a fresh process)."""
    def peak() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    from tsrsa import TransformerForecaster

    rng = np.random.default_rng(0)
    values = np.sin(np.arange(length) / 8)[None, :] + 0.1 * rng.standard_normal((n_series, length))  # (S, T)
    wide = pd.DataFrame(values.T, columns=[f"s{i}" for i in range(n_series)])  # RangeIndex: integer time
    del values
    after_data = peak()
    from tsrsa.data.frames import FrameSpec
    from tsrsa.data.validation import build_panel

    build_panel(wide, FrameSpec("unique_id", "ds", "y"))  # what fit does first: validation alone
    after_validation = peak()
    model = TransformerForecaster(**MEMORY_PARAMS)
    began = time.perf_counter()
    model.fit(wide)
    fit_seconds = time.perf_counter() - began
    after_fit = peak()
    forecast = model.predict()
    after_predict = peak()
    windows = n_series * (length - H - INPUT - H + 1)
    return {"series": n_series, "length": length, "training_windows": windows,
            "materialised_windows_mib": windows * (INPUT + H) * 4 / 2**20,
            "peak_rss_data_mib": after_data, "peak_rss_validation_mib": after_validation,
            "peak_rss_fit_mib": after_fit, "peak_rss_predict_mib": after_predict,
            "fit_seconds": fit_seconds, "forecast_rows": len(forecast)}


def memory(args) -> pd.DataFrame:
    out = subprocess.run([sys.executable, __file__, "--memory-probe", str(args.memory_series), str(args.memory_length)],
                         capture_output=True, text=True, check=True)
    table = pd.DataFrame([json.loads(out.stdout.strip().splitlines()[-1])])
    _append_csv(RESULTS / "memory.csv", table)
    return table


# ---------------------------------------------------------------------- patch length
def patch_speed(args) -> pd.DataFrame:
    y = target_series(args.dataset)
    rows = []
    for name in args.models:
        for p in args.patch_lens:
            seconds = min(ours_epoch(name, y, args.accelerator, r, patch_len=p)[0] for r in range(args.repeats))
            rows.append({"model": OURS[name], "patch_len": p, "windows_per_s": n_windows(y) / seconds,
                         "device": _device_label(args.accelerator)})
            print(f"{name} patch_len={p}: {rows[-1]['windows_per_s']:.0f} windows/s", file=sys.stderr, flush=True)
    table = pd.DataFrame(rows)
    path = RESULTS / "patch_len_speed.csv"
    if path.exists():  # replace the rows measured now, keep the others
        old = pd.read_csv(path)
        kept = ~old.set_index(["model", "patch_len"]).index.isin(table.set_index(["model", "patch_len"]).index)
        table = pd.concat([old[kept], table], ignore_index=True)
    table.to_csv(path, index=False)
    return table


# ---------------------------------------------------------------------- writing
def _append_csv(path: Path, table: pd.DataFrame) -> None:
    """Append ``table``'s rows, dated; a file with other columns is rewritten with the union of both."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = table.assign(date=time.strftime("%Y-%m-%d %H:%M"), machine=_machine())
    if path.exists() and list(pd.read_csv(path, nrows=0).columns) != list(table.columns):
        pd.concat([pd.read_csv(path), table], ignore_index=True).to_csv(path, index=False)
    else:
        table.to_csv(path, mode="a", header=not path.exists(), index=False)


def _machine() -> str:
    from tsrsa.benchmarking.results import machine_description

    return machine_description()


def speed_section(table: pd.DataFrame, command: str) -> str:
    """The speed table of one run (its rows' own machine where they record it, else this one's)."""
    machine = table["machine"].iloc[0] if "machine" in table else _machine()
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


def imports_section(table: pd.DataFrame, command: str) -> str:
    t = dict(zip(table["statement"], table["seconds"]))
    base, ptf = t.get("import torch, pandas"), t.get("import pytorch_forecasting")
    lines = ["Seconds to import in a fresh interpreter (best of 5), and the ratios the targets set "
             "(≤ 1.25× `import torch, pandas`, ≤ 0.5× `import pytorch_forecasting`):\n",
             "| statement | seconds | ÷ torch + pandas | ÷ pytorch_forecasting |", "|---|---|---|---|"]
    for statement, seconds in t.items():
        lines.append(f"| `{statement}` | {seconds:.2f} | {seconds / base:.2f} | {seconds / ptf:.2f} |"
                     if base and ptf else f"| `{statement}` | {seconds:.2f} | | |")
    lines.append("\n`import tsrsa` loads neither torch nor pandas (a test checks that torch, optuna, "
                 "statsmodels, matplotlib, lightning, sklearn and pytorch_forecasting stay out of "
                 "`sys.modules`); a forecaster loads torch, pandas and numpy only.\n")
    lines.append(f"Command: `{command}`\n")
    return "\n".join(lines)


def memory_section(table: pd.DataFrame, command: str) -> str:
    r = table.iloc[-1]
    params = ", ".join(f"{k}={v}" for k, v in MEMORY_PARAMS.items())
    return (
        f"{int(r['series']):,} series × {int(r['length']):,} steps (a wide float64 frame), "
        f"TransformerForecaster({params}): {int(r['training_windows']):,} training windows, which "
        f"materialised as float32 would take {r['materialised_windows_mib']:,.0f} MiB. Peak RSS of the "
        f"whole process: {r['peak_rss_data_mib']:,.0f} MiB with the data made, "
        f"{r['peak_rss_validation_mib']:,.0f} MiB after validating the frame alone (what `fit` does "
        f"first), {r['peak_rss_fit_mib']:,.0f} MiB after fit (1 epoch, validation on, "
        f"{r['fit_seconds']:.0f} s), {r['peak_rss_predict_mib']:,.0f} MiB after predict "
        f"({int(r['forecast_rows']):,} rows): the frame's validation sets the peak; training and prediction "
        f"stay under it. Windows stay lazy (index arithmetic over one float32 array, an epoch's order and "
        f"start positions as 4-byte integers); validation and prediction run in batches of "
        f"`inference_batch_size`. `tests/test_scale.py` checks the windows and batches at this size.\n\n"
        f"Command: `{command}`\n"
    )


def main(argv=None) -> None:
    if "TSRSA_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
        os.environ["TSRSA_DATA_DIR"] = str(SHARED_DATA)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--nf-probe"]:
        print(json.dumps(nf_probe(argv[1], int(argv[2]), int(argv[3]))))
        return
    if argv[:1] == ["--memory-probe"]:
        print(json.dumps(memory_probe(int(argv[1]), int(argv[2]))))
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="speed,imports,memory",
                   help="comma-separated parts: speed, imports, memory, patch (default the first three)")
    p.add_argument("--dataset", default="ETTh1", choices=sorted(ROWS))
    p.add_argument("--models", default="LSTM,Transformer,RSA", help="tsrsa models: LSTM, Transformer, RSA, DLinear")
    p.add_argument("--accelerator", default="cpu")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--import-repeats", type=int, default=5)
    p.add_argument("--no-peers", action="store_true", help="skip pytorch-forecasting")
    p.add_argument("--no-bare", action="store_true", help="skip the bare PyTorch loop")
    p.add_argument("--no-variants", dest="variants", action="store_false",
                   help="skip the per-step forms timed beside the defaults")
    p.add_argument("--neuralforecast-python", default=None,
                   help="python of an environment with neuralforecast 3.x: adds its LSTM to the speed table")
    p.add_argument("--patch-lens", type=lambda t: [int(v) for v in t.split(",")], default=[1, 2, 4, 8, 16, 24])
    p.add_argument("--memory-series", type=int, default=10_000)
    p.add_argument("--memory-length", type=int, default=1_000)
    p.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = p.parse_args(argv)
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    parts = {s.strip() for s in args.only.split(",")}
    shown = list(argv)  # the command as RESULTS.md shows it: no path of this machine's peer environment
    for i, a in enumerate(shown[:-1]):
        if a == "--neuralforecast-python":
            shown[i + 1] = "NF_ENV/bin/python"
    command = "python benchmarks/bench_training.py " + " ".join(shlex.quote(a) for a in shown)
    from tsrsa.benchmarking.results import replace_section

    sections = []
    if "speed" in parts:
        table = speed(args)
        print(table.to_string(index=False))
        name = "training-speed" if args.accelerator == "cpu" else f"training-speed-{args.accelerator}-{args.dataset}"
        title = "Training speed (CPU)" if args.accelerator == "cpu" else f"Training speed ({args.accelerator}, {args.dataset})"
        sections.append((name, speed_section(table, command), title))
    if "imports" in parts:
        table = imports(args)
        print(table.to_string(index=False))
        sections.append(("import-time", imports_section(table, command), "Import time"))
    if "memory" in parts:
        table = memory(args)
        print(table.T.to_string())
        sections.append(("memory", memory_section(table, command), "Memory: many series"))
    if "patch" in parts:
        print(patch_speed(args).to_string(index=False))
    if not args.no_write:
        for name, body, title in sections:
            replace_section(RESULTS_MD, name, body, title=title)


if __name__ == "__main__":
    main()
