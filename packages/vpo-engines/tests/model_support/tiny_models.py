"""A tiny random model for tests of shared-prompt passes (log-probs, the warm-up's loss), and a tolerance check.

Imported by putting this folder on ``sys.path`` (tests run with ``--import-mode=importlib``).
"""

from __future__ import annotations

import torch

from vpo_engines.models.policy import ModelSpec, Policy, new_policy

TEXTS = ["go left then right", "UP DOWN LEFT RIGHT <route_1> </route_1>", "a maze of 9 by 9 cells"] * 4
"""The tokenizer's training texts (and handy prompts)."""


def sharp_tiny_policy() -> Policy:
    """A tiny random model whose next-token distribution depends strongly on the context (large weights),
    so a prompt's cache reaching the wrong rows changes what is sampled and the loss."""
    policy = new_policy(TEXTS, ModelSpec(vocab_size=300, hidden_size=32, layers=2, heads=2, max_positions=128), seed=0)
    with torch.no_grad():
        for name, parameter in policy.model.named_parameters():
            if "norm" not in name:
                parameter.normal_(std=0.3)
    return policy


def assert_close_to_scale(got: torch.Tensor, want: torch.Tensor, rel: float, msg: str = "") -> None:
    """Every element of `got` within `rel` times the largest magnitude in `want`."""
    assert got.shape == want.shape, msg
    scale = float(want.abs().max())
    error = float((got - want).abs().max())
    assert error <= rel * scale, f"{msg}: max |difference| {error:.3g} > {rel:g} x max |value| {scale:.3g}"
