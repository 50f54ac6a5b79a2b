"""Fast weight programmers (Schlag, Irie, Schmidhuber 2021, "Linear Transformers Are Secretly Fast
Weight Programmers"): the attention kind ``fast_weight``, causal only.

Each head keeps a fast weight matrix W (d_v × d_φ) that its tokens write to and read from. With
features φ ("elu": elu + 1, or "dpfp" with ν, ``tsrsa.nn.feature_maps``), both sum-normalised,
φ(k) ← φ(k) / (Σ_i φ(k)_i + ε) and the same for q:

    sum:    W_t = W_{t-1} + v_t φ(k_t)ᵀ,                     y_t = W_t φ(q_t) / (z_tᵀ φ(q_t) + ε)
    delta:  v̄_t = W_{t-1} φ(k_t),  β_t = σ(w_βᵀ x_t + b_β),
            W_t = W_{t-1} + β_t (v_t - v̄_t) φ(k_t)ᵀ,       y_t = W_t φ(q_t)

with z_t = z_{t-1} + φ(k_t). The sum rule keeps linear attention's denominator z: without it, its
read grows with the history (every write adds to W), so its state is W and z. The delta rule
replaces the value stored under a key instead of adding to it (β_t, one per head and token, read
from the block input x_t, says how much), so its read stays bounded and its state is W alone.
Both states have a fixed size: d_v·d_φ (+ d_φ for sum) numbers per head.

Forms (in the code the state is kept key-major, Wᵀ (d_φ × d_v)), each with every kind's signature
``(phi_q, phi_k, v, ..., state=None) -> (output, final state)``, the state a ``FastWeightState``:

- ``delta_rule_loop``: the delta recurrence token by token, the plain reference (the recurrent form);
- ``delta_rule_chunked``: training and streaming. Inside a chunk of C tokens the updates fold into
  the WY form (Yang et al. 2024, as in flash-linear-attention): with A = tril(diag(β) K Kᵀ, -1),
  the rows u_t, w_t of U = (I + A)⁻¹ diag(β) V and Wk = (I + A)⁻¹ diag(β) K (one triangular solve
  per chunk, all chunks at once) give, from the chunk's starting state S,
  S' = S + Kᵀ (U - Wk S) and outputs Q S + tril(Q Kᵀ) (U - Wk S); a loop over chunks carries S.
  Its speed against the token loop is in docs/attention.md.
- the sum rule is linear attention on normalised features: ``sum_rule`` (``causal_linear_attention``
  with W and z as a ``FastWeightState``);
- optionally flash-linear-attention's ``chunk_delta_rule`` kernel on a GPU (``backend="fla"``).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from tsrsa.nn.attention import KindOps, register_attention
from tsrsa.nn.feature_maps import check_feature_map, feature_map, feature_size, sum_normalise
from tsrsa.nn.linear_attention import (
    EPS, LinearState, accumulation_dtype, causal_linear_attention, check_backend, check_chunk_size, fla_applies,
)
from tsrsa.nn.multihead import MultiHeadAttention
from tsrsa.nn.state import LayerState

__all__ = ["FastWeightAttention", "FastWeightState", "UPDATES", "delta_rule_chunked", "delta_rule_loop", "sum_rule"]

UPDATES = ("sum", "delta")


@dataclass(frozen=True, eq=False)
class FastWeightState(LayerState):
    """The fast weights of every head, key-major, and (sum rule) the sum of the keys' features."""

    fast_weight: torch.Tensor  # (B, H, m, dv) Wᵀ
    k_sum: torch.Tensor | None = None  # (B, H, m) z, for the sum rule only

    def cast(self, dtype: torch.dtype) -> "FastWeightState":
        return FastWeightState(self.fast_weight.to(dtype), None if self.k_sum is None else self.k_sum.to(dtype))


