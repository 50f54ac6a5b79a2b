"""Results rows (``benchmarks/results/ltsf.csv``) and the tables of ``benchmarks/RESULTS.md``.

Rows are appended as runs finish. When the tables are made, a later row replaces an earlier one
of the same (dataset, horizon, model, variant, seed, input_size, train_fraction), so a re-run
updates its figures. RESULTS.md is rewritten only between its own markers
(``<!-- BEGIN name -->`` ... ``<!-- END name -->``); the rest of the file is left as it is.
"""
from __future__ import annotations

import csv
import datetime
import io
import json
import os
import platform
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from tsrsa.benchmarking.anchors import ANCHORS, SOURCE

COLUMNS = ("dataset", "horizon", "model", "variant", "seed", "mse", "mae", "input_size", "train_fraction",
           "device", "train_seconds", "best_epoch", "val_loss", "params", "val_mse", "val_mae")
KEY = ("dataset", "horizon", "model", "variant", "seed", "input_size", "train_fraction")

#: display order of the models; others follow alphabetically
_MODEL_ORDER = ("SeasonalNaiveForecaster", "DLinearForecaster", "LSTMForecaster", "TransformerForecaster",
                "RSAForecaster")
_DATASET_ORDER = ("ETTh1", "ETTh2", "ETTm1", "ETTm2", "weather", "exchange_rate", "national_illness")


# ---------------------------------------------------------------------- the CSV
def append_rows(path, rows: list[dict], columns: tuple[str, ...] = COLUMNS) -> None:
    """Append rows to the CSV at ``path`` (created with its header when missing); ``columns``: the
    file's columns, by default the long-horizon results'."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists() or path.stat().st_size == 0
    if not new:
        _extend_header(path, columns)
    lines = []
    for row in rows:
        if set(row) != set(columns):
            raise ValueError(f"a results row needs exactly the columns {columns}; got {sorted(row)}")
        lines.append([_cell(row[c]) for c in columns])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if new:
        writer.writerow(columns)
    writer.writerows(lines)
    with open(path, "a", newline="") as fh:  # one write per call: concurrent runs do not interleave
        fh.write(buffer.getvalue())


def row_writer(path, columns: tuple[str, ...]):
    """``write(row)``: append one result row to ``path`` as soon as it is made (so that a stopped run
    keeps what finished) and print it, without its ``params``, as one JSON line."""
    def write(row: dict) -> None:
        append_rows(path, [row], columns=columns)
        print(json.dumps({k: row[k] for k in columns if k != "params"}), flush=True)

    return write


def _extend_header(path: Path, columns: tuple[str, ...]) -> None:
    """Give a file written with the first of ``columns`` the whole header; its earlier rows keep
    their fields and read back with the later columns missing. Any other header is an error."""
    with open(path, newline="") as fh:
        header = tuple(next(csv.reader(fh), ()))
    if header == columns:
        return
    if not header or columns[:len(header)] != header:
        raise ValueError(f"{path} has columns {list(header)}; expected {list(columns)} or a first part of them")
    text = path.read_text()
    body = text.split("\n", 1)[1] if "\n" in text else ""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as fh:
        fh.write(",".join(columns) + "\n" + body)
    os.replace(tmp, path)


def explicit_params(model) -> str:
    """The constructor arguments a model ran with, as sorted JSON (``verbose`` left out; a trainer's options
    one by one, as rows before 0.15 name them: :func:`~tsrsa.estimator.trainer.flat_params`): what a
    results row records so that a later change of defaults never relabels it."""
    from tsrsa.estimator.trainer import flat_params

    params = {k: v for k, v in flat_params(model.get_params(), type(model)).items() if k != "verbose"}
    return json.dumps(params, sort_keys=True, default=str)


def at_protocol_input(df: pd.DataFrame) -> pd.DataFrame:
    """The rows run at each data set's protocol input (96; ILI 36; rows from before the column
    count as run there): runs at longer inputs are other cells, not more seeds of these."""
    from tsrsa.benchmarking.protocol import LTSF_DATASETS

    default = df["dataset"].map(lambda name: LTSF_DATASETS[name][0] if name in LTSF_DATASETS else None)
    return df[df["input_size"].isna() | (df["input_size"] == default)]


def _cell(value):
    if isinstance(value, float):
        return repr(round(value, 6))
    return value


def read_results(path) -> pd.DataFrame:
    """The rows of ``ltsf.csv``, the latest of each key kept (empty frame when no file)."""
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        return pd.DataFrame(columns=list(COLUMNS))
    df = pd.read_csv(path, dtype={"variant": str, "model": str, "dataset": str, "device": str, "params": str})
    if COLUMNS[:len(df.columns)] != tuple(df.columns):
        raise ValueError(f"{path} has columns {list(df.columns)}; expected {list(COLUMNS)} or a first part of them")
    df = df.reindex(columns=list(COLUMNS))  # rows made before a column existed: missing there
    return df.drop_duplicates(subset=list(KEY), keep="last").reset_index(drop=True)


# ---------------------------------------------------------------------- the run log
def machine_description() -> str:
    """CPU model and count, OS, Python, torch and (where present) the GPU."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    parts = [f"{cpu} ({os.cpu_count()} logical cores)", f"{platform.system()} {platform.release()}",
             f"Python {platform.python_version()}"]
    try:
        import torch

        parts.append(f"torch {torch.__version__}")
        if torch.cuda.is_available():
            parts.append(torch.cuda.get_device_name(0))
    except ImportError:  # pragma: no cover
        pass
    return ", ".join(parts)


