"""Recurrence Encoding Matrices (REMs), Huang et al., "Encoding Recurrence into Transformers", ICLR 2023.

Query token i, key token j, lag l = i - j counted in tokens. Every REM has a zero diagonal:

    regular      P[i, j] = lam ** l
    cyclic_cos   P[i, j] = gamma ** l * cos(theta * l)
    cyclic_sin   P[i, j] = gamma ** l * sin(theta * l)

A dilated REM (dilation d) is non-zero only where d divides l, with value f(l / d). The causal
mask keeps l >= 1; the bidirectional one uses |i - j| (the diagonal stays zero). ``max_lag``
zeroes every lag above it (counted in l).

P is Toeplitz, so P @ V is a convolution of V along time with the kernel k[l] = P[i, i - l].
The ways to compute it live here side by side:

- ``rem_apply_dense``: build P (H, T, T) and multiply, O(T^2);
- ``rem_apply_fft``: causal convolution through the real FFT, O(T log T);
- ``rem_apply_scan``: the linear recurrence itself, one token at a time in a Python loop, the
  plain reference the tests compare the other forms with (too slow to serve anything):
  regular s_t = lam * (s_{t-1} + v_{t-1}); a cyclic pair is one complex state
  z_t = gamma * e^{i theta} * (z_{t-1} + v_{t-1}) whose real part serves the cos head and
  imaginary part the sin head; a dilated head runs d interleaved chains (t - d instead of t - 1);
- ``rem_stream``: the recurrent form that streaming uses: the same recurrences advanced over a
  block of new tokens at once, O(1) per token in the length of the history.

The REM heads of a layer as RSA's forms read them (``RemHeads``) go through ``rem_parallel`` (dense
or FFT, training; from a history and with the state after, on request) and ``rem_recurrent``
(``rem_stream``), both with the attention kinds' signature ``(v, heads, ..., state=None) ->
(output, final state)``; the state z (B, H, d_max, hs), complex, holds what the next d_max tokens
receive from the history (``rem_stream``).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch

REM_KINDS = ("regular", "cyclic_cos", "cyclic_sin")
REM_MASKS = ("causal", "bidirectional")
_CODES = {"regular": 0, "cyclic_cos": 1, "cyclic_sin": 2}


def kind_codes(kinds) -> torch.Tensor:
    """Per-head integer codes: 0 regular, 1 cyclic_cos, 2 cyclic_sin."""
    unknown = [k for k in kinds if k not in _CODES]
    if unknown:
        raise ValueError(f"unknown REM kind(s) {unknown}; choose from {REM_KINDS}")
    return torch.tensor([_CODES[k] for k in kinds], dtype=torch.long)


def rem_value(code: torch.Tensor, radius: torch.Tensor, theta: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """f(m) of each head at integer-valued steps m >= 0.

    code, radius, theta: (H,) with radius = lam (regular) or gamma (cyclic); m: (H, ...).
    """
    shape = (-1,) + (1,) * (m.dim() - 1)
    r, th, c = radius.view(shape), theta.view(shape), code.view(shape)
    power = r ** m  # (H, ...) lam**m may alternate in sign: m is a whole number
    trig = torch.where(c == 1, torch.cos(th * m), torch.sin(th * m))
    return torch.where(c == 0, power, power * trig)


def _toeplitz_index(length: int, mask: str, device=None) -> torch.Tensor:
    """Where P[i, j] reads its kernel k (T, T): the lag i - j, or 0 (k[0] = 0) above the diagonal
    of the causal mask; |i - j| for the bidirectional one."""
    if mask not in REM_MASKS:
        raise ValueError(f"mask={mask!r} is not one of {REM_MASKS}")
    idx = torch.arange(length, device=device)
    lag = idx[:, None] - idx[None, :]  # (T, T)
    return lag.clamp(min=0) if mask == "causal" else lag.abs()


def _lattice(lag: torch.Tensor, dilation: torch.Tensor, max_lag: int | None):
    """(valid, m): where a head's REM is non-zero and its step count m = l / d there.

    lag: (T, T) or (T,), dilation: (H,) -> both (H, *lag.shape); m is 0 where invalid, so that
    no power of a negative base is ever taken at a fractional or negative exponent.
    """
    d = dilation.view(-1, *([1] * lag.dim()))  # (H, 1, ...)
    valid = (lag >= 1) & (lag % d == 0)
    if max_lag is not None:
        valid = valid & (lag <= max_lag)
    m = torch.where(valid, torch.div(lag, d, rounding_mode="floor"), torch.zeros_like(lag))
    return valid, m


def rem_matrices(code, radius, theta, dilation, length: int, *, mask: str = "causal",
                 max_lag: int | None = None) -> torch.Tensor:
    """P of every head: (H, T, T). ``dilation`` is an integer tensor (H,): ``lattice_matrices`` on the
    heads' ``rem_lattice`` (the lattice built for this call)."""
    lattice = rem_lattice(code, dilation.to(radius.device), length, mask=mask, max_lag=max_lag, dtype=radius.dtype)
    return lattice_matrices(radius, theta, lattice)


