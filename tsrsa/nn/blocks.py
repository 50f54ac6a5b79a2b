"""The encoder block every transformer network of tsrsa stacks, and its configuration.

    x -> x + attention(LayerNorm(x)) -> x + MLP(LayerNorm(x))      (pre-norm, Radford et al. 2019)

The attention is any registered kind (``tsrsa.nn.attention_kinds()``); the block owns its layer
norms and MLP, the kind owns (and initialises) everything inside the attention.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from tsrsa.nn.patches import n_tokens
from tsrsa.nn.registry import build_attention
from tsrsa.nn.state import LayerState
from tsrsa.nn.weight_init import init_linear


@dataclass
class BackboneConfig:
    input_size: int = 96  # L: look-back window, in steps
    h: int = 24  # forecast horizon, in steps
    patch_len: int = 8  # steps per token (1 = one token per step)
    d_model: int = 64  # token width
    n_heads: int = 4  # attention heads per layer
    n_layers: int = 2  # encoder blocks
    d_ff: int = 128  # hidden width of each block's MLP
    dropout: float = 0.1  # on attention, MLP, embeddings and the head
    attention: str = "softmax"  # a registered attention kind (tsrsa.nn.attention_kinds())
    attention_options: dict = field(default_factory=dict)  # extra arguments of that kind
    causal: bool = False  # mask keys after the query in the look-back
    revin: bool = True  # instance normalisation (per window; running statistics when streaming)
    n_outputs: int = 1  # values per horizon step (1 for a point forecast, Q for quantiles)
    distribution: str | None = None  # the head outputs this distribution's parameters (tsrsa.nn.distributions)
    stream: bool = False  # the streaming configuration (tsrsa.nn.streaming.StreamingTransformer)
    readout_tokens: int | None = None  # the latest token vectors the head reads (None: n_tokens)
    covariates: dict = field(default_factory=dict)  # covariate layout (tsrsa.nn.covariates); empty: none
    cycle: tuple | None = None  # (n_series, period) of a learned cycle per series (tsrsa.nn.cycle); None: none

    @property
    def n_tokens(self) -> int:
        return n_tokens(self.input_size, self.patch_len)


def merged_groups(blocks) -> dict[str, list[nn.Parameter]]:
    """Every block's attention ``parameter_groups()``, merged by name."""
    groups: dict[str, list[nn.Parameter]] = {}
    for block in blocks:
        for name, params in block.attn.parameter_groups().items():
            groups.setdefault(name, []).extend(params)
    return groups


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float):
        super().__init__()
        self.fc = nn.Linear(d_model, d_ff)
        self.proj = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def reset_parameters(self) -> None:
        init_linear(self.fc, self.proj)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.proj(F.gelu(self.fc(x))))  # (B, N, D)


class EncoderBlock(nn.Module):
    """Pre-norm transformer block whose attention is any registered kind."""

    def __init__(self, config: BackboneConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.d_model)
        self.attn = build_attention(
            config.attention, config.d_model, config.n_heads,
            dropout=config.dropout, causal=config.causal, **config.attention_options,
        )
        self.ln_2 = nn.LayerNorm(config.d_model)
        self.mlp = FeedForward(config.d_model, config.d_ff, config.dropout)

    def reset_parameters(self) -> None:
        """The block's own layers; the attention kind initialised itself when it was built."""
        self.ln_1.reset_parameters()
        self.ln_2.reset_parameters()
        self.mlp.reset_parameters()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))  # (B, N, D)
        return x + self.mlp(self.ln_2(x))  # (B, N, D)

    def stream(self, x: torch.Tensor, state: LayerState) -> tuple[torch.Tensor, LayerState]:
        """The block over n new tokens x (B, n, D) with the attention's recurrent state (its
        ``state_type``); returns the new state, the given one unchanged."""
        a, state = self.attn.stream(self.ln_1(x), state)
        x = x + a  # (B, n, D)
        return x + self.mlp(self.ln_2(x)), state
