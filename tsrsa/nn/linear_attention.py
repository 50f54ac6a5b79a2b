"""Linear attention (Katharopoulos et al. 2020, "Transformers are RNNs"): the attention kind ``linear``.

Softmax's exp(q·k) is replaced by a dot product of features φ(q)·φ(k), φ(x) = elu(x) + 1 > 0,
so that the weighted sum over keys factorises. Per head, with ε = 1e-6:

    non-causal:  y = φ(Q) (φ(K)ᵀ V) / (φ(Q) (φ(K)ᵀ 1) + ε)
    causal:      S_t = S_{t-1} + φ(k_t) v_tᵀ,   z_t = z_{t-1} + φ(k_t),
                 y_t = S_tᵀ φ(q_t) / (z_tᵀ φ(q_t) + ε)

The causal form is an RNN whose state (S, z) has d·(d + 1) numbers per head whatever the history.
Three forms of the same causal maths, as flash-linear-attention lays them out, the first two with
every kind's signature ``(phi_q, phi_k, v, ..., state=None) -> (output, final state)``, the state a
``LinearState`` (S, z):

- ``linear_attention_loop``: the recurrence above token by token, the plain reference (the
  recurrent form);
- ``causal_linear_attention``: chunked, for training and for streaming a block of tokens: inside a
  chunk of C tokens the masked products tril(φ(Q) φ(K)ᵀ) (quadratic in C), across chunks the
  state at each chunk's start (an exclusive prefix sum of the chunks' φ(K)ᵀ V, all chunks at once);
  memory O(T·C + T/C·d²) per head;
- optionally flash-linear-attention's ``chunk_linear_attn`` kernel on a GPU (``backend="fla"``).

The non-causal forms (``linear_attention``, ``decayed_linear_attention``) are no recurrence: they
return the output alone.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from tsrsa.nn.attention import KindOps, register_attention
from tsrsa.nn.feature_maps import elu_plus_one
from tsrsa.nn.multihead import MultiHeadAttention
from tsrsa.nn.state import LayerState

__all__ = ["BACKENDS", "EPS", "LinearAttention", "LinearState", "accumulation_dtype", "causal_linear_attention",
           "check_chunk_size", "decayed_linear_attention", "linear_attention", "linear_attention_loop", "normalise"]

EPS = 1e-6  # the denominator's ε
BACKENDS = ("torch", "fla")


@dataclass(frozen=True, eq=False)
class LinearState(LayerState):
    """The causal state of linear attention (and of T2R): S = Σ φ(k) vᵀ and z = Σ φ(k), per head."""

    kv: torch.Tensor  # (B, H, m, dv) S
    k_sum: torch.Tensor  # (B, H, m) z

    @classmethod
    def empty(cls, batch_size: int, n_heads: int, n_features: int, value_size: int, *, device=None,
              dtype=None) -> "LinearState":
        return cls(torch.zeros(batch_size, n_heads, n_features, value_size, device=device, dtype=dtype),
                   torch.zeros(batch_size, n_heads, n_features, device=device, dtype=dtype))

    def cast(self, dtype: torch.dtype) -> "LinearState":
        return LinearState(self.kv.to(dtype), self.k_sum.to(dtype))


def accumulation_dtype(*tensors: torch.Tensor) -> torch.dtype:
    """float32 at least: sums over tokens in bf16 lose too much; float64 stays float64."""
    dtype = torch.float32
    for t in tensors:
        dtype = torch.promote_types(dtype, t.dtype)
    return dtype


def check_chunk_size(chunk_size) -> None:
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size={chunk_size!r} must be an int >= 1")


def check_backend(backend) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} is not one of {BACKENDS}")


def fla_applies(backend: str, q: torch.Tensor, dtype: torch.dtype | None = None) -> bool:
    """Use flash-linear-attention's kernels for queries q (B, H, T, d) projected in ``dtype`` (q's own
    by default): asked for, on a GPU, in half precision (autocast), T >= H (its layout check), and
    the package importable; the torch form otherwise."""
    dtype = dtype or q.dtype
    if backend != "fla" or not q.is_cuda or dtype not in (torch.float16, torch.bfloat16) or q.size(2) < q.size(1):
        return False
    try:
        import fla.ops  # noqa: F401
    except ImportError:
        return False
    return True


def normalise(numerator: torch.Tensor, denominator: torch.Tensor, eps: float = EPS,
              floor: float | None = None) -> torch.Tensor:
    """numerator / (denominator + ε), or numerator / max(denominator, floor) when a ``floor`` is given
    (features that can all vanish, such as T2R's relu features, need the floor)."""
    if floor is not None:
        return numerator / denominator.clamp_min(floor)
    return numerator / (denominator + eps)


def linear_attention(phi_q, phi_k, v, eps: float = EPS, floor: float | None = None) -> torch.Tensor:
    """Non-causal: φ(Q)(φ(K)ᵀV) / (φ(Q)(φ(K)ᵀ1) + ε); phi_q, phi_k (B, H, T, m), v (B, H, T, dv)."""
    kv = phi_k.transpose(-2, -1) @ v  # (B, H, m, dv)
    z = phi_k.sum(dim=-2)  # (B, H, m)
    return normalise(phi_q @ kv, phi_q @ z[..., None], eps, floor)  # (B, H, T, dv)


def linear_attention_loop(phi_q, phi_k, v, *, eps: float = EPS, floor: float | None = None,
                          log_decay: torch.Tensor | None = None, state: LinearState | None = None,
                          output_state: bool = True):
    """The causal recurrence token by token (the reference): phi_q, phi_k (B, H, T, m), v (B, H, T, dv)
    from ``state`` (None: zeros) -> y (B, H, T, dv) and the ``LinearState`` after the T tokens.

    ``log_decay`` (H,), log λ <= 0 per head: the state decays by λ before each token,
    S_t = λ S_{t-1} + φ(k_t) v_tᵀ and z_t = λ z_{t-1} + φ(k_t) (None: λ = 1).
    """
    B, H, T, m = phi_k.shape
    kv = phi_k.new_zeros(B, H, m, v.size(-1)) if state is None else state.kv  # (B, H, m, dv)
    k_sum = phi_k.new_zeros(B, H, m) if state is None else state.k_sum  # (B, H, m)
    lam = None if log_decay is None else log_decay.to(phi_k.dtype).exp().view(1, H, 1)
    out = []
    for t in range(T):
        if lam is not None:
            kv, k_sum = lam[..., None] * kv, lam * k_sum
        kv = kv + phi_k[:, :, t, :, None] * v[:, :, t, None, :]  # S_t = S_{t-1} + φ(k_t) v_tᵀ
        k_sum = k_sum + phi_k[:, :, t]  # z_t = z_{t-1} + φ(k_t)
        num = torch.einsum("bhm,bhmd->bhd", phi_q[:, :, t], kv)  # (B, H, dv)
        out.append(normalise(num, (phi_q[:, :, t] * k_sum).sum(-1, keepdim=True), eps, floor))
    y = torch.stack(out, dim=2) if out else v  # (B, H, T, dv)
    return y, (LinearState(kv, k_sum) if output_state else None)


def causal_linear_attention(phi_q, phi_k, v, *, chunk_size: int = 64, eps: float = EPS, floor: float | None = None,
                            log_decay: torch.Tensor | None = None, state: LinearState | None = None,
                            output_state: bool = True):
    """The causal form in chunks of ``chunk_size`` tokens, from ``state`` (S, z) (zeros when None).

    phi_q, phi_k (B, H, T, m); v (B, H, T, dv); ``log_decay`` (H,), log λ <= 0 per head, for a state
    that decays by λ each token (``linear_attention_loop``). Returns y (B, H, T, dv) and the
    ``LinearState`` after the T tokens: S (B, H, m, dv) and z (B, H, m).
    """
    B, H, T, m = phi_k.shape
    dv = v.size(-1)
    kv = phi_k.new_zeros(B, H, m, dv) if state is None else state.kv  # (B, H, m, dv)
    k_sum = phi_k.new_zeros(B, H, m) if state is None else state.k_sum  # (B, H, m)
    if T == 0:
        return v, (LinearState(kv, k_sum) if output_state else None)
    C = min(chunk_size, T)
    n = math.ceil(T / C)
    # The denominator rides along as one more value column of ones: [S, z] = Σ φ(k) [v, 1]ᵀ.
    v1 = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)  # (B, H, T, dv + 1)
    if log_decay is not None:
        out, after = _decayed_chunks(phi_q, phi_k, v1, torch.cat([kv, k_sum[..., None]], dim=-1), log_decay, C)
        y = normalise(out[..., :dv], out[..., dv:], eps, floor)  # (B, H, T, dv)
        return y, (LinearState(after[..., :dv], after[..., dv]) if output_state else None)
    # zero keys past T add nothing to the state; the padded queries' outputs are cut off
    q, k, v1 = (F.pad(t, (0, 0, 0, n * C - T)).reshape(B, H, n, C, t.size(-1)) for t in (phi_q, phi_k, v1))
    per_chunk = k.transpose(-2, -1) @ v1  # (B, H, n, m, dv + 1): what each chunk adds
    start = torch.cat([kv, k_sum[..., None]], dim=-1)[:, :, None]  # (B, H, 1, m, dv + 1)
    before = start + torch.cat([torch.zeros_like(per_chunk[:, :, :1]), per_chunk[:, :, :-1]], dim=2).cumsum(dim=2)
    mask = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    scores = (q @ k.transpose(-2, -1)).masked_fill(~mask, 0.0)  # (B, H, n, C, C): φ(q_t)·φ(k_s), s <= t
    out = q @ before + scores @ v1  # (B, H, n, C, dv + 1): [numerator, denominator]
    out = out.reshape(B, H, n * C, dv + 1)[:, :, :T]
    y = normalise(out[..., :dv], out[..., dv:], eps, floor)  # (B, H, T, dv)
    if not output_state:
        return y, None
    after = before[:, :, -1] + per_chunk[:, :, -1]  # (B, H, m, dv + 1)
    return y, LinearState(after[..., :dv], after[..., dv])