def log_run(path, command: str, n_rows: int, wall_seconds: float | None = None) -> None:
    """Append one line (date, machine, command, rows written and, where given, the command's wall
    time) to the run log ``path`` (JSON lines)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine_description(),
             "command": command, "rows": int(n_rows)}
    if wall_seconds is not None:
        entry["wall_seconds"] = round(float(wall_seconds), 1)
    with open(path, "a") as fh:
        fh.write(json.dumps(entry) + "\n")


def read_run_log(path) -> list[dict]:
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def latest_rows(rows: list[dict], key) -> list[dict]:
    """Each ``key(row)`` once, by its latest row (``date``)."""
    kept = {}
    for row in sorted(rows, key=lambda r: r["date"]):
        kept[key(row)] = row
    return list(kept.values())


# ---------------------------------------------------------------------- tables
def rows_footer(rows: list[dict], rows_file: str) -> str:
    """The closing line of a section made from JSON-lines rows: their dates and machines, each command
    once, and the rows' file (relative to ``benchmarks/``)."""
    dates = sorted(str(r["date"])[:10] for r in rows)
    machines = sorted({r["machine"] for r in rows})
    commands = list(dict.fromkeys(r["command"] for r in rows))
    return (f"Runs: {dates[0]} to {dates[-1]}, on {'; '.join(machines)}, one process, one thread. Commands: "
            + ", ".join(f"`{c}`" for c in commands) + f"; `--tables-only` re-renders this section. Rows: "
            f"[`benchmarks/{rows_file}`]({rows_file}).")


def _order(values, preferred) -> list:
    values = list(dict.fromkeys(values))
    return [v for v in preferred if v in values] + sorted(v for v in values if v not in preferred)


def _fmt(values: np.ndarray) -> str:
    values = np.asarray(values, dtype=float)
    if len(values) == 0 or not np.isfinite(values).all():
        return ""
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{values.mean():.3f}±{values.std(ddof=1):.3f}"


def _pair(mse: str, mae: str) -> str:
    return f"{mse} / {mae}" if mse else ""


def _anchor_cell(cell) -> str:
    mse, mae = cell
    if mse is None:
        return ""
    return f"{mse:.3f} / {mae:.3f}" if mae is not None else f"{mse:.3f} / –"


