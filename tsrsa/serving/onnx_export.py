"""``model.to_onnx(path)``: a fitted neural forecaster as an ONNX graph and the state that forecasting needs.

What is written, for ``path = "model.onnx"``:

- ``model.onnx``: the graph of one forecast, with the per-series scaling and the statistical start
  inside it (:class:`ScaledForecast`)::

      tails (B, L) float64, loc (B,) float64, scale (B,) float64
        -> x = (tails - loc) / scale as float32 -> network(x) (B, H, Q) (the start's S(x) + C(x))
        -> float64, quantile levels sorted -> forecast = y * scale + loc (B, H, Q) float64

  The batch B is dynamic; L is the model's look-back, H its horizon, Q one output per quantile level
  (1 for a point loss). The scaling runs in float64 as ``predict`` runs it in numpy; the network in
  float32. Opset :data:`OPSET` (the opset torch's ONNX functions are written in, so no version
  conversion runs), exported by ``torch.onnx.export(..., dynamo=True)``, the exporter of torch >= 2.9
  (``torch.export`` underneath: a shape that the batch would change fails the export instead of being
  frozen, as the older TorchScript exporter did).
- ``model.onnx.json``: what the forecast frame needs (format version, ids, last timestamps, frequency,
  horizon, columns and their channels, the scaler, column names), and the SHA-256 of the two other files;
- ``model.onnx.npz``: the arrays (each series' last ``L`` values, ``loc`` and ``scale``).

A model whose fitted state streams (``model.state_type()``, ``stream=True``) writes instead the graph of
its one-token step, the recurrent state as inputs and outputs, and its per-series states in the .npz
(:mod:`tsrsa.serving.onnx_stream`).

:func:`tsrsa.load_onnx` reads them back with numpy, pandas and onnxruntime (:mod:`tsrsa.serving.onnx_model`).

A distribution loss (``"normal"``, ``"student_t"``, ``"negative_binomial"``) writes the distribution's
parameters instead of the forecast (output ``parameters`` (B, H, P) float64, scaled units; the .json's
``distribution`` names them and the quantile columns): the served model computes the mean and the
quantiles with numpy and scipy, as ``predict`` does (:mod:`tsrsa.serving.served_distribution`).

A model fitted with covariates (fixed windows) has graph inputs for the parts of its
:class:`~tsrsa.nn.covariates.CovariateBatch` its network reads (``past`` (B, L, C), ``future`` (B, H, F),
``static_num`` (B, S_n) float32, ``static_cat`` (B, S_c) int64: :class:`CovariateForecast`); the .json keeps
its fitted encoder (``CovariateEncoder.to_json``) and the graph's covariate inputs, the .npz each series'
encoded last ``L`` steps and statics. The served model encodes the covariates of the frames it is given
with that encoder (:mod:`tsrsa.serving.served_covariates`).

Refused, with a ValueError that says why and what to do: covariates in the streaming configuration, a
distribution loss in the streaming configuration, and streaming models whose
state grows other than along a key/value cache's token axis. RSA's complex REM chains are exported as
real pairs, a bounded cache in fixed slots, an unbounded one (softmax attention's and RSA's softmax
branch's default) as inputs with a dynamic token axis, the delta rule token by token.
"""
from __future__ import annotations

import contextlib
import copy
import io
import json
import logging
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from tsrsa._version import __version__
from tsrsa.data.index_encoding import encode_index, encode_times, jsonable
from tsrsa.data.shard_manifest import sha256
from tsrsa.nn.covariates import CovariateBatch
from tsrsa.nn.distributions import get_distribution
from tsrsa.serving.onnx_stream import (
    TokenStep, export_step, growing_axes, state_names, stream_arrays, stream_refusal,
)
from tsrsa.serving.served_covariates import COVARIATE_INPUTS

__all__ = ["CovariateForecast", "FORMAT_VERSION", "OPSET", "ScaledForecast", "covariate_inputs", "distribution_record",
           "export_onnx", "onnx_columns", "parameter_names", "refusal", "streams"]

