"""The short-series protocol: cells of a series at a training length, the split rule, scoring.

A cell is (series, training length n, seed): n training steps, then the test part, of which every
stride-1 window is scored. Simulated processes (:mod:`tsrsa.benchmarking.simulated`): the
:data:`SIM_TEST` steps after the training part, the same for every length of a path (seed s is
also the path); classic series (:mod:`tsrsa.benchmarking.classic`): the end of the series. Errors
are taken on the series scaled by the mean and standard deviation of its n training steps (MSE 1
= forecasting the training mean).

:func:`split_rule` (length n, horizon h, season m): validation = the last
v = max(ceil(1.5 h), n // 10) steps; input = the largest multiple of g up to (n - v) / 3, from g to
96 (g = m if m <= 48, else 8); m is used only when n >= 2 m. tsrsa's forecasters train on the first
n - v steps and keep the weights of their best validation epoch (:func:`run_forecaster`); the
statistical anchors (:mod:`tsrsa.benchmarking.statistical_anchors`) are fitted on all n training
steps and filtered forward over the test part, parameters fixed (:func:`run_anchor`).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tsrsa.benchmarking.classic import CLASSIC, read_classic
from tsrsa.benchmarking.compat import grouped_kwargs
from tsrsa.benchmarking.runner import best_epoch
from tsrsa.benchmarking.simulated import PROCESSES, simulate
from tsrsa.benchmarking.statistical_anchors import ArimaSpec, ets_forecasts, fit_arima, fit_ets, named_params

#: the training lengths of the grid
LENGTHS = (200, 500, 1000, 2000)
SIM_HORIZON = 24
SIM_TEST = 480  # steps of the simulated test part (457 stride-1 windows of 24)
MAX_INPUT = 96

#: the benchmark's names of tsrsa's forecasters
FORECASTERS = {"RSA": "RSAForecaster", "Transformer": "TransformerForecaster", "LSTM": "LSTMForecaster",
               "DLinear": "DLinearForecaster", "SeasonalNaive": "SeasonalNaiveForecaster"}
#: the statistical anchors: chosen ETS and ARIMA, the true model's form with estimated
#: coefficients, and the generating model itself (the last two on simulated processes only)
ANCHORS = ("ETS", "ARIMA", "TrueModel", "TrueParams")


# ---------------------------------------------------------------------- the split rule
@dataclass(frozen=True)
class ShortSeriesSplit:
    """Input and validation sizes at one training length."""

    n: int  # training steps (validation included)
    h: int
    input_size: int
    val_size: int
    season: int | None  # the season used at this length (None: too long for the training part)

    @property
    def train_windows(self) -> int:
        return self.n - self.val_size - self.input_size - self.h + 1


def split_rule(n: int, h: int, season: int | None) -> ShortSeriesSplit:
    """Input and validation sizes at training length ``n`` (see the module docstring).

    Raises
    ------
    ValueError
        When the sizes leave no training window.
    """
    m = season if season and n >= 2 * season else None
    v = max(math.ceil(1.5 * h), n // 10)
    g = m if m and m <= 48 else 8
    cap = (MAX_INPUT // g) * g
    L = min(cap, max(g, int((n - v) / 3 // g) * g))
    split = ShortSeriesSplit(n=n, h=h, input_size=L, val_size=v, season=m)
    if split.train_windows < 1:
        raise ValueError(f"n={n} steps leave no training window for h={h} (input {L}, validation {v})")
    return split


# ---------------------------------------------------------------------- cells
@dataclass
class Cell:
    """One dataset at one training length and data seed: raw values, training part then test part."""

    dataset: str
    y: np.ndarray  # (n + test,) raw values
    index: pd.DatetimeIndex  # (n + test,)
    split: ShortSeriesSplit
    simulated: bool

    @property
    def n(self) -> int:
        return self.split.n

    @property
    def z(self) -> np.ndarray:
        """(n + test,) the values scaled by the training part's mean and standard deviation."""
        train = self.y[: self.n]
        return (self.y - train.mean()) / train.std()

    def origins(self, part: str, h: int | None = None) -> np.ndarray:
        """First target position of every stride-1 window of the validation ("val") or test part."""
        h = self.split.h if h is None else h
        if part == "val":
            return np.arange(self.n - self.split.val_size, self.n - h + 1)
        return np.arange(self.n, len(self.y) - h + 1)