def rem_kernels(code, radius, theta, dilation, length: int, *, max_lag: int | None = None) -> torch.Tensor:
    """Causal kernels k[l], l = 0 .. T-1, of every head: (H, T), k[0] = 0."""
    lag = torch.arange(length, device=radius.device)  # (T,)
    valid, m = _lattice(lag, dilation.to(lag.device), max_lag)  # (H, T)
    values = rem_value(code.to(lag.device), radius, theta, m.to(radius.dtype))  # (H, T)
    return torch.where(valid, values, torch.zeros((), dtype=values.dtype, device=values.device))


class RemLattice(NamedTuple):
    """Where the REMs of a layer are non-zero over T tokens, and their step counts there: what P depends
    on apart from the learned values, built once per length (``rem_lattice``)."""

    steps: torch.Tensor  # (H, T, T) m = l / d where the REM is non-zero, else 0
    valid: torch.Tensor  # (H, T, T) 1 where the REM is non-zero, else 0
    shift: torch.Tensor  # (H, 1, 1) pi / 2 for cyclic_sin heads (sin x = cos(x - pi / 2)), else 0


def rem_lattice(code, dilation, length: int, *, mask: str = "causal", max_lag: int | None = None,
                dtype=torch.float32) -> RemLattice:
    """The ``RemLattice`` of heads with codes ``code`` and dilations ``dilation`` (H,) over ``length`` tokens."""
    valid, m = _lattice(_toeplitz_index(length, mask, dilation.device), dilation, max_lag)  # (H, T, T)
    shift = (code.to(dilation.device) == 2).to(dtype).view(-1, 1, 1) * (math.pi / 2)
    return RemLattice(m.to(dtype), valid.to(dtype), shift)


def padded_lattice(code, dilation, n_heads: int, length: int, *, mask: str = "causal", max_lag: int | None = None,
                   dtype=torch.float32) -> RemLattice:
    """``rem_lattice`` of the REM heads (H_rem,) followed by n_heads - H_rem plain heads, zero everywhere."""
    R = code.numel()
    steps, valid, shift = rem_lattice(torch.cat([code, code.new_zeros(n_heads - R)]),
                                      torch.cat([dilation, dilation.new_ones(n_heads - R)]), length, mask=mask,
                                      max_lag=max_lag, dtype=dtype)
    valid[R:] = 0.0
    return RemLattice(steps, valid, shift)


def lattice_matrices(radius: torch.Tensor, theta: torch.Tensor, lattice: RemLattice) -> torch.Tensor:
    """P of every head (H, T, T) on its lattice: radius ** m * cos(theta * m - shift) where the REM is
    non-zero (``rem_matrices``' values, without its per-call index arithmetic; theta is 0 for
    regular heads, so their cosine is 1)."""
    r, th = radius.view(-1, 1, 1), theta.view(-1, 1, 1)
    return lattice.valid * r ** lattice.steps * torch.cos(th * lattice.steps - lattice.shift)


