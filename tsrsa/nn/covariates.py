"""How covariates enter a forecasting network: per-token channels, a static embedding, a horizon term.

    look-back channels (B, L, C)  -> patches of P steps -> linear -> (B, N, D)  added to the tokens
    static values and categories  -> linear + embeddings         -> (B, D)     added to every token
    known-future channels (B, H, F) and the network's context (B, D)
        -> per horizon step j: out(gelu(A f_j + B context + e_j))  -> (B, H, Q)  added to the forecast

The look-back channels are every time-varying covariate (past ones and known-future ones, which
are known over the look-back too), scaled by the estimator; the numeric ones may further be
normalised per window (``window_norm``), as RevIN normalises the target. Horizon step j reads the known-future
values of step j only (and the context, which reads the look-back), so forecasting ``h`` steps
needs the covariates of those ``h`` steps and no more. ``e_j`` is a learned vector per step.

The other way in for the known-future values (``future_tokens`` in the layout; the fixed-window
transformer only): decoder tokens. The horizon's values are cut into patches like the look-back,
each patch projected to a token (plus a learned position and the static embedding) that joins the
sequence after the look-back tokens, so attention mixes them with the history, and the flatten
head reads every token. Then the forecast of step j may read the known-future values of every
horizon step, and ``predict(h)`` needs the values of the whole trained horizon.

A network reads ``inputs`` that are either the window ``x`` (B, L) alone or a
:class:`CovariateBatch` (``x`` and its covariates), so a network without covariates is called
as before.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from tsrsa.nn.patches import n_tokens


#: added to a window's variance before its square root (channels constant over a window stay finite)
WINDOW_EPS = 1e-5


class CovariateBatch(NamedTuple):
    """A batch of windows with their covariates (tensors; an absent part is None)."""

    x: torch.Tensor  # (B, L) the target's window
    past: torch.Tensor | None  # (B, L, C) every time-varying covariate over the look-back
    future: torch.Tensor | None  # (B, H, F) the known-future covariates of the horizon steps
    static_num: torch.Tensor | None  # (B, S_n) numeric static values
    static_cat: torch.Tensor | None  # (B, S_c) int64 category codes of the categorical statics
    cycle: torch.Tensor | None = None  # (B, 2) int64 each window's row and phase in a learned cycle


def split_inputs(inputs) -> tuple[torch.Tensor, CovariateBatch | None]:
    """(x, the batch or None) of a network's input."""
    if isinstance(inputs, CovariateBatch):
        return inputs.x, inputs
    return inputs, None


def covariate_shape(config) -> dict:
    """The covariate layout of a network configuration (empty dict: none)."""
    shape = dict(config.covariates or {})
    return {"n_past": int(shape.get("n_past", 0)), "n_future": int(shape.get("n_future", 0)),
            "n_static": int(shape.get("n_static", 0)), "cardinalities": [int(c) for c in shape.get("cardinalities", [])],
            "future_tokens": bool(shape.get("future_tokens", False)),
            "window_norm": [int(c) for c in shape.get("window_norm", [])]}


def has_covariates(config) -> bool:
    shape = covariate_shape(config)
    return bool(shape["n_past"] or shape["n_future"] or shape["n_static"] or shape["cardinalities"])