def make_cell(dataset: str, n: int, seed: int, folder: Path | None) -> Cell:
    """The cell of a simulated process (a key of ``PROCESSES``) or a classic series.

    Parameters
    ----------
    dataset : str
    n : int
        Training steps.
    seed : int
        The path of a simulated process (a classic series is the same at every seed).
    folder : path, optional
        The folder of the classic files (``<data folder>/classic``); unused for a process.
    """
    if dataset in PROCESSES:
        process = PROCESSES[dataset]
        path = simulate(process, max(*LENGTHS, n) + SIM_TEST, seed)  # one path for the lengths of the grid
        y = path[len(path) - n - SIM_TEST:]  # the same test part at every length
        index = pd.date_range("2000-01-01", periods=len(y), freq="h")
        return Cell(dataset, y, index, split_rule(n, SIM_HORIZON, process.season), True)
    spec = CLASSIC[dataset]
    series = read_classic(dataset, folder).iloc[-(n + spec.test):]
    return Cell(dataset, series.to_numpy(), series.index, split_rule(n, spec.h, spec.season), False)


def reached_lengths(dataset: str, lengths, folder: Path | None) -> list[int]:
    """The lengths at which ``dataset`` has n training steps and its whole test part."""
    if dataset in PROCESSES:
        return list(lengths)
    total = len(read_classic(dataset, folder))
    return [n for n in lengths if n + CLASSIC[dataset].test <= total]


# ---------------------------------------------------------------------- scoring
def score_windows(yhat: np.ndarray, z: np.ndarray, origins: np.ndarray) -> tuple[float, float]:
    """(MSE, MAE) of forecasts ``yhat`` (n, h) of the windows whose targets start at ``origins``
    (n,) of the scaled series ``z``."""
    targets = z[origins[:, None] + np.arange(yhat.shape[1])[None, :]]  # (n, h)
    err = yhat - targets
    return float(np.square(err).mean()), float(np.abs(err).mean())


def window_forecasts(model, z: np.ndarray, origins: np.ndarray, h: int) -> np.ndarray:
    """(n, h) forecasts of a fitted one-series tsrsa forecaster from each origin of ``z``: the
    model's own input length before it, scaled with the statistics of its fit."""
    memory = model.memory_
    T = memory.tails.shape[1]
    tails = z[origins[:, None] - T + np.arange(T)[None, :]]  # (n, T)
    ones = np.ones(len(origins))
    return model.forecast_windows(tails, memory.loc[0] * ones, memory.scale[0] * ones, h)["yhat"]  # (n, h)


def build_forecaster(name: str, cell: Cell, seed: int, params: dict):
    """A tsrsa forecaster (a key of :data:`FORECASTERS`) with the protocol's settings for the cell
    (h, input and validation sizes, ``random_state=seed``, one CPU thread), ``params`` over them."""
    from tsrsa.forecasters import FORECASTERS as CLASSES

    cls = {c.__name__: c for c in CLASSES}[FORECASTERS[name]]
    s = cell.split
    if name == "SeasonalNaive":
        protocol = {"season_length": s.season or 1}
    else:
        protocol = {"input_size": s.input_size, "val_size": s.val_size,
                    "random_state": int(seed), "num_threads": 1, "accelerator": "cpu", "verbose": 0}
    return cls(h=s.h, **grouped_kwargs(cls, {**protocol, **params}))  # the trainer's options in trainer


def run_forecaster(name: str, cell: Cell, seed: int, params: dict) -> dict:
    """Fit a tsrsa forecaster on the cell's n scaled training steps and score it.

    Returns
    -------
    dict
        ``params`` (every explicit parameter but ``verbose``), ``val_mse`` (on the validation
        windows), ``test`` (MSE, MAE on the test windows), ``seconds`` (fit), ``best_epoch``,
        ``input_size`` and ``val_size``.
    """
    from tsrsa.estimator.trainer import flat_params

    model = build_forecaster(name, cell, seed, params)
    z, n = cell.z, cell.n
    frame = pd.DataFrame({"unique_id": cell.dataset, "ds": cell.index[:n], "y": z[:n]})
    began = time.perf_counter()
    model.fit(frame)
    seconds = time.perf_counter() - began
    val, test = (score_windows(window_forecasts(model, z, o, model.h), z, o)
                 for o in (cell.origins("val", model.h), cell.origins("test", model.h)))
    explicit = {k: v for k, v in flat_params(model.get_params(), type(model)).items() if k != "verbose"}
    return {"params": explicit, "val_mse": val[0], "test": test, "seconds": seconds,
            "best_epoch": best_epoch(model), "input_size": explicit.get("input_size", ""),
            "val_size": explicit.get("val_size", "")}


