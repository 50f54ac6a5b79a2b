"""How far a network at the defaults beats its statistical start where data are many: the margin's edge.

    python benchmarks/start_margin_edge.py --fits RSA:ETTh1:96:0,RSA:ETTh2:720:0,RSA:M4-Hourly:48:0
    python benchmarks/start_margin_edge.py --tables-only

``start_margin=z`` sends a fit back to its statistical start unless the trained network's mean validation
loss beats the start's by more than z standard errors of the per-window difference (Newey-West, lag
h - 1). Each fit here runs at the library's defaults with ``start_margin=2`` on a long-horizon set (the
protocol of ``benchmarks/ltsf.py``: its budget, its validation windows) or on M4 (the global fit of
``benchmarks/m4.py`` on the validation histories), and records the network's edge over the start
(``start_["edge"]``), the epoch it kept and its test error, so a reader sees whether the margin binds
where the network pays. A fit spec is ``model:dataset:horizon:seed`` (dataset ``M4-Hourly`` or
``M4-Weekly``: the horizon is the frequency's). Rows go to ``results/start_margin_edge.jsonl`` as each
fit ends; the RESULTS.md section "start-margin-edge" is made from them.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tsrsa.benchmarking.results import machine_description, read_run_log, replace_section  # noqa: E402

ROWS = HERE / "results" / "start_margin_edge.jsonl"
SHARED_DATA = HERE.parents[1] / "shared" / "datasets"  # the shared data folder beside the checkout
MARGIN = 2.0


def parse_fit(spec: str) -> tuple[str, str, int, int]:
    """``model:dataset:horizon:seed`` -> its parts; a clear error for anything else."""
    parts = spec.split(":")
    if len(parts) != 4 or not parts[2].isdigit() or not parts[3].isdigit():
        raise ValueError(f"a fit is model:dataset:horizon:seed (e.g. RSA:ETTh1:96:0), got {spec!r}")
    return parts[0], parts[1], int(parts[2]), int(parts[3])


def fit_long_horizon(model: str, dataset: str, h: int, seed: int) -> dict:
    import tsrsa.benchmarking.runner as runner
    from tsrsa.benchmarking.configs import load_config
    from tsrsa.benchmarking.protocol import load_protocol_data

    fitted = {}
    score = runner.score_model

    def keep(estimator, *args, **kwargs):  # the fitted estimator, as the runner scores it
        fitted.setdefault("model", estimator)
        return score(estimator, *args, **kwargs)

    runner.score_model = keep
    try:
        row = runner.run_one(load_config(model, HERE / "configs"), load_protocol_data(dataset, None, None), h,
                             seed=seed, overrides={"start_margin": MARGIN}, num_threads=1)
    finally:
        runner.score_model = score
    return {"estimator": fitted["model"], "test_mse": row["mse"], "val_mse": row["val_mse"],
            "fit_seconds": row["train_seconds"]}


def fit_m4(model: str, frequency: str, seed: int) -> dict:
    import tsrsa.benchmarking.m4_global as m4_global
    from tsrsa.benchmarking.m4 import load_split, scores_with_owa

    fitted = {}
    named = m4_global.forecaster_class

    def keeping(name):
        cls = named(name)

        class Kept(cls):
            def fit(self, *args, **kwargs):
                fitted["model"] = self
                return super().fit(*args, **kwargs)

        Kept.__name__ = cls.__name__
        return Kept

    val, test = load_split(frequency, "validation"), load_split(frequency, "test")
    m4_global.forecaster_class = keeping
    try:
        _, seconds, _, forecasts = m4_global.run_global_model(val, test, model, seed, {"start_margin": MARGIN}, 1)
    finally:
        m4_global.forecaster_class = named
    return {"estimator": fitted["model"], "test_owa": scores_with_owa(test, forecasts["test"][0])["owa"],
            "val_owa": scores_with_owa(val, forecasts["validation"][0])["owa"], "fit_seconds": round(seconds, 2)}


def run(spec: str, command: str) -> dict:
    model, dataset, h, seed = parse_fit(spec)
    if dataset.startswith("M4-"):
        out = fit_m4(model, dataset[3:], seed)
    else:
        out = fit_long_horizon(model, dataset, h, seed)
    estimator = out.pop("estimator")
    start = estimator.start_ or {}
    return {"date": dt.datetime.now().isoformat(timespec="seconds"), "machine": machine_description(),
            "command": command, "model": model, "dataset": dataset, "h": int(estimator.h), "seed": seed,
            "start": start.get("model"), "edge": start.get("edge"), "best_epoch": estimator.best_epoch_,
            "kept": "start" if estimator.best_epoch_ == 0 else "network", **out}


def section(rows: pd.DataFrame) -> str:
    lines = [f"What: a network at the defaults with `start_margin={MARGIN:g}` on the long-horizon protocol or on "
             "M4's global fit; the edge is the trained network's lead over its statistical start on the validation "
             "windows in standard errors of the mean per-window difference (Newey-West, lag h − 1). Below "
             f"{MARGIN:g} the fit goes back to the start; above it the fit is the one the defaults give.\n",
             "| model | dataset | h | seed | start | edge | kept | best epoch | test | validation |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    rows = rows.drop_duplicates(["model", "dataset", "h", "seed"], keep="last")
    rows = rows.sort_values(["model", "dataset", "h", "seed"])
    for r in rows.itertuples():
        m4 = str(r.dataset).startswith("M4-")
        test = f"OWA {r.test_owa:.3f}" if m4 else f"MSE {r.test_mse:.4f}"
        val = f"OWA {r.val_owa:.3f}" if m4 else f"MSE {r.val_mse:.4f}"
        edge = "–" if r.edge is None or pd.isna(r.edge) else f"{r.edge:.2f}"
        lines.append(f"| {r.model} | {r.dataset} | {r.h} | {r.seed} | {r.start} | {edge} | {r.kept} | {r.best_epoch} "
                     f"| {test} | {val} |")
    commands = sorted(set(rows["command"]))
    lines += ["", f"Commands: {'; '.join(f'`{c}`' for c in commands)}. Dates: {rows['date'].min()[:10]} to "
              f"{rows['date'].max()[:10]}. Machine: {rows['machine'].iloc[-1]}, one thread. Rows: "
              "[`benchmarks/results/start_margin_edge.jsonl`](results/start_margin_edge.jsonl)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fits", default="", help="comma-separated model:dataset:horizon:seed")
    parser.add_argument("--rows", type=Path, default=ROWS)
    parser.add_argument("--results-md", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args(argv)
    specs = [s for s in args.fits.split(",") if s]
    for spec in specs:
        parse_fit(spec)  # every spec checked before the first fit
    if specs:
        if "TSRSA_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
            os.environ["TSRSA_DATA_DIR"] = str(SHARED_DATA)
        command = "python benchmarks/start_margin_edge.py --fits " + ",".join(specs)
        for spec in specs:
            row = run(spec, command)
            args.rows.parent.mkdir(parents=True, exist_ok=True)
            with open(args.rows, "a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
    rows = pd.DataFrame(read_run_log(args.rows)) if args.rows.exists() else pd.DataFrame()
    if len(rows):
        replace_section(args.results_md, "start-margin-edge", section(rows),
                        title="The start margin where networks pay: their edge on ETT and M4")


if __name__ == "__main__":
    main()
