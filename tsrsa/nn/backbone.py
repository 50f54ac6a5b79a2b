"""The forecasting backbone shared by every attention kind.

    window (B, L) -> RevIN -> patch tokens (B, N, D) -> N_layers x [attention, MLP] -> head (B, h, Q)

Only the attention inside each block changes between TransformerForecaster, RSAForecaster and
the later kinds, so comparing them compares attention alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from tsrsa.nn.registry import build_attention
from tsrsa.nn.revin import RevIN


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
    revin: bool = True  # reversible instance normalisation of each window
    n_outputs: int = 1  # values per horizon step (1 for a point forecast, Q for quantiles)

    @property
    def n_tokens(self) -> int:
        return math.ceil(self.input_size / self.patch_len)


class PatchEmbedding(nn.Module):
    """Cut the window into non-overlapping patches and embed each as one token.

    A window whose length is not a multiple of ``patch_len`` is padded at the front with
    its first value, so that the last token always ends at the last observation.
    """

    def __init__(self, input_size: int, patch_len: int, d_model: int, dropout: float):
        super().__init__()
        self.patch_len = patch_len
        self.n_tokens = math.ceil(input_size / patch_len)
        self.pad = self.n_tokens * patch_len - input_size
        self.value = nn.Linear(patch_len, d_model)
        self.position = nn.Parameter(torch.zeros(1, self.n_tokens, d_model))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.pad:
            x = torch.cat([x[:, :1].expand(-1, self.pad), x], dim=1)  # (B, N * P)
        patches = x.unfold(1, self.patch_len, self.patch_len)  # (B, N, P)
        return self.dropout(self.value(patches) + self.position)  # (B, N, D)


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float):
        super().__init__()
        self.fc = nn.Linear(d_model, d_ff)
        self.proj = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))  # (B, N, D)
        return x + self.mlp(self.ln_2(x))  # (B, N, D)


class FlattenHead(nn.Module):
    """Direct multi-horizon head: all token vectors at once to every horizon step."""

    def __init__(self, n_tokens: int, d_model: int, h: int, n_outputs: int, dropout: float):
        super().__init__()
        self.h, self.n_outputs = h, n_outputs
        self.dropout = nn.Dropout(dropout)
        self.linear = nn.Linear(n_tokens * d_model, h * n_outputs)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        B = z.size(0)
        out = self.linear(self.dropout(z.reshape(B, -1)))  # (B, h * Q)
        return out.view(B, self.h, self.n_outputs)  # (B, h, Q)


class ForecastingTransformer(nn.Module):
    """Encoder-only patch transformer with a direct multi-horizon head.

    ``forward(x)`` maps windows ``(B, input_size)`` to forecasts ``(B, h, n_outputs)`` in the
    units of ``x``.
    """

    def __init__(self, config: BackboneConfig):
        super().__init__()
        self.config = config
        self.revin = RevIN() if config.revin else None
        self.embed = PatchEmbedding(config.input_size, config.patch_len, config.d_model, config.dropout)
        self.blocks = nn.ModuleList(EncoderBlock(config) for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.head = FlattenHead(config.n_tokens, config.d_model, config.h, config.n_outputs, config.dropout)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, PatchEmbedding):
            nn.init.normal_(module.position, mean=0.0, std=0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        stats = None
        if self.revin is not None:
            x, stats = self.revin.normalise(x)  # (B, L)
        z = self.embed(x)  # (B, N, D)
        for block in self.blocks:
            z = block(z)  # (B, N, D)
        y = self.head(self.ln_f(z))  # (B, h, Q)
        return self.revin.denormalise(y, stats) if stats is not None else y
