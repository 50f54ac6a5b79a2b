"""The README's headline figure: where tsrsa stands against its twin, the peers run here and the
published figures, drawn from the committed results (it trains nothing).

    python benchmarks/headline.py            # writes benchmarks/results/headline.png

Three panels:

- long horizons: test MSE averaged over the four horizons at input 96 (mean over seeds per cell, the
  benchmark configuration), beside the published averages of PatchTST and iTransformer
  (``tsrsa.benchmarking.anchors``);
- M4, one global model per frequency: test sMAPE of the library's default run, beside
  neuralforecast's NHITS and NBEATS and the seasonal naive, with each fit's seconds;
- short series: RSA's test MSE divided by the better statistical anchor (ETS or ARIMA) on each classic
  series and training length (mean over seeds); the dotted line is 5 % behind the anchor.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
#: the published averages drawn beside ours (``tsrsa.benchmarking.anchors``)
PUBLISHED = ("PatchTST", "iTransformer")
LONG_DATASETS = ("ETTh1", "ETTh2", "ETTm1", "ETTm2", "weather")
LONG_MODELS = {"RSAForecaster": "RSA", "TransformerForecaster": "Transformer", "DLinearForecaster": "DLinear"}
M4_MODELS = ("RSA", "Transformer", "NHITS", "NBEATS", "SeasonalNaive")
CLASSIC = ("ausbeer", "co2", "sunspots", "daily_min_temperatures", "us_gasoline", "taylor", "taxi")


def long_horizon(results: Path) -> pd.DataFrame:
    """Average test MSE over the four horizons (rows: data set; columns: model), default variant."""
    df = pd.read_csv(results / "ltsf.csv")
    df = df[(df["variant"] == "default") & (df["input_size"] == 96) & (df["train_fraction"] == 1.0)]
    cells = df.groupby(["dataset", "model", "horizon"])["mse"].mean()  # mean over seeds
    table = cells.groupby(["dataset", "model"]).agg(["mean", "count"])
    table = table[table["count"] == 4]["mean"].unstack("model")  # every horizon run
    table = table.reindex(index=[d for d in LONG_DATASETS if d in table.index], columns=list(LONG_MODELS))
    return table.dropna(how="all").rename(columns=LONG_MODELS)  # a data set none of them ran is left out


def m4(results: Path) -> pd.DataFrame:
    """Test sMAPE and fit seconds of the runs at today's defaults (rows: frequency, model), mean over
    seeds: a "default" row made at earlier defaults (``m4.earlier_defaults``) is left out, and a seed run
    again counts once, by its latest row (as ``m4.read_rows`` gives the tables)."""
    df = pd.read_csv(results / "m4.csv")
    df = df[(df["split"] == "test") & (df["label"] == "default") & df["model"].isin(M4_MODELS)]
    if "params" in df:
        import sys

        sys.path.insert(0, str(HERE))
        from m4 import earlier_defaults

        df = df[[earlier_defaults(m, label, p) == "" for m, label, p in zip(df["model"], df["label"], df["params"])]]
    df = df.drop_duplicates(subset=["frequency", "model", "label", "seed"], keep="last")  # a re-run replaces its row
    return df.groupby(["frequency", "model"])[["smape", "fit_seconds"]].mean()


def short_series(results: Path) -> pd.Series:
    """RSA's mean test MSE at today's defaults (whatever the rows' label) over the better anchor's, per
    classic (series, training length)."""
    import sys

    sys.path.insert(0, str(HERE))
    from start_ablation import default_params, is_default

    df = pd.read_csv(results / "short_series.csv", dtype={"params": str})
    df = df[df["dataset"].isin(CLASSIC)]
    start = default_params("RSAForecaster")["start"]
    rsa = (df["model"] == "RSAForecaster") & df["params"].map(lambda p: is_default(p, start, "RSAForecaster"))
    df = df[rsa | ((df["label"] == "default") & df["model"].isin(["ETS", "ARIMA"]))]
    df = df.drop_duplicates(subset=["dataset", "train_length", "model", "seed"], keep="last")  # the latest run
    means = df.groupby(["dataset", "train_length", "model"])["test_mse"].mean().unstack("model")
    means = means.dropna(subset=["RSAForecaster"])
    anchor = means[["ETS", "ARIMA"]].min(axis=1)
    return (means["RSAForecaster"] / anchor).dropna()


def draw(results: Path, out: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from tsrsa.benchmarking.anchors import anchor

    fig = Figure(figsize=(14, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax_long, ax_m4, ax_short = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.4, 1.0, 1.2]})

    long = long_horizon(results)
    columns = [*long.columns, *PUBLISHED]
    width = 0.8 / len(columns)
    x = np.arange(len(long))
    for k, name in enumerate(columns):
        values = long[name] if name in long else [anchor(name, d, "avg")[0] or np.nan for d in long.index]
        ax_long.bar(x + (k - (len(columns) - 1) / 2) * width, values, width, label=name,
                    hatch="//" if name in PUBLISHED else None, alpha=0.6 if name in PUBLISHED else 1.0)
    ax_long.set_xticks(x, long.index)
    ax_long.set_ylabel("test MSE, average of H96-H720")
    ax_long.set_title("Long horizons at the defaults (input 96)")
    ax_long.set_ylim(0, 1.4 * float(np.nanmax(ax_long.dataLim.y1)))  # room above the bars for the legend
    ax_long.legend(fontsize=8, ncols=3, loc="upper center")

    scores = m4(results)
    frequencies = list(scores.index.get_level_values(0).unique())
    width = 0.8 / len(M4_MODELS)
    for k, model in enumerate(M4_MODELS):
        for j, freq in enumerate(frequencies):
            if (freq, model) not in scores.index:
                continue
            smape, seconds = scores.loc[(freq, model)]
            bar = ax_m4.bar(j + (k - (len(M4_MODELS) - 1) / 2) * width, smape, width, color=f"C{k}",
                            label=model if j == 0 else None)
            ax_m4.annotate(f"{seconds:,.0f}s", (bar[0].get_x() + width / 2, smape), ha="center", va="bottom",
                           fontsize=6, rotation=90)
    ax_m4.set_xticks(range(len(frequencies)), frequencies)
    ax_m4.set_ylabel("test sMAPE (fit seconds above each bar)")
    ax_m4.set_title("M4, one global model each (defaults)")
    ax_m4.set_ylim(0, 1.45 * float(ax_m4.dataLim.y1))
    ax_m4.legend(fontsize=8, ncols=3, loc="upper center")

    ratio = short_series(results)
    labels = [f"{d} {n}" for d, n in ratio.index]
    ax_short.bar(range(len(ratio)), ratio.to_numpy(), color=["C2" if r <= 1.05 else "C3" for r in ratio])
    ax_short.axhline(1.0, color="black", linewidth=0.8)
    ax_short.axhline(1.05, color="black", linestyle=":", linewidth=0.8)
    ax_short.set_xticks(range(len(ratio)), labels, rotation=60, ha="right", fontsize=7)
    ax_short.set_yscale("log")
    ax_short.set_ylabel("RSA test MSE / best of ETS, ARIMA")
    ax_short.set_title(f"Short series: within 5 % of the anchor in {int((ratio <= 1.05).sum())} of {len(ratio)}")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--results", type=Path, default=RESULTS, help="folder of the results CSV files")
    p.add_argument("--output", type=Path, default=RESULTS / "headline.png")
    args = p.parse_args(argv)
    print(draw(args.results, args.output))


if __name__ == "__main__":
    main()
