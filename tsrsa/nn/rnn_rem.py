"""A linear RNN written exactly as a sum of REM heads (the central claim of the RSA paper).

For h_t = W_h h_{t-d} + W_x x_t with h = 0 before the start and W_h = S diag(lambda) S^-1
(distinct eigenvalues),

    h_t = W_x x_t + sum_{m >= 1} W_h^m W_x x_{t - m d}
        = W_x x_t + sum_k s_k sum_{m >= 1} lambda_k^m (r_k W_x x_{t - m d}),

where s_k is the k-th column of S and r_k the k-th row of S^-1. The lag-0 term W_x x_t is not a
REM head; every eigenvalue contributes one head family:

- a real eigenvalue lambda gives a regular REM head (dilation d) with value r_k W_x x_t and
  output direction s_k;
- a complex pair gamma e^{+-i theta} gives a cos head and a sin head. With a_t = r W_x x_t and
  s = s_R + i s_I (from the eigenvalue with theta > 0), the pair's sum is
      sum_m gamma^m [cos(theta m) (2 s_R a_R - 2 s_I a_I) - sin(theta m) (2 s_R a_I + 2 s_I a_R)],
  so the cos head reads the value (a_R, a_I) with output (2 s_R, -2 s_I) and the sin head reads
  (a_I, a_R) with output (-2 s_R, -2 s_I): value width 2.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class RNNAsREM:
    """REM heads equal to a linear RNN's lag >= 1 terms, plus its lag-0 map."""

    kinds: list[str]  # (H,) "regular", "cyclic_cos", "cyclic_sin"
    radius: torch.Tensor  # (H,) lambda (regular) or gamma (cyclic)
    theta: torch.Tensor  # (H,) angle per lag (0 for regular heads)
    dilation: int
    value: torch.Tensor  # (H, 2, d_in): head h's value is value[h] @ x_t
    output: torch.Tensor  # (H, d_state, 2): head h adds output[h] @ (P_h V_h)_t to the state
    lag0: torch.Tensor  # (d_state, d_in): W_x, the term no REM head carries

    @property
    def n_heads(self) -> int:
        return len(self.kinds)

    def build_attention(self):
        """An RSAAttention (float64, gate forced to 1, zero biases) whose output on inputs
        x (B, T, d_model) -- x_t in the first d_in channels -- has the sum of the REM heads
        (the lag >= 1 part of h_t) in its first d_state channels."""
        from tsrsa.nn.rsa import RSAAttention

        H = self.n_heads
        d_state, d_in = self.lag0.shape
        hs = max(2, -(-max(d_state, d_in) // H))  # head width: at least the value width 2
        n_reg = sum(k == "regular" for k in self.kinds)
        n_pairs = (H - n_reg) // 2
        dilated = self.dilation > 1
        attn = RSAAttention(
            H * hs, H, n_regular=0 if dilated else n_reg, n_cyclic=0 if dilated else n_pairs,
            n_dilated_regular=n_reg if dilated else 0, n_dilated_cyclic=n_pairs if dilated else 0,
            dilations=self.dilation, share_cyclic=True,
        ).double()
        order = [h for h, k in enumerate(self.kinds) if k == "regular"] + \
                [h for h, k in enumerate(self.kinds) if k != "regular"]  # regular heads first
        lam = [float(self.radius[h]) for h in order if self.kinds[h] == "regular"]
        pairs = [h for h in order if self.kinds[h] == "cyclic_cos"]
        attn.set_rem_parameters(
            lam=lam or None,
            gamma=[float(self.radius[h]) for h in pairs] or None,
            theta=[float(self.theta[h]) for h in pairs] or None,
        )
        attn.gate_override = 1.0
        with torch.no_grad():
            attn.qkv.weight.zero_(), attn.qkv.bias.zero_(), attn.proj.weight.zero_(), attn.proj.bias.zero_()
            D = H * hs
            for slot, h in enumerate(order):
                rows = slice(2 * D + slot * hs, 2 * D + slot * hs + 2)  # V rows of head `slot`
                attn.qkv.weight[rows, :d_in] = self.value[h]
                attn.proj.weight[:d_state, slot * hs : slot * hs + 2] = self.output[h]
        return attn


def linear_rnn_to_rem(W_h, W_x, *, dilation: int = 1, tol: float = 1e-9) -> RNNAsREM:
    """REM heads equal to the linear RNN h_t = W_h h_{t-d} + W_x x_t (see the module docstring).

    Parameters
    ----------
    W_h : (n, n) array-like
        Recurrent matrix with distinct eigenvalues.
    W_x : (n, d_in) array-like
        Input matrix.
    dilation : int, default 1
        d: the recurrence reaches d steps back; its heads are dilated by d.
    tol : float
        Imaginary parts below it count as zero (a real eigenvalue).

    Returns
    -------
    RNNAsREM
        Heads in the order of the eigenvalues (each complex pair as cos then sin), in float64.
    """
    W_h = torch.as_tensor(W_h, dtype=torch.float64)
    W_x = torch.as_tensor(W_x, dtype=torch.float64)
    if W_h.ndim != 2 or W_h.shape[0] != W_h.shape[1] or W_x.ndim != 2 or W_x.shape[0] != W_h.shape[0]:
        raise ValueError(f"need W_h (n, n) and W_x (n, d_in); got {tuple(W_h.shape)} and {tuple(W_x.shape)}")
    eigvals, S = torch.linalg.eig(W_h)  # (n,), (n, n) complex
    R = torch.linalg.inv(S) @ W_x.to(S.dtype)  # (n, d_in): row k is r_k W_x
    kinds, radius, theta, value, output = [], [], [], [], []
    for k, lam in enumerate(eigvals):
        s, a = S[:, k], R[k]
        if abs(lam.imag) <= tol:
            scale = 1.0 if abs(s.imag).max() <= tol else None
            if scale is None:
                raise ValueError("a real eigenvalue with a complex eigenvector: W_h is not diagonalisable over R")
            kinds.append("regular"), radius.append(lam.real), theta.append(0.0)
            value.append(torch.stack([a.real, torch.zeros_like(a.real)]))  # width 2, second row unused
            output.append(torch.stack([s.real, torch.zeros_like(s.real)], dim=1))
        elif lam.imag > 0:  # one head pair per conjugate pair
            kinds.extend(["cyclic_cos", "cyclic_sin"])
            radius.extend([lam.abs(), lam.abs()])
            theta.extend([torch.angle(lam), torch.angle(lam)])
            value.append(torch.stack([a.real, a.imag]))
            output.append(torch.stack([2 * s.real, -2 * s.imag], dim=1))
            value.append(torch.stack([a.imag, a.real]))
            output.append(torch.stack([-2 * s.real, -2 * s.imag], dim=1))
    return RNNAsREM(
        kinds=kinds,
        radius=torch.tensor([float(r) for r in radius], dtype=torch.float64),
        theta=torch.tensor([float(t) for t in theta], dtype=torch.float64),
        dilation=int(dilation),
        value=torch.stack(value),
        output=torch.stack(output),
        lag0=W_x.clone(),
    )
