"""RSA's folded training step in one autograd node: the REM matrices and gates of all heads, built from
the layer's raw parameters and mixed into the softmax weights, with the gradient written out.

An RSA layer with attention dropout on the CPU mixes its gate into the dropped-out softmax weights
(``tsrsa.nn.rsa``): W = (1 - g) w + g P, then one product W @ V. Over a handful of tokens every
operator call costs a few microseconds whatever its size, so the work is counted in calls: composed
from autograd ops, the heads' values (lam = tanh(eta), gamma = sigmoid(nu), theta, g = sigmoid(mu)),
P on its lattice and the mix take about 80 calls forward and backward per layer; ``FoldedRem`` takes
about 45, with the same values (float64: equal to the composed ops' within rounding).

With r_h and theta_h a head's radius and angle, m the step count on the lattice and s the head's
shift (pi / 2 for a sin head):

    P = valid * r^m * cos(theta m - s)
    dP/dr = valid * m * r^(m - 1) * cos(theta m - s)
    dP/dtheta = -valid * m * r^m * sin(theta m - s)
    dL/dg_h = sum over the batch, rows and columns of dL/dW * (P - w)   (P shared by the batch: summed first)

and the chain to eta, nu, theta and mu through the heads' 0/1 selection matrices (``head_selections``).
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from tsrsa.nn.rem import RemLattice

__all__ = ["FoldedLattice", "FoldedRem", "fold_lattice", "folded_rem"]


class FoldedLattice(NamedTuple):
    """What ``FoldedRem`` reads besides the parameters, built once per token count: the lattice of all
    heads (a plain head's ``valid`` zero) and the heads' selection matrices, with their transposes."""

    lattice: RemLattice  # steps m, valid, shift: (H, T, T), (H, T, T), (H, 1, 1)
    steps_less_one: torch.Tensor  # (H, T, T) max(m - 1, 0)
    valid_steps: torch.Tensor  # (H, T, T) valid * m
    neg_shift: torch.Tensor  # (H, 1, 1)
    pick: torch.Tensor  # (H, n_eta + n_cyclic) each head's radius from cat([tanh(eta), sigmoid(nu)])
    pick_angle: torch.Tensor  # (H, n_cyclic) each head's angle from theta
    gate_pick: torch.Tensor  # (H, n_gates) each head's gate from sigmoid(mu)
    pick_t: torch.Tensor  # transposes, for the gradient
    neg_pick_angle_t: torch.Tensor
    gate_pick_t: torch.Tensor


def fold_lattice(lattice: RemLattice, pick: torch.Tensor, gate_pick: torch.Tensor, n_eta: int) -> FoldedLattice:
    """The ``FoldedLattice`` of a layer's all-heads lattice and selection matrices (``head_selections``),
    whose first ``n_eta`` columns of ``pick`` read eta and the rest nu (and theta)."""
    dtype = lattice.steps.dtype
    pick, gate_pick = pick.to(dtype), gate_pick.to(dtype)
    angle = pick[:, n_eta:].contiguous()
    return FoldedLattice(lattice, (lattice.steps - 1).clamp(min=0), lattice.valid * lattice.steps, -lattice.shift,
                         pick, angle, gate_pick, pick.t().contiguous(), (-angle).t().contiguous(),
                         gate_pick.t().contiguous())


class FoldedRem(torch.autograd.Function):
    """(1 - g) w + g P for weights w (B, H, n, T) and every head's P (H, n, T) and gate g (H,), built from
    eta, nu, theta and mu on a ``FoldedLattice``; gradients to w and the four parameters."""

    @staticmethod
    def forward(ctx, w, eta, nu, theta, mu, folded: FoldedLattice):
        H = folded.pick.size(0)
        lam, gamma, gate = torch.tanh(eta), torch.sigmoid(nu), torch.sigmoid(mu)
        radius = folded.pick.mv(torch.cat([lam, gamma])).view(H, 1, 1)
        angle = torch.addcmul(folded.neg_shift, folded.pick_angle.mv(theta).view(H, 1, 1), folded.lattice.steps)
        g = folded.gate_pick.mv(gate).view(H, 1, 1)
        power, cosine = torch.pow(radius, folded.lattice.steps), torch.cos(angle)
        P = power * cosine * folded.lattice.valid  # (H, T, T)
        ctx.save_for_backward(w, lam, gamma, gate)
        ctx.folded, ctx.n_eta = folded, eta.numel()
        ctx.intermediates = (P, power, cosine, angle, radius, g)
        return torch.lerp(w, P, g)

    @staticmethod
    def backward(ctx, grad):
        w, lam, gamma, gate = ctx.saved_tensors
        P, power, cosine, angle, radius, g = ctx.intermediates
        folded, n = ctx.folded, ctx.n_eta
        grad_w = grad * (1 - g) if ctx.needs_input_grad[0] else None
        summed = grad.sum(0)  # (H, n, T)
        grad_g = (summed * P).sum((1, 2)) - (grad * w).sum((0, 2, 3))  # (H,)
        grad_P = summed * (g * folded.valid_steps)  # dL/dP * valid * m: (H, n, T)
        grad_radius = (grad_P * cosine * torch.pow(radius, folded.steps_less_one)).sum((1, 2))
        grad_angle = (grad_P * power * torch.sin(angle)).sum((1, 2))  # its sign in neg_pick_angle_t
        values = folded.pick_t.mv(grad_radius)
        aten = torch.ops.aten
        return (grad_w, aten.tanh_backward(values[:n], lam), aten.sigmoid_backward(values[n:], gamma),
                folded.neg_pick_angle_t.mv(grad_angle), aten.sigmoid_backward(folded.gate_pick_t.mv(grad_g), gate),
                None)


def folded_rem(w: torch.Tensor, eta, nu, theta, mu, folded: FoldedLattice) -> torch.Tensor:
    """``FoldedRem``: (1 - g) w + g P, w (B, H, n, T) -> (B, H, n, T)."""
    return FoldedRem.apply(w, eta, nu, theta, mu, folded)
