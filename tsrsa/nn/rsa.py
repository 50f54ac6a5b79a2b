"""Self-Attention with Recurrence (RSA), Huang et al., ICLR 2023: an attention kind.

Each REM head h mixes softmax attention with its Recurrence Encoding Matrix P_h through a gate:

    out_h = ((1 - sigmoid(mu)) * softmax(Q_h K_h^T / sqrt(d_h) [+ mask]) + sigmoid(mu) * P_h) @ V_h

V is shared by both branches; attention dropout acts on the softmax branch only; P is used raw.
With ``causal=True`` both branches are causal (the softmax mask and the causal REM mask).
Heads are laid out by ``tsrsa.nn.rsa_heads.plan_heads``: REM heads first, then plain softmax heads.

Parameterisation: lam = tanh(eta), gamma = sigmoid(nu), theta free; the cos and sin heads of one
pair share (gamma, theta) unless ``share_cyclic=False``. The gate mu is one per layer, or one per
REM head with ``gate="head"``.

Recurrent form (``stream``): the softmax branch keeps a key/value cache; each REM head advances
its own recurrence, O(1) per token (``tsrsa.nn.rem.rem_stream``): regular
s_t = lam (s_{t-1} + v_{t-1}), cyclic z_t = gamma e^{i theta} (z_{t-1} + v_{t-1}) with the cos head
reading the real part and the sin head the imaginary part of its own value slice, dilated heads d
interleaved states. The state is an ``RSAState``: the branch's (``KeyValueState``,
``BoundedCacheState``, or ``LinearState`` with ``t2r_features``) and the REM heads' z.

The ops, with every kind's signature ``(q, k, v, ..., state=None) -> (output, final state)``:
``rsa_parallel`` (the branch's parallel op and the dense or FFT REM, for training) and
``rsa_recurrent`` (the branch's recurrent op and ``rem_stream``); each takes its branch's op, with
its options bound, as ``branch``, so RSA composes the softmax or T2R forms unchanged. A layer whose
softmax weights are written out on the CPU anyway (dropped out in training, or over few keys) folds
the gate into them instead: one product ((1 - g) dropout(softmax) + g P) V
(``RSAAttention.folded_weights``, ``tsrsa.nn.rem_fold``), equal to the two products gated.
"""
from __future__ import annotations

import math
from functools import partial
from typing import Callable

import torch
from torch import nn

from tsrsa.nn.attention import KindOps, register_attention
from tsrsa.nn.kv_cache import BoundedCacheState, CacheSpec, KeyValueState
from tsrsa.nn.linear_attention import LinearState
from tsrsa.nn.multihead import MultiHeadAttention
from tsrsa.nn.rem import (REM_MASKS, RemHeads, kind_codes, lattice_matrices, padded_lattice, rem_lattice,
                          rem_matrices, rem_parallel)
from tsrsa.nn.rem_fold import FoldedLattice, fold_lattice, folded_rem
from tsrsa.nn.rsa_heads import head_selections, plan_heads
from tsrsa.nn.rsa_ops import RSAState, gate_mix, rsa_parallel, rsa_recurrent
from tsrsa.nn.softmax import (GatedWeights, few_keys, register_alibi, softmax_parallel, softmax_recurrent,
                              softmax_weights)
from tsrsa.nn.t2r import T2RFeatureMap, check_feature_size, t2r_bidirectional, t2r_chunked, t2r_stream

__all__ = ["FFT_FROM_TOKENS", "GATES", "RSAAttention", "RSAState", "gate_mix", "rsa_parallel", "rsa_recurrent"]

GATES = ("layer", "head")
METHODS = ("auto", "dense", "fft")
#: token counts above which the FFT form of P @ V replaces the dense one: training (forward and backward)
#: is faster dense up to 1,440 tokens on the CPU, the FFT at 2,880 (benchmarks/bench_rem.py)
FFT_FROM_TOKENS = 1440