def _decayed_chunks(phi_q, phi_k, v1, start, log_decay, C: int):
    """``causal_linear_attention`` with a state that decays by λ_h = exp(log_decay_h) each token,
    before normalising: [numerator, denominator] (B, H, T, dv + 1) and the state after the tokens.

    Token t reads Σ_{s<=t} λ^(t-s) φ(k_s) [v_s, 1]ᵀ and λ^(t+1) of the state it starts from. Inside a
    chunk the masked products carry λ^(i-s); chunk c starts from the state after chunk c - 1,
    Σ_{c'<c} λ^((c-1-c')C) (chunk c' summed to its end) + λ^(cC) start; every power is of a
    non-negative exponent, so none overflows.
    """
    B, H, T, m = phi_k.shape
    dv = v1.size(-1) - 1
    n = math.ceil(T / C)
    a = log_decay.to(phi_k.dtype).view(H, 1, 1)
    q, k, v1p = (F.pad(t, (0, 0, 0, n * C - T)).reshape(B, H, n, C, t.size(-1)) for t in (phi_q, phi_k, v1))
    pos = torch.arange(C, device=q.device, dtype=phi_k.dtype)
    lag = pos[:, None] - pos[None, :]  # i - s inside a chunk
    inside = torch.where(lag >= 0, (a * lag.clamp_min(0)).exp(), 0.0)  # (H, C, C): λ^(i-s), s <= i
    to_end = (a[..., 0] * (C - 1 - pos)).exp()  # (H, C): λ^(C-1-s)
    per_chunk = (k * to_end[None, :, None, :, None]).transpose(-2, -1) @ v1p  # (B, H, n, m, dv + 1)
    c = torch.arange(n, device=q.device, dtype=phi_k.dtype)
    gap = c[:, None] - 1 - c[None, :]  # chunks between c' and c
    across = torch.where(gap >= 0, (a * C * gap.clamp_min(0)).exp(), 0.0)  # (H, n, n)
    before = torch.einsum("hcd,bhdmv->bhcmv", across, per_chunk) \
        + (a * C * c).exp()[None, :, 0, :, None, None] * start[:, :, None]  # (B, H, n, m, dv + 1)
    scores = (q @ k.transpose(-2, -1)) * inside[None, :, None]  # (B, H, n, C, C)
    into = (a[..., 0] * (pos + 1)).exp()[None, :, None, :, None]  # λ^(i+1) on the chunk's starting state
    out = (q @ before) * into + scores @ v1p  # (B, H, n, C, dv + 1): [numerator, denominator]
    t = torch.arange(T, device=q.device, dtype=phi_k.dtype)
    weight = (a[..., 0] * (T - 1 - t)).exp()  # (H, T): λ^(T-1-s)
    after = (phi_k * weight[None, :, :, None]).transpose(-2, -1) @ v1 + (a[..., 0] * T).exp()[None, :, :, None] * start
    return out.reshape(B, H, n * C, dv + 1)[:, :, :T], after