def run_auto(cell: Cell, seed: int) -> dict:
    """AutoForecaster at its defaults (the cell's season, ``random_state=seed``) chosen and fitted on the cell's
    n scaled training steps, then forecasting every test window from the history up to its origin (its
    ``cross_validate(refit=False)``: the choice and the fitted candidates kept, each one's state run over the
    newer values, as the forecasters' windows are). Returns :func:`run_forecaster`'s keys; ``val_mse`` None (it
    validates inside the training part), ``seconds`` the choice, the fits and the test windows together,
    ``params`` its arguments; and ``yhat``, the (windows, h) forecasts scored."""
    from tsrsa.forecasters.auto import AutoForecaster

    s, z = cell.split, cell.z
    origins = cell.origins("test")
    model = AutoForecaster(h=s.h, season_length=s.season or 1, random_state=int(seed))
    frame = pd.DataFrame({"unique_id": cell.dataset, "ds": cell.index, "y": z})
    began = time.perf_counter()
    cv = model.cross_validate(frame, n_windows=len(origins), step_size=1, refit=False)
    seconds = time.perf_counter() - began
    cv = cv.sort_values(["cutoff", model.time_col])
    yhat = cv["yhat"].to_numpy(dtype=np.float64).reshape(len(origins), s.h)
    params = {k: v for k, v in model.get_params().items() if v is not None}
    return {"params": params, "val_mse": None, "test": score_windows(yhat, z, origins),
            "seconds": seconds, "best_epoch": None, "input_size": "", "val_size": "", "yhat": yhat}


def run_anchor(name: str, cell: Cell) -> dict:
    """Fit a statistical anchor (one of :data:`ANCHORS`) and score it on the test windows.

    ETS, ARIMA or the true model (maximum likelihood, with a constant) on the n scaled training
    steps, or the true parameters on the raw ones, filtered forward over the test part; errors
    on the scaled values. Returns the same keys as :func:`run_forecaster` (``val_mse`` None,
    ``best_epoch`` None, sizes "").
    """
    n, s, z = cell.n, cell.split, cell.z
    origins = cell.origins("test")
    began = time.perf_counter()
    if name == "ETS":
        res, record = fit_ets(z[:n], s.season)
        seconds = time.perf_counter() - began
        yhat = ets_forecasts(res, z, origins, s.h)
    elif name == "TrueParams":
        spec, process = ArimaSpec(*PROCESSES[cell.dataset].orders(), "n"), PROCESSES[cell.dataset]
        record = {**spec.describe(), "fit": "none", "params": dict(zip(spec.model(z[:n]).param_names,
                                                                       process.true_params().tolist()))}
        seconds = time.perf_counter() - began
        y = cell.y
        yhat = (spec.forecasts(process.true_params(), y, origins, s.h) - y[:n].mean()) / y[:n].std()
    elif name in ("ARIMA", "TrueModel"):
        if name == "ARIMA":
            spec, params, record = fit_arima(z[:n], s.season)
        else:
            spec = ArimaSpec(*PROCESSES[cell.dataset].orders(), "c")
            res = spec.fit(z[:n])
            params, record = res.params, {**spec.describe(), "fit": "maximum likelihood",
                                          "params": named_params(res)}
        seconds = time.perf_counter() - began
        yhat = spec.forecasts(params, z, origins, s.h)
    else:
        raise ValueError(f"unknown anchor {name!r}; choose from {', '.join(ANCHORS)}")
    return {"params": {**record, "fitted_on": "the n training steps, scaled", "test": "filtered forward, no refit"},
            "val_mse": None, "test": score_windows(yhat, z, origins), "seconds": seconds, "best_epoch": None,
            "input_size": "", "val_size": ""}