#: the version of the files ``to_onnx`` writes (``load_onnx`` reads this one)
FORMAT_VERSION = 1
#: the ONNX opset of the exported graph
OPSET = 18
#: the names of the graph's inputs and output
INPUTS = ("tails", "loc", "scale")
OUTPUT = "forecast"
#: the output of a distribution loss's graph: its parameters in the scaled units
PARAMETERS = "parameters"


class ScaledForecast(nn.Module):
    """A forecasting network between the per-series scaling and its inverse: the graph ``to_onnx`` exports.

    ``forward(tails (B, L) float64, loc (B,) float64, scale (B,) float64) -> (B, H, Q) float64``, the
    forecast in the data's units; ``sort``: put each step's Q outputs in order (a quantile head, whose
    levels never cross). With a ``distribution`` (a distribution loss's name), the output is instead its
    parameters (B, H, P) float64 in the scaled units, in the order of ``parameter_names(distribution)``
    (``DistributionOutput.parameters`` of the network's outputs, as ``predict`` computes them in float64):
    their mean and quantiles are scipy's, computed by the served model (:mod:`tsrsa.serving.served_distribution`).
    """

    def __init__(self, network: nn.Module, *, sort: bool, distribution: str | None = None):
        super().__init__()
        self.network, self.sort = network, bool(sort)
        self.distribution = get_distribution(distribution)

    def forward(self, tails: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        x = ((tails - loc[:, None]) / scale[:, None]).to(torch.float32)  # (B, L), scaled as in numpy, then float32
        return self.finish(self.network(x), loc, scale)

    def finish(self, y: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        """The network's outputs ``y`` (B, H, Q) as the graph's output (the class docstring)."""
        y = y.to(torch.float64)  # (B, H, Q)
        if self.distribution is not None:
            p = self.distribution.parameters(y)  # {name: (B, H)} scaled units
            return torch.stack(list(p.values()), dim=-1)  # (B, H, P)
        if self.sort:
            y = torch.sort(y, dim=-1).values  # (B, H, Q) levels in order
        return y * scale[:, None, None] + loc[:, None, None]  # (B, H, Q) in the data's units


class CovariateForecast(ScaledForecast):
    """:class:`ScaledForecast` of a network fitted with covariates: ``forward(tails, loc, scale, *covariates)``,
    ``covariates`` the parts of the :class:`~tsrsa.nn.covariates.CovariateBatch` the network reads, in the order
    of ``names`` (a part of ``COVARIATE_INPUTS``: ``past`` (B, L, C) float32, ``future`` (B, H, F) float32,
    ``static_num`` (B, S_n) float32, ``static_cat`` (B, S_c) int64), encoded by the served model's numpy code
    (:mod:`tsrsa.serving.served_covariates`), and ``cycle`` (B, 2) int64, each window's row and phase in a
    learned cycle (:mod:`tsrsa.data.cycles`)."""

    def __init__(self, network: nn.Module, *, sort: bool, distribution: str | None = None, names: tuple = ()):
        super().__init__(network, sort=sort, distribution=distribution)
        self.names = tuple(names)

    def forward(self, tails: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor, *covariates) -> torch.Tensor:
        x = ((tails - loc[:, None]) / scale[:, None]).to(torch.float32)  # (B, L), scaled as in numpy, then float32
        given = dict(zip(self.names, covariates))
        batch = CovariateBatch(x, given.get("past"), given.get("future"), given.get("static_num"),
                               given.get("static_cat"), given.get("cycle"))
        return self.finish(self.network(batch), loc, scale)


def covariate_inputs(model) -> tuple[str, ...]:
    """The covariate inputs the fitted ``model``'s network reads (as its ``predict`` builds its
    ``CovariateBatch``: a part with no channel is absent), in the order of ``COVARIATE_INPUTS``; () without."""
    memory, encoder = model.memory_, getattr(model, "covariates_", None)
    if encoder is None or memory.covariates is None:
        return ()
    widths = {"past": memory.covariates.shape[-1], "future": encoder.n_future,
              "static_num": memory.static_num.shape[-1], "static_cat": memory.static_cat.shape[-1]}
    return tuple(name for name in COVARIATE_INPUTS if widths[name])


def graph_inputs(model) -> tuple[str, ...]:
    """The inputs after ``tails, loc, scale`` of the fitted ``model``'s fixed-window graph: its covariate inputs
    (:func:`covariate_inputs`), then ``cycle`` when it carries a learned cycle."""
    return (*covariate_inputs(model), *(("cycle",) if model.learned_cycle() is not None else ()))


def parameter_names(distribution: str) -> list[str]:
    """The names of a distribution's parameters in the order the graph outputs them."""
    output = get_distribution(distribution)
    with torch.no_grad():
        return list(output.parameters(torch.zeros(1, output.n_outputs)))


def refusal(model) -> str | None:
    """Why the fitted ``model`` cannot be exported (the whole sentence of a ValueError), or None."""
    name = type(model).__name__
    if getattr(model, "covariates_", None) is not None and streams(model):
        return (f"to_onnx exports covariates for fixed windows; this {name} streams (stream=True) and reads "
                f"covariates ({_covariate_names(model)}), which its one-token step would take token by token beside "
                f"its recurrent state, a graph not exported yet: fit with stream=False to serve it with onnxruntime, "
                f"or serve it with tsrsa.load")
    if model.network_.config.distribution is not None and streams(model):
        return (f"to_onnx exports a distribution loss's parameters for fixed windows; this {name} streams "
                f"(stream=True) with loss={model.loss!r}, whose served forecast would read the parameters of the "
                f"last completed token and its partial patch: fit with stream=False, or with loss='quantile' "
                f"(quantiles=[...]) or a point loss, to serve it with onnxruntime; or serve it with tsrsa.load")
    if streams(model):
        why = stream_refusal(model)
        if why is not None:
            kind = model.attention_kind().kind
            return (f"to_onnx exports a streaming model's one-token step with its recurrent state as inputs and "
                    f"outputs; this {name} (stream=True, attention={kind!r}) cannot be: {why}. For a streaming "
                    f"graph use a kind whose state is fixed or a key/value cache (attention='linear', "
                    f"'fast_weight' or 'softmax', or RSA); or fit with stream=False (a fixed-window graph); or "
                    f"serve it with tsrsa.load")
    return None


def streams(model) -> bool:
    """Whether the fitted ``model``'s state is a streaming one (its ``state_type()``: a ``StreamState``
    advances each series' recurrent state, a ``WindowState`` keeps windows)."""
    return bool(model.state_type().streams)


def _covariate_names(model) -> str:
    """The covariates a fitted model reads, for a message: their columns, calendar and holidays."""
    spec = model.covariates_.spec
    names = [*spec.columns]
    if spec.calendar is not None:
        names.append(f"calendar={spec.calendar!r}")
    if spec.country:
        names.append(f"holidays of {spec.country!r}")
    return ", ".join(names) or "covariates="


def onnx_columns(model) -> dict[str, int]:
    """``{column: channel}``: which of the graph's Q outputs (levels in order) each forecast column reads,
    found by the model's own ``output_columns`` on outputs 0 .. Q-1 (so the columns are those of its ``predict``).
    A distribution loss: ``{column: -1}``, the columns the served model computes from the parameters
    (:func:`distribution_record`)."""
    Q = int(model.network_.config.n_outputs)
    if model.network_.config.distribution is not None:
        return {name: -1 for name in model.output_columns(np.zeros((1, 1, Q)), np.zeros(1), np.ones(1))}
    probe = np.arange(Q, dtype=np.float64)[None, None, :]  # (1, 1, Q): channel q outputs q
    columns = model.output_columns(probe, np.zeros(1), np.ones(1))
    return {name: int(round(float(values[0, 0]))) for name, values in columns.items()}


def distribution_record(model) -> dict | None:
    """What the served model needs to turn a distribution loss's parameters into the forecast's columns:
    ``name``, ``parameters`` (their order in the graph's output) and ``quantiles`` ``{column: level}``; None for a
    point or quantile loss."""
    name = model.network_.config.distribution
    if name is None:
        return None
    columns = [c for c in onnx_columns(model) if c != "yhat"]  # the model's yhat_q.. columns, levels in order
    levels = [float(q) for q in model.head_quantile_levels()]
    if len(columns) != len(levels):
        raise ValueError(f"the columns {columns} and quantile levels {levels} of this model do not pair up")
    return {"name": name, "parameters": parameter_names(name), "quantiles": dict(zip(columns, levels))}


@contextlib.contextmanager
def _silent():
    """The exporter's progress lines, warnings and log records kept from the user (verbose=0 is silent)."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def _export_graph(module: nn.Module, example: tuple, path: Path, inputs: list[str], outputs: list[str],
                  tokens: dict[int, int] | None = None) -> None:
    """``module`` as ONNX at ``path`` with the batch (the first dimension of every input) dynamic, by the
    dynamo exporter; ``module.forward`` takes its inputs one by one, or one, then the rest as ``*args``.
    ``tokens`` {input position: axis}: inputs whose length along that axis is dynamic too (one dimension,
    ``tokens``, shared by them all: the unbounded caches of every layer hold the same tokens)."""
    batch = torch.export.Dim("batch", min=1)
    length = torch.export.Dim("tokens") if tokens else None
    dims = tuple({0: batch, **({tokens[i]: length} if tokens and i in tokens else {})} for i in range(len(example)))
    if isinstance(module, TokenStep):  # forward(patch, *state)
        dims = (dims[0], dims[1:])
    elif isinstance(module, CovariateForecast):  # forward(tails, loc, scale, *covariates)
        dims = (*dims[:3], dims[3:])
    with _silent():
        torch.onnx.export(module, example, str(path), input_names=inputs, output_names=outputs,
                          dynamic_shapes=dims, dynamo=True, opset_version=OPSET, external_data=False,
                          optimize=True, verbose=False)


def _export_step(model, path: Path) -> tuple[dict, dict]:
    """The streaming model's one-token step at ``path``: (its record, its arrays)."""
    names = state_names(model)
    growing = growing_axes(model)
    try:
        export_step(model, names, path, _export_graph, growing)
    except Exception as error:  # torch's exporter names the operator it has no translation for
        lines = [line for line in str(error).splitlines() if "No ONNX function found" in line]
        why = lines[0].split("Failure message")[0].strip() if lines else f"{type(error).__name__}"
        raise ValueError(f"torch's ONNX exporter cannot write the one-token step of attention kind "
                         f"{model.attention_kind().kind!r} ({why}): serve this model with tsrsa.load, or fit with "
                         f"stream=False") from error
    network = model.network_
    record = {"patch_len": int(network.patch_len), "horizon_out": int(network.horizon_out), "state": names,
              "growing": growing}
    return record, stream_arrays(model, names, growing)


def _export_window(model, path: Path) -> None:
    """The fixed-window forecast of ``model`` at ``path`` (:class:`ScaledForecast`)."""
    network = copy.deepcopy(model.network_).cpu().float().eval()  # the fitted model is left as it is
    distribution = network.config.distribution
    sort = int(network.config.n_outputs) > 1
    names = graph_inputs(model)
    module = (CovariateForecast(network, sort=sort, distribution=distribution, names=names) if names else
              ScaledForecast(network, sort=sort, distribution=distribution)).eval()
    memory = model.memory_
    L = int(memory.tails.shape[1])
    example = (torch.zeros(2, L, dtype=torch.float64), torch.zeros(2, dtype=torch.float64),
               torch.ones(2, dtype=torch.float64))
    read = covariate_inputs(model)
    shapes = {"past": (L, *memory.covariates.shape[2:]) if read else (),
              "future": (int(model.h), model.covariates_.n_future) if read else (),
              "static_num": memory.static_num.shape[1:] if read else (),
              "static_cat": memory.static_cat.shape[1:] if read else (), "cycle": (2,)}
    example += tuple(torch.zeros(2, *shapes[n], dtype=torch.int64 if n in ("static_cat", "cycle") else torch.float32)
                     for n in names)
    _export_graph(module, example, path, [*INPUTS, *names], [PARAMETERS if distribution else OUTPUT])


def export_onnx(model, path, *, overwrite: bool = False) -> Path:
    """Write the fitted ``model`` (a neural forecaster) to ``path`` (the .onnx file) and its two companions
    ``path + ".json"`` and ``path + ".npz"`` (module docstring); returns ``Path(path)``.

    All or nothing: the files are written under temporary names and renamed once all three exist. An
    existing file is replaced only with ``overwrite=True``.
    """
    model.check_is_fitted()
    why = refusal(model)
    if why is not None:
        raise ValueError(why)
    path = Path(os.fspath(path))
    if path.suffix != ".onnx":
        raise ValueError(f"to_onnx writes an .onnx file (and its .onnx.json and .onnx.npz beside it); got "
                         f"{str(path)!r}: give a path ending in .onnx")
    targets = [path, path.with_name(path.name + ".json"), path.with_name(path.name + ".npz")]
    existing = [str(t) for t in targets if t.exists()]
    if existing and not overwrite:
        raise ValueError(f"{existing[0]} exists; pass overwrite=True to replace it, or choose another path")
    if not path.parent.is_dir():
        raise ValueError(f"the folder {str(path.parent)!r} does not exist; create it first")
    memory = model.memory_
    stepped = streams(model)
    distribution = distribution_record(model)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".tsrsa-onnx-") as scratch:
        scratch = Path(scratch)
        graph, arrays, state = scratch / "model.onnx", scratch / "model.npz", scratch / "model.json"
        with torch.no_grad():
            if stepped:
                stream, extra = _export_step(model, graph)
            else:
                stream, extra = None, {}
                _export_window(model, graph)
        names = () if stepped else covariate_inputs(model)
        cycle = () if stepped else graph_inputs(model)[len(names):]
        if names:  # each series' encoded last steps and statics, as the fitted model keeps them
            extra = {**extra, "covariates": np.ascontiguousarray(memory.covariates, dtype=np.float32),
                     "static_num": np.ascontiguousarray(memory.static_num, dtype=np.float32),
                     "static_cat": np.ascontiguousarray(memory.static_cat, dtype=np.int64)}
        np.savez(arrays, tails=np.ascontiguousarray(memory.tails, dtype=np.float64),
                 loc=np.asarray(memory.loc, dtype=np.float64), scale=np.asarray(memory.scale, dtype=np.float64),
                 **extra)
        record = {
            "format": "tsrsa-onnx", "format_version": FORMAT_VERSION, "tsrsa_version": __version__,
            "torch_version": torch.__version__, "opset": OPSET, "model": type(model).__name__,
            "h": int(model.h), "input_size": int(memory.tails.shape[1]),
            "n_outputs": int(model.network_.config.n_outputs), "stream": stream,
            "columns": onnx_columns(model), "scaler": model.scaler if model.reads_scaled else None,
            "freq": model.freq_.to_json(), "freq_param": jsonable(model.freq, "freq"),
            "fill": model.fill, "id_col": model.id_col, "time_col": model.time_col, "target_col": model.target_col,
            "frame_kind": getattr(model, "frame_kind_", "pandas"),
            "ids": encode_index(memory.ids), "last": encode_times(memory.last),
            "inputs": ["patch", *[f"state.{n}" for n in stream["state"]]] if stepped else [*INPUTS, *names, *cycle],
            "covariates": {"encoder": model.covariates_.to_json(), "inputs": list(names),
                           "whole_horizon": int(model.future_steps(1)) > 1} if names else None,
            "cycle": model.learned_cycle(),
            "output": PARAMETERS if distribution is not None else OUTPUT, "distribution": distribution,
            "sha256": {"onnx": sha256(graph), "npz": sha256(arrays)},
        }
        state.write_text(json.dumps(record, indent=1))
        for source, target in zip((graph, state, arrays), targets):
            os.replace(source, target)
    return path