def delta_rule_loop(phi_q, phi_k, v, beta, *, state: FastWeightState | None = None, output_state: bool = True):
    """The delta rule token by token (the reference).

    phi_q, phi_k (B, H, T, m); v (B, H, T, dv); beta (B, H, T); ``state`` Wᵀ (None: zeros).
    Returns y (B, H, T, dv) and the ``FastWeightState`` after the T tokens.
    """
    B, H, T, m = phi_k.shape
    S = phi_k.new_zeros(B, H, m, v.size(-1)) if state is None else state.fast_weight  # Wᵀ (B, H, m, dv)
    out = []
    for t in range(T):
        k_t = phi_k[:, :, t]  # (B, H, m)
        v_old = torch.einsum("bhm,bhmd->bhd", k_t, S)  # v̄_t = W_{t-1} φ(k_t)
        S = S + beta[:, :, t, None, None] * k_t[..., :, None] * (v[:, :, t] - v_old)[..., None, :]
        out.append(torch.einsum("bhm,bhmd->bhd", phi_q[:, :, t], S))  # y_t = W_t φ(q_t)
    y = torch.stack(out, dim=2) if out else v  # (B, H, T, dv)
    return y, (FastWeightState(S) if output_state else None)


def delta_rule_chunked(phi_q, phi_k, v, beta, *, chunk_size: int = 32, state: FastWeightState | None = None,
                       output_state: bool = True):
    """The delta rule in chunks of ``chunk_size`` tokens (WY form, see the module docstring).

    Same arguments and returns as ``delta_rule_loop``.
    """
    B, H, T, m = phi_k.shape
    dv = v.size(-1)
    S = phi_k.new_zeros(B, H, m, dv) if state is None else state.fast_weight  # Wᵀ (B, H, m, dv)
    if T == 0:
        return v, (FastWeightState(S) if output_state else None)
    C = min(chunk_size, T)
    n = math.ceil(T / C)
    # padded tokens have zero keys and β = 0: they change nothing; their outputs are cut off
    q, k, v = (F.pad(t, (0, 0, 0, n * C - T)).reshape(B, H, n, C, t.size(-1)) for t in (phi_q, phi_k, v))
    b = F.pad(beta, (0, n * C - T)).reshape(B, H, n, C, 1)
    eye = torch.eye(C, dtype=k.dtype, device=k.device)
    A = (b * (k @ k.transpose(-2, -1))).tril(-1)  # (B, H, n, C, C): β_t φ(k_t)·φ(k_s), s < t
    wu = torch.linalg.solve_triangular(eye + A, torch.cat([b * k, b * v], dim=-1), upper=False,
                                       unitriangular=True)  # (B, H, n, C, m + dv)
    w, u = wu.split([m, dv], dim=-1)  # (B, H, n, C, m), (B, H, n, C, dv)
    qk = (q @ k.transpose(-2, -1)).tril()  # (B, H, n, C, C): φ(q_t)·φ(k_s), s <= t
    out = []
    # unbind once: indexing chunk c of a tensor inside the loop would give each chunk a gradient of the
    # whole tensor in backward, quadratic in the number of chunks
    for u_c, w_c, q_c, qk_c, k_c in zip(*(t.unbind(2) for t in (u, w, q, qk, k))):
        new = u_c - w_c @ S  # (B, H, C, dv): what each token adds, given S
        out.append(q_c @ S + qk_c @ new)  # (B, H, C, dv)
        S = S + k_c.transpose(-2, -1) @ new  # (B, H, m, dv)
    return torch.cat(out, dim=2)[:, :, :T], (FastWeightState(S) if output_state else None)


def sum_rule(phi_q, phi_k, v, *, chunk_size: int = 32, state: FastWeightState | None = None,
             output_state: bool = True):
    """The sum rule, chunked: linear attention on the normalised features, its (S, z) kept as the
    fast weights Wᵀ and z. phi_q, phi_k (B, H, T, m); v (B, H, T, dv) -> y (B, H, T, dv) and the
    ``FastWeightState`` after the T tokens."""
    start = None if state is None else LinearState(state.fast_weight, state.k_sum)
    y, after = causal_linear_attention(phi_q, phi_k, v, chunk_size=chunk_size, state=start, output_state=output_state)
    return y, (FastWeightState(after.kv, after.k_sum) if output_state else None)


