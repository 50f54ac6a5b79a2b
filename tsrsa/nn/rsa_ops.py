"""RSA's ops, every kind's signature ``(q, k, v, ..., state=None) -> (output, final state)``, and its
state: ``rsa_parallel`` (the branch's parallel op and the dense or FFT REM) and ``rsa_recurrent`` (the
branch's recurrent op and ``rem_stream``), gated by ``gate_mix``. The layer is ``tsrsa.nn.rsa``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from tsrsa.nn.rem import RemHeads, rem_parallel, rem_recurrent
from tsrsa.nn.state import LayerState, nested_state

__all__ = ["RSAState", "gate_mix", "rsa_parallel", "rsa_recurrent"]


@dataclass(frozen=True, eq=False)
class RSAState(LayerState):
    """An RSA layer's recurrent state: its softmax (or T2R) branch's and its REM heads'."""

    branch: LayerState = nested_state()  # KeyValueState, BoundedCacheState, or LinearState (t2r_features)
    rem: torch.Tensor  # (B, H_rem, d_max, hs) complex: what the next tokens receive from the history

    @property
    def kept_positions(self) -> torch.Tensor | None:
        return self.branch.kept_positions


def gate_mix(y: torch.Tensor, rem: torch.Tensor | None, gate: torch.Tensor) -> torch.Tensor:
    """Gate the REM heads' outputs into the branch's: y (B, H, T, hs), rem (B, H_rem, T, hs) (None:
    no REM heads), gate σ(μ) (1,) or (H_rem,)."""
    if rem is None:
        return y
    R = rem.size(1)
    g = gate.to(y.dtype).view(1, -1, 1, 1)  # (1, 1 or R, 1, 1)
    mixed = torch.lerp(y[:, :R], rem.to(y.dtype), g)  # (1 - g) y + g rem: (B, R, T, hs)
    return mixed if R == y.size(1) else torch.cat([mixed, y[:, R:]], dim=1)  # (B, H, T, hs)


def rsa_parallel(q, k, v, heads: RemHeads, gate: torch.Tensor, *, branch: Callable, method: str = "dense",
                 state: RSAState | None = None, output_state: bool = True):
    """The parallel form: the branch's op (``branch(q, k, v, state=, output_state=)``, its options bound)
    and P @ V of the REM heads (``rem_parallel``, dense or FFT), gated. q, k, v (B, H, T, hs), the
    REM heads the first H_rem. Returns (B, H, T, hs) and the ``RSAState`` after the tokens."""
    R = heads.codes.numel()
    y, branch_state = branch(q, k, v, state=None if state is None else state.branch, output_state=output_state)
    rem, z = None, None if state is None else state.rem
    if R:
        rem, z = rem_parallel(v[:, :R], heads, method=method, state=z, output_state=output_state)  # (B, R, T, hs)
    elif output_state and z is None:
        z = heads.empty_state(v[:, :0])
    return gate_mix(y, rem, gate), (RSAState(branch_state, z) if output_state else None)


def rsa_recurrent(q, k, v, heads: RemHeads, gate: torch.Tensor, *, branch: Callable,
                  state: RSAState | None = None, output_state: bool = True):
    """The recurrent form: the branch's recurrent op and the REM heads' recurrences (``rem_stream``),
    gated; arguments and returns as ``rsa_parallel``."""
    R = heads.codes.numel()
    y, branch_state = branch(q, k, v, state=None if state is None else state.branch, output_state=output_state)
    rem, z = None, heads.empty_state(v[:, :R]) if state is None else state.rem
    if R:
        rem, z = rem_recurrent(v[:, :R], heads, state=z)  # (B, R, n, hs)
    return gate_mix(y, rem, gate), (RSAState(branch_state, z) if output_state else None)
