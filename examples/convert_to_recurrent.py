"""Convert, then stream: a trained softmax forecaster turned into an RNN with T2R, updated row by row.

    python examples/convert_to_recurrent.py                  # a few minutes on a laptop CPU
    python examples/convert_to_recurrent.py --budget small   # seconds: a narrow network, two epochs

Fits a TransformerForecaster in the streaming configuration (causal softmax, so its streaming
state is every past key and value), converts it with ``tsrsa.convert.to_recurrent`` (learned relu
features in place of softmax, every other weight kept, then finetuned), and compares the two on
the held-out end of the series: the error of their forecasts, and the state each keeps after
streaming the history (growing with it for softmax, fixed for T2R).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from tsrsa import Trainer, TransformerForecaster
from tsrsa.convert import to_recurrent

BUDGETS = {
    "small": dict(d_model=16, n_layers=1, d_ff=16, max_epochs=2),
    "full": dict(d_model=64, n_layers=2, d_ff=128, max_epochs=20),
}


def series(n: int, seed: int = 0) -> pd.Series:
    """Hourly load-like data: a daily and a weekly cycle with AR(1) noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    noise = np.zeros(n)
    for i in range(1, n):
        noise[i] = 0.7 * noise[i - 1] + 0.3 * rng.standard_normal()
    values = 10 + 2 * np.sin(2 * np.pi * t / 24) + np.sin(2 * np.pi * t / 168) + noise
    return pd.Series(values, index=pd.date_range("2024-01-01", periods=n, freq="h"), name="load")


def state_numbers(model) -> int:
    """Numbers in the network's streaming state of the series (its layers' caches or sums)."""
    return sum(v.numel() for g in model.memory_.groups for v in g.state.tensors().values())


def stream_and_score(model, test: pd.Series, h: int) -> tuple[float, float]:
    """Feed all of ``test`` a step at a time; MAE of the h-step forecast made every h steps on the way
    (where h steps follow); ms per update."""
    errors, seconds = [], 0.0
    for i in range(len(test)):
        if i % h == 0 and i + h <= len(test):
            forecast = model.predict()["yhat"].to_numpy()
            errors.append(np.abs(forecast - test.iloc[i:i + h].to_numpy()).mean())
        began = time.perf_counter()
        model.update(test.iloc[i:i + 1])
        seconds += time.perf_counter() - began
    return float(np.mean(errors)), 1e3 * seconds / len(test)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", choices=sorted(BUDGETS), default="full")
    parser.add_argument("--num-threads", type=int, default=None)
    args = parser.parse_args(argv)
    h, y = 24, series(24 * 7 * 10)
    train, test = y.iloc[:-24 * 7], y.iloc[-24 * 7:]
    common = dict(h=h, input_size=96, stream=True, val_size=2 * h, random_state=0,
                  trainer=Trainer(num_threads=args.num_threads))
    softmax = TransformerForecaster(**common, **BUDGETS[args.budget]).fit(train)
    recurrent = to_recurrent(softmax, train, feature_size=32)  # the original stays as it is
    print(f"original: best validation loss {softmax.fit_history_['val_loss'].min():.4f}; converted after "
          f"{len(recurrent.fit_history_)} finetuning epochs: {recurrent.fit_history_['val_loss'].min():.4f}")
    rows = {}
    for name, model in (("softmax", softmax), ("t2r", recurrent)):
        mae, ms = stream_and_score(model, test, h)
        rows[name] = {"mae": mae, "ms_per_update": ms, "state_numbers": state_numbers(model)}
    table = pd.DataFrame(rows).T
    print(table.to_string(float_format=lambda v: f"{v:.3f}"))
    return {"table": table, "original": softmax, "converted": recurrent}


if __name__ == "__main__":
    main()
