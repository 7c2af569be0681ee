"""Sampling for the default model's architecture without `generate`'s per-token overhead.

`Policy.generate` samples G rows per prompt. For the small Qwen2 model the local engine builds, a decode
step at batch 64 is a long chain of tiny ops, and most of its time went to what surrounds the model's
matrix products: `transformers`' generation loop (logits processors, stopping criteria, cache and mask
bookkeeping) and attention over the whole static cache, the prompt's keys copied to each of its G rows.
`sample_shared_prompts` runs the same layers (the model's own modules: norms, projections, MLP, rotary
embedding) in a plain loop, and attends to each prompt's keys and values once for its G rows (one batched
product per prompt instead of G), and to each row's own generated keys only up to the current step.

It samples exactly as ``model.generate(do_sample=True, top_k=0, suppress_tokens=[pad], ...)`` does: the
same processors in the same order (pad suppressed, temperature, top-p), ``torch.multinomial`` on the
same (N, V) probabilities each step, finished rows fed the pad token, the same EOS ids and stop strings
(`transformers`' own `StopStringCriteria`); with the same seed it draws the same tokens up to float
rounding (tested against `generate`). Models of another architecture, with sliding-window layers or with
sampling settings in their generation config use `generate` (`supports`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from transformers import Qwen2ForCausalLM
from transformers.generation.logits_process import TopPLogitsWarper
from transformers.generation.stopping_criteria import StopStringCriteria
from transformers.models.qwen2.modeling_qwen2 import apply_rotary_pos_emb

__all__ = ["sample_shared_prompts", "supports"]

# Generation-config keys that change nothing `sample_shared_prompts` does (token ids it is given explicitly,
# bookkeeping); any other key set on the model (a repetition penalty, min_p, ...) sends it to `generate`.
_NEUTRAL_GENERATION_KEYS = frozenset(
    {
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "transformers_version",
        "_from_model_config",
        "use_cache",
        "output_attentions",
        "output_hidden_states",
    }
)


def supports(model: Any) -> bool:
    """Whether `sample_shared_prompts` samples what `generate` would for this model.

    True for a `Qwen2ForCausalLM` (the default model's class) whose layers are all full attention and
    whose generation config sets no sampling options of its own.
    """
    if type(model) is not Qwen2ForCausalLM:
        return False
    config = model.config
    layer_types = getattr(config, "layer_types", None) or ["full_attention"]
    if getattr(config, "use_sliding_window", False) or any(kind != "full_attention" for kind in layer_types):
        return False
    generation = getattr(model, "generation_config", None)
    return generation is None or set(generation.to_diff_dict()) <= _NEUTRAL_GENERATION_KEYS


@torch.no_grad()
def sample_shared_prompts(
    model: Any,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    *,
    rows_per_prompt: int,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    pad_id: int,
    stop_ids: Sequence[int],
    stop_strings: StopStringCriteria | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample `rows_per_prompt` continuations of each prompt.

    Args:
        model: A model `supports` accepts, in eval mode.
        prompt_ids: Left-padded prompts, shape (P, L).
        prompt_mask: Their attention mask (1 for tokens), shape (P, L).
        rows_per_prompt: Rows per prompt, G; the rows are prompt-major (N = P·G).
        max_new_tokens: Most tokens per row.
        temperature: Sampling temperature (> 0).
        top_p: Nucleus mass in (0, 1].
        pad_id: The pad token: never sampled, and fed to finished rows.
        stop_ids: Token ids that end a row (kept as its last token).
        stop_strings: `transformers`' criterion of the stop strings, or None.

    Returns:
        The new tokens, shape (N, T) with T <= max_new_tokens the steps until every row ended (a row
        that ended holds pads after its end, as `generate` returns them), and the log-probability of each
        token under the distribution it was drawn from (after temperature and top-p), shape (N, T), 0 at
        those pads. At temperature 1 and top-p 1 that distribution is the model's own over every token
        but the pad: what `Policy.log_probs` computes, to float rounding.
    """
    n_prompts, length = prompt_ids.shape
    rows = n_prompts * rows_per_prompt
    device = prompt_ids.device
    logits, cache = _prefill(model, prompt_ids, prompt_mask, group=rows_per_prompt, max_new_tokens=max_new_tokens)
    next_position = prompt_mask.sum(dim=1).repeat_interleave(rows_per_prompt)  # (N,)
    suppress = torch.zeros(logits.shape[-1], dtype=torch.bool, device=device)
    suppress[pad_id] = True
    top_p_warper = TopPLogitsWarper(top_p=top_p) if top_p < 1.0 else None
    stop_tensor = torch.as_tensor(list(stop_ids), device=device)
    ids = torch.cat(
        [
            prompt_ids.repeat_interleave(rows_per_prompt, dim=0),
            prompt_ids.new_full((rows, max_new_tokens), pad_id),
        ],
        1,
    )
    unfinished = torch.ones(rows, dtype=torch.long, device=device)
    token_log_probs = logits.new_zeros(rows, max_new_tokens)
    steps = 0
    for step in range(max_new_tokens):
        scores = _processed_scores(logits, ids[:, : length + step], suppress, temperature, top_p_warper)
        token = torch.multinomial(F.softmax(scores, dim=-1), num_samples=1).squeeze(1)
        drawn = F.log_softmax(scores, dim=-1).gather(1, token[:, None]).squeeze(1)
        token_log_probs[:, step] = drawn.masked_fill(unfinished == 0, 0.0)
        token = token * unfinished + pad_id * (1 - unfinished)
        ids[:, length + step] = token
        steps = step + 1
        done = torch.isin(token, stop_tensor)
        if stop_strings is not None:
            done |= stop_strings(ids[:, : length + steps], scores)
        unfinished = unfinished & ~done
        if step + 1 == max_new_tokens or int(unfinished.max()) == 0:
            break
        logits = _decode_step(model, token, next_position + step, step, cache)
    return ids[:, length : length + steps], token_log_probs[:, :steps]


@dataclass(frozen=True)
class _SharedCache:
    """What each decode step attends to: every prompt's keys and values once for its G rows, each row's own.

    Attributes:
        prompt_keys: Per layer, the prompts' keys after rotary, shape (P, H_kv, L, D).
        prompt_values: Per layer, the prompts' values, shape (P, H_kv, L, D).
        prompt_bias: 0 for prompt tokens, the dtype's minimum for padding, shape (P, 1, 1, L).
        own_keys: Per layer, each row's generated keys, shape (N, H_kv, T, D), T = max_new_tokens.
        own_values: Per layer, each row's generated values, likewise.
        group: Rows per prompt, G.
        rep: Query heads per key/value head.
        scaling: The attention's score scale.
    """

    prompt_keys: list[torch.Tensor]
    prompt_values: list[torch.Tensor]
    prompt_bias: torch.Tensor
    own_keys: list[torch.Tensor]
    own_values: list[torch.Tensor]
    group: int
    rep: int
    scaling: float


def _prefill(
    model: Any, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, *, group: int, max_new_tokens: int
) -> tuple[torch.Tensor, _SharedCache]:
    """Run the prompts through the model once: the first new token's logits and the cache to decode with.

    Args:
        model: The model.
        prompt_ids: Left-padded prompts, shape (P, L).
        prompt_mask: Their attention mask (1 for tokens), shape (P, L).
        group: Rows per prompt, G.
        max_new_tokens: Most tokens per row (the size of the rows' own key/value slots).

    Returns:
        The logits of each row's first token, shape (N, V) in float32 (each prompt's repeated for its G
        rows), and the `_SharedCache` holding the prompts' keys and values and zeroed slots for the rows'.
    """
    layers = model.model.layers
    rows = prompt_ids.shape[0] * group
    positions = (prompt_mask.cumsum(dim=1) - 1).clamp(min=0)
    prefill = model(
        input_ids=prompt_ids, attention_mask=prompt_mask, position_ids=positions, logits_to_keep=1, use_cache=True
    )
    prompt_keys = [layer.keys for layer in prefill.past_key_values.layers]  # (P, H_kv, L, D) each, after rotary
    prompt_values = [layer.values for layer in prefill.past_key_values.layers]
    logits = prefill.logits[:, -1].float().repeat_interleave(group, dim=0)  # (N, V)
    # the prompts' padding, as an additive bias on the scores, shape (P, 1, 1, L)
    prompt_bias = torch.zeros(prompt_mask.shape, dtype=prompt_keys[0].dtype, device=prompt_ids.device)
    prompt_bias = prompt_bias.masked_fill(prompt_mask == 0, torch.finfo(prompt_bias.dtype).min)[:, None, None, :]
    attention = layers[0].self_attn
    head_dim, scaling = attention.head_dim, attention.scaling
    kv_heads = prompt_keys[0].shape[1]
    cache = _SharedCache(
        prompt_keys=prompt_keys,
        prompt_values=prompt_values,
        prompt_bias=prompt_bias,
        own_keys=[prompt_keys[0].new_zeros(rows, kv_heads, max_new_tokens, head_dim) for _ in layers],
        own_values=[prompt_keys[0].new_zeros(rows, kv_heads, max_new_tokens, head_dim) for _ in layers],
        group=group,
        rep=model.config.num_attention_heads // kv_heads,
        scaling=scaling,
    )
    return logits, cache


def _processed_scores(
    logits: torch.Tensor,
    ids: torch.Tensor,
    suppress: torch.Tensor,
    temperature: float,
    top_p_warper: TopPLogitsWarper | None,
) -> torch.Tensor:
    """The scores a token is drawn from, processed as `generate` does: pad suppressed, temperature, top-p.

    Args:
        logits: The next token's logits, shape (N, V) in float32.
        ids: Each row's tokens so far (prompt and new), shape (N, L + t).
        suppress: True for the tokens never sampled (the pad), shape (V,).
        temperature: Sampling temperature (> 0).
        top_p_warper: `transformers`' top-p warper, or None at top-p 1.

    Returns:
        The scores, shape (N, V).
    """
    scores = torch.where(suppress, -float("inf"), logits)
    if temperature != 1.0:
        scores = scores / temperature
    if top_p_warper is not None:
        scores = top_p_warper(ids, scores)
    return scores


def _decode_step(
    model: Any, token: torch.Tensor, position: torch.Tensor, step: int, cache: _SharedCache
) -> torch.Tensor:
    """One token of every row through the model: the next logits, shape (N, V) in float32.

    Args:
        model: The model.
        token: Each row's newest token, shape (N,).
        position: Its position id, shape (N,).
        step: Its index among the new tokens (its slot in `cache.own_keys`).
        cache: The prompts' keys and values and the rows' own; the token's key and value are written at `step`.
    """
    inner = model.model
    rows = token.shape[0]
    kv_heads, head_dim = cache.prompt_keys[0].shape[1], cache.prompt_keys[0].shape[3]
    hidden = inner.embed_tokens(token[:, None])  # (N, 1, hidden)
    cos, sin = inner.rotary_emb(hidden, position[:, None])
    for index, layer in enumerate(inner.layers):
        attention = layer.self_attn
        normed = layer.input_layernorm(hidden)
        query = attention.q_proj(normed).view(rows, 1, -1, head_dim).transpose(1, 2)  # (N, H, 1, D)
        key = attention.k_proj(normed).view(rows, 1, -1, head_dim).transpose(1, 2)  # (N, H_kv, 1, D)
        value = attention.v_proj(normed).view(rows, 1, -1, head_dim).transpose(1, 2)
        query, key = apply_rotary_pos_emb(query, key, cos, sin)
        cache.own_keys[index][:, :, step] = key[:, :, 0]
        cache.own_values[index][:, :, step] = value[:, :, 0]
        mixed = _shared_prompt_attention(
            query.reshape(rows, kv_heads, cache.rep, head_dim),
            cache.prompt_keys[index],
            cache.prompt_values[index],
            cache.prompt_bias,
            cache.own_keys[index][:, :, : step + 1],
            cache.own_values[index][:, :, : step + 1],
            group=cache.group,
            scaling=cache.scaling,
        )  # (N, H_kv, rep, D): head h = kv·rep + r, as the model's repeat_kv orders them
        hidden = hidden + attention.o_proj(mixed.reshape(rows, 1, -1))
        hidden = hidden + layer.mlp(layer.post_attention_layernorm(hidden))
    return model.lm_head(inner.norm(hidden))[:, -1].float()


def _shared_prompt_attention(
    query: torch.Tensor,
    prompt_keys: torch.Tensor,
    prompt_values: torch.Tensor,
    prompt_bias: torch.Tensor,
    own_keys: torch.Tensor,
    own_values: torch.Tensor,
    *,
    group: int,
    scaling: float,
) -> torch.Tensor:
    """Attention of one query per row over its prompt (shared by the G rows of a prompt) and its own tokens.

    Args:
        query: Shape (N, H_kv, rep, D), N = P·G rows prompt-major.
        prompt_keys: Shape (P, H_kv, L, D); `prompt_values` likewise.
        prompt_values: Shape (P, H_kv, L, D).
        prompt_bias: Additive score bias of the prompt positions, shape (P, 1, 1, L).
        own_keys: The row's generated keys so far, shape (N, H_kv, t, D); `own_values` likewise.
        own_values: Shape (N, H_kv, t, D).
        group: G.
        scaling: Score scale.

    Returns:
        Shape (N, H_kv, rep, D).
    """
    rows, kv_heads, rep, head_dim = query.shape
    n_prompts, length = prompt_keys.shape[0], prompt_keys.shape[2]
    # (P, G, H_kv, rep, D) -> (P, H_kv, G·rep, D): the G rows' queries as one product with their prompt's keys
    by_prompt = query.view(n_prompts, group, kv_heads, rep, head_dim).transpose(1, 2)
    by_prompt = by_prompt.reshape(n_prompts, kv_heads, group * rep, head_dim)
    prompt_scores = torch.matmul(by_prompt, prompt_keys.transpose(-1, -2)) * scaling + prompt_bias
    prompt_scores = prompt_scores.view(n_prompts, kv_heads, group, rep, length).transpose(1, 2)
    prompt_scores = prompt_scores.reshape(rows, kv_heads, rep, length)
    own_scores = torch.matmul(query, own_keys.transpose(-1, -2)) * scaling  # (N, H_kv, rep, t)
    weights = torch.softmax(torch.cat([prompt_scores, own_scores], dim=-1), dim=-1, dtype=torch.float32)
    weights = weights.to(query.dtype)
    prompt_weights, own_weights = weights[..., :length], weights[..., length:]
    prompt_weights = prompt_weights.reshape(n_prompts, group, kv_heads, rep, length).transpose(1, 2)
    prompt_weights = prompt_weights.reshape(n_prompts, kv_heads, group * rep, length)
    from_prompt = torch.matmul(prompt_weights, prompt_values)  # (P, H_kv, G·rep, D)
    from_prompt = from_prompt.view(n_prompts, kv_heads, group, rep, head_dim).transpose(1, 2)
    return from_prompt.reshape(rows, kv_heads, rep, head_dim) + torch.matmul(own_weights, own_values)
