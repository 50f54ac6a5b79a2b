"""Pure PyTorch building blocks: attention kinds, encoder blocks, forecasting networks, losses.

Imports nothing from the rest of tsrsa; no pandas, no I/O.
"""
from tsrsa.nn.backbone import (
    BackboneConfig, EncoderBlock, FlattenHead, ForecastingTransformer, PatchEmbedding, build_transformer,
)
from tsrsa.nn.distributions import DISTRIBUTIONS, DistributionLoss, DistributionOutput, get_distribution
from tsrsa.nn.dlinear import DLinearConfig, DLinearNetwork, MovingAverage
from tsrsa.nn.fast_weight import FastWeightAttention, FastWeightState
from tsrsa.nn.kv_cache import CACHE_POLICIES, BoundedCacheState, CacheSpec, KeyValueState
from tsrsa.nn.linear_attention import LinearAttention, LinearState
from tsrsa.nn.losses import LOSSES, PointLoss, QuantileLoss, make_loss
from tsrsa.nn.lstm import LSTMConfig, LSTMNetwork
from tsrsa.nn.multihead import MultiHeadAttention
from tsrsa.nn.registry import Attention, KindOps, attention_kinds, build_attention, get_attention, register_attention
from tsrsa.nn.rem import REM_KINDS, REM_MASKS, rem_matrix
from tsrsa.nn.revin import RevIN
from tsrsa.nn.rnn_rem import RNNAsREM, linear_rnn_to_rem
from tsrsa.nn.rsa import RSAAttention, RSAState
from tsrsa.nn.rsa_heads import plan_heads
from tsrsa.nn.start import LinearStart, attach_start, scale_outputs, zero_outputs
from tsrsa.nn.running_norm import RunningNorm
from tsrsa.nn.softmax import SoftmaxAttention, softmax_attention
from tsrsa.nn.state import LayerState, State
from tsrsa.nn.streaming import StreamingState, StreamingTransformer
from tsrsa.nn.t2r import T2RAttention

__all__ = [
    "CACHE_POLICIES", "DISTRIBUTIONS", "LOSSES", "Attention", "BoundedCacheState", "CacheSpec", "BackboneConfig",
    "DLinearConfig", "DLinearNetwork", "DistributionLoss", "DistributionOutput", "EncoderBlock",
    "FastWeightAttention", "FastWeightState", "FlattenHead", "ForecastingTransformer", "KeyValueState", "KindOps",
    "LayerState", "LinearAttention", "LinearStart", "LinearState", "LSTMConfig", "LSTMNetwork", "MovingAverage",
    "MultiHeadAttention", "PatchEmbedding", "PointLoss", "QuantileLoss", "REM_KINDS", "REM_MASKS", "RNNAsREM",
    "RSAAttention", "RSAState", "RevIN", "RunningNorm", "SoftmaxAttention", "State", "StreamingState",
    "StreamingTransformer", "T2RAttention", "attach_start", "attention_kinds", "build_attention", "build_transformer",
    "get_attention", "get_distribution", "linear_rnn_to_rem", "make_loss", "plan_heads", "register_attention",
    "rem_matrix", "scale_outputs", "softmax_attention", "zero_outputs",
]