@register_attention("rsa")
class RSAAttention(MultiHeadAttention):
    """Multi-head self-attention with recurrence (see the module docstring).

    Parameters
    ----------
    d_model, n_heads : int
        Token width and number of heads (REM heads first, then plain softmax heads).
    dropout : float, default 0.0
        On the softmax branch's attention weights and on the output projection.
    causal : bool, default False
        Both branches over past tokens only: the softmax mask, and the REM mask must then be
        "causal" (a bidirectional REM with causal=True is an error).
    n_regular, n_cyclic, n_dilated_regular, n_dilated_cyclic : int
        Head allocation: regular heads, cyclic (cos + sin) pairs, and their dilated versions.
    dilations : int or sequence of int, default 2
        Dilation (tokens) of each dilated head or pair.
    gate : {"layer", "head"}, default "layer"
        One gate mu per layer, or one per REM head.
    share_cyclic : bool, default True
        The cos and sin heads of a pair share (gamma, theta).
    rem_mask : {"causal", "bidirectional"}, default "causal"
        P[i, j] for lags i - j >= 1 only, or f(|i - j|).
    max_lag : int, optional
        Zero every REM lag above it (not a recurrence: a layer with max_lag does not stream).
    method : {"auto", "dense", "fft"}, default "auto"
        How P @ V is computed; "auto" switches to the FFT above FFT_FROM_TOKENS tokens.
    gate_init : float, default 0.0
        Initial mu (the paper draws it from [-3, 3]; 0 mixes both branches equally).
    alibi : bool, default False
        ALiBi relative positions on the softmax branch (as SoftmaxAttention's ``alibi``).
    cache_size, cache_policy, cache_sinks : default None, "window", 4
        Streaming only: the softmax branch's bounded cache (as SoftmaxAttention's).
    t2r_features : int, optional
        Replace the softmax branch's exp(q·k / √d) by T2R's learned relu features of this size per
        head (``tsrsa.nn.t2r``; Kasai et al. 2021): the branch becomes a recurrence with a state of
        fixed size, as the REM branch is. None keeps softmax. No ``cache_size`` with it; ``alibi``
        becomes a weight λ^|t − s| per key, a decay of the causal state (as the ``t2r`` kind's ``alibi``).
    """

    recurrent = True
    state_type = RSAState
    ops = KindOps(parallel=rsa_parallel, recurrent=rsa_recurrent)

    def __init__(self, d_model: int, n_heads: int, *, dropout: float = 0.0, causal: bool = False,
                 n_regular: int = 1, n_cyclic: int = 1, n_dilated_regular: int = 0,
                 n_dilated_cyclic: int = 0, dilations=2, gate: str = "layer", share_cyclic: bool = True,
                 rem_mask: str = "causal", max_lag: int | None = None, method: str = "auto",
                 gate_init: float = 0.0, alibi: bool = False, cache_size: int | None = None,
                 cache_policy: str = "window", cache_sinks: int = 4, t2r_features: int | None = None):
        super().__init__(d_model, n_heads, dropout=dropout, causal=causal)
        self.cache = CacheSpec(cache_size, cache_policy, cache_sinks)
        if t2r_features is not None:
            check_feature_size(t2r_features, "t2r_features")
            if cache_size is not None:
                raise ValueError(f"cache_size={cache_size} bounds a softmax branch's cache; with t2r_features the "
                                 f"branch keeps a state of fixed size: use cache_size=None")
        for name, value, choices in (("gate", gate, GATES), ("rem_mask", rem_mask, REM_MASKS),
                                     ("method", method, METHODS)):
            if value not in choices:
                raise ValueError(f"{name}={value!r} is not one of {choices}")
        if causal and rem_mask != "causal":
            raise ValueError(f"causal=True needs rem_mask='causal' (got {rem_mask!r}): with causal=True every "
                             f"branch of the layer reads only past tokens")
        if max_lag is not None and (isinstance(max_lag, bool) or not isinstance(max_lag, int) or max_lag < 1):
            raise ValueError(f"max_lag={max_lag!r} must be None or an int >= 1")
        self.plan = plan_heads(n_heads, n_regular=n_regular, n_cyclic=n_cyclic,
                               n_dilated_regular=n_dilated_regular, n_dilated_cyclic=n_dilated_cyclic,
                               dilations=dilations, share_cyclic=share_cyclic)
        self.n_rem = len(self.plan.kinds)
        self.rem_mask, self.max_lag, self.method, self.gate_mode = rem_mask, max_lag, method, gate
        self.gate_init = float(gate_init)
        self.eta = nn.Parameter(torch.zeros(self.plan.n_eta))  # lam = tanh(eta)
        self.nu = nn.Parameter(torch.zeros(self.plan.n_cyclic_params))  # gamma = sigmoid(nu)
        self.theta = nn.Parameter(torch.zeros(self.plan.n_cyclic_params))
        self.mu = nn.Parameter(torch.zeros(1 if gate == "layer" else self.n_rem))
        self.register_buffer("codes", kind_codes(self.plan.kinds), persistent=False)
        self.register_buffer("dilation", torch.tensor(self.plan.dilations, dtype=torch.long), persistent=False)
        pick, gate_pick = head_selections(self.plan, n_heads, gate == "head")  # each head's REM value and gate
        self.register_buffer("pick", pick, persistent=False)
        self.register_buffer("gate_pick", gate_pick, persistent=False)
        self._lattice, self._lattice_key = None, None  # the REMs' lattice of the last length (rem_heads)
        self._all_heads, self._all_heads_key = None, None  # the same over all heads (folded_matrices)
        #: set to a number in [0, 1] to force the gate (tests and analysis), None to learn it
        self.gate_override: float | None = None
        register_alibi(self, n_heads, alibi)
        self.features = None if t2r_features is None else T2RFeatureMap(n_heads, self.head_size, t2r_features)
        self.reset_parameters()

    @classmethod
    def search_space(cls, trial, *, causal: bool = False) -> dict:
        """The gate's start, and (for non-causal layers) the REM mask."""
        space = {"gate_init": trial.suggest_float("gate_init", -3.0, 2.0)}
        if not causal:
            space["rem_mask"] = trial.suggest_categorical("rem_mask", ["causal", "bidirectional"])
        return space

    # ------------------------------------------------------------------ parameters
    def reset_parameters(self) -> None:
        super().reset_parameters()
        if self.features is not None:
            self.features.reset_parameters()
        self.reset_rem_parameters(self.gate_init)

    def reset_rem_parameters(self, gate_init: float = 0.0) -> None:
        """The paper's initialisation: eta spread over +-[1, 2], nu over [1, 2], theta = pi/4."""
        with torch.no_grad():
            n = self.plan.n_eta
            signs = torch.tensor([1.0 if i % 2 == 0 else -1.0 for i in range(n)])
            self.eta.copy_(signs * torch.linspace(1.0, 2.0, n) if n > 1 else signs)
            self.nu.copy_(torch.linspace(1.0, 2.0, self.plan.n_cyclic_params))
            self.theta.fill_(math.pi / 4)
            self.mu.fill_(gate_init)

    def set_rem_parameters(self, *, lam=None, gamma=None, theta=None, mu=None) -> None:
        """Set REM values directly: lam (n_eta,) in (-1, 1), gamma (n_cyclic_params,) in (0, 1),
        theta (n_cyclic_params,) radians per token-lag, mu (1,) or (n_rem,). NaN entries keep
        their current value."""

        def merged(values, current):
            values = torch.as_tensor(values, dtype=current.dtype, device=current.device).expand_as(current)
            return torch.where(torch.isnan(values), current, values)

        with torch.no_grad():
            if lam is not None:
                lam = merged(lam, torch.tanh(self.eta)).clamp(-1 + 1e-6, 1 - 1e-6)
                self.eta.copy_(torch.atanh(lam))
            if gamma is not None:
                gamma = merged(gamma, torch.sigmoid(self.nu)).clamp(1e-6, 1 - 1e-6)
                self.nu.copy_(torch.logit(gamma))
            if theta is not None:
                self.theta.copy_(merged(theta, self.theta))
            if mu is not None:
                self.mu.copy_(merged(mu, self.mu))

    def rem_parameters(self, all_heads: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """(radius, angle) per REM head, (H_rem,) each: lam or gamma, and theta (0 for regular); with
        ``all_heads`` per head of the layer, (H,), a plain head's both 0."""
        pick = self.pick if all_heads else self.pick[:self.n_rem]  # a product and a sum, not a matrix product,
        radius = (pick * torch.cat([torch.tanh(self.eta), torch.sigmoid(self.nu)])).sum(-1)  # which autocast
        return radius, (pick[:, self.plan.n_eta:] * self.theta).sum(-1)  # would round to half precision

    def parameter_groups(self) -> dict[str, list[nn.Parameter]]:
        """Named groups that an optimiser may treat apart: "recurrence", the REM values and gates
        (eta, nu, theta, mu), a handful of scalars that set each head's memory."""
        return {"recurrence": [self.eta, self.nu, self.theta, self.mu]}

    def gate(self) -> torch.Tensor:
        """sigmoid(mu): (1,) or (H_rem,) (the override when one is set)."""
        if self.gate_override is not None:
            return torch.full_like(self.mu, float(self.gate_override))
        return torch.sigmoid(self.mu)

    def rem_matrices(self, length: int) -> torch.Tensor:
        """P of every REM head for ``length`` tokens: (H_rem, T, T)."""
        radius, angle = self.rem_parameters()
        return rem_matrices(self.codes, radius, angle, self.dilation, length, mask=self.rem_mask,
                            max_lag=self.max_lag)

    def rem_heads(self, n_tokens: int | None = None) -> RemHeads:
        """The REM heads as their forms read them (with their lattice over ``n_tokens`` tokens, kept from
        one call to the next while the length and the heads' dilations stay the same)."""
        radius, angle = self.rem_parameters()
        lattice = None
        if n_tokens is not None:
            key = self._length_key(n_tokens, radius.dtype)
            if self._lattice_key != key:
                self._lattice = rem_lattice(self.codes, self.dilation, n_tokens, mask=self.rem_mask,
                                            max_lag=self.max_lag, dtype=radius.dtype)
                self._lattice_key = key
            lattice = self._lattice
        return RemHeads(self.codes, radius, angle, self.dilation, self.rem_mask, self.max_lag, lattice)

    def folded_lattice(self, n_tokens: int, dtype) -> FoldedLattice:
        """The lattice of all n_heads heads over ``n_tokens`` tokens (a plain head's zero) with the heads'
        selection matrices (``fold_lattice``), kept while the length and the heads' dilations stay the same."""
        key = self._length_key(n_tokens, dtype)
        if self._all_heads_key != key:
            lattice = padded_lattice(self.codes, self.dilation, self.n_heads, n_tokens, mask=self.rem_mask,
                                     max_lag=self.max_lag, dtype=dtype)
            self._all_heads = fold_lattice(lattice, self.pick, self.gate_pick, self.plan.n_eta)
            self._all_heads_key = key
        return self._all_heads

    def folded_matrices(self, n_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
        """P of all n_heads heads over ``n_tokens`` tokens (H, T, T), a plain head's zero, and each head's
        gate (H,), a plain head's 0, composed of autograd ops."""
        radius, angle = self.rem_parameters(all_heads=True)  # (H,) each
        lattice = self.folded_lattice(n_tokens, radius.dtype).lattice
        return lattice_matrices(radius, angle, lattice), (self.gate_pick * self.gate()).sum(-1)

    def folded_weights(self, att: torch.Tensor) -> torch.Tensor:
        """(1 - g) att + g P over all heads, att (B, H, T, T): in one node (``folded_rem``), or composed of
        autograd ops where the gate is set or autocast would round P (``folded_matrices``)."""
        if self.gate_override is None and att.dtype == self.eta.dtype and not torch.is_autocast_enabled("cpu"):
            folded = self.folded_lattice(att.size(-1), att.dtype)
            return folded_rem(att, self.eta, self.nu, self.theta, self.mu, folded)
        P, gate = self.folded_matrices(att.size(-1))
        return GatedWeights.apply(att, P.to(att.dtype), gate.to(att.dtype))

    def _length_key(self, n_tokens: int, dtype) -> tuple:
        """What a lattice over ``n_tokens`` depends on: it is rebuilt when any of it changes."""
        return (n_tokens, dtype, self.dilation.device, id(self.dilation), self.dilation._version, self.max_lag,
                self.rem_mask)

    def rem_method(self, n_tokens: int) -> str:
        """How P @ V is computed over ``n_tokens``: "dense" or "fft"."""
        use_fft = self.method == "fft" or (self.method == "auto" and n_tokens > FFT_FROM_TOKENS)
        return "fft" if use_fft else "dense"

    # ------------------------------------------------------------------ forward
    def rem_branch(self, v: torch.Tensor) -> torch.Tensor:
        """P_h @ V_h of the REM heads: v (B, H_rem, T, hs) -> (B, H_rem, T, hs)."""
        return rem_parallel(v, self.rem_heads(v.size(-2)), method=self.rem_method(v.size(-2)), output_state=False)[0]

    def branch_op(self, recurrent: bool) -> Callable:
        """The softmax (or T2R) branch's op, this layer's options bound: (q, k, v, state=, output_state=)."""
        if self.features is None:
            if recurrent:
                return partial(softmax_recurrent, slopes=self.slopes, cache=self.cache)
            return partial(softmax_parallel, causal=self.causal, slopes=self.slopes, dropout=self.attention_dropout)
        if recurrent:
            return partial(t2r_stream, feature_map=self.features, slopes=self.slopes)
        return partial(t2r_chunked if self.causal else t2r_bidirectional, feature_map=self.features,
                       slopes=self.slopes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.parallel(x, output_state=False)[0]  # (B, T, D)

    def folds(self, x: torch.Tensor, state: RSAState | None, output_state: bool) -> bool:
        """Whether the gate folds into the softmax weights (``folded_weights``): a softmax branch on the CPU
        that writes its weights out anyway (dropout on them, or few keys), dense REMs, no state in or out."""
        return (self.features is None and self.n_rem > 0 and x.device.type == "cpu"
                and (self.attention_dropout > 0 or few_keys(x, x.size(1)))
                and state is None and not output_state and self.rem_method(x.size(1)) == "dense")

    def parallel(self, x: torch.Tensor, state: RSAState | None = None, *, output_state: bool = True):
        q, k, v = self.project(x)  # (B, H, T, hs)
        output_state = output_state and self.causal
        if self.folds(x, state, output_state):
            att = softmax_weights(q, k, causal=self.causal, slopes=self.slopes, dropout=self.attention_dropout)
            return self.output(self.folded_weights(att) @ v), None  # (B, T, D)
        heads = self.rem_heads(x.size(1))
        y, state = rsa_parallel(q, k, v, heads, self.gate(), branch=self.branch_op(recurrent=False),
                                method=self.rem_method(x.size(1)), state=state, output_state=output_state)
        return self.output(y), state  # (B, T, D)

    # ------------------------------------------------------------------ recurrent form
    def check_streamable(self) -> None:
        super().check_streamable()
        if self.max_lag is not None:
            raise ValueError(f"max_lag={self.max_lag} cuts the REMs to a finite window, which is not a recurrence; "
                             f"use max_lag=None to stream")

    def state_size(self, n_tokens: int) -> int:
        d_max = int(self.dilation.max()) if self.n_rem else 0
        rem = 2 * self.n_rem * d_max * self.head_size  # complex chains, d_max slots per REM head
        if self.features is not None:
            return self.n_heads * self.features.feature_size * (self.head_size + 1) + rem
        return self.cache.state_size(n_tokens, self.d_model, self.n_heads) + rem

    def init_state(self, batch_size: int, *, device=None, dtype=None) -> RSAState:
        device = device if device is not None else self.qkv.weight.device
        dtype = dtype or self.qkv.weight.dtype
        H, hs = self.n_heads, self.head_size
        if self.features is not None:
            branch = LinearState.empty(batch_size, H, self.features.feature_size, hs, device=device, dtype=dtype)
        else:
            empty = BoundedCacheState.empty if self.cache.bounded else KeyValueState.empty
            branch = empty(batch_size, H, hs, device=device, dtype=dtype)
        d_max = int(self.dilation.max()) if self.n_rem else 0
        complex_dtype = torch.complex128 if dtype == torch.float64 else torch.complex64
        rem = torch.zeros(batch_size, self.n_rem, d_max, hs, device=device, dtype=complex_dtype)
        return RSAState(branch, rem)

    def stream(self, x: torch.Tensor, state: RSAState) -> tuple[torch.Tensor, RSAState]:
        self.check_streamable()
        q, k, v = self.project(x)  # (B, H, n, hs)
        y, state = rsa_recurrent(q, k, v, self.rem_heads(), self.gate(), branch=self.branch_op(recurrent=True),
                                 state=state)
        return self.output(y), state  # (B, n, D)

    # ------------------------------------------------------------------ introspection
    def describe_heads(self) -> list[dict]:
        """One record per head: kind, lambda, gamma, theta (per token), dilation (tokens), gate."""
        radius, angle = (t.detach().cpu().tolist() for t in self.rem_parameters())
        gate = self.gate().detach().cpu().tolist()
        nan = float("nan")
        rows = []
        for h in range(self.n_heads):
            if h >= self.n_rem:
                rows.append({"head": h, "rem_type": "softmax", "lambda": nan, "gamma": nan, "theta": nan,
                             "dilation": nan, "gate": nan})
                continue
            kind = self.plan.kinds[h]
            regular = kind == "regular"
            rows.append({
                "head": h, "rem_type": kind,
                "lambda": radius[h] if regular else nan,
                "gamma": nan if regular else radius[h],
                "theta": nan if regular else angle[h],
                "dilation": self.plan.dilations[h],
                "gate": gate[0] if len(gate) == 1 else gate[h],
            })
        return rows
