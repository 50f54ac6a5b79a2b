"""The M3 study's sample and its rows: the subsets' horizons and seasons, the candidates, the draw of series,
their values and the forecasts a row holds. ``auto_m3_study.py`` fits the candidates and writes the rows;
``auto_m3_rules.py`` applies AutoForecaster's rules to them."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "results" / "auto_m3_study.csv"
SEED = 20261129
HORIZON = {"yearly": 6, "quarterly": 8, "monthly": 18, "other": 8}
SEASON = {"yearly": 1, "quarterly": 4, "monthly": 12, "other": 1}
CANDIDATES = {"SeasonalNaive": "SeasonalNaiveForecaster", "ETS": "ETSForecaster", "ARIMA": "ARIMAForecaster",
              "Theta": "ThetaForecaster"}
#: the default set's networks: one fit per subset's panel (global), not per series
NETWORKS = ("RSA", "Transformer", "DLinear")
FITS = ("cv2", "cv1", "final", "cv2_fit1")
COLUMNS = ("date", "tsrsa_version", "seed", "per_subset", "draw", "subset", "unique_id", "n", "horizon", "season",
           "model", *(f"{k}_forecast" for k in FITS), *(f"{k}_seconds" for k in FITS), "error")


def data_folder(given) -> Path:
    if given:
        return Path(given)
    if os.environ.get("TSRSA_DATA_DIR"):
        return Path(os.environ["TSRSA_DATA_DIR"]) / "m3"
    return HERE.parent.parent / "shared" / "datasets" / "m3"


def draw(info: pd.DataFrame, subsets, per_subset: int, seed: int) -> pd.DataFrame:
    """The sample: ``per_subset`` ids of each subset (all of them when it holds fewer), drawn with ``seed``;
    ``draw`` is each series' position in its subset's draw."""
    rng = np.random.default_rng(seed)
    parts = []
    for subset in ("yearly", "quarterly", "monthly", "other"):  # one order, so a subset's draw never depends
        ids = np.sort(info.loc[info["subset"] == subset, "unique_id"].to_numpy())  # on which others are run
        chosen = rng.permutation(ids)[:per_subset]
        if subset in subsets:
            parts.append(pd.DataFrame({"unique_id": chosen, "subset": subset, "draw": np.arange(len(chosen))}))
    # round robin over the subsets, so that a run stopped early holds a prefix of every subset's draw
    return pd.concat(parts, ignore_index=True).sort_values("draw", kind="stable", ignore_index=True)


def read_values(folder: Path, sample: pd.DataFrame) -> dict:
    """{unique_id: float array of the whole series (test part included)}."""
    out = {}
    for subset in sorted(set(sample["subset"])):
        frame = pd.read_csv(folder / f"M3-{subset}.csv", dtype={"unique_id": str})
        frame = frame[frame["unique_id"].isin(set(sample["unique_id"]))]
        for sid, group in frame.groupby("unique_id", sort=False):
            out[sid] = group["y"].to_numpy(dtype=np.float64)
    return out


def load_forecast(text) -> np.ndarray | None:
    """A row's recorded forecast (a JSON list; empty where the fit was refused) as an array, or None."""
    return np.array(json.loads(text)) if isinstance(text, str) and text else None
