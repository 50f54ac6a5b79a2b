"""Softmax over few keys on the CPU: plain ops with a closed-form backward, equal to the kernel."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tsrsa.nn.softmax import SMALL_SOFTMAX_KEYS, SmallSoftmax, few_keys, softmax_parallel, softmax_weights


@pytest.mark.parametrize("keys", [1, 6, 12, SMALL_SOFTMAX_KEYS - 1])
def test_small_softmax_equals_the_kernel_in_values_and_gradients(keys):
    torch.manual_seed(0)
    x = (3 * torch.randn(2, 3, 5, keys, dtype=torch.float64)).requires_grad_()
    masked = x.masked_fill(torch.rand(x.shape) < 0.3, float("-inf"))
    masked = torch.where(torch.arange(keys) == 0, x, masked)  # every row keeps a key
    grad = torch.randn_like(x)
    ours = SmallSoftmax.apply(masked)
    theirs = torch.softmax(masked, dim=-1)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-15)
    torch.testing.assert_close(torch.autograd.grad(ours, x, grad, retain_graph=True)[0],
                               torch.autograd.grad(theirs, x, grad)[0],
                               rtol=0, atol=1e-14)
    assert torch.autograd.gradcheck(SmallSoftmax.apply, (x.detach()[:1, :1].clone().requires_grad_(),))


def test_few_keys_only_on_the_cpu_in_float_below_the_threshold():
    x = torch.zeros(2, 2)
    assert few_keys(x, SMALL_SOFTMAX_KEYS - 1) and not few_keys(x, SMALL_SOFTMAX_KEYS)
    assert not few_keys(x.to(torch.bfloat16), 4)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("alibi", [False, True])
def test_attention_over_few_keys_equals_the_fused_kernel(causal, alibi):
    """softmax_parallel over fewer than SMALL_SOFTMAX_KEYS keys takes the explicit lines: the same output
    as the fused kernel, and the same dropout mask from the same generator state."""
    torch.manual_seed(1)
    q, k, v = (torch.randn(2, 4, 7, 8, dtype=torch.float64) for _ in range(3))
    slopes = torch.tensor([0.5, 0.25, 0.125, 0.0625], dtype=torch.float64) if alibi else None
    y, _ = softmax_parallel(q, k, v, causal=causal, slopes=slopes, output_state=False)
    if alibi:
        distance = torch.arange(7)[:, None] - torch.arange(7)[None, :]
        bias = -slopes[:, None, None] * (distance.abs() if not causal else distance)
        bias = bias.masked_fill(distance < 0, float("-inf")) if causal else bias
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    else:
        expected = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.testing.assert_close(y, expected, rtol=0, atol=1e-12)
    torch.manual_seed(5)
    dropped = softmax_parallel(q, k, v, causal=causal, dropout=0.5, output_state=False)[0]
    torch.manual_seed(5)
    weights = softmax_weights(q, k, causal=causal, dropout=0.5)
    torch.testing.assert_close(dropped, weights @ v, rtol=0, atol=1e-12)
    assert (weights == 0).any()  # the mask dropped some weights