def results_tables(df: pd.DataFrame, anchors: dict | None = None) -> str:
    """Markdown tables, one per (data set, input length): mean ± std over seeds per horizon and
    of the per-seed average over horizons, with the published anchors below."""
    anchors = ANCHORS if anchors is None else anchors
    if df.empty:
        return "_No results yet._\n"
    out = []
    for dataset in _order(df["dataset"], _DATASET_ORDER):
        part = df[df["dataset"] == dataset]
        for input_size in sorted(part["input_size"].unique()):
            block = part[part["input_size"] == input_size]
            horizons = sorted(int(h) for h in block["horizon"].unique())
            standard = _standard_horizons(dataset)
            columns = sorted(set(horizons) | set(standard))
            out.append(f"### {dataset}, input {input_size}\n")
            head = ["model", "variant", "train fraction", "seeds", *[f"H{h}" for h in columns], "average"]
            out.append("| " + " | ".join(head) + " |")
            out.append("|" + "---|" * len(head))
            groups = block.groupby(["model", "variant", "train_fraction"], sort=False)
            keys = sorted(groups.groups, key=lambda k: (_rank(k[0]), k[1] != "default", k[1], -k[2]))
            for model, variant, fraction in keys:
                g = groups.get_group((model, variant, fraction))
                cells = []
                for h in columns:
                    gh = g[g["horizon"] == h]
                    cells.append(_pair(_fmt(gh["mse"]), _fmt(gh["mae"])))
                wide = g.pivot_table(index="seed", columns="horizon", values=["mse", "mae"])
                avg = ""
                if all(("mse", h) in wide.columns for h in standard):
                    complete = wide.dropna(subset=[("mse", h) for h in standard])
                    if len(complete):
                        avg = _pair(_fmt(complete["mse"][list(standard)].mean(axis=1)),
                                    _fmt(complete["mae"][list(standard)].mean(axis=1)))
                seeds = g["seed"].nunique()
                name = model.removesuffix("Forecaster")
                out.append("| " + " | ".join([name, variant, f"{fraction:g}", str(seeds), *cells, avg]) + " |")
            for model, table in anchors.items():
                rows = table.get(dataset)
                if rows is None or input_size != 96:
                    continue
                cells = [_anchor_cell(rows.get(h, (None, None))) for h in columns]
                out.append("| " + " | ".join([f"*{model} (published)*", "", "", "", *cells,
                                              _anchor_cell(rows["avg"])]) + " |")
            out.append("")
    out.append(f"Cells: test MSE / MAE on the scaled data; mean ± std (ddof 1) over seeds where there are "
               f"several. Average: each seed's mean over the four horizons, then mean ± std. Published: "
               f"{SOURCE}; an empty cell is a figure we are not sure of.\n")
    return "\n".join(out)


def _rank(model: str):
    return (_MODEL_ORDER.index(model) if model in _MODEL_ORDER else len(_MODEL_ORDER), model)


def _standard_horizons(dataset: str) -> tuple[int, ...]:
    from tsrsa.benchmarking.protocol import HORIZONS, LTSF_DATASETS

    return LTSF_DATASETS.get(dataset, (96, HORIZONS))[1]


def runs_summary(runs: list[dict], link: str) -> str:
    """Where the runs behind the tables come from, in a few lines: the run log ``link`` (every
    command with its date, machine, rows and wall time stays there), and per machine the dates,
    commands and rows."""
    if not runs:
        return ""
    machines: dict[str, dict] = {}
    for run in runs:
        entry = machines.setdefault(run["machine"], {"dates": [], "commands": 0, "rows": 0})
        entry["dates"].append(str(run["date"])[:10])
        entry["commands"] += 1
        entry["rows"] += int(run["rows"])
    dates = sorted(str(run["date"])[:10] for run in runs)
    span = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
    lines = [f"Run log: [`{link}`]({link}) has the exact command of every run with its date, machine, "
             f"rows written and, where logged, wall time: {len(runs)} commands, {span}.\n",
             "| machine | dates | commands | rows |", "|---|---|---|---|"]
    for machine, entry in machines.items():
        first, last = min(entry["dates"]), max(entry["dates"])
        span = first if first == last else f"{first} to {last}"
        lines.append(f"| {machine} | {span} | {entry['commands']} | {entry['rows']} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- RESULTS.md
def replace_section(path, name: str, body: str, *, title: str | None = None) -> None:
    """Write ``body`` between ``<!-- BEGIN name -->`` and ``<!-- END name -->`` in ``path``
    (the markers are appended, under ``title``, when missing); atomic."""
    path = Path(path)
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        heading = f"\n## {title}\n\n" if title else "\n"
        text = text.rstrip("\n") + "\n" + heading + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)
