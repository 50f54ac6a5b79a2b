"""Pure PyTorch building blocks: attention kinds, encoder blocks, forecasting networks, losses.

Imports nothing from the rest of tsrsa; no pandas, no I/O.
"""
from tsrsa.nn.backbone import BackboneConfig, EncoderBlock, FlattenHead, ForecastingTransformer, PatchEmbedding
from tsrsa.nn.losses import LOSSES, PointLoss, QuantileLoss, make_loss
from tsrsa.nn.lstm import LSTMConfig, LSTMNetwork
from tsrsa.nn.registry import Attention, attention_kinds, build_attention, get_attention, register_attention
from tsrsa.nn.revin import RevIN
from tsrsa.nn.softmax import SoftmaxAttention, softmax_attention

__all__ = [
    "LOSSES", "Attention", "BackboneConfig", "EncoderBlock", "FlattenHead", "ForecastingTransformer",
    "LSTMConfig", "LSTMNetwork", "PatchEmbedding", "PointLoss", "QuantileLoss", "RevIN",
    "SoftmaxAttention", "attention_kinds", "build_attention", "get_attention", "make_loss",
    "register_attention", "softmax_attention",
]
