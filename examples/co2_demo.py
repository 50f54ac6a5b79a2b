"""The main job of `make demo`: forecast two years of weekly Mauna Loa CO2, offline.

Holds out the last 104 weeks of statsmodels' weekly co2 series (its missing weeks filled by
interpolation), fits each model on the rest, prints MAE, MSE and fit seconds, and writes a
forecast plot. Runs in well under three minutes on 2 CPU cores.

    python examples/co2_demo.py --output-dir demo_output
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

import tsrsa
from tsrsa import LSTMForecaster, RSAForecaster, SeasonalNaiveForecaster, TransformerForecaster

H = 104  # two years of weeks
INPUT_SIZE = 208  # four years of weeks


def models(max_epochs: int) -> dict:
    common = dict(input_size=INPUT_SIZE, fill="interpolate", max_epochs=max_epochs, random_state=0)
    return {
        "SeasonalNaive": SeasonalNaiveForecaster(h=H, fill="interpolate"),
        "LSTM": LSTMForecaster(h=H, patch_len=4, **common),
        "Transformer": TransformerForecaster(h=H, patch_len=8, **common),
        # the Transformer's twin: same settings, plus REM heads started from the series' AR roots
        # and its yearly cycle
        "RSA": RSAForecaster(h=H, patch_len=8, **common),
    }


def plot(history: pd.DataFrame, actual: pd.DataFrame, forecasts: dict, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    recent = history.tail(3 * H)
    ax.plot(recent["ds"], recent["y"], color="0.3", lw=1.2, label="history")
    ax.plot(actual["ds"], actual["y"], color="black", lw=1.8, label="actual (held out)")
    for k, (name, fc) in enumerate(forecasts.items()):
        ax.plot(fc["ds"], fc["yhat"], color=f"C{k}", lw=1.4, label=name)
    ax.set_title("Weekly CO2 at Mauna Loa: last 104 weeks held out", loc="left")
    ax.set_ylabel("ppm")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=9)
    fig.savefig(path, dpi=110)


def main(argv=None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", default="demo_output", help="where the plot PNG is written")
    parser.add_argument("--max-epochs", type=int, default=20, help="training epochs of the neural models")
    args = parser.parse_args(argv)

    df = tsrsa.datasets.load("co2")  # unique_id, ds, y; NaN weeks kept
    train, test = df.iloc[:-H], df.iloc[-H:]
    rows, forecasts = [], {}
    for name, model in models(args.max_epochs).items():
        start = time.perf_counter()
        model.fit(train)
        seconds = time.perf_counter() - start
        forecasts[name] = fc = model.predict()
        scored = fc.merge(test, on=["unique_id", "ds"]).dropna(subset=["y"])
        metrics = tsrsa.evaluate(scored, ["mae", "mse"])
        rows.append({"model": name, "MAE": metrics["mae"][0], "MSE": metrics["mse"][0], "fit seconds": seconds})
    table = pd.DataFrame(rows).set_index("model")
    print(f"co2 weekly, {len(train)} training weeks, horizon {H} weeks (ppm)")
    print(table.to_string(float_format=lambda v: f"{v:.3f}"))

    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "co2_forecast.png"
    plot(train.assign(y=train["y"].interpolate()), test, forecasts, path)
    print(f"plot written to {path}")
    return table


if __name__ == "__main__":
    main()