def rem_apply_dense(P: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """P (H, T, T) @ v (B, H, T, hs) -> (B, H, T, hs), P shared by the batch: one product per head over
    the batch's columns side by side (H matrices (T, T) times (T, B hs)), not P copied B times."""
    B, H, T, hs = v.shape
    columns = v.permute(1, 2, 0, 3).reshape(H, T, B * hs)  # (H, T, B * hs)
    return torch.bmm(P.to(v.dtype), columns).view(H, T, B, hs).permute(2, 0, 1, 3)  # (B, H, T, hs)


def causal_conv_fft(k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """y[t] = sum_{l <= t} k[l] v[t - l] along dim -2: k (H, T), v (B, H, T, hs)."""
    T = v.size(-2)
    n = 1 << (2 * T - 1).bit_length()  # linear (not circular) convolution, a fast FFT size
    dtype = torch.promote_types(v.dtype, torch.float32)  # no FFT in half precision
    kf = torch.fft.rfft(k.to(dtype), n=n, dim=-1)[None, :, :, None]  # (1, H, F, 1)
    vf = torch.fft.rfft(v.to(dtype), n=n, dim=-2)  # (B, H, F, hs)
    return torch.fft.irfft(kf * vf, n=n, dim=-2)[..., :T, :].to(v.dtype)  # (B, H, T, hs)


def rem_apply_fft(k: torch.Tensor, v: torch.Tensor, *, mask: str = "causal") -> torch.Tensor:
    """P @ v through the FFT from the causal kernels k (H, T); v (B, H, T, hs)."""
    y = causal_conv_fft(k, v)
    if mask == "bidirectional":  # the anti-causal half: the same kernel on reversed time
        y = y + causal_conv_fft(k, v.flip(-2)).flip(-2)
    return y


def rem_apply_scan(code, radius, theta, dilation, v: torch.Tensor, *, max_lag: int | None = None) -> torch.Tensor:
    """Causal P @ v by running each head's linear recurrence over the tokens in a Python loop
    (the plain reference of the tests): v (B, H, T, hs) -> (B, H, T, hs).

    max_lag is not a recurrence (a finite window); it is not supported here.
    """
    if max_lag is not None:
        raise ValueError("the recurrent form has no max_lag; use the dense or FFT form")
    B, H, T, hs = v.shape
    out = torch.zeros_like(v)
    for h in range(H):
        d = int(dilation[h])
        if code[h] == 0:
            step = radius[h].to(v.dtype)
        else:  # gamma * e^{i theta}
            step = torch.polar(radius[h].double(), theta[h].double()).to(torch.complex128)
        # d interleaved chains: state[c] serves tokens t = c (mod d)
        state = torch.zeros(B, d, hs, dtype=step.dtype if code[h] else v.dtype, device=v.device)
        for t in range(T):
            c = t % d
            if t >= d:
                state[:, c] = step * (state[:, c] + v[:, h, t - d])
            s = state[:, c]
            out[:, h, t] = s if code[h] == 0 else (s.real if code[h] == 1 else s.imag).to(v.dtype)
    return out


def rem_multipliers(radius: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Each head's step multiplier rho as a complex number: lam (regular, theta = 0) or
    gamma * e^{i theta} (cyclic). radius, theta: (H,) -> (H,) complex."""
    return torch.complex(radius * torch.cos(theta), radius * torch.sin(theta))


def _powers(rho: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
    """rho ** steps for integer steps >= 0: rho (H,) complex, steps (H, ...) -> (H, ...) complex."""
    shape = (-1,) + (1,) * (steps.dim() - 1)
    s = steps.to(rho.real.dtype)
    return torch.polar(rho.abs().view(shape) ** s, rho.angle().view(shape) * s)


def rem_history(rho: torch.Tensor, d: torch.Tensor, z: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """What the tokens at ``positions`` (P,) (0: the first after the history) receive from the history,
    whose state is z (B, H, d_max, hs): rho ** (p // d) z[p % d] per head, (B, H, P, hs) complex;
    d (H, 1): each head's dilation, on z's device."""
    B, H, _, hs = z.shape
    ahead = torch.div(positions, d, rounding_mode="floor")  # (H, P) whole steps from the chain's state
    chain = (positions % d)[None, :, :, None].expand(B, H, positions.numel(), hs)  # (B, H, P, hs)
    return _powers(rho, ahead)[None, :, :, None] * z.gather(2, chain)  # (B, H, P, hs)


def rem_stream(rho: torch.Tensor, dilation: torch.Tensor, v: torch.Tensor, z: torch.Tensor):
    """Advance causal REM heads over n new tokens by their recurrences (the streaming form).

    Head h with multiplier rho_h and dilation d_h gives token t the complex sum
    o_t = sum_{m >= 1} rho_h ** m * v_{t - m d_h}: its real part is the regular or cyclic_cos
    REM's output, its imaginary part the cyclic_sin REM's (the recurrence of the module
    docstring, z_t = rho (z_{t-d} + v_{t-d}), summed out).

    rho: (H,) complex; dilation: (H,) int; v: (B, H, n, hs) values of the new tokens;
    z: (B, H, d_max, hs) complex state: z[:, h, r] is what the token r places after the history
    receives from the history (r < d_h; entries r >= d_h are zero).
    Returns (o (B, H, n, hs) complex, the state after the new tokens).

    The new tokens' own contributions come from a dense (n + d_max, n) kernel; the history's from
    z: token k of the block gets rho ** (k // d) * z[k % d]. The block is padded with d_max
    virtual tokens, whose outputs are the next state. Cost O(n (n + d_max)) per block: O(1) per
    token in the length of the history.
    """
    B, H, n, hs = v.shape
    d_max = z.size(2)
    m = n + d_max
    d = dilation.to(v.device).view(H, 1)  # (H, 1)
    pos = torch.arange(m, device=v.device)  # (m,) the block and its virtual tokens
    from_history = rem_history(rho, d, z, pos)  # (B, H, m, hs)
    # from the new tokens
    lag = (pos[:, None] - torch.arange(n, device=v.device)[None, :])[None]  # (1, m, n)
    valid = (lag >= 1) & (lag % d[..., None] == 0)  # (H, m, n)
    steps = torch.where(valid, torch.div(lag, d[..., None], rounding_mode="floor"), torch.zeros_like(lag))
    kernel = torch.where(valid, _powers(rho, steps), torch.zeros((), dtype=rho.dtype, device=v.device))
    total = kernel[None] @ v.to(rho.dtype) + from_history  # (B, H, m, hs)
    keep = (torch.arange(d_max, device=v.device)[None, :] < d)[None, :, :, None]  # (1, H, d_max, 1)
    z_next = torch.where(keep, total[:, :, n:], torch.zeros((), dtype=rho.dtype, device=v.device))
    return total[:, :, :n], z_next


class RemHeads(NamedTuple):
    """The REM heads of one layer, as their forms read them."""

    codes: torch.Tensor  # (H,) 0 regular, 1 cyclic_cos, 2 cyclic_sin
    radius: torch.Tensor  # (H,) lam (regular) or gamma (cyclic)
    angle: torch.Tensor  # (H,) theta (0 for regular)
    dilation: torch.Tensor  # (H,) int, in tokens
    mask: str = "causal"
    max_lag: int | None = None
    lattice: RemLattice | None = None  # built for the length of the tokens (None: built on each call)

    def empty_state(self, v: torch.Tensor) -> torch.Tensor:
        """The state of an empty history for values like v (B, H, T, hs): (B, H, d_max, hs) complex zeros."""
        d_max = int(self.dilation.max()) if self.dilation.numel() else 0
        dtype = torch.complex128 if v.dtype == torch.float64 else torch.complex64
        return torch.zeros(v.size(0), v.size(1), d_max, v.size(-1), device=v.device, dtype=dtype)

    def select(self, o: torch.Tensor) -> torch.Tensor:
        """The complex sums o (B, H, T, hs) as each head reads them: the imaginary part for cyclic_sin
        heads, the real part for the others."""
        return torch.where((self.codes == 2).view(1, -1, 1, 1), o.imag, o.real)


def _final_state(rho, dilation, v: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """The state after the T tokens v (B, H, T, hs) that follow a history of state z (B, H, d_max, hs):
    what each of the next d_max tokens receives from them all, O(T d_max) per head."""
    T, d_max = v.size(-2), z.size(2)
    d = dilation.to(v.device).view(-1, 1, 1)  # (H, 1, 1)
    after = T + torch.arange(d_max, device=v.device)  # (d_max,) the tokens after the block
    lag = after[:, None] - torch.arange(T, device=v.device)[None, :]  # (d_max, T), >= 1
    slot = torch.arange(d_max, device=v.device)[None, :, None] < d  # (H, d_max, 1) chains of the head
    valid = (lag % d == 0) & slot  # (H, d_max, T)
    steps = torch.where(valid, torch.div(lag, d, rounding_mode="floor"), torch.zeros_like(lag))
    kernel = torch.where(valid, _powers(rho, steps), torch.zeros((), dtype=rho.dtype, device=v.device))
    history = torch.where(slot[None], rem_history(rho, d.view(-1, 1), z, after),
                          torch.zeros((), dtype=rho.dtype, device=v.device))  # (B, H, d_max, hs)
    return kernel[None] @ v.to(rho.dtype) + history  # (B, H, d_max, hs)


def rem_parallel(v: torch.Tensor, heads: RemHeads, *, method: str = "dense", state: torch.Tensor | None = None,
                 output_state: bool = True):
    """P @ v of every REM head over T tokens v (B, H, T, hs), dense (O(T²)) or by the FFT (O(T log T)),
    after a history of state ``state`` (None: none). Returns (B, H, T, hs) and the state after the
    tokens (None without ``output_state``). Only a causal REM without ``max_lag`` has a state."""
    T = v.size(-2)
    if method == "fft":
        kernels = rem_kernels(heads.codes, heads.radius, heads.angle, heads.dilation, T, max_lag=heads.max_lag)
        y = rem_apply_fft(kernels, v, mask=heads.mask)  # (B, H, T, hs)
    else:
        lattice = heads.lattice
        if lattice is None or lattice.steps.size(-1) != T:
            lattice = rem_lattice(heads.codes, heads.dilation, T, mask=heads.mask, max_lag=heads.max_lag,
                                  dtype=heads.radius.dtype)
        y = rem_apply_dense(lattice_matrices(heads.radius, heads.angle, lattice), v)  # (B, H, T, hs)
    if state is None and not output_state:
        return y, None
    if heads.mask != "causal" or heads.max_lag is not None:
        raise ValueError("only a causal REM without max_lag is a recurrence with a state")
    z = heads.empty_state(v) if state is None else state  # (B, H, d_max, hs)
    rho = rem_multipliers(heads.radius.to(z.real.dtype), heads.angle.to(z.real.dtype))  # (H,) complex
    if state is not None:
        d = heads.dilation.to(v.device).view(-1, 1)  # (H, 1)
        y = y + heads.select(rem_history(rho, d, z, torch.arange(T, device=v.device))).to(y.dtype)
    return y, (_final_state(rho, heads.dilation, v, z) if output_state else None)


def rem_recurrent(v: torch.Tensor, heads: RemHeads, *, state: torch.Tensor | None = None, output_state: bool = True):
    """The REM heads' recurrences over n new tokens v (B, H, n, hs) (``rem_stream``) from ``state``
    (None: the empty history): (B, H, n, hs) and the state after them."""
    z = heads.empty_state(v) if state is None else state  # (B, H, d_max, hs)
    rho = rem_multipliers(heads.radius.to(z.real.dtype), heads.angle.to(z.real.dtype))  # (H,) complex
    o, z = rem_stream(rho, heads.dilation, v, z)  # (B, H, n, hs) complex
    return heads.select(o), (z if output_state else None)


def rem_matrix(kind: str, length: int, *, lam=None, gamma=None, theta=None, dilation: int = 1,
               mask: str = "causal", max_lag: int | None = None) -> torch.Tensor:
    """The REM of one head as a (length, length) tensor (for users and notebooks).

    Parameters
    ----------
    kind : {"regular", "cyclic_cos", "cyclic_sin"}
    length : int
        Number of tokens T.
    lam : float, for kind="regular"
        Decay in (-1, 1): P[i, j] = lam ** (i - j).
    gamma, theta : float, for the cyclic kinds
        Decay in (0, 1) and angle in radians per lag.
    dilation : int, default 1
        Non-zero only where the lag is a multiple of ``dilation``.
    mask : {"causal", "bidirectional"}, default "causal"
    max_lag : int, optional
        Zero every lag above it.

    Examples
    --------
    >>> from tsrsa.nn import rem_matrix
    >>> rem_matrix("regular", 4, lam=0.5)
    tensor([[0.0000, 0.0000, 0.0000, 0.0000],
            [0.5000, 0.0000, 0.0000, 0.0000],
            [0.2500, 0.5000, 0.0000, 0.0000],
            [0.1250, 0.2500, 0.5000, 0.0000]])
    """
    code = kind_codes([kind])
    if kind == "regular":
        if lam is None:
            raise ValueError("kind='regular' needs lam=")
        radius, angle = torch.as_tensor(lam, dtype=torch.float32), torch.tensor(0.0)
    else:
        if gamma is None or theta is None:
            raise ValueError(f"kind={kind!r} needs gamma= and theta=")
        radius, angle = torch.as_tensor(gamma, dtype=torch.float32), torch.as_tensor(theta, dtype=torch.float32)
    if int(dilation) < 1:
        raise ValueError(f"dilation={dilation} must be >= 1")
    P = rem_matrices(code, radius.reshape(1), angle.reshape(1).to(radius.dtype),
                     torch.tensor([int(dilation)]), int(length), mask=mask, max_lag=max_lag)
    return P[0]


def fold_angle(theta: float) -> float:
    """theta folded into [0, pi]: the same cosine pattern, hence the same period."""
    t = math.fmod(abs(theta), 2 * math.pi)
    return 2 * math.pi - t if t > math.pi else t
