"""RSA's folded step in one autograd node: the REM matrices and gates of all heads, built from the
layer's raw parameters and mixed into the softmax weights, with the gradient written out.

An RSA layer whose softmax weights are written out on the CPU (dropped out in training, or over few
keys) mixes its gate into them (``tsrsa.nn.rsa``): W = (1 - g) w + g P, then one product W @ V. Over a
handful of tokens every operator call costs a few microseconds whatever its size, so the work is
counted in calls: composed from autograd ops, the heads' values (lam = tanh(eta), gamma = sigmoid(nu),
theta, g = sigmoid(mu)), P on its lattice and the mix take about 80 calls forward and backward per
layer; ``FoldedRem`` takes about 40, with the same values (float64: equal to the composed ops' within
rounding). The heads' radius, angle and gate come from one product with one selection matrix.

With r_h and theta_h a head's radius and angle, m the step count on the lattice and s the head's
shift (pi / 2 for a sin head):

    P = valid * r^m * cos(theta m - s)
    dP/dr = valid * m * r^(m - 1) * cos(theta m - s)
    dP/dtheta = -valid * m * r^m * sin(theta m - s)
    dL/dg_h = sum over the batch, rows and columns of dL/dW * (P - w)   (P shared by the batch: summed first)

and the chain to eta, nu, theta and mu through the transposed selection matrix (``head_selections``' 0/1
matrices side by side).
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from tsrsa.nn.rem import RemLattice

__all__ = ["FoldedLattice", "FoldedRem", "fold_lattice", "folded_rem"]


class FoldedLattice(NamedTuple):
    """What ``FoldedRem`` reads besides the parameters, built once per token count: the lattice of all
    heads (a plain head's ``valid`` zero) and one selection matrix for the heads' values."""

    lattice: RemLattice  # steps m, valid, shift: (H, T, T), (H, T, T), (H, 1, 1)
    steps_less_one: torch.Tensor  # (H, T, T) max(m - 1, 0)
    valid_steps: torch.Tensor  # (H, T, T) valid * m
    neg_shift: torch.Tensor  # (H, 1, 1)
    select: torch.Tensor  # (3 H, n) radius, angle and gate per head from u = cat([lam, gamma, theta, g])
    select_grad: torch.Tensor  # (n, 3 H) select's transpose, its angle columns negated (dP/dtheta's sign)
    sizes: tuple[int, int, int, int]  # the lengths of eta, nu, theta and mu in u


def fold_lattice(lattice: RemLattice, pick: torch.Tensor, gate_pick: torch.Tensor, n_eta: int) -> FoldedLattice:
    """The ``FoldedLattice`` of a layer's all-heads lattice and selection matrices (``head_selections``):
    ``pick`` (H, n_eta + n_cyclic) reads cat([lam, gamma]) for the radius and its last n_cyclic columns
    theta for the angle; ``gate_pick`` (H, n_gates) reads the gates."""
    dtype = lattice.steps.dtype
    pick, gate_pick = pick.to(dtype), gate_pick.to(dtype)
    H, n_values = pick.shape
    n_cyclic, n_gates = n_values - n_eta, gate_pick.size(1)
    select = torch.zeros(3 * H, n_values + n_cyclic + n_gates, dtype=dtype, device=pick.device)
    select[:H, :n_values] = pick
    select[H:2 * H, n_values:n_values + n_cyclic] = pick[:, n_eta:]
    select[2 * H:, n_values + n_cyclic:] = gate_pick
    select_grad = select.t().clone()
    select_grad[:, H:2 * H] *= -1
    return FoldedLattice(lattice, (lattice.steps - 1).clamp(min=0), lattice.valid * lattice.steps, -lattice.shift,
                         select, select_grad, (n_eta, n_cyclic, n_cyclic, n_gates))


class FoldedRem(torch.autograd.Function):
    """(1 - g) w + g P for weights w (B, H, n, T) and every head's P (H, n, T) and gate g (H,), built from
    eta, nu, theta and mu on a ``FoldedLattice``; gradients to w and the four parameters."""

    @staticmethod
    def forward(ctx, w, eta, nu, theta, mu, folded: FoldedLattice):
        lam, gamma, gate = torch.tanh(eta), torch.sigmoid(nu), torch.sigmoid(mu)
        radius, angle, g = folded.select.mv(torch.cat([lam, gamma, theta, gate])).view(3, -1, 1, 1).unbind(0)
        angle = torch.addcmul(folded.neg_shift, angle, folded.lattice.steps)
        power, cosine = torch.pow(radius, folded.lattice.steps), torch.cos(angle)
        P = power * cosine * folded.lattice.valid  # (H, T, T)
        ctx.save_for_backward(w, lam, gamma, gate)
        ctx.folded = folded
        ctx.intermediates = (P, power, cosine, angle, radius, g)
        return torch.lerp(w, P, g)

    @staticmethod
    def backward(ctx, grad):
        w, lam, gamma, gate = ctx.saved_tensors
        P, power, cosine, angle, radius, g = ctx.intermediates
        folded = ctx.folded
        grad_w = grad * (1 - g) if ctx.needs_input_grad[0] else None
        summed = grad.sum(0)  # (H, n, T)
        grad_g = (summed * P).sum((1, 2)) - (grad * w).sum((0, 2, 3))  # (H,)
        grad_P = summed * (g * folded.valid_steps)  # dL/dP * valid * m: (H, n, T)
        grad_radius = (grad_P * cosine * torch.pow(radius, folded.steps_less_one)).sum((1, 2))
        grad_angle = (grad_P * power * torch.sin(angle)).sum((1, 2))  # its sign in select_grad
        grad_eta, grad_nu, grad_theta, grad_mu = folded.select_grad.mv(
            torch.cat([grad_radius, grad_angle, grad_g])).split(folded.sizes)
        aten = torch.ops.aten
        return (grad_w, aten.tanh_backward(grad_eta, lam), aten.sigmoid_backward(grad_nu, gamma), grad_theta,
                aten.sigmoid_backward(grad_mu, gate), None)


def folded_rem(w: torch.Tensor, eta, nu, theta, mu, folded: FoldedLattice) -> torch.Tensor:
    """``FoldedRem``: (1 - g) w + g P, w (B, H, n, T) -> (B, H, n, T)."""
    return FoldedRem.apply(w, eta, nu, theta, mu, folded)
