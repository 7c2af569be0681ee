"""Tiny random-weight chat models of real architectures, built locally (no download).

* ``qwen3``: a `Qwen3ForCausalLM` with Qwen3's chat template (its thinking switch pre-fills an empty think
  block) and Qwen3's special tokens (``<|im_end|>`` ends a turn, ``<|endoftext|>`` pads, ``<think>`` and
  ``</think>`` are added non-special tokens).
* ``llama``: a `LlamaForCausalLM` with a Llama-3-style template and special tokens, and, like Llama-family
  checkpoints, NO pad token.

The tokenizers are byte-level BPE trained with ``tokenizers`` on a little text. A random model writes
random text, so the weights are then *programmed*: attention and MLP outputs are zeroed, token t embeds as
the t-th unit vector, and the LM head maps token t to its successor in a chain with a logit gap of 40.
The model is still the real architecture running its real forward pass; it just writes one known
completion after the generation prompt (and EOS after any token without a successor), whatever the
sampler's temperature. The env's answer tags are added tokens so each completion token is distinct.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

# Qwen3's chat template, written out from its tokenizer_config.json (a data format).
QWEN3_TEMPLATE = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\\n\\n' }}
    {%- endif %}
    {{- "# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and message.content is string and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message.content is string %}
        {%- set content = message.content %}
    {%- else %}
        {%- set content = '' %}
    {%- endif %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in content %}
                {%- set reasoning_content = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}
                {%- set content = content.split('</think>')[-1].lstrip('\\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\\n<think>\\n' + reasoning_content.strip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\\n\\n</think>\\n\\n' }}
    {%- endif %}
{%- endif %}"""

# Llama 3 Instruct's chat template (a data format): header tokens around the role, <|eot_id|> ends a turn.
LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim"
    " + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"
)

SPECIALS = {
    "qwen3": {"special": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], "eos": "<|im_end|>", "pad": "<|endoftext|>"},
    "llama": {
        "special": ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
        "eos": "<|eot_id|>",
        "bos": "<|begin_of_text|>",
    },
}
ADDED = ["<think>", "</think>", "<answer>", "</answer>", "<answer_1>", "</answer_1>", "<answer_2>", "</answer_2>"]
TEXT = [
    "Guess the target. Write one number in <answer></answer>.",
    "Guess the target. Write 2 numbers in <answer_1>..<answer_2>.",
    "The quick brown fox jumps over the lazy dog, then thinks about numbers: 0 1 2 3 4 5 6 7 8 9.",
    "Your objective weights (higher = more important to optimize): format, correct.",
]
HIDDEN = 384  # >= the vocabulary: every token embeds as its own unit vector
GAP = 40.0  # logit of the programmed successor over every other token


def build_tokenizer(kind: str) -> PreTrainedTokenizerFast:
    """The byte-level BPE tokenizer of `kind` (``qwen3`` or ``llama``), chat template set."""
    info = SPECIALS[kind]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=info["special"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(TEXT * 5, trainer=trainer)
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in ADDED])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=info["eos"],
        **({"pad_token": info["pad"]} if "pad" in info else {}),
        **({"bos_token": info["bos"]} if "bos" in info else {}),
    )
    fast.chat_template = QWEN3_TEMPLATE if kind == "qwen3" else LLAMA3_TEMPLATE
    return fast


def _model(kind: str, vocab: int, tokenizer: PreTrainedTokenizerFast):
    common = {
        "vocab_size": vocab,
        "hidden_size": HIDDEN,
        "intermediate_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "max_position_embeddings": 256,
        "tie_word_embeddings": False,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
    }
    if kind == "qwen3":
        return Qwen3ForCausalLM(Qwen3Config(head_dim=32, **common))
    return LlamaForCausalLM(LlamaConfig(**common))


def programmed_chat_model(kind: str, path: Path, completion: str, *, prompt_tail: str) -> tuple[Path, list[int]]:
    """Save a tiny `kind` model and tokenizer to `path` that writes `completion` then EOS after `prompt_tail`.

    Args:
        kind: ``qwen3`` or ``llama``.
        path: The model directory to write.
        completion: The generated text (after any template pre-fill); its tokens must be distinct.
        prompt_tail: A rendered prompt (the generation prompt's end decides the first token).

    Returns:
        The directory and the completion's token ids (EOS last).
    """
    tokenizer = build_tokenizer(kind)
    ids = tokenizer(completion, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    assert len(set(ids)) == len(ids), f"{completion!r} has repeated tokens: {ids}"
    last = tokenizer(prompt_tail, add_special_tokens=False)["input_ids"][-1]
    assert last not in ids, "the prompt's last token is also a completion token"
    chain = {last: ids[0], **dict(itertools.pairwise(ids))}
    vocab = len(tokenizer)
    assert vocab <= HIDDEN, vocab
    torch.manual_seed(0)
    model = _model(kind, vocab, tokenizer)
    with torch.no_grad():
        layer = model.model.layers[0]
        layer.self_attn.o_proj.weight.zero_()  # the residual stream keeps the current token's embedding
        layer.mlp.down_proj.weight.zero_()
        embed = model.model.embed_tokens.weight
        embed.zero_()
        embed[torch.arange(vocab), torch.arange(vocab)] = 1.0
        head = model.lm_head.weight
        head.zero_()
        scale = GAP / HIDDEN**0.5  # the final RMSNorm turns a unit vector into sqrt(HIDDEN) times it
        for token in range(vocab):
            head[chain.get(token, tokenizer.eos_token_id), token] = scale
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path, ids
