"""The streaming configuration of the backbone: a network whose state advances with the data.

    steps (B, T) -> running normalisation -> patch tokens (B, c, D) -> N_layers x [causal attention, MLP]
                 -> head on the latest k token vectors (B, c, h + P - 1, Q)

What differs from the fixed-window ``ForecastingTransformer``, so that every quantity at token t
depends only on the steps up to t's end, and a state carries it forward:

- causal mixing in every layer (every branch of the kind) and no positional parameter: the token
  count is not fixed, and causal attention and recurrences carry order themselves;
- normalisation by running statistics (``RunningNorm``) instead of the window's own;
- every token forecasts: token t's head reads the final vectors of the latest k tokens up to t
  (k = ``readout_tokens``, by default the window's token count, so the head has the reach of the
  fixed-window flatten head; the state keeps the last k - 1 vectors, a fixed size) and forecasts
  the ``h + patch_len - 1`` steps after t's end, so that whatever the steps of a partial patch,
  the ``h`` steps after the last observation are covered (the last complete token's steps
  ``r + 1 .. r + h`` when ``r`` steps wait in the partial patch). The training loss reads every
  token's forecast (``forward_tokens``: more signal per window; tokens near the start of a window see
  zeros where a fresh stream has no earlier tokens); validation and prediction read the window's
  forecast, the last token's (``forecast``). Which one is an argument of the call, never the mode.

Tokens start where the stream starts (the token phase is fixed by the first step); a partial
patch waits in the state until it completes. ``stream(steps, state)`` equals ``forward_tokens``
over the whole history at every completed token.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from tsrsa.nn.blocks import BackboneConfig, EncoderBlock, merged_groups
from tsrsa.nn.covariates import CovariateBatch, CovariateInput, covariate_shape, has_covariates, split_inputs
from tsrsa.nn.distributions import shifts
from tsrsa.nn.running_norm import RunningNorm
from tsrsa.nn.state import State, layer_states, saved_as
from tsrsa.nn.weight_init import init_linear

__all__ = ["CarriedBatch", "StreamingState", "StreamingTransformer"]


@dataclass(frozen=True, eq=False)
class StreamingState(State):
    """A streaming network's state (batch first): what ``stream`` continues from.

    Saved, by ``tensors()``, under the names ``pending``, ``norm.mean``, ``norm.square``,
    ``readout``, ``pending_covariates`` and ``blocks.{i}.{name}`` (block i's layer state).
    """

    pending: torch.Tensor  # (B, r) the steps of the partial patch, r < P
    norm_mean: torch.Tensor = saved_as("norm.mean")  # (B,) running mean m
    norm_square: torch.Tensor = saved_as("norm.square")  # (B,) running mean of squares q
    readout: torch.Tensor  # (B, k - 1, D) the final vectors of the latest k - 1 tokens, oldest first
    blocks: tuple = layer_states("blocks")  # one state per encoder block, its attention's state_type
    pending_covariates: torch.Tensor | None = None  # (B, r, C) the partial patch's covariates (None: none)

    @property
    def kept_positions(self) -> dict[int, torch.Tensor]:
        """{block: (B, H, K) the stream positions of the tokens its bounded cache keeps}."""
        return {i: layer.kept_positions for i, layer in enumerate(self.blocks) if layer.kept_positions is not None}


class CarriedBatch(NamedTuple):
    """Training input that continues the lanes of the batch before it (``tsrsa.data.ConsecutiveWindows``):
    the network continues from ``state``, the state the call on the lanes' previous windows returned (the
    caller holds it and passes it in, detached), or from the empty state when ``reset`` (the first window
    of its lanes) or when ``state`` is None."""

    inputs: torch.Tensor  # (B, L) windows, each continuing its lane's previous one
    reset: bool
    state: StreamingState | None = None  # batch B, what the previous window of each lane reached


class StreamingTransformer(nn.Module):
    """Causal patch transformer with a per-token head and a recurrent state (see the module docstring).

    On windows ``(B, input_size)``: ``forecast`` gives the window's forecast, the last token's next ``h``
    steps ``(B, h, Q)``, and ``forward_tokens`` every token's ``(B, N, h + P - 1, Q)`` (the training
    loss's), in either mode; ``forward`` is ``forecast`` unless asked for ``tokens``. The state is a
    value passed in and returned (``stream``, ``carried_forward``): the module holds none.
    """

    def __init__(self, config: BackboneConfig):
        super().__init__()
        if not config.stream:
            raise ValueError("StreamingTransformer needs a configuration with stream=True")
        if not config.causal:
            raise ValueError("the streaming configuration needs causal=True: every layer reads only past tokens")
        if config.input_size % config.patch_len:
            raise ValueError(f"the streaming configuration needs input_size={config.input_size} to be a multiple "
                             f"of patch_len={config.patch_len}: windows hold whole tokens")
        self.config = config
        self.patch_len = config.patch_len
        self.horizon_out = config.h + config.patch_len - 1  # steps each token forecasts
        self.norm = None  # running statistics when revin; a count distribution's scaling whatever revin
        if config.revin or not shifts(config.distribution):
            self.norm = RunningNorm(config.input_size, affine=config.revin, distribution=config.distribution)
        self.embed = nn.Linear(config.patch_len, config.d_model)
        self.embed_dropout = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(EncoderBlock(config) for _ in range(config.n_layers))
        for block in self.blocks:
            if not block.attn.recurrent:
                raise ValueError(f"attention kind {config.attention!r} has no recurrent form, so it cannot stream")
            block.attn.check_streamable()
        self.ln_f = nn.LayerNorm(config.d_model)
        self.readout_tokens = int(config.readout_tokens or config.n_tokens)  # k
        if self.readout_tokens < 1:
            raise ValueError(f"readout_tokens={config.readout_tokens} must be None or >= 1")
        self.head_dropout = nn.Dropout(config.dropout)
        self.head = nn.Linear(self.readout_tokens * config.d_model, self.horizon_out * config.n_outputs)
        self.covariates = None
        if has_covariates(config):  # each token's horizon term covers the h + P - 1 steps it forecasts
            self.covariates = CovariateInput(covariate_shape(config), d_model=config.d_model,
                                             patch_len=config.patch_len, h=self.horizon_out,
                                             n_outputs=config.n_outputs)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The backbone's own weights (the attention kinds initialised theirs)."""
        init_linear(self.embed, self.head)
        for block in self.blocks:
            block.reset_parameters()

    def parameter_groups(self) -> dict[str, list[nn.Parameter]]:
        return merged_groups(self.blocks)

    @property
    def readout_reach(self) -> int:
        """How many of the latest token vectors each token's head reads (k)."""
        return self.readout_tokens

    # ------------------------------------------------------------------ pieces
    def _tokens(self, steps: torch.Tensor, m0, q0, batch: CovariateBatch | None = None):
        """steps (B, c * P) -> token vectors (B, c, D), per-token statistics, running state after them;
        ``batch.past`` (B, c * P, C) holds the covariates of the same steps."""
        B = steps.size(0)
        if self.norm is None:
            patches, stats, running = steps.view(B, -1, self.patch_len), None, (m0, q0)
        else:
            patches, stats, running = self.norm.normalise(steps, self.patch_len, m0, q0)  # (B, c, P)
        z = self.embed(patches)  # (B, c, D)
        if batch is not None and self.covariates is not None:
            extra = self.covariates.tokens(batch)
            if extra is not None:
                z = z + extra
        return self.embed_dropout(z), stats, running  # (B, c, D)

    def horizon_term(self, future: torch.Tensor | None, context: torch.Tensor):
        """What the known-future covariates add to token forecasts: ``future`` (..., h + P - 1, F) the
        values of the steps after each token's end, ``context`` (..., D) each token's final vector; None
        without known-future covariates."""
        if self.covariates is None or self.covariates.horizon is None:
            return None
        return self.covariates.forecast(CovariateBatch(None, None, future, None, None), context)

    def _readout(self, z: torch.Tensor, stats, earlier: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """z (B, c, D) and the k - 1 final vectors before them (B, k - 1, D) -> forecasts
        (B, c, h + P - 1, Q) in the input's units, the last k - 1 final vectors, and the c tokens' own
        final vectors (B, c, D), the context of their horizon terms."""
        B, c, D = z.shape
        k = self.readout_tokens
        own = self.ln_f(z)  # (B, c, D)
        final = torch.cat([earlier, own], dim=1)  # (B, k - 1 + c, D)
        windows = final.unfold(1, k, 1).transpose(2, 3).reshape(B, c, k * D)  # (B, c, k * D), oldest first
        y = self.head(self.head_dropout(windows)).view(B, c, self.horizon_out, self.config.n_outputs)
        y = self.norm.denormalise(y, stats) if self.norm is not None else y
        return y, final[:, final.size(1) - (k - 1):], own

    # ------------------------------------------------------------------ parallel form
    def forward_tokens(self, x: torch.Tensor, batch: CovariateBatch | None = None) -> torch.Tensor:
        """Every token's forecast from a fresh state: x (B, c * P) -> (B, c, h + P - 1, Q). With
        covariates, ``batch.future`` (B, c, h + P - 1, F) holds each token's known-future values."""
        y, context = self._forward_all(x, batch)
        term = self.horizon_term(batch.future, context) if batch is not None else None
        return y if term is None else y + term

    def _forward_all(self, x, batch):
        m0, q0 = RunningNorm.start(x.size(0), device=x.device, dtype=x.dtype)
        z, stats, _ = self._tokens(x, m0, q0, batch)  # (B, c, D)
        for block in self.blocks:
            z = block(z)  # (B, c, D)
        y, _, context = self._readout(z, stats, z.new_zeros(z.size(0), self.readout_tokens - 1, z.size(2)))
        return y, context

    def forecast(self, inputs) -> torch.Tensor:
        """The window's forecast from a fresh state, the last token's next ``h`` steps: windows (B, L) ->
        (B, h, Q). ``inputs``: windows, or a :class:`~tsrsa.nn.covariates.CovariateBatch` whose ``future``
        holds the window's next h steps (B, h, F)."""
        x, batch = split_inputs(inputs)
        y, context = self._forward_all(x, batch)
        last = y[:, -1]  # (B, h + P - 1, Q)
        if batch is not None and batch.future is not None:
            future = F.pad(batch.future, (0, 0, 0, self.horizon_out - batch.future.size(1)))  # (B, h + P - 1, F)
            term = self.horizon_term(future, context[:, -1])
            if term is not None:
                last = last + term
        return last[:, : self.config.h]

    def forward(self, inputs, *, tokens: bool = False):
        """What calling the module runs, in training and evaluation alike (DDP and ``torch.compile`` wrap
        ``forward`` only, so a caller names the output it wants here rather than calling the methods):

        - windows (B, L) or a :class:`~tsrsa.nn.covariates.CovariateBatch`: ``forecast(inputs)`` (B, h, Q),
          or with ``tokens`` ``forward_tokens`` (B, N, h + P - 1, Q) (``future``: every token's
          (B, N, h + P - 1, F));
        - a :class:`CarriedBatch`: ``carried_forward(inputs, tokens=tokens)``, (that output, the state after).
        """
        if isinstance(inputs, CarriedBatch):
            return self.carried_forward(inputs, tokens=tokens)
        if tokens:
            return self.forward_tokens(*split_inputs(inputs))  # (B, N, h + P - 1, Q)
        return self.forecast(inputs)  # (B, h, Q)

    def carried_forward(self, batch: CarriedBatch, *, tokens: bool = False):
        """The recurrent form over windows that continue ``batch.state`` (Transformer-XL style training:
        gradients flow within the window; the caller detaches the state it carries to the next call):
        (every token's forecast (B, N, h + P - 1, Q) with ``tokens``, else the last token's next ``h``
        steps (B, h, Q); the state after the windows)."""
        x, state = batch.inputs, batch.state
        if batch.reset or state is None or state.batch_size != x.size(0):
            state = self.init_state(x.size(0), device=x.device, dtype=x.dtype)
        y, _, state = self.stream_tokens(x, state)  # (B, N, h + P - 1, Q)
        return (y if tokens else y[:, -1, : self.config.h]), state

    # ------------------------------------------------------------------ recurrent form
    def init_state(self, batch_size: int, *, device=None, dtype=None) -> StreamingState:
        """The state of an empty history."""
        device = device if device is not None else self.embed.weight.device
        dtype = dtype or self.embed.weight.dtype
        m, q = RunningNorm.start(batch_size, device=device, dtype=dtype)
        readout = torch.zeros(batch_size, self.readout_tokens - 1, self.config.d_model, device=device, dtype=dtype)
        n_past = covariate_shape(self.config)["n_past"]
        waiting = torch.zeros(batch_size, 0, n_past, device=device, dtype=dtype) if n_past else None
        blocks = tuple(block.attn.init_state(batch_size, device=device, dtype=dtype) for block in self.blocks)
        return StreamingState(torch.zeros(batch_size, 0, device=device, dtype=dtype), m, q, readout, blocks, waiting)

    def state_size(self, n_tokens: int) -> int:
        """Numbers held per series after ``n_tokens`` tokens (the partial patch and statistics included)."""
        held = self.patch_len + 2 + (self.readout_tokens - 1) * self.config.d_model
        return held + sum(block.attn.state_size(n_tokens) for block in self.blocks)

    def stream(self, x: torch.Tensor, state: StreamingState,
               covariates: CovariateBatch | None = None) -> tuple[torch.Tensor, StreamingState]:
        """Advance over new steps x (B, n): the forecasts of the tokens they complete,
        (B, c, h + P - 1, Q), and the new state (the given one is left as it was). ``covariates``: the
        covariates of the new steps (``past`` (B, n, C)) and the statics; the forecasts are then
        without the known-future horizon term (``stream_tokens`` gives its context)."""
        y, _, state = self.stream_tokens(x, state, covariates)
        return y, state

    def stream_tokens(self, x: torch.Tensor, state: StreamingState, covariates: CovariateBatch | None = None):
        """As ``stream``, with each completed token's final vector (B, c, D): the context that
        ``horizon_term`` reads with the known-future values after the token."""
        steps = torch.cat([state.pending, x.to(state.pending.dtype)], dim=1)  # (B, r + n)
        c = steps.size(1) // self.patch_len
        done, pending = steps[:, : c * self.patch_len], steps[:, c * self.patch_len:]
        batch, waiting = None, state.pending_covariates
        if covariates is not None and covariates.past is not None:  # the partial patch's covariates wait too
            rows = torch.cat([state.pending_covariates, covariates.past.to(steps.dtype)], dim=1)  # (B, r + n, C)
            batch = covariates._replace(past=rows[:, : c * self.patch_len])
            waiting = rows[:, c * self.patch_len:]
        elif covariates is not None:
            batch = covariates
        if c == 0:
            empty = steps.new_zeros(steps.size(0), 0, self.horizon_out, self.config.n_outputs)
            context = steps.new_zeros(steps.size(0), 0, self.config.d_model)
            return empty, context, dataclasses.replace(state, pending=pending, pending_covariates=waiting)
        z, stats, (m, q) = self._tokens(done, state.norm_mean, state.norm_square, batch)  # (B, c, D)
        layers = []
        for block, layer in zip(self.blocks, state.blocks):
            z, layer = block.stream(z, layer)  # (B, c, D)
            layers.append(layer)
        y, readout, context = self._readout(z, stats, state.readout)
        return y, context, StreamingState(pending, m, q, readout, tuple(layers), waiting)