def fla_delta_rule(phi_q, phi_k, v, beta, dtype: torch.dtype) -> torch.Tensor:
    """The delta rule by flash-linear-attention's chunk kernel on a GPU, inputs in ``dtype`` (half
    precision): y (B, H, T, dv) in float32."""
    from fla.ops.delta_rule import chunk_delta_rule

    q, k, v = (t.transpose(1, 2).to(dtype).contiguous() for t in (phi_q, phi_k, v))  # (B, T, H, .)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, _ = chunk_delta_rule(q, k, v, beta.transpose(1, 2).to(dtype).contiguous(), scale=1.0)
    return out.transpose(1, 2).float()  # (B, H, T, dv)


@register_attention("fast_weight")
class FastWeightAttention(MultiHeadAttention):
    """Fast weight programmer heads with the sum or delta update (see the module docstring).

    State per head when streaming: Wᵀ (d_φ × d) (and z, d_φ, for ``update="sum"``), d = d_model /
    n_heads, d_φ = d ("elu") or 2dν ("dpfp"), whatever the history.

    Parameters
    ----------
    d_model, n_heads : int
        Token width and number of heads.
    dropout : float, default 0.0
        On the output projection.
    causal : bool, default True
        Must be True: the fast weights at token t are a function of the tokens up to t.
    update : {"delta", "sum"}, default "delta"
        The delta rule (overwrites what a key stored, at rate β) or the sum rule (adds to it).
    feature_map : {"dpfp", "elu"}, default "dpfp"
        φ of keys and queries, sum-normalised.
    nu : int, default 1
        DPFP's ν (d_φ = 2dν); ignored with "elu".
    beta_init : float, default 0.5
        The delta rule's write rate β = σ(w_βᵀ x + b_β) at the start: b_β = logit(beta_init).
    chunk_size : int, default 32
        Tokens per chunk of the training form (the result does not depend on it).
    backend : {"torch", "fla"}, default "torch"
        "fla": flash-linear-attention's chunk kernel for the delta rule on a GPU in half precision
        (autocast) when the package is installed; the torch form otherwise and when streaming.
    """

    recurrent = True
    bidirectional = False
    state_type = FastWeightState
    ops = KindOps(parallel=delta_rule_chunked, recurrent=delta_rule_loop)  # the sum rule: ``sum_rule``

    def __init__(self, d_model: int, n_heads: int, *, dropout: float = 0.0, causal: bool = True,
                 update: str = "delta", feature_map: str = "dpfp", nu: int = 1, beta_init: float = 0.5,
                 chunk_size: int = 32, backend: str = "torch"):
        super().__init__(d_model, n_heads, dropout=dropout, causal=causal)
        if not causal:
            raise ValueError("attention kind 'fast_weight' is causal only (its fast weights are a function of "
                             "the past); build it with causal=True")
        if update not in UPDATES:
            raise ValueError(f"update={update!r} is not one of {UPDATES}")
        check_feature_map(feature_map, nu, self.head_size)
        if isinstance(beta_init, bool) or not isinstance(beta_init, (int, float)) or not 0.0 < beta_init < 1.0:
            raise ValueError(f"beta_init={beta_init!r} must be a number in (0, 1)")
        check_chunk_size(chunk_size)
        check_backend(backend)
        self.update, self.feature_map, self.nu = update, feature_map, nu
        self.beta_init, self.chunk_size, self.backend = float(beta_init), chunk_size, backend
        self.n_features = feature_size(feature_map, self.head_size, nu)  # d_φ
        self.beta = nn.Linear(d_model, n_heads) if update == "delta" else None  # one write rate per head
        self.reset_parameters()

    @classmethod
    def search_space(cls, trial, *, causal: bool = False) -> dict:
        """The update rule, the feature map and (for DPFP) ν."""
        space = {"update": trial.suggest_categorical("update", list(UPDATES)),
                 "feature_map": trial.suggest_categorical("feature_map", ["dpfp", "elu"])}
        if space["feature_map"] == "dpfp":
            space["nu"] = trial.suggest_int("nu", 1, 3)
        return space

    def reset_parameters(self) -> None:
        """q/k/v and output as every kind; β's weights N(0, 0.02) and its bias at logit(beta_init)."""
        super().reset_parameters()
        if self.beta is not None:
            nn.init.normal_(self.beta.weight, mean=0.0, std=0.02)
            nn.init.constant_(self.beta.bias, math.log(self.beta_init / (1.0 - self.beta_init)))

    # ------------------------------------------------------------------ pieces
    def features(self, x: torch.Tensor, dtype: torch.dtype | None = None):
        """x (B, T, D) -> sum-normalised φ(q), φ(k) (B, H, T, d_φ), v (B, H, T, d) and β (B, H, T)
        (None for the sum rule), in float32 at least (or ``dtype``), and q's own dtype."""
        q, k, v = self.project(x)  # (B, H, T, d)
        beta = torch.sigmoid(self.beta(x)).transpose(1, 2) if self.beta is not None else None  # (B, H, T)
        dtype = dtype or accumulation_dtype(q)
        phi_q, phi_k = (sum_normalise(feature_map(t.to(dtype), self.feature_map, self.nu), EPS) for t in (q, k))
        return phi_q, phi_k, v.to(dtype), (beta.to(dtype) if beta is not None else None), q.dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.parallel(x, output_state=False)[0]  # (B, T, D)

    def parallel(self, x: torch.Tensor, state: FastWeightState | None = None, *, output_state: bool = True):
        phi_q, phi_k, v, beta, low = self.features(x)  # (B, H, T, d_φ), (B, H, T, d), (B, H, T)
        if self.update == "delta" and state is None and not output_state and fla_applies(self.backend, phi_q, low):
            return self.output(fla_delta_rule(phi_q, phi_k, v, beta, dtype=low)), None
        with torch.autocast(x.device.type, enabled=False):
            y, state = self.advance(phi_q, phi_k, v, beta, state, output_state)
        return self.output(y), state  # (B, T, D)

    def advance(self, phi_q, phi_k, v, beta, state: FastWeightState | None, output_state: bool = True):
        """The update rule's chunked form over the features (see ``features``) from ``state``."""
        if self.update == "delta":
            return delta_rule_chunked(phi_q, phi_k, v, beta, chunk_size=self.chunk_size, state=state,
                                      output_state=output_state)
        return sum_rule(phi_q, phi_k, v, chunk_size=self.chunk_size, state=state, output_state=output_state)

    # ------------------------------------------------------------------ recurrent form
    def state_size(self, n_tokens: int) -> int:
        per_head = self.n_features * self.head_size + (self.n_features if self.update == "sum" else 0)
        return self.n_heads * per_head

    def init_state(self, batch_size: int, *, device=None, dtype=None) -> FastWeightState:
        device = device if device is not None else self.qkv.weight.device
        dtype = dtype or self.qkv.weight.dtype
        H, m, d = self.n_heads, self.n_features, self.head_size
        W = torch.zeros(batch_size, H, m, d, device=device, dtype=dtype)  # Wᵀ
        z = torch.zeros(batch_size, H, m, device=device, dtype=dtype) if self.update == "sum" else None
        return FastWeightState(W, z)

    def stream(self, x: torch.Tensor, state: FastWeightState) -> tuple[torch.Tensor, FastWeightState]:
        self.check_streamable()
        dtype = accumulation_dtype(x, state.fast_weight)
        phi_q, phi_k, v, beta, _ = self.features(x, dtype)  # (B, H, n, d_φ), (B, H, n, d), (B, H, n)
        with torch.autocast(x.device.type, enabled=False):
            y, new = self.advance(phi_q, phi_k, v, beta, state.cast(dtype))
        return self.output(y), new.cast(state.fast_weight.dtype)
