"""One model per series, as a user with a few series fits them: tsrsa's networks at their defaults against ETS.

    python benchmarks/per_series.py --models RSA,Transformer,ETS,Naive2 --seeds 0,1,2
    python benchmarks/per_series.py --models RSA --params '{"ensemble_size": 1}' --seeds 0,1,2
    python benchmarks/per_series.py --tables-only

``--series`` M4 series of one frequency (default Weekly: 24 of its series long enough for a network's
input, validation and horizon before the validation split's horizon, every k-th in the file's order)
are each fitted on their own: a neural forecaster at the library's defaults with the M4 benchmark's
horizon and input (``tsrsa.benchmarking.m4.FREQUENCIES``), ``val_size=h`` and one thread, ``--params``
over them; ETS (``ETSForecaster`` with ``error="add", criterion="aic"``, its defaults before 0.16: the
additive form of lowest AIC per series, told the frequency's season where it has one: Hourly 24); Naive2. Two splits,
as ``benchmarks/m4.py`` has them: "validation" (each history without its last h values, forecasting
those) and "test" (the whole history, forecasting M4's test). Scores per series: sMAPE and MASE (the
frequency's season), then their means over the series. Each (model, label, split, seed) is one row of
``results/per_series.jsonl``, written when its series are done, with every series' scores and the
explicit parameters; the RESULTS.md section "per-series" is made from the rows.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import tsrsa  # noqa: E402
from tsrsa.benchmarking.compat import grouped_kwargs  # noqa: E402
from tsrsa.benchmarking.defaults_screen import ADDED, CHOICES, SHORT_FITS, spelt_auto  # noqa: E402
from tsrsa.benchmarking.m4 import FREQUENCIES, load_split  # noqa: E402
from tsrsa.benchmarking.naive2 import naive2  # noqa: E402
from tsrsa.benchmarking.results import (  # noqa: E402
    latest_rows, machine_description, read_run_log, replace_section, rows_footer,
)
from tsrsa.estimator.trainer import flat_defaults, flat_params  # noqa: E402
from tsrsa.metrics import mase, smape  # noqa: E402
from tsrsa.start.fit import spread  # noqa: E402

ROWS = HERE / "results" / "per_series.jsonl"
NEURAL = {"RSA": "RSAForecaster", "Transformer": "TransformerForecaster", "LSTM": "LSTMForecaster",
          "DLinear": "DLinearForecaster"}
MODELS = (*NEURAL, "ETS", "Naive2")
SPLITS = ("validation", "test")


def chosen_ids(ids: list[str], count: int) -> list[str]:
    """``count`` ids evenly spread over ``ids`` (every k-th, the first included)."""
    if count < 1:
        raise ValueError(f"--series must be at least 1, got {count}")
    return [ids[i] for i in spread(len(ids), count)]


def long_enough(frequency: str, data_dir=None) -> list[str]:
    """The ids whose validation history holds a network's input, its validation steps and its horizon
    (``input_size + 2 h``), so that both splits fit the same series."""
    split = load_split(frequency, "validation", data_dir)
    need = split.frequency.input_size + 2 * split.frequency.h
    return [sid for sid in split.ids if len(split.history[sid]) >= need]


def parse_params(text: str | None) -> dict:
    if text is None:
        return {}
    try:
        params = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"--params is not valid JSON: {error}") from None
    if not isinstance(params, dict):
        raise ValueError(f"--params must be a JSON object of constructor arguments, got {text!r}")
    return params


def forecast_one(model: str, history: np.ndarray, freq, seed: int, params: dict) -> tuple[np.ndarray, float, dict]:
    """(forecast (h,), fit seconds, explicit parameters) of one series."""
    if model == "Naive2":
        return naive2(history, freq.m, freq.h), 0.0, {"season": freq.m}
    frame = pd.DataFrame({"unique_id": "s", "ds": np.arange(len(history)), "y": history})
    if model == "ETS":
        # the additive forms by AIC (ETSForecaster's default before 0.16), pinned: the recorded anchor rows
        estimator = tsrsa.ETSForecaster(h=freq.h, freq=1, season_length=freq.m if freq.m > 1 else None,
                                        error="add", criterion="aic")
    else:
        protocol = {"input_size": freq.input_size, "val_size": freq.h, "random_state": seed, "num_threads": 1,
                    "accelerator": "cpu", "freq": 1}
        cls = getattr(tsrsa, NEURAL[model])
        estimator = cls(h=freq.h, **grouped_kwargs(cls, {**protocol, **params}))  # threads, device: trainer
    began = time.perf_counter()
    estimator.fit(frame)
    seconds = time.perf_counter() - began
    # the trainer's options one by one, as the rows made before 0.15 name them
    explicit = {k: v for k, v in flat_params(estimator.get_params(), type(estimator)).items()
                if k not in ("verbose", "callbacks")}
    return estimator.predict()["yhat"].to_numpy(dtype=np.float64), seconds, explicit


def run_row(model: str, label: str, split_name: str, seed: int, frequency: str, count: int, params: dict,
            data_dir=None) -> dict:
    """Every chosen series of one split fitted and scored by one model."""
    split = load_split(frequency, split_name, data_dir)
    freq, ids = split.frequency, chosen_ids(long_enough(frequency, data_dir), count)
    scores, seconds, explicit = {}, [], {}
    for sid in ids:
        forecast, took, explicit = forecast_one(model, split.history[sid], freq, seed, params)
        actual = split.future[sid]
        scores[sid] = {"smape": float(smape(actual, forecast)),
                       "mase": float(mase(actual, forecast, split.history[sid], freq.m))}
        seconds.append(took)
    return {"model": model, "label": label, "split": split_name, "seed": seed, "frequency": frequency,
            "series": ids, "scores": scores, "fit_seconds": round(float(np.mean(seconds)), 3), "params": explicit}


# ---------------------------------------------------------------------- tables
def per_series_means(rows: list[dict], metric: str) -> dict[str, float]:
    """{series: the metric's mean over the rows' seeds}."""
    values: dict[str, list[float]] = {}
    for row in rows:
        for sid, score in row["scores"].items():
            values.setdefault(sid, []).append(score[metric])
    return {sid: float(np.mean(v)) for sid, v in values.items()}


def shown_label(row: dict) -> str:
    """A network's label as the tables read it: "default" for a run at today's model choices, whatever its
    label (every fit here is one series at the automatic budget, so a choice at what "auto" gives there,
    ``tsrsa.benchmarking.defaults_screen.SHORT_FITS``, is "auto"); with what a run had instead of today's
    choices: one added to the estimators since (``ADDED``: ``default (ran at start_weight=0.0)``) and, in a
    "default" row, a model choice whose default has changed since (``gate_init=0.0``)."""
    if row["model"] not in NEURAL:
        return row["label"]
    params = row.get("params", {})
    missing = [f"{k}={v}" for k, v in ADDED.items() if k not in params]
    today = flat_defaults(getattr(tsrsa, NEURAL[row["model"]]))  # every option by its own name, as the rows
    ran = spelt_auto(params, today, SHORT_FITS)
    changed = [f"{k}={ran[k]}" for k in CHOICES if k in ran and k in today and ran[k] != today[k]]
    if not missing and not changed:
        return "default"
    if row["label"] == "default":
        missing += changed
    return f"{row['label']} (ran at {','.join(missing)})" if missing else row["label"]


def render(rows: list[dict]) -> str:
    rows = [{**r, "label": shown_label(r)} for r in rows]
    rows = latest_rows(rows, lambda r: (r["model"], r["label"], r["split"], r["seed"], r["frequency"],
                                        tuple(r["series"])))
    lines = ["What: M4 series fitted one model per series, as a user with a few series would: tsrsa's networks at "
             "the library's defaults (the M4 benchmark's horizon and input, `val_size=h`, one thread; a label names "
             "what differs, and \"ran at\" what a run had before a choice was added), ETS (`ETSForecaster` "
             "with `error=\"add\", criterion=\"aic\"`: the additive form of lowest AIC per series, the default "
             "before 0.16, told the season where the frequency has one) and Naive2. "
             "\"validation\": each history without its last h values, forecasting them; \"test\": the whole "
             "history, forecasting M4's test. sMAPE and MASE are means over the series (a network's per series "
             "first averaged over its seeds); \"÷ ETS\" is the mean MASE over ETS's on the same series; "
             "\"series ahead of ETS\" counts the series where the mean MASE is lower.", ""]
    for frequency in sorted({r["frequency"] for r in rows}):
        for split in SPLITS:
            mine = [r for r in rows if r["frequency"] == frequency and r["split"] == split]
            if not mine:
                continue
            keys = sorted({(r["model"], r["label"]) for r in mine},
                          key=lambda k: (MODELS.index(k[0]) if k[0] in MODELS else len(MODELS), k[1]))
            ets = per_series_means([r for r in mine if r["model"] == "ETS"], "mase")
            lines += [f"**{frequency}, {split}** ({len(mine[0]['series'])} series)", "",
                      "| model | label | seeds | sMAPE | MASE | MASE ÷ ETS | series ahead of ETS | fit seconds per series |",
                      "|---|---|---|---|---|---|---|---|"]
            for model, label in keys:
                group = [r for r in mine if (r["model"], r["label"]) == (model, label)]
                q, s = per_series_means(group, "mase"), per_series_means(group, "smape")
                shared = [sid for sid in q if sid in ets]
                ratio = (np.mean([q[i] for i in shared]) / np.mean([ets[i] for i in shared])) if shared else np.nan
                ahead = f"{sum(q[i] < ets[i] for i in shared)}/{len(shared)}" if shared and model != "ETS" else ""
                seconds = np.mean([r["fit_seconds"] for r in group])
                lines.append(f"| {model} | {label} | {len(group)} | {np.mean(list(s.values())):.2f} | "
                             f"{np.mean(list(q.values())):.3f} | {'' if np.isnan(ratio) else f'{ratio:.3f}'} | "
                             f"{ahead} | {seconds:.2f} |")
            lines.append("")
    lines.append(rows_footer(rows, "results/per_series.jsonl"))
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="RSA,Transformer,ETS,Naive2", help=f"comma-separated, of {MODELS}")
    parser.add_argument("--frequency", default="Weekly", choices=sorted(FREQUENCIES))
    parser.add_argument("--series", type=int, default=24)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--splits", default=",".join(SPLITS))
    parser.add_argument("--params", help="JSON object of constructor arguments for the networks")
    parser.add_argument("--label", help="name of the configuration in the rows (default: from --params)")
    parser.add_argument("--data-dir")
    parser.add_argument("--rows", type=Path, default=ROWS)
    parser.add_argument("--results-md", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    if not models or any(m not in MODELS for m in models):
        raise ValueError(f"--models takes {', '.join(MODELS)}; got {args.models!r}")
    splits = [s for s in args.splits.split(",") if s]
    if not splits or any(s not in SPLITS for s in splits):
        raise ValueError(f"--splits takes {', '.join(SPLITS)}; got {args.splits!r}")
    params = parse_params(args.params)
    chosen_ids(["x"], args.series)  # a bad count stops before any fit
    label = args.label or (",".join(f"{k}={v}" for k, v in sorted(params.items())) if params else "default")
    if not args.tables_only:
        import torch

        torch.set_num_threads(1)
        seeds = [int(s) for s in args.seeds.split(",") if s]
        command = " ".join(["python benchmarks/per_series.py", f"--models {args.models}", f"--seeds {args.seeds}",
                            *([f"--frequency {args.frequency}"] if args.frequency != "Weekly" else []),
                            *([f"--splits {args.splits}"] if splits != list(SPLITS) else []),
                            *([f"--params '{args.params}'"] if args.params else [])])
        for model in models:
            for split in splits:
                for seed in seeds if model in NEURAL else seeds[:1]:
                    row = run_row(model, label if model in NEURAL else "default", split, seed, args.frequency,
                                  args.series, params if model in NEURAL else {}, args.data_dir)
                    row = {"date": dt.datetime.now().isoformat(timespec="seconds"),
                           "machine": machine_description(), "command": command, **row}
                    args.rows.parent.mkdir(parents=True, exist_ok=True)
                    with open(args.rows, "a") as fh:  # one row per finished (model, split, seed)
                        fh.write(json.dumps(row, default=str) + "\n")
                    print(f"{model} [{row['label']}] {split} seed {seed}: MASE "
                          f"{np.mean([v['mase'] for v in row['scores'].values()]):.3f}", flush=True)
    rows = read_run_log(args.rows)
    if not rows:
        raise SystemExit(f"{args.rows} has no rows: run the benchmark first")
    replace_section(args.results_md, "per-series", render(rows), title="One model per series: M4 Weekly against ETS")


if __name__ == "__main__":
    main()
