"""Causal instance normalisation for the streaming configuration (``tsrsa.nn.streaming``)."""
from __future__ import annotations

import torch
from torch import nn

from tsrsa.nn.distributions import restore_channels, shifts
from tsrsa.nn.rem import causal_conv_fft

__all__ = ["RunningNorm"]


class RunningNorm(nn.Module):
    """Causal instance normalisation by exponentially weighted running statistics.

    Per series, from m_0 = 0 and q_0 = 1 (the statistics the forecaster's scaler gives every series)::

        m_t = (1 - a) m_{t-1} + a x_t,   q_t = (1 - a) q_{t-1} + a x_t^2,   a = 2 / (span + 1)

    Every step of token t is normalised by the statistics at t's last step,
    (x - m) / sqrt(q - m^2 + eps), then scaled and shifted by a learned affine map (as RevIN);
    token t's forecast is restored with the same statistics.

    Parameters
    ----------
    span : int
        Steps of the exponential window (the model's look-back).
    affine : bool, default True
    eps : float, default 1e-5
    distribution : str, optional
        The distribution the head outputs (``tsrsa.nn.distributions``): each output channel is restored
        by its kind. For a count distribution (no shift) a step is divided by the running root mean
        square sqrt(q), at least 1, and not shifted.
    """

    def __init__(self, span: int, affine: bool = True, eps: float = 1e-5, distribution: str | None = None):
        super().__init__()
        self.alpha = 2.0 / (int(span) + 1)
        self.eps, self.affine = eps, affine
        self.distribution, self.shift = distribution, shifts(distribution)
        if affine:
            self.weight = nn.Parameter(torch.ones(1))
            self.bias = nn.Parameter(torch.zeros(1))

    @staticmethod
    def start(batch_size: int, *, device=None, dtype=None) -> tuple[torch.Tensor, torch.Tensor]:
        """(m, q) of an empty history: (B,) zeros and ones."""
        return (torch.zeros(batch_size, device=device, dtype=dtype),
                torch.ones(batch_size, device=device, dtype=dtype))

    def statistics(self, x: torch.Tensor, m0: torch.Tensor, q0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Running (m_t, q_t) of every step: x (B, T), m0, q0 (B,) -> (B, T) each (an FFT convolution)."""
        T = x.size(1)
        t = torch.arange(T, device=x.device, dtype=x.dtype)
        keep = 1.0 - self.alpha
        kernel = self.alpha * keep ** t  # (T,) weight of the step l steps back
        ema = causal_conv_fft(kernel[None], torch.stack([x, x * x], dim=-1)[:, None])[:, 0]  # (B, T, 2)
        fade = keep ** (t + 1)  # (T,) what is left of the starting values
        return ema[..., 0] + fade * m0[:, None], ema[..., 1] + fade * q0[:, None]

    def normalise(self, x: torch.Tensor, patch_len: int, m0, q0):
        """x (B, c * P) -> normalised patches (B, c, P), per-token (mean, std) (B, c) each, and (m, q)
        after the last step."""
        B = x.size(0)
        m, q = self.statistics(x, m0, q0)  # (B, T)
        mean, square = m[:, patch_len - 1::patch_len], q[:, patch_len - 1::patch_len]  # (B, c) at token ends
        if self.shift:
            std = torch.sqrt((square - mean * mean).clamp(min=0.0) + self.eps)  # (B, c)
        else:  # counts: scaled by the running root mean square, never shifted
            std, mean = torch.sqrt(square.clamp(min=1.0)), torch.zeros_like(mean)  # (B, c)
        z = (x.view(B, -1, patch_len) - mean[..., None]) / std[..., None]  # (B, c, P)
        if self.affine:
            z = z * self.weight + self.bias
        return z, (mean, std), (m[:, -1], q[:, -1])

    def denormalise(self, y: torch.Tensor, stats) -> torch.Tensor:
        """y (B, c, H, Q) in normalised units -> the input's units, token by token."""
        mean, std = stats[0][:, :, None], stats[1][:, :, None]  # (B, c, 1) each
        if self.affine:
            return restore_channels(y, mean, std, self.distribution, self.weight + self.eps * self.eps, self.bias)
        return restore_channels(y, mean, std, self.distribution)
