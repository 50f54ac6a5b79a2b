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

A model fitted with ``stream=True`` writes instead the graph of its one-token step, the recurrent state
as inputs and outputs, and its per-series states in the .npz (:mod:`tsrsa.serving.onnx_stream`).

:func:`tsrsa.load_onnx` reads them back with numpy, pandas and onnxruntime (:mod:`tsrsa.serving.onnx_model`).

Refused, with a ValueError that says why and what to do: covariates (their encoding is numpy code
outside the network), distribution losses (their quantiles are scipy's inverse distribution
functions), and streaming kinds whose state is not a fixed set of tensors (a key/value cache, bounded or
not, as softmax attention and RSA's softmax branch keep by default) or whose step has no ONNX operator
(the delta rule's triangular solve). RSA's complex REM chains are exported as real pairs.
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
from tsrsa.serving.onnx_stream import TokenStep, export_step, state_names, stream_arrays, stream_refusal

__all__ = ["FORMAT_VERSION", "OPSET", "ScaledForecast", "export_onnx", "onnx_columns", "refusal"]

#: the version of the files ``to_onnx`` writes (``load_onnx`` reads this one)
FORMAT_VERSION = 1
#: the ONNX opset of the exported graph
OPSET = 18
#: the names of the graph's inputs and output
INPUTS = ("tails", "loc", "scale")
OUTPUT = "forecast"


class ScaledForecast(nn.Module):
    """A forecasting network between the per-series scaling and its inverse: the graph ``to_onnx`` exports.

    ``forward(tails (B, L) float64, loc (B,) float64, scale (B,) float64) -> (B, H, Q) float64``, the
    forecast in the data's units; ``sort``: put each step's Q outputs in order (a quantile head, whose
    levels never cross).
    """

    def __init__(self, network: nn.Module, *, sort: bool):
        super().__init__()
        self.network, self.sort = network, bool(sort)

    def forward(self, tails: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        x = ((tails - loc[:, None]) / scale[:, None]).to(torch.float32)  # (B, L), scaled as in numpy, then float32
        y = self.network(x).to(torch.float64)  # (B, H, Q)
        if self.sort:
            y = torch.sort(y, dim=-1).values  # (B, H, Q) levels in order
        return y * scale[:, None, None] + loc[:, None, None]  # (B, H, Q) in the data's units


def refusal(model) -> str | None:
    """Why the fitted ``model`` cannot be exported (the whole sentence of a ValueError), or None."""
    name = type(model).__name__
    if getattr(model, "covariates_", None) is not None:
        return (f"to_onnx exports models without covariates; this {name} reads covariates "
                f"({_covariate_names(model)}), whose encoding (categories, calendar features, the fit's "
                f"normalisation, the known-future rows of future_df) is tsrsa's numpy code outside the network: "
                f"refit with covariates=None to serve it with onnxruntime, or serve it with tsrsa.load")
    if model.network_.config.distribution is not None:
        return (f"to_onnx exports point and quantile forecasts; loss={model.loss!r} outputs a distribution's "
                f"parameters, whose mean and quantiles are scipy's: fit with loss='quantile' (quantiles=[...]) or "
                f"a point loss to serve it with onnxruntime")
    if getattr(model, "stream", False):
        why = stream_refusal(model)
        if why is not None:
            kind = model.attention_kind().kind
            return (f"to_onnx exports a streaming model's one-token step with its recurrent state as inputs and "
                    f"outputs; this {name} (stream=True, attention={kind!r}) cannot be: {why}. Fit it with "
                    f"stream=False (a fixed-window graph); for a streaming graph use attention='linear', or RSA with "
                    f"attention_options={{'t2r_features': k}} (a softmax branch of fixed state); or serve it with "
                    f"tsrsa.load")
    return None


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
    found by the model's own ``output_columns`` on outputs 0 .. Q-1 (so the columns are those of its ``predict``)."""
    Q = int(model.network_.config.n_outputs)
    probe = np.arange(Q, dtype=np.float64)[None, None, :]  # (1, 1, Q): channel q outputs q
    columns = model.output_columns(probe, np.zeros(1), np.ones(1))
    return {name: int(round(float(values[0, 0]))) for name, values in columns.items()}


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


def _export_graph(module: nn.Module, example: tuple, path: Path, inputs: list[str], outputs: list[str]) -> None:
    """``module`` as ONNX at ``path`` with the batch (the first dimension of every input) dynamic, by the
    dynamo exporter; ``module.forward`` takes its inputs one by one, or one, then the rest as ``*args``."""
    batch = torch.export.Dim("batch", min=1)
    dims = tuple({0: batch} for _ in example)
    if isinstance(module, TokenStep):  # forward(patch, *state)
        dims = (dims[0], dims[1:])
    with _silent():
        torch.onnx.export(module, example, str(path), input_names=inputs, output_names=outputs,
                          dynamic_shapes=dims, dynamo=True, opset_version=OPSET, external_data=False,
                          optimize=True, verbose=False)


def _export_step(model, path: Path) -> tuple[dict, dict]:
    """The streaming model's one-token step at ``path``: (its record, its arrays)."""
    names = state_names(model)
    try:
        export_step(model, names, path, _export_graph)
    except Exception as error:  # torch's exporter names the operator it has no translation for
        lines = [line for line in str(error).splitlines() if "No ONNX function found" in line]
        why = lines[0].split("Failure message")[0].strip() if lines else f"{type(error).__name__}"
        raise ValueError(f"torch's ONNX exporter cannot write the one-token step of attention kind "
                         f"{model.attention_kind().kind!r} ({why}): serve this model with tsrsa.load, or fit with "
                         f"stream=False") from error
    network = model.network_
    record = {"patch_len": int(network.patch_len), "horizon_out": int(network.horizon_out), "state": names}
    return record, stream_arrays(model, names)


def _export_window(model, path: Path) -> None:
    """The fixed-window forecast of ``model`` at ``path`` (:class:`ScaledForecast`)."""
    network = copy.deepcopy(model.network_).cpu().float().eval()  # the fitted model is left as it is
    module = ScaledForecast(network, sort=int(network.config.n_outputs) > 1).eval()
    L = int(model.memory_.tails.shape[1])
    example = (torch.zeros(2, L, dtype=torch.float64), torch.zeros(2, dtype=torch.float64),
               torch.ones(2, dtype=torch.float64))
    _export_graph(module, example, path, list(INPUTS), [OUTPUT])


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
    streams = bool(getattr(model, "stream", False))
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".tsrsa-onnx-") as scratch:
        scratch = Path(scratch)
        graph, arrays, state = scratch / "model.onnx", scratch / "model.npz", scratch / "model.json"
        with torch.no_grad():
            if streams:
                stream, extra = _export_step(model, graph)
            else:
                stream, extra = None, {}
                _export_window(model, graph)
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
            "inputs": ["patch", *[f"state.{n}" for n in stream["state"]]] if streams else list(INPUTS),
            "output": OUTPUT,
            "sha256": {"onnx": sha256(graph), "npz": sha256(arrays)},
        }
        state.write_text(json.dumps(record, indent=1))
        for source, target in zip((graph, state, arrays), targets):
            os.replace(source, target)
    return path
