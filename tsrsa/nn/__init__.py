"""Pure PyTorch building blocks: attention kinds, encoder blocks, forecasting networks, losses.

Imports nothing from the rest of tsrsa; no pandas, no I/O.
"""
from tsrsa.nn.backbone import BackboneConfig, EncoderBlock, FlattenHead, ForecastingTransformer, PatchEmbedding
from tsrsa.nn.dlinear import DLinearConfig, DLinearNetwork, MovingAverage
from tsrsa.nn.losses import LOSSES, PointLoss, QuantileLoss, make_loss
from tsrsa.nn.lstm import LSTMConfig, LSTMNetwork
from tsrsa.nn.registry import Attention, attention_kinds, build_attention, get_attention, register_attention
from tsrsa.nn.rem import REM_KINDS, REM_MASKS, rem_matrix
from tsrsa.nn.revin import RevIN
from tsrsa.nn.rnn_rem import RNNAsREM, linear_rnn_to_rem
from tsrsa.nn.rsa import RSAAttention, plan_heads
from tsrsa.nn.softmax import SoftmaxAttention, softmax_attention

__all__ = [
    "LOSSES", "Attention", "BackboneConfig", "DLinearConfig", "DLinearNetwork", "EncoderBlock",
    "FlattenHead", "ForecastingTransformer",
    "LSTMConfig", "LSTMNetwork", "MovingAverage", "PatchEmbedding", "PointLoss", "QuantileLoss",
    "REM_KINDS", "REM_MASKS", "RNNAsREM", "RSAAttention", "RevIN", "SoftmaxAttention", "attention_kinds",
    "build_attention", "get_attention", "linear_rnn_to_rem", "make_loss", "plan_heads", "register_attention",
    "rem_matrix", "softmax_attention",
]
