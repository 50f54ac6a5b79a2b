"""The Block-Recurrent Transformer's recurrent layer (Hutchins et al. 2022): the attention kind ``block_recurrent``.

The tokens are read in blocks of W (``block_size``); S state vectors (``n_states``) are carried
from block to block. With x̂ the (already normalised) tokens of a block and ĉ = LN(c) + e the
carried state c with its learned state IDs e (S × D):

- keys and values: K_x, V_x from x̂ and K_c, V_c from ĉ, each computed once and read by both
  directions; every direction has its own queries;
- vertical (the tokens' output): self-attention of the token at place r of block b
  (0 <= r < W) over the W tokens of block b − 1 and places 0 .. r of block b, W + r + 1 keys at
  distances 0 .. W + r (block 0: its own r + 1), and cross-attention to c, the state carried
  *into* the block (never the one this block produces, which has read its later tokens); the
  two outputs, concatenated, projected back to D. The encoder block around the kind adds the
  residual and the MLP;
- horizontal (the next state, once the block is complete): self-attention among the states and
  cross-attention from the states to all W tokens of the block, concatenated (h) and projected
  (y); then c ← gate(h, c, y), and, with ``state_mlp``, c ← gate(h', c, MLP(LN(c))) with h' the
  MLP's hidden layer. Gates instead of residuals:

      fixed:  c' = c ⊙ σ(b) + y ⊙ (1 − σ(b)),                    b a learned vector
      lstm:   f = σ(W_f h + b_f + 1),  i = σ(W_i h + b_i − 1),   c' = c ⊙ f + y ⊙ i

  gate biases start N(0, 0.1²), gate kernels small (truncated normal, variance 0.1 / fan-in), as
  google-research/meliad starts them.

The token mask is not the paper's sliding window, which reads the W tokens ending at the query
(distances 0 .. W − 1; lucidrains/block-recurrent-transformer-pytorch masks its band of 2W keys
that way). Ours keeps the whole previous block in view, as Transformer-XL reads its cached segment:

- it reads everything the sliding window reads, and the rest of the previous block, at the same
  cost (one W × 2W band per block in the parallel form) and with the same streaming state (the
  previous block's keys and values, which the sliding window needs too);
- under the sliding window the last token of a block reads only its own block directly, and
  everything before through the S state vectors; here every token reads the previous block
  exactly, and only what is older through the state;
- the models of benchmarks/RESULTS.md were trained with it.

The first block reads a learned initial state. The layer is a recurrence over blocks, but only the
states need the loop: they read the tokens' keys and values, not the tokens' outputs, so the
parallel form steps the S states from block to block and then attends for every token at once,
each over 2W keys and S states: time and memory grow linearly with the tokens (softmax attention
over all tokens grows with their square). Causal only.

The forms, each ``(x, weights, ..., state=None) -> (output, final state)`` with the layer as
``weights`` (its projections, norms, gates and state IDs: the maths reads them inside the
recurrence) and a ``BlockRecurrentState``: ``block_recurrent_parallel`` (the loop over blocks for
the states, then every token at once; training) and ``block_recurrent_stream`` (a segment of a
block at a time; streaming, and the reference the tests compare with a token-by-token loop).

Streaming across windows needs a model trained with carried states: a model trained from the
initial state on every window has never seen a state that read more than one window. The streaming
configuration therefore trains this kind Transformer-XL style (``streams_across_windows = False``:
consecutive windows of one series in lanes, each starting from the state the previous one reached,
detached; ``tsrsa.data.ConsecutiveWindows``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from tsrsa.nn.attention import Attention, KindOps, register_attention
from tsrsa.nn.multihead import check_width, merge_heads, split_heads
from tsrsa.nn.softmax import register_alibi
from tsrsa.nn.state import LayerState
from tsrsa.nn.weight_init import init_linear

__all__ = ["GATES", "BlockRecurrentAttention", "BlockRecurrentState", "StateGate", "block_recurrent_parallel",
           "block_recurrent_stream"]

GATES = ("fixed", "lstm")


@dataclass(frozen=True, eq=False)
class BlockRecurrentState(LayerState):
    """The state vectors carried into the current block, and the keys and values its tokens read."""

    c: torch.Tensor  # (B, S, D) the state carried into the current block
    prev_k: torch.Tensor  # (B, H, W or 0, d) the previous block's keys (none before the first block ends)
    prev_v: torch.Tensor  # (B, H, W or 0, d) and values
    cur_k: torch.Tensor  # (B, H, r, d) the current block's keys so far, r < W
    cur_v: torch.Tensor  # (B, H, r, d) and values


def block_recurrent_stream(x: torch.Tensor, weights: "BlockRecurrentAttention", *,
                           state: BlockRecurrentState | None = None, output_state: bool = True):
    """The recurrent form: new tokens x (B, n, D) a segment of a block at a time from ``state`` (None:
    the learned initial state). Returns (B, n, D) and the state after them."""
    if state is None:
        state = weights.init_state(x.size(0), device=x.device, dtype=x.dtype)
    out, start = [], 0
    while start < x.size(1):
        room = weights.block_size - state.cur_k.size(2)
        y, state = weights.segment(x[:, start:start + room], state)  # (B, m, D)
        out.append(y)
        start += room
    return (torch.cat(out, dim=1) if out else x), (state if output_state else None)


def block_recurrent_parallel(x: torch.Tensor, weights: "BlockRecurrentAttention", *,
                             state: BlockRecurrentState | None = None, output_state: bool = True):
    """The parallel form over T tokens x (B, T, D) from ``state`` (None: the learned initial state).

    The states depend on the tokens' keys and values only, not on the tokens' outputs, so the loop
    over blocks runs the horizontal direction alone (S state vectors per step); the tokens'
    attention then runs for every block at once: over their own and the previous block's tokens (a
    band of 2W keys) and over the state carried into their block. A state inside a block is first
    taken to the block's end by the recurrent form. Returns (B, T, D) and the state after the tokens.
    """
    head = None
    if state is not None and state.cur_k.size(2):  # inside a block: the recurrent form up to its end
        room = weights.block_size - state.cur_k.size(2)
        head, state = block_recurrent_stream(x[:, :room], weights, state=state)  # (B, room, D)
        x = x[:, room:]
        if x.size(1) == 0:
            return head, (state if output_state else None)
    B, T, D = x.shape
    W, H, d = weights.block_size, weights.n_heads, weights.head_size
    nb = -(-T // W)
    x_pad = F.pad(x, (0, 0, 0, nb * W - T))  # later zeros: no real token reads them (causal)
    q, k, v = (split_heads(t, H) for t in weights.token_qkv(x_pad).split(D, dim=-1))  # (B, H, nb·W, d)
    kb, vb = (t.reshape(B, H, nb, W, d) for t in (k, v))
    start = weights.init_state(B, device=x.device, dtype=x.dtype) if state is None else state
    carried = [start.c]  # c entering each block
    # one unbind, not a slice per block: a slice's backward writes into a zero tensor of the
    # whole sequence, which made the backward pass quadratic in the number of blocks
    for block_k, block_v in zip(kb.unbind(2)[:-1], vb.unbind(2)[:-1]):
        c = carried[-1]
        carried.append(weights.next_state(c, block_k, block_v, weights.state_keys(c)))
    C = torch.stack(carried, dim=1)  # (B, nb, S, D)
    # the tokens' own attention: block b's queries over blocks b - 1 and b (2W keys)
    first = torch.ones(nb, 1, 2 * W, dtype=torch.bool, device=x.device)
    if start.prev_k.size(2):  # block 0 reads the state's previous block
        before = (torch.cat([start.prev_k[:, :, None], kb[:, :, :-1]], dim=2),
                  torch.cat([start.prev_v[:, :, None], vb[:, :, :-1]], dim=2))  # (B, H, nb, W, d) each
    else:
        before = F.pad(kb, (0, 0, 0, 0, 1, 0))[:, :, :-1], F.pad(vb, (0, 0, 0, 0, 1, 0))[:, :, :-1]
        first[0, :, :W] = False  # block 0 has no previous block
    keys, values = torch.cat([before[0], kb], dim=3), torch.cat([before[1], vb], dim=3)  # (B, H, nb, 2W, d)
    mask = weights.token_mask(W, 2 * W, x.device, q.dtype)  # (W, 2W) or (H, W, 2W)
    if mask.dtype == torch.bool:
        mask = mask[None] & first  # (nb, W, 2W)
    else:
        mask = mask[:, None].masked_fill(~first[None], float("-inf"))  # (H, nb, W, 2W)
    qb = q.reshape(B, H, nb, W, d)
    own = weights.attend(qb, keys, values, mask).reshape(B, H, nb * W, d)
    # the cross-attention to the state carried into each block
    _, k_c, v_c, _ = weights.state_keys(C.reshape(B * nb, weights.n_states, D))  # (B·nb, H, S, d)
    k_c, v_c = (t.reshape(B, nb, H, weights.n_states, d).transpose(1, 2) for t in (k_c, v_c))  # (B, H, nb, S, d)
    cq = split_heads(weights.token_cross_q(x_pad), H).reshape(B, H, nb, W, d)
    cross = weights.attend(cq, k_c, v_c).reshape(B, H, nb * W, d)
    y = weights.out_dropout(weights.token_proj(torch.cat([merge_heads(own), merge_heads(cross)], dim=-1)))[:, :T]
    y = y if head is None else torch.cat([head, y], dim=1)  # (B, T, D)
    if not output_state:
        return y, None
    r = T - (nb - 1) * W  # tokens of the last block
    if r == W:  # complete: its state is carried out, and it becomes the previous block
        c = weights.next_state(carried[-1], kb[:, :, -1], vb[:, :, -1], weights.state_keys(carried[-1]))
        empty = kb[:, :, -1, :0]
        return y, BlockRecurrentState(c, kb[:, :, -1], vb[:, :, -1], empty, empty)
    prev_k, prev_v = (kb[:, :, -2], vb[:, :, -2]) if nb > 1 else (start.prev_k, start.prev_v)
    return y, BlockRecurrentState(carried[-1], prev_k, prev_v, kb[:, :, -1, :r], vb[:, :, -1, :r])


class StateGate(nn.Module):
    """c' = gate(h, c, y): the "fixed" or "lstm" gate of the module docstring; h (..., d_hidden),
    c and y (..., D)."""

    def __init__(self, d_hidden: int, d_model: int, kind: str):
        super().__init__()
        if kind not in GATES:
            raise ValueError(f"gate={kind!r} is not one of {GATES}")
        self.kind = kind
        if kind == "fixed":
            self.bias = nn.Parameter(torch.zeros(d_model))
        else:
            self.forget = nn.Linear(d_hidden, d_model)
            self.input = nn.Linear(d_hidden, d_model)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.kind == "fixed":
            nn.init.normal_(self.bias, std=0.1)
            return
        for linear in (self.forget, self.input):
            std = math.sqrt(0.1 / linear.in_features)
            nn.init.trunc_normal_(linear.weight, std=std, a=-2 * std, b=2 * std)
            nn.init.normal_(linear.bias, std=0.1)

    def forward(self, h: torch.Tensor, c: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.kind == "fixed":
            g = torch.sigmoid(self.bias)
            return c * g + y * (1 - g)
        f = torch.sigmoid(self.forget(h) + 1.0)
        i = torch.sigmoid(self.input(h) - 1.0)
        return c * f + y * i


@register_attention("block_recurrent")
class BlockRecurrentAttention(Attention):
    """The block-recurrent layer as a sequence-mixing kind (see the module docstring).

    Parameters
    ----------
    d_model, n_heads : int
        Token width and heads (of every attention of the layer).
    dropout : float, default 0.0
        On the attention weights and the projected outputs.
    causal : bool, default True
        Must be True: the layer reads its blocks in order.
    block_size : int, default 8
        W, tokens per block.
    n_states : int, default 8
        S, state vectors carried from block to block.
    gate : {"fixed", "lstm"}, default "fixed"
    state_mlp : bool, default True
        The horizontal direction's gated MLP after its attention.
    d_ff : int, optional
        Hidden width of that MLP (None: 2 · d_model).
    alibi : bool, default False
        ALiBi's distance bias on the token self-attention (relative positions).
    """

    recurrent = True
    bidirectional = False
    #: the streaming configuration trains it with the state carried from window to window
    streams_across_windows = False
    state_type = BlockRecurrentState
    ops = KindOps(parallel=block_recurrent_parallel, recurrent=block_recurrent_stream)

    def __init__(self, d_model: int, n_heads: int, *, dropout: float = 0.0, causal: bool = True,
                 block_size: int = 8, n_states: int = 8, gate: str = "fixed", state_mlp: bool = True,
                 d_ff: int | None = None, alibi: bool = False):
        super().__init__()
        check_width(d_model, n_heads)
        if not causal:
            raise ValueError("attention kind 'block_recurrent' is causal only (its state reads the blocks in "
                             "order); use causal=True")
        for name, value in (("block_size", block_size), ("n_states", n_states)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be an int >= 1")
        if d_ff is not None and (isinstance(d_ff, bool) or not isinstance(d_ff, int) or d_ff < 1):
            raise ValueError(f"d_ff={d_ff!r} must be None or an int >= 1")
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"dropout={dropout!r} must lie in [0, 1)")
        D = d_model
        self.d_model, self.n_heads, self.head_size = D, n_heads, D // n_heads
        self.causal, self.dropout = True, float(dropout)
        self.block_size, self.n_states, self.state_mlp = block_size, n_states, bool(state_mlp)
        self.token_qkv = nn.Linear(D, 3 * D)  # vertical self-attention queries, K_x, V_x
        self.token_cross_q = nn.Linear(D, D)  # vertical cross-attention queries
        self.state_qkv = nn.Linear(D, 3 * D)  # horizontal self-attention queries, K_c, V_c
        self.state_cross_q = nn.Linear(D, D)  # horizontal cross-attention queries
        self.token_proj = nn.Linear(2 * D, D)
        self.state_proj = nn.Linear(2 * D, D)
        self.state_ln = nn.LayerNorm(D)
        self.state_ids = nn.Parameter(torch.zeros(n_states, D))
        self.initial_state = nn.Parameter(torch.zeros(n_states, D))
        self.attn_gate = StateGate(2 * D, D, gate)
        hidden = d_ff or 2 * D
        if self.state_mlp:
            self.mlp_ln = nn.LayerNorm(D)
            self.mlp_fc = nn.Linear(D, hidden)
            self.mlp_proj = nn.Linear(hidden, D)
            self.mlp_gate = StateGate(hidden, D, gate)
        self.out_dropout = nn.Dropout(dropout)
        register_alibi(self, n_heads, alibi)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init_linear(self.token_qkv, self.token_cross_q, self.state_qkv, self.state_cross_q, self.token_proj,
                    self.state_proj)
        nn.init.normal_(self.state_ids, std=0.02)
        nn.init.normal_(self.initial_state, std=0.02)
        self.state_ln.reset_parameters()
        self.attn_gate.reset_parameters()
        if self.state_mlp:
            self.mlp_ln.reset_parameters()
            init_linear(self.mlp_fc, self.mlp_proj)
            self.mlp_gate.reset_parameters()

    # ------------------------------------------------------------------ pieces
    def attend(self, q, k, v, mask=None):
        p = self.dropout if self.training else 0.0
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)

    def state_keys(self, c: torch.Tensor):
        """ĉ = LN(c) + IDs -> its self-attention queries, keys, values (B, H, S, d) and cross queries."""
        c_hat = self.state_ln(c) + self.state_ids.to(c.dtype)
        q, k, v = self.state_qkv(c_hat).split(self.d_model, dim=-1)
        H = self.n_heads
        return (split_heads(q, H), split_heads(k, H), split_heads(v, H),
                split_heads(self.state_cross_q(c_hat), H))

    def token_mask(self, n_queries: int, n_keys: int, device, dtype):
        """Queries are the last ``n_queries`` of ``n_keys`` positions: each reads keys at or before it
        (a boolean mask), or ALiBi's bias with -inf after it."""
        distance = (n_keys - n_queries + torch.arange(n_queries, device=device))[:, None] \
            - torch.arange(n_keys, device=device)[None, :]  # (n, K)
        if self.slopes is None:
            return distance >= 0
        bias = -self.slopes.to(dtype).view(-1, 1, 1) * distance.to(dtype)  # (H, n, K)
        return bias.masked_fill(distance < 0, float("-inf"))

    def next_state(self, c, block_k, block_v, state_keys):
        """The horizontal direction over a complete block: c (B, S, D) -> c' (B, S, D)."""
        q_self, k_c, v_c, q_cross = state_keys
        h = torch.cat([merge_heads(self.attend(q_self, k_c, v_c)),
                       merge_heads(self.attend(q_cross, block_k, block_v))], dim=-1)  # (B, S, 2D)
        c = self.attn_gate(h, c, self.out_dropout(self.state_proj(h)))
        if self.state_mlp:
            hidden = F.gelu(self.mlp_fc(self.mlp_ln(c)))  # (B, S, d_ff)
            c = self.mlp_gate(hidden, c, self.out_dropout(self.mlp_proj(hidden)))
        return c

    def segment(self, x: torch.Tensor, state: BlockRecurrentState) -> tuple[torch.Tensor, BlockRecurrentState]:
        """m new tokens x (B, m, D), all within the current block (m <= W − tokens already in it)."""
        H = self.n_heads
        q, k, v = (split_heads(t, H) for t in self.token_qkv(x).split(self.d_model, dim=-1))  # (B, H, m, d)
        cur_k, cur_v = torch.cat([state.cur_k, k], dim=2), torch.cat([state.cur_v, v], dim=2)
        keys, values = torch.cat([state.prev_k, cur_k], dim=2), torch.cat([state.prev_v, cur_v], dim=2)
        own = self.attend(q, keys, values, self.token_mask(q.size(2), keys.size(2), x.device, q.dtype))
        state_keys = self.state_keys(state.c)
        _, k_c, v_c, _ = state_keys
        cross = self.attend(split_heads(self.token_cross_q(x), H), k_c, v_c)  # the carried-in state only
        y = self.out_dropout(self.token_proj(torch.cat([merge_heads(own), merge_heads(cross)], dim=-1)))
        if cur_k.size(2) < self.block_size:
            return y, BlockRecurrentState(state.c, state.prev_k, state.prev_v, cur_k, cur_v)
        c = self.next_state(state.c, cur_k, cur_v, state_keys)  # the block is complete
        empty = cur_k[:, :, :0]
        return y, BlockRecurrentState(c, cur_k, cur_v, empty, empty)

    # ------------------------------------------------------------------ forms
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """All T tokens from the initial state: (B, T, D) -> (B, T, D) (``block_recurrent_parallel``)."""
        return block_recurrent_parallel(x, self, output_state=False)[0]

    def parallel(self, x: torch.Tensor, state: BlockRecurrentState | None = None, *, output_state: bool = True):
        return block_recurrent_parallel(x, self, state=state, output_state=output_state)

    def state_size(self, n_tokens: int) -> int:
        """The carried states, the previous block's keys and values, and the current block's so far."""
        W, D = self.block_size, self.d_model
        if n_tokens < W:
            return self.n_states * D + 2 * n_tokens * D
        return self.n_states * D + 2 * W * D + 2 * (n_tokens % W) * D

    def init_state(self, batch_size: int, *, device=None, dtype=None) -> BlockRecurrentState:
        device = device if device is not None else self.initial_state.device
        dtype = dtype or self.initial_state.dtype
        empty = torch.zeros(batch_size, self.n_heads, 0, self.head_size, device=device, dtype=dtype)
        c = self.initial_state.to(device=device, dtype=dtype).expand(batch_size, -1, -1)
        return BlockRecurrentState(c, empty, empty, empty, empty)

    def stream(self, x: torch.Tensor, state: BlockRecurrentState) -> tuple[torch.Tensor, BlockRecurrentState]:
        self.check_streamable()
        return block_recurrent_stream(x, self, state=state)
