"""The fixed-window forecasting backbone shared by every attention kind.

    window (B, L) -> RevIN -> patch tokens (B, N, D) -> N_layers x [attention, MLP] -> head (B, h, Q)

Only the attention inside each block changes between TransformerForecaster, RSAForecaster and
the other kinds, so comparing them compares attention alone. ``build_transformer`` picks this
network or, for the streaming configuration, ``tsrsa.nn.streaming.StreamingTransformer``.
"""
from __future__ import annotations


import torch
from torch import nn

from tsrsa.nn.blocks import BackboneConfig, EncoderBlock, FeedForward, merged_groups
from tsrsa.nn.covariates import CovariateInput, covariate_shape, has_covariates, split_inputs
from tsrsa.nn.patches import PatchEmbedding
from tsrsa.nn.cycle import cycle_of, removed, restored
from tsrsa.nn.revin import instance_norm
from tsrsa.nn.start import horizon_layers, start_groups
from tsrsa.nn.streaming import StreamingTransformer
from tsrsa.nn.weight_init import init_linear

__all__ = ["BackboneConfig", "EncoderBlock", "FeedForward", "FlattenHead", "ForecastingTransformer", "PatchEmbedding",
           "build_transformer"]


class FlattenHead(nn.Module):
    """Direct multi-horizon head: the latest ``reads`` token vectors (None: all of them) at once to
    every horizon step."""

    def __init__(self, n_tokens: int, d_model: int, h: int, n_outputs: int, dropout: float,
                 reads: int | None = None):
        super().__init__()
        self.h, self.n_outputs = h, n_outputs
        self.reads = n_tokens if reads is None else int(reads)
        if not 1 <= self.reads <= n_tokens:
            raise ValueError(f"readout_tokens={reads} must be between 1 and the sequence's {n_tokens} tokens")
        self.dropout = nn.Dropout(dropout)
        self.linear = nn.Linear(self.reads * d_model, h * n_outputs)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        B = z.size(0)
        out = self.linear(self.dropout(z[:, -self.reads:].reshape(B, -1)))  # (B, h * Q)
        return out.view(B, self.h, self.n_outputs)  # (B, h, Q)


class ForecastingTransformer(nn.Module):
    """Encoder-only patch transformer with a direct multi-horizon head.

    ``forward(x)`` maps windows ``(B, input_size)`` to forecasts ``(B, h, n_outputs)`` in the
    units of ``x``.
    """

    def __init__(self, config: BackboneConfig):
        super().__init__()
        self.config = config
        self.revin = instance_norm(config.revin, config.distribution)
        self.embed = PatchEmbedding(config.input_size, config.patch_len, config.d_model, config.dropout)
        self.blocks = nn.ModuleList(EncoderBlock(config) for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.covariates = None
        n_tokens = config.n_tokens
        if has_covariates(config):
            self.covariates = CovariateInput(covariate_shape(config), d_model=config.d_model,
                                             patch_len=config.patch_len, h=config.h,
                                             n_outputs=config.n_outputs)
            if self.covariates.future_embed is not None:  # decoder tokens after the look-back's
                n_tokens += self.covariates.n_future_tokens
        self.head = FlattenHead(n_tokens, config.d_model, config.h, config.n_outputs, config.dropout,
                                config.readout_tokens)
        self.start = None  # a statistical start (tsrsa.nn.start), attached by a forecaster that asks for one
        self.cycle = cycle_of(config)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The backbone's own weights: N(0, 0.02) for the patch and head maps and the positions, zero
        biases. Each attention kind initialised its own parameters when it was built."""
        init_linear(self.embed.value, self.head.linear)
        nn.init.normal_(self.embed.position, mean=0.0, std=0.02)
        for block in self.blocks:
            block.reset_parameters()

    def parameter_groups(self) -> dict[str, list[nn.Parameter]]:
        """The attention kinds' named parameter groups, merged over layers (see the training loop's
        ``group_options``)."""
        return start_groups(self, merged_groups(self.blocks))

    def output_layers(self) -> list[nn.Linear]:
        """The linear layers that write the forecast (a statistical start zeroes them)."""
        return [self.head.linear, *horizon_layers(self.covariates)]

    @property
    def readout_reach(self) -> int:
        """How many of the latest token vectors the head reads."""
        return self.head.reads

    def forward(self, inputs) -> torch.Tensor:
        """``inputs``: windows (B, L), or a :class:`~tsrsa.nn.covariates.CovariateBatch`."""
        x, batch = split_inputs(inputs)
        window, stats = x, None
        if self.revin is not None:
            x, stats = self.revin.normalise(x)  # (B, L)
        x = removed(self.cycle, x, batch)  # (B, L)
        z = self.embed(x)  # (B, N, D)
        extra = self.covariates.tokens(batch) if batch is not None and self.covariates is not None else None
        if extra is not None:
            z = z + extra  # (B, N, D)
        decoder = self.covariates.future_tokens(batch) if batch is not None and self.covariates is not None else None
        if decoder is not None:
            z = torch.cat([z, self.embed.dropout(decoder)], dim=1)  # (B, N + N_h, D)
        for block in self.blocks:
            z = block(z)  # (B, N, D)
        z = self.ln_f(z)
        y = restored(self.cycle, self.head(z), batch, self.config.input_size)  # (B, h, Q)
        y = self.revin.denormalise(y, stats) if stats is not None else y
        if batch is not None and self.covariates is not None:
            term = self.covariates.forecast(batch, z.mean(dim=1))  # (B, h, Q) or None
            if term is not None:
                y = y + term
        return y if self.start is None else y + self.start(window)


def build_transformer(config: BackboneConfig) -> nn.Module:
    """The network for ``config``: StreamingTransformer when ``config.stream``, else ForecastingTransformer."""
    return StreamingTransformer(config) if config.stream else ForecastingTransformer(config)