class CovariateInput(nn.Module):
    """The covariate paths of one network (see the module docstring).

    Parameters
    ----------
    shape : dict
        ``n_past`` (look-back channels), ``n_future`` (horizon channels), ``n_static`` (numeric
        statics), ``cardinalities`` (codes of each categorical static, the unknown bucket included),
        ``future_tokens`` (the horizon channels as decoder tokens instead of the horizon term),
        ``window_norm`` (look-back channels normalised by their own mean and spread over each window
        before they are read, as RevIN does for the target).
    d_model : int
        Width of the tokens (and of the static embedding and the horizon term's hidden layer).
    patch_len : int
        How the look-back is cut into tokens (as the network's own patches: padded at the front
        with the first step, so the last token ends at the last observation).
    h, n_outputs : int
        The horizon term's output (B, h, n_outputs).
    context_size : int, optional
        Width of the context the horizon term reads (default ``d_model``).
    horizon : bool, default False
        Build the horizon term even without known-future channels (a network whose only path from
        the covariates to the forecast is that term, as DLinear's).
    """

    def __init__(self, shape: dict, *, d_model: int, patch_len: int, h: int, n_outputs: int,
                 context_size: int | None = None, horizon: bool = False):
        super().__init__()
        self.n_past, self.n_future = shape["n_past"], shape["n_future"]
        self.window_norm = list(shape.get("window_norm", []))
        self.patch_len, self.h, self.n_outputs = patch_len, h, n_outputs
        self.past = nn.Linear(patch_len * self.n_past, d_model) if self.n_past else None
        self.static_num = nn.Linear(shape["n_static"], d_model) if shape["n_static"] else None
        self.static_cat = nn.ModuleList(nn.Embedding(c, d_model) for c in shape["cardinalities"])
        self.horizon = self.future_embed = None
        if self.n_future and shape.get("future_tokens"):  # decoder tokens: one per patch of the horizon
            self.n_future_tokens = n_tokens(h, patch_len)
            self.future_embed = nn.Linear(patch_len * self.n_future, d_model)
            self.future_position = nn.Parameter(torch.zeros(self.n_future_tokens, d_model))
        elif self.n_future or horizon:
            self.future_map = nn.Linear(self.n_future, d_model) if self.n_future else None
            self.context_map = nn.Linear(context_size or d_model, d_model)
            self.step = nn.Parameter(torch.zeros(h, d_model))
            self.horizon = nn.Linear(d_model, n_outputs)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=0.02)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, std=0.02)
        if self.horizon is not None:
            nn.init.normal_(self.step, std=0.02)
        if self.future_embed is not None:
            nn.init.normal_(self.future_position, std=0.02)

    def static(self, batch: CovariateBatch) -> torch.Tensor | None:
        """The static embedding (B, D), or None without statics."""
        total = None
        if self.static_num is not None:
            total = self.static_num(batch.static_num)
        for j, embedding in enumerate(self.static_cat):
            term = embedding(batch.static_cat[:, j])
            total = term if total is None else total + term
        return total

    def tokens(self, batch: CovariateBatch) -> torch.Tensor | None:
        """What the covariates add to each token: (B, N, D) (or (B, 1, D) for statics alone), or None.
        ``batch.past`` may hold any number of steps (the streaming form's new ones: whole patches)."""
        total = None
        if self.past is not None:
            c = batch.past  # (B, L, C)
            if self.window_norm:  # a level shift of a driver between fit and forecast moves nothing
                c = c.clone()
                part = c[..., self.window_norm]  # (B, L, C_n)
                mean = part.mean(dim=1, keepdim=True)
                spread = torch.sqrt(part.var(dim=1, keepdim=True, unbiased=False) + WINDOW_EPS)
                c[..., self.window_norm] = (part - mean) / spread
            pad = -c.size(1) % self.patch_len
            if pad:
                c = torch.cat([c[:, :1].expand(-1, pad, -1), c], dim=1)  # (B, N * P, C)
            B = c.size(0)
            total = self.past(c.reshape(B, -1, self.patch_len * self.n_past))  # (B, N, D)
        static = self.static(batch)
        if static is not None:
            total = static[:, None, :] if total is None else total + static[:, None, :]
        return total

    def future_tokens(self, batch: CovariateBatch) -> torch.Tensor | None:
        """The decoder tokens (B, ceil(h / P), D) of the horizon's known-future values, or None."""
        if self.future_embed is None:
            return None
        f = batch.future  # (B, h, F)
        f = F.pad(f, (0, 0, 0, self.n_future_tokens * self.patch_len - f.size(1)))  # zeros after the horizon
        z = self.future_embed(f.reshape(f.size(0), self.n_future_tokens, -1)) + self.future_position
        static = self.static(batch)
        return z if static is None else z + static[:, None, :]

    def forecast(self, batch: CovariateBatch, context: torch.Tensor) -> torch.Tensor | None:
        """The horizon term (..., h, Q) from the known-future values of each step, ``batch.future``
        (..., h, F), and ``context`` (..., C): (B, ...) for one forecast per window, (B, N, ...) for one
        per token."""
        if self.horizon is None:
            return None
        hidden = self.context_map(context)[..., None, :] + self.step  # (..., h, D)
        if self.future_map is not None:
            hidden = hidden + self.future_map(batch.future)  # (..., h, D)
        return self.horizon(F.gelu(hidden))  # (..., h, Q)