def decayed_linear_attention(phi_q, phi_k, v, log_decay: torch.Tensor, *, chunk_size: int = 64, eps: float = EPS,
                             floor: float | None = None) -> torch.Tensor:
    """Non-causal, each key weighted by λ_h^|t - s|: y_t = Σ_s λ^|t-s| φ(q_t)·φ(k_s) v_s / (the same sum
    of weights), in linear time: the causal sums forward and backward, the diagonal counted once.
    phi_q, phi_k (B, H, T, m); v (B, H, T, dv); log_decay (H,) -> (B, H, T, dv)."""
    B, H, T, m = phi_k.shape
    dv = v.size(-1)
    v1 = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)
    start = phi_k.new_zeros(B, H, m, dv + 1)
    C = max(1, min(chunk_size, T))
    forward = _decayed_chunks(phi_q, phi_k, v1, start, log_decay, C)[0]
    backward = _decayed_chunks(*(x.flip(2) for x in (phi_q, phi_k, v1)), start, log_decay, C)[0].flip(2)
    out = forward + backward - (phi_q * phi_k).sum(-1, keepdim=True) * v1  # s = t is in both sums
    return normalise(out[..., :dv], out[..., dv:], eps, floor)


def fla_causal_linear_attention(phi_q, phi_k, v, dtype: torch.dtype, eps: float = EPS) -> torch.Tensor:
    """The causal form by flash-linear-attention's chunk kernel on a GPU, its inputs in ``dtype``
    (half precision), with the same ones-column denominator: y (B, H, T, dv) in float32."""
    from fla.ops.linear_attn import chunk_linear_attn

    v1 = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)
    q, k, v1 = (t.transpose(1, 2).to(dtype).contiguous() for t in (phi_q, phi_k, v1))  # (B, T, H, .)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, _ = chunk_linear_attn(q, k, v1, scale=1.0, normalize=False)  # (B, T, H, dv + 1)
    out = out.transpose(1, 2).float()
    return out[..., :-1] / (out[..., -1:] + eps)


