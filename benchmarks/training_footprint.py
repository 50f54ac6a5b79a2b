"""The import-time and memory parts of bench_training.py, and their RESULTS.md sections.

imports  seconds to import tsrsa, a forecaster, torch + pandas and pytorch_forecasting in a fresh
         interpreter (best of 5).
memory   peak RSS of fitting (1 epoch, validation on) and predicting 10,000 series x 1,000 steps, in a
         fresh process.

The functions measure and return tables; bench_training.py writes them.
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from training_peers import H, INPUT

#: the script whose ``--memory-probe`` runs :func:`memory_probe` in a fresh process
PROBE = Path(__file__).resolve().with_name("bench_training.py")


# ---------------------------------------------------------------------- import time
IMPORTS = {
    "import tsrsa": "import tsrsa",
    "from tsrsa import TransformerForecaster": "from tsrsa import TransformerForecaster",
    "import torch, pandas": "import torch, pandas",
    "import pytorch_forecasting": "import pytorch_forecasting",
}


def import_seconds(statement: str) -> float:
    """Seconds ``statement`` takes in a fresh interpreter."""
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def imports(args) -> pd.DataFrame:
    """The import-time table: the best of ``args.import_repeats`` fresh interpreters per statement."""
    rows = []
    for label, statement in IMPORTS.items():
        times = [import_seconds(statement) for _ in range(args.import_repeats)]
        rows.append({"statement": label, "seconds": min(times)})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------- memory
MEMORY_PARAMS = dict(h=H, input_size=INPUT, patch_len=24, d_model=8, n_heads=1, n_layers=1, d_ff=8,
                     max_epochs=1, batch_size=1024, val_size=H, random_state=0,
                     trainer={"num_threads": 1, "accelerator": "cpu"})


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
    """The memory table: :func:`memory_probe` in a fresh process (``bench_training.py --memory-probe``)."""
    out = subprocess.run([sys.executable, str(PROBE), "--memory-probe", str(args.memory_series),
                          str(args.memory_length)], capture_output=True, text=True, check=True)
    return pd.DataFrame([json.loads(out.stdout.strip().splitlines()[-1])])


# ---------------------------------------------------------------------- RESULTS.md
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
