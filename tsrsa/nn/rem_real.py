"""The REM heads' recurrent form in real arithmetic: ``rem_stream`` with every complex number carried as
its real and imaginary parts, for exporters and runtimes that have no complex tensors (ONNX).

A head's state z = a + ib advanced by its multiplier rho = r e^{i theta} (``rem_multipliers``) is the
rotation-scaling of the pair (a, b):

    rho z = (r cos(theta) a - r sin(theta) b) + i (r sin(theta) a + r cos(theta) b)
          = [[r cos(theta), -r sin(theta)], [r sin(theta), r cos(theta)]] @ (a, b)

and rho ** m = |rho| ** m (cos(m phi), sin(m phi)) with phi = atan2(Im rho, Re rho), as ``rem._powers``
takes it (a regular head's negative lam is |lam| at the angle pi). A complex tensor (..., ) is held
as a real one (..., 2), real part first: ``torch.view_as_real``'s layout, so that
``torch.view_as_real(z)`` and ``torch.view_as_complex(pair)`` convert between the two forms.

``rem_stream_real`` computes what ``rem_stream`` computes, on the same lattice, in the same order of
operations but for the complex products written out; its results equal the complex form's within
rounding (tests/test_onnx_stream.py compares them).
"""
from __future__ import annotations

import torch

from tsrsa.nn.rem import RemHeads

__all__ = ["real_multipliers", "real_powers", "rem_recurrent_real", "rem_stream_real"]


def real_multipliers(radius: torch.Tensor, theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each head's multiplier rho as (Re, Im): (radius cos(theta), radius sin(theta)), (H,) each
    (``rem_multipliers``' real and imaginary parts)."""
    return radius * torch.cos(theta), radius * torch.sin(theta)


def real_powers(rho: tuple[torch.Tensor, torch.Tensor], steps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """rho ** steps for integer steps >= 0 as (Re, Im): rho (H,) each, steps (H, ...) -> (H, ...) each."""
    re, im = rho
    shape = (-1,) + (1,) * (steps.dim() - 1)
    s = steps.to(re.dtype)
    magnitude = torch.sqrt(re * re + im * im).view(shape) ** s  # |rho| ** m
    angle = torch.atan2(im, re).view(shape) * s  # m phi
    return magnitude * torch.cos(angle), magnitude * torch.sin(angle)


def _times(p: tuple[torch.Tensor, torch.Tensor], z: tuple[torch.Tensor, torch.Tensor]):
    """The complex product p z as (Re, Im): (a c - b d, a d + b c)."""
    return p[0] * z[0] - p[1] * z[1], p[0] * z[1] + p[1] * z[0]


def rem_history_real(rho, d: torch.Tensor, z: torch.Tensor, positions: torch.Tensor):
    """``rem_history`` in pairs: what the tokens at ``positions`` (P,) receive from a history of state z
    (B, H, d_max, hs, 2), rho ** (p // d) z[p % d] per head, as (Re, Im) (B, H, P, hs) each."""
    B, H, _, hs, _ = z.shape
    ahead = torch.div(positions, d, rounding_mode="floor")  # (H, P) whole steps from the chain's state
    chain = (positions % d)[None, :, :, None].expand(B, H, positions.numel(), hs)  # (B, H, P, hs)
    power = tuple(t[None, :, :, None] for t in real_powers(rho, ahead))  # (1, H, P, 1) each
    return _times(power, (z[..., 0].gather(2, chain), z[..., 1].gather(2, chain)))  # (B, H, P, hs) each


def rem_stream_real(rho, dilation: torch.Tensor, v: torch.Tensor, z: torch.Tensor):
    """``rem_stream`` in real arithmetic: causal REM heads advanced over n new tokens.

    rho: (Re, Im) (H,) each; dilation: (H,) int; v: (B, H, n, hs) values of the new tokens; z: (B, H, d_max,
    hs, 2) the state, real and imaginary parts. Returns (o (B, H, n, hs, 2), the state after the tokens
    (B, H, d_max, hs, 2)): the new tokens' own contributions from the dense (n + d_max, n) kernel, the
    history's from z, the d_max virtual tokens after the block the next state (``rem_stream``).
    """
    B, H, n, hs = v.shape
    d_max = z.size(2)
    m = n + d_max
    d = dilation.to(v.device).view(H, 1)  # (H, 1)
    pos = torch.arange(m, device=v.device)  # (m,) the block and its virtual tokens
    history = rem_history_real(rho, d, z, pos)  # (B, H, m, hs) each
    lag = (pos[:, None] - torch.arange(n, device=v.device)[None, :])[None]  # (1, m, n)
    valid = (lag >= 1) & (lag % d[..., None] == 0)  # (H, m, n)
    steps = torch.where(valid, torch.div(lag, d[..., None], rounding_mode="floor"), torch.zeros_like(lag))
    zero = torch.zeros((), dtype=z.dtype, device=v.device)
    kernel = [torch.where(valid, part, zero) for part in real_powers(rho, steps)]  # (H, m, n) each
    values = v.to(z.dtype)
    total = [k[None] @ values + h for k, h in zip(kernel, history)]  # (B, H, m, hs) each: Re, Im
    keep = (torch.arange(d_max, device=v.device)[None, :] < d)[None, :, :, None]  # (1, H, d_max, 1)
    z_next = torch.stack([torch.where(keep, t[:, :, n:], zero) for t in total], dim=-1)  # (B, H, d_max, hs, 2)
    return torch.stack([t[:, :, :n] for t in total], dim=-1), z_next  # (B, H, n, hs, 2), state


def rem_recurrent_real(v: torch.Tensor, heads: RemHeads, *, state: torch.Tensor):
    """``rem_recurrent`` with the state in pairs: n new tokens v (B, H, n, hs) from ``state`` (B, H, d_max,
    hs, 2) -> (B, H, n, hs) (each head's part: the imaginary one for cyclic_sin heads, else the real one)
    and the state after them (B, H, d_max, hs, 2)."""
    rho = real_multipliers(heads.radius.to(state.dtype), heads.angle.to(state.dtype))  # (H,) each
    o, z = rem_stream_real(rho, heads.dilation, v, state)  # (B, H, n, hs, 2)
    return torch.where((heads.codes == 2).view(1, -1, 1, 1), o[..., 1], o[..., 0]), z
