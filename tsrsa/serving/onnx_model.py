"""``tsrsa.load_onnx(path)``: forecasts from an exported model with numpy, pandas and onnxruntime only.

This module imports no torch (a test runs it in a process where importing torch fails): the graph
that ``model.to_onnx(path)`` wrote (:mod:`tsrsa.serving.onnx_export`) holds the network, the
statistical start and the per-series scaling; what is around it (validating a frame, each series'
statistics, the timestamps of the forecast, the frame) is tsrsa's data layer, which is numpy and
pandas.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from tsrsa.data.frames import FrameSpec, forecast_frame
from tsrsa.data.frequency import Frequency
from tsrsa.data.index_encoding import decode_index, decode_times
from tsrsa.data.memory import SeriesMemory
from tsrsa.data.native import PANDAS, as_kind, frame_kind, to_pandas
from tsrsa.data.scalers import check_scaled
from tsrsa.data.shard_manifest import sha256
from tsrsa.data.validation import (
    build_panel, check_continuation, check_finite_forecast, check_min_length, check_time_zone, requested_horizon,
)
from tsrsa.serving.served_covariates import ServedCovariates
from tsrsa.serving.served_distribution import distribution_columns
from tsrsa.serving.served_state import ServedStreams, ServedWindows

__all__ = ["OnnxForecaster", "load_onnx"]

#: the versions of the files this module reads
FORMAT_VERSIONS = (1,)
#: what to do about a value too large for the network once scaled (as ``predict`` says it)
SCALED_FIX = "check the value (a unit or typing error?), or refit on data that include this level"


def _session(path: Path, threads: int | None):
    """An onnxruntime session of the graph at ``path`` on the CPU (``threads``: its intra-op threads; None:
    onnxruntime's choice)."""
    try:
        import onnxruntime as ort
    except ImportError as error:
        raise ImportError("load_onnx needs onnxruntime: pip install 'tsrsa[onnx]' (or onnxruntime)") from error
    options = ort.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = int(threads)
        options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only
    try:
        return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as error:  # onnxruntime's own exception types
        raise ValueError(f"{path} is not a graph onnxruntime can load ({type(error).__name__}: {error})") from error


class OnnxForecaster:
    """An exported forecaster: ``predict`` and ``update`` as the fitted model's, on onnxruntime
    (``tsrsa.load_onnx``).

    Attributes
    ----------
    h : int
        The trained horizon.
    input_size : int
        The look-back: each series' last ``input_size`` values (what a fixed-window graph reads).
    state : ServedWindows or ServedStreams
        What the model holds of its series (:mod:`tsrsa.serving.served_state`): their ids, last timestamps,
        last values and scaling (``state.memory``), and for a streaming model their recurrent states.
    freq : tsrsa.data.Frequency
    columns : dict
        ``{column: channel}`` of the forecast's outputs (``yhat``, ``yhat_q10``, ...); -1 for every column of
        a distribution loss, computed from the graph's parameters (``info["distribution"]``).
    info : dict
        The exported record (versions, model class, opset, ...).
    """

    def __init__(self, session, info: dict, state):
        self.session, self.info, self.state = session, info, state
        self.h, self.input_size = int(info["h"]), int(info["input_size"])
        self.freq = Frequency.from_json(info["freq"])
        self.columns = {str(k): int(v) for k, v in info["columns"].items()}
        self.frame_spec = FrameSpec(info["id_col"], info["time_col"], info["target_col"])
        self.scaler = info["scaler"]
        self.distribution = info.get("distribution")  # None, or what turns parameters into columns

    @property
    def covariates(self) -> ServedCovariates | None:
        """The model's covariates (its fitted encoder and the graph's covariate inputs); None: it reads none."""
        return getattr(self.state, "covariates", None)

    @property
    def memory(self) -> SeriesMemory:
        """Per series: id, last timestamp, last ``input_size`` values, ``loc`` and ``scale``."""
        return self.state.memory

    @property
    def streams(self) -> bool:
        """Whether the model is a streaming one (its graph advances a recurrent state by one token)."""
        return self.info.get("stream") is not None

    def __repr__(self) -> str:
        return (f"OnnxForecaster({self.info['model']}, h={self.h}, input_size={self.input_size}, "
                f"series={self.memory.n_series}, columns={list(self.columns)}, stream={self.streams})")

    # ------------------------------------------------------------------ the graph
    def forecast_arrays(self, tails: np.ndarray, loc: np.ndarray, scale: np.ndarray, **covariates) -> np.ndarray:
        """A fixed-window graph on windows ``tails`` (n, L) of series scaled by ``loc``/``scale`` (n,): (n, H, Q)
        in the data's units (quantile levels in order); for a distribution loss its parameters (n, H, P) in the
        scaled units (``info["distribution"]["parameters"]`` names them). A model fitted with covariates takes
        its graph's covariate inputs by name (``covariates.inputs``: ``past`` (n, L, C), ``future`` (n, H, F),
        ``static_num`` (n, S_n), ``static_cat`` (n, S_c) codes), encoded as its ``predict`` encodes them; a model
        with a learned cycle takes ``cycle`` (n, 2), each window's row and phase
        (:func:`tsrsa.data.cycles.window_cycle`)."""
        if self.streams:
            raise ValueError("forecast_arrays runs a fixed-window graph; this model streams: use update and predict")
        wanted = (*(self.covariates.inputs if self.covariates is not None else ()),
                  *(("cycle",) if self.info.get("cycle") else ()))
        if set(covariates) != set(wanted):
            raise ValueError(f"this model's graph reads the covariate inputs {list(wanted)}; got {sorted(covariates)}: "
                             f"pass exactly those, by name")
        feeds = {"tails": np.ascontiguousarray(tails[:, -self.input_size:], dtype=np.float64),
                 "loc": np.ascontiguousarray(loc, dtype=np.float64),
                 "scale": np.ascontiguousarray(scale, dtype=np.float64)}
        feeds.update({name: np.ascontiguousarray(a, dtype=np.int64 if name in ("static_cat", "cycle") else np.float32)
                      for name, a in covariates.items()})
        return self.state.run(feeds, [self.info.get("output", "forecast")])[0]

    # ------------------------------------------------------------------ forecasting
    def predict(self, h: int | None = None, *, df=None, future_df=None):
        """Forecast the next ``h`` steps of every series (as the exported model's ``predict``).

        Parameters
        ----------
        h : int, optional
            Steps to forecast; at most the trained horizon (default: all of it).
        df : DataFrame or Series, optional
            Forecast after the end of each series in ``df`` instead of the series the model holds;
            ids it was fitted on keep their fitted statistics, new ids are scaled by their own
            history. Validated as the model validates it (the fitted frequency, at least
            ``input_size`` steps per series). A streaming model streams each series of ``df`` from
            its first step. A model fitted with covariates reads their declared columns in ``df`` too,
            checked and encoded as its ``predict`` does (the fitted categories and normalisation; the
            calendar and holiday features from the timestamps).
        future_df : DataFrame, optional
            A model with known-future covariates: a long frame (id, time and those columns) with their
            values for the next ``h`` steps of every series forecast (the whole trained horizon with
            ``known_future="tokens"``); other rows are ignored. As the model's ``predict(future_df=...)``.

        Returns
        -------
        DataFrame
            Long frame: id, time, ``yhat`` (and the ``yhat_q..`` columns of a quantile model).
        """
        h = requested_horizon(h, self.h, f"forecast at most {self.h} steps, or refit and export with h={h}")
        state, kind = self.state, self.info.get("frame_kind", PANDAS)
        if df is not None:
            state, kind = self._state_of(self._panel(df)), frame_kind(df)
        covariates = self.covariates
        if covariates is None:
            if future_df is not None:
                raise ValueError(f"future_df was given, but this {self.info['model']} declares no future "
                                 f"covariates: it has nothing to read there; leave future_df out")
            y = state.forecast(h)  # (S, h, Q) data units, or a distribution's parameters (S, h, P) scaled units
        else:
            ids, steps = state.memory.ids, covariates.steps(h)
            future = covariates.future(ids, self.freq.future(state.memory.last, steps), steps, to_pandas(future_df))
            y = state.forecast(h, future)
        if self.distribution is not None:
            columns = distribution_columns(self.distribution, y, state.memory.loc, state.memory.scale)
        else:
            columns = {name: y[..., channel] for name, channel in self.columns.items()}
        check_finite_forecast(columns, state.memory.ids)
        times = self.freq.future(state.memory.last, h)
        return as_kind(forecast_frame(state.memory.ids, times, columns, self.frame_spec), kind)

    def update(self, df, *, new_ids: str = "raise") -> "OnnxForecaster":
        """Take in observations that continue each series, as the exported model's ``update``; returns self.

        A fixed-window model keeps each series' last ``input_size`` values; a streaming model advances
        each series' recurrent state over the new steps only. Validated like the model's ``update``
        (the fitted frequency; each series starts one step after its last observation); when it
        raises, this object is left as it was. ``new_ids="add"`` takes unseen ids in with their whole
        history in ``df``.
        """
        if new_ids not in ("raise", "add"):
            raise ValueError(f"new_ids={new_ids!r} must be 'raise' or 'add'")
        panel = self._panel(df)
        memory = self.state.memory
        known = memory.ids.get_indexer(panel.ids)  # (S_panel,) position here, -1 if new
        check_continuation(panel, memory.last, known, new_ids=new_ids)
        seen, fresh = np.flatnonzero(known >= 0), np.flatnonzero(known < 0)
        if seen.size:
            check_scaled(panel.take(seen), memory.loc[known[seen]], memory.scale[known[seen]], fix=SCALED_FIX,
                         statistics="the statistics the model fitted for it")
        after = self.state.advance(panel, known)
        if fresh.size:
            after = after.append(self._state_of(panel.take(fresh)))
        self.state = after
        return self

    def _panel(self, df):
        covariates = self.covariates
        panel = build_panel(to_pandas(df), self.frame_spec, freq=self.info.get("freq_param"),
                            fill=self.info.get("fill"), expected_freq=self.freq,
                            columns=() if covariates is None else covariates.columns)
        check_time_zone(panel, self.state.memory.last)
        return panel if covariates is None else covariates.checked(panel, self.info.get("fill"))

    def _state_of(self, panel):
        """The state of ``panel``'s series (the model's ``predict(df=...)``): known ids keep the fitted
        statistics, new ones get their own."""
        check_min_length(panel, self.input_size, "the model's look-back at predict time")
        state = self.state.for_frame(panel, self.scaler)
        check_scaled(panel, state.memory.loc, state.memory.scale, fix=SCALED_FIX,
                     statistics="its statistics (fitted, or its own for a new series)")
        return state



def _split_caches(states: dict, growing: dict, tokens) -> dict:
    """{name: [(1, H, T_i, hs) per series]}: the growing caches that ``to_onnx`` wrote one series after another
    along the token axis ((H, T_0 + T_1 + ..., hs), each series' length T_i in ``tokens``)."""
    if not growing:
        return {}
    if tokens is None:
        raise ValueError("the growing caches' lengths (tokens) are missing")
    ends = np.cumsum(np.asarray(tokens, dtype=np.int64))
    out = {}
    for name, axis in growing.items():
        joined, total = states[name], int(ends[-1]) if len(ends) else 0
        if joined.shape[axis - 1] != total:
            raise ValueError(f"the cache {name} holds {joined.shape[axis - 1]} tokens, not the {total} of its series")
        out[name] = [np.expand_dims(part, 0) for part in np.split(joined, ends[:-1], axis=axis - 1)]
    return out


def _read_json(path: Path) -> dict:
    try:
        info = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"{path} is missing: load_onnx reads the .onnx file and the .onnx.json and .onnx.npz "
                         f"that to_onnx wrote beside it") from None
    except (OSError, ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not readable JSON ({error}); export the model again") from error
    if not isinstance(info, dict) or info.get("format") != "tsrsa-onnx":
        raise ValueError(f"{path} is not the record of a tsrsa ONNX export")
    if info.get("format_version") not in FORMAT_VERSIONS:
        raise ValueError(f"{path} has format version {info.get('format_version')!r}; this tsrsa reads "
                         f"{FORMAT_VERSIONS}: upgrade tsrsa, or export the model again")
    return info


def load_onnx(path, *, threads: int | None = None) -> OnnxForecaster:
    """An exported forecaster (``model.to_onnx(path)``) that forecasts on onnxruntime, without torch.

    Parameters
    ----------
    path : str or Path
        The .onnx file; its ``.onnx.json`` and ``.onnx.npz`` companions are read from beside it.
    threads : int, optional
        onnxruntime's intra-op threads (None: its own choice, every core). One thread serves many
        small requests best side by side.

    Returns
    -------
    OnnxForecaster
        ``predict(h=None, *, df=None, future_df=None)`` and ``update(df, *, new_ids="raise")`` as the fitted
        model's.

    Any file that is missing, unreadable, or not the one exported (each file's SHA-256 is recorded
    in the .json) is a ValueError naming it.
    """
    path = Path(os.fspath(path))
    info = _read_json(path.with_name(path.name + ".json"))
    arrays_path = path.with_name(path.name + ".npz")
    for file, key in ((path, "onnx"), (arrays_path, "npz")):
        if not file.is_file():
            raise ValueError(f"{file} is missing: export the model again (to_onnx writes three files)")
        if sha256(file) != info.get("sha256", {}).get(key):
            raise ValueError(f"{file} is not the file that was exported with {path.name}.json (its checksum "
                             f"differs): it was edited or replaced; export the model again")
    session = _session(path, threads)

    def run(feeds: dict, outputs: list[str]) -> list[np.ndarray]:
        return session.run(outputs, feeds)

    try:
        with np.load(arrays_path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
        memory = SeriesMemory(ids=decode_index(info["ids"]), last=decode_times(info["last"]), tails=arrays["tails"],
                              loc=arrays["loc"], scale=arrays["scale"], covariates=arrays.get("covariates"),
                              static_num=arrays.get("static_num"), static_cat=arrays.get("static_cat"))
        stream = info.get("stream")
        covariates = info.get("covariates")
        if covariates is not None:
            covariates = ServedCovariates.from_record(covariates, info)
            if memory.covariates is None:
                raise ValueError("the encoded covariates of the series are missing")
        if stream is None:
            state = ServedWindows(memory, run, info.get("output", "forecast"), covariates, info.get("cycle"),
                                  Frequency.from_json(info["freq"]))
        else:
            names = list(stream["state"])
            growing = {str(n): int(axis) for n, axis in stream.get("growing", {}).items()}
            states = {n: arrays[f"state.{n}"] for n in names}
            states.update(_split_caches(states, growing, arrays.get("tokens")))
            state = ServedStreams(memory, run, int(stream["patch_len"]), names, states,
                                  arrays["pending"].astype(np.int64), arrays["pending_values"],
                                  arrays["forecast_steps"], {n: arrays[f"init.{n}"] for n in names}, growing)
    except (KeyError, TypeError, ValueError, OSError) as error:
        raise ValueError(f"{arrays_path} or {path.name}.json does not hold an exported state ({error}); export the "
                         f"model again") from error
    if memory.tails.shape != (len(memory.ids), int(info["input_size"])):
        raise ValueError(f"{arrays_path} holds windows of shape {memory.tails.shape}, not {len(memory.ids)} series x "
                         f"{info['input_size']} steps; export the model again")
    return OnnxForecaster(session, info, state)
