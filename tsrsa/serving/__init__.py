"""Serving fitted forecasters without torch: ``model.to_onnx(path)`` and ``tsrsa.load_onnx(path)``.

:mod:`tsrsa.serving.onnx_export` writes a fitted neural forecaster as an ONNX graph (torch, at export
time); :mod:`tsrsa.serving.onnx_model` forecasts from it with numpy, pandas and onnxruntime only.
docs/serving.md shows a forecast served over HTTP and the latency measured.
"""
from tsrsa.serving.onnx_model import OnnxForecaster, load_onnx

__all__ = ["OnnxForecaster", "load_onnx"]