@register_attention("linear")
class LinearAttention(MultiHeadAttention):
    """Linear attention with the elu + 1 feature map, causal or bidirectional (see the module docstring).

    State per head when streaming: S (d × d) and z (d), d = d_model / n_heads, so d_model·(d + 1)
    numbers per layer and sequence, whatever the history.

    Parameters
    ----------
    d_model, n_heads : int
        Token width and number of heads.
    dropout : float, default 0.0
        On the output projection (there are no attention weights to drop).
    causal : bool, default False
        The recurrent form: each token reads its own and earlier tokens.
    chunk_size : int, default 64
        Tokens per chunk of the causal parallel form (the result does not depend on it).
    backend : {"torch", "fla"}, default "torch"
        "fla": flash-linear-attention's chunk kernel for the causal form on a GPU in half precision
        (autocast), when the package is installed, in forwards without gradients (prediction); the
        torch form otherwise, when streaming and in training (the kernel's half-precision backward
        needs an even value width, which the denominator's column of ones makes odd).
    """

    recurrent = True
    bidirectional = True
    state_type = LinearState
    ops = KindOps(parallel=causal_linear_attention, recurrent=linear_attention_loop)

    def __init__(self, d_model: int, n_heads: int, *, dropout: float = 0.0, causal: bool = False,
                 chunk_size: int = 64, backend: str = "torch"):
        super().__init__(d_model, n_heads, dropout=dropout, causal=causal)
        check_chunk_size(chunk_size)
        check_backend(backend)
        self.chunk_size, self.backend = chunk_size, backend
        self.reset_parameters()

    @staticmethod
    def features(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        """q, k, v (B, H, T, d) -> φ(q), φ(k), v in float32 at least."""
        dtype = accumulation_dtype(q)
        return elu_plus_one(q.to(dtype)), elu_plus_one(k.to(dtype)), v.to(dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.parallel(x, output_state=False)[0]  # (B, T, D)

    def parallel(self, x: torch.Tensor, state: LinearState | None = None, *, output_state: bool = True):
        q, k, v = self.project(x)  # (B, H, T, d)
        if (self.causal and state is None and not output_state and not (torch.is_grad_enabled() and q.requires_grad)
                and fla_applies(self.backend, q)):
            return self.output(fla_causal_linear_attention(*self.features(q, k, v), dtype=q.dtype)), None
        with torch.autocast(x.device.type, enabled=False):
            phi_q, phi_k, v = self.features(q, k, v)  # (B, H, T, d)
            if self.causal:
                y, state = causal_linear_attention(phi_q, phi_k, v, chunk_size=self.chunk_size, state=state,
                                                   output_state=output_state)
            else:
                y, state = linear_attention(phi_q, phi_k, v), None
        return self.output(y), state  # (B, T, D)

    # ------------------------------------------------------------------ recurrent form
    def state_size(self, n_tokens: int) -> int:
        return self.n_heads * self.head_size * (self.head_size + 1)  # S and z per head

    def init_state(self, batch_size: int, *, device=None, dtype=None) -> LinearState:
        device = device if device is not None else self.qkv.weight.device
        return LinearState.empty(batch_size, self.n_heads, self.head_size, self.head_size, device=device,
                                 dtype=dtype or self.qkv.weight.dtype)

    def stream(self, x: torch.Tensor, state: LinearState) -> tuple[torch.Tensor, LinearState]:
        self.check_streamable()
        q, k, v = self.project(x)  # (B, H, n, d)
        with torch.autocast(x.device.type, enabled=False):
            phi_q, phi_k, v = self.features(q, k, v)
            dtype = accumulation_dtype(phi_q, state.kv)
            y, new = causal_linear_attention(phi_q.to(dtype), phi_k.to(dtype), v.to(dtype), state=state.cast(dtype),
                                             chunk_size=self.chunk_size)
        return self.output(y), new.cast(state.kv.dtype)
