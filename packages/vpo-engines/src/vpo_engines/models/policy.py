"""The policy: a Hugging Face causal LM and its tokenizer, built locally or loaded from a directory.

The default model is made on the spot, with no download: a byte-level BPE tokenizer trained on the
env's own text (its prompts and demonstrations) and a small Qwen2-architecture transformer. Both are
saved with ``save_pretrained`` so any Hugging Face tool can load them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
from transformers.cache_utils import StaticCache, StaticLayer
from transformers.generation.stopping_criteria import StopStringCriteria

from vpo_core.errors import ConfigError, DataFileError, MissingDataError, UserError
from vpo_core.sampling_settings import SamplingSettings
from vpo_core.types import Message
from vpo_engines.models import decode
from vpo_engines.models.chat import render_chat, template_prefill, with_prefill

__all__ = [
    "ModelSpec",
    "Policy",
    "answer_stops",
    "build_tokenizer",
    "check_model_dir",
    "left_padded_positions",
    "load_policy",
    "load_tokenizer",
    "new_policy",
    "shared_prompt_logits",
]

BOS, EOS, PAD = "<|bos|>", "<|end|>", "<|pad|>"
USER, ASSISTANT, SYSTEM = "<|user|>", "<|assistant|>", "<|system|>"
CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


# Pieces BPE may not merge with their neighbours, whatever the env: a symbol or capital letter standing
# alone between spaces (the cells of any text table or grid, with the space or newline after them),
# upper-case keywords, numbers and XML-like tags; these are the units answers are built from.
# Between them, recurring instruction text is free to merge into long tokens, which keeps prompts short.
ATOMS = r"(?:(?<=\s)|^)[^\s\w<>](?:[ \n]|$)|(?:(?<=\s)|^)[A-Z](?:[ \n]|$)|[A-Z]{2,}[ \n]?|\d+|</?[a-z_0-9]+>"


def build_tokenizer(texts: Iterable[str], vocab_size: int) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on `texts`, with a chat template.

    Byte-level BPE decodes exactly what it encodes, so parsed completions are the generated text;
    the `ATOMS` split keeps stand-alone symbols, keywords, numbers and tags as separate tokens.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(ATOMS), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, BOS, EOS, USER, ASSISTANT, SYSTEM],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token=BOS, eos_token=EOS, pad_token=PAD, padding_side="left"
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def left_padded_positions(mask: torch.Tensor) -> torch.Tensor:
    """Position ids of left-padded rows: 0, 1, ... from each row's first real token (pads get 0).

    Args:
        mask: Attention mask, 1 for tokens and 0 for left padding, shape (N, L).

    Returns:
        Positions, shape (N, L); a pad's position is irrelevant (it is masked out).
    """
    return (mask.cumsum(dim=1) - 1).clamp(min=0)


@contextmanager
def _intra_op_threads(threads: int | None) -> Iterator[None]:
    """Run the block with `threads` intra-op threads (None: unchanged)."""
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@dataclass
class Policy:
    """A causal LM with its tokenizer.

    Attributes:
        model: The language model.
        tokenizer: Its tokenizer (left padding, with a chat template).
        device: Where the model lives.
        sample_threads: torch's intra-op threads while sampling on CPU (None: leave as set). Sampling a
            small model is a long chain of tiny ops that extra threads only slow down, so the default
            is 1.
        chat_template_kwargs: Extra variables of the chat template for every prompt this policy renders
            (the env's ``profile.chat_template_kwargs``, e.g. Qwen3's ``enable_thinking=False``).
        stop_strings: Texts that end a sample besides EOS (the env's `TextEnv.answer_stop`); the sample
            keeps the stop text, and what follows is padding as after EOS.
        tail_after: Sample every row up to this many tokens, then continue only the rows still writing
            (None: one pass to the budget). A batch decodes until its longest row ends, so one sample
            that runs to the budget made all P·G rows pay for it; alone it costs a fraction. The tokens
            are drawn from the same distributions (a greedy sample is identical either way, tested).
    """

    model: Any
    tokenizer: Any
    device: torch.device
    sample_threads: int | None = 1
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    stop_strings: tuple[str, ...] = ()
    tail_after: int | None = 128
    _stop_criteria: tuple[tuple[str, ...], StopStringCriteria] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def prompt_text(self, messages: Sequence[Message]) -> str:
        """Chat messages rendered with the tokenizer's template and options, ending with the assistant header."""
        return render_chat(self.tokenizer, messages, self.chat_template_kwargs)

    @property
    def prefill(self) -> str:
        """What the chat template pre-fills in the assistant turn with `chat_template_kwargs` (`template_prefill`)."""
        return template_prefill(self.tokenizer, self.chat_template_kwargs)

    @property
    def stop_token_ids(self) -> tuple[int, ...]:
        """The token ids that end a sample: the tokenizer's EOS and every EOS id the model's generation config declares.

        A chat model's end of turn is not always its tokenizer's EOS (a checkpoint converted from GGUF can
        name the wrong one; Llama 3 and Qwen declare several), so both sources count, as in TRL's
        GRPOTrainer. The pad token is never one: generation suppresses it.
        """
        ids: list[int] = []
        declared = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        for value in [self.tokenizer.eos_token_id, *(declared if isinstance(declared, (list, tuple)) else [declared])]:
            if value is not None and int(value) != self.tokenizer.pad_token_id and int(value) not in ids:
                ids.append(int(value))
        return tuple(ids)

    @property
    def max_positions(self) -> int | None:
        """The model's longest sequence (prompt + completion), or None if its config does not say."""
        value = getattr(self.model.config, "max_position_embeddings", None)
        return int(value) if value else None

    def save(self, path: Path) -> None:
        """``save_pretrained`` the model and tokenizer."""
        path.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(path)
        self.tokenizer.save_pretrained(path)

    @torch.no_grad()  # not inference_mode: the returned ids feed log_probs under autograd
    def generate(
        self,
        prompts: Sequence[str],
        *,
        num_samples: int,
        max_new_tokens: int,
        temperature: float,
        top_p: float = 1.0,
        seed: int | None = None,
    ) -> tuple[list[str], torch.Tensor, torch.Tensor]:
        """Sample completions.

        Args:
            prompts: Rendered prompts, P of them.
            num_samples: Completions per prompt (G).
            max_new_tokens: Longest completion.
            temperature: Sampling temperature.
            top_p: Nucleus sampling.
            seed: Seed of torch's sampling RNG (None keeps the current state).

        Returns:
            The P·G whole assistant turns (prompt-major: the template's pre-fill, `prefill`, then the
            generated text), and the prompt and response token ids of each, shapes (P·G, L_prompt)
            left-padded and (P·G, L_response) right-padded with pad tokens. Generation stops at EOS (any
            of `stop_token_ids`, kept in the response), at a stop string, after `max_new_tokens`, or where
            the model's positions run out. The pad token is never sampled.

        Raises:
            ConfigError: If a prompt already fills the model's positions.
        """
        texts, prompt_ids, response, _ = self.generate_with_log_probs(
            prompts,
            num_samples=num_samples,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
        )
        return texts, prompt_ids, response

    @torch.no_grad()
    def generate_with_log_probs(
        self,
        prompts: Sequence[str],
        *,
        num_samples: int,
        max_new_tokens: int,
        temperature: float,
        top_p: float = 1.0,
        seed: int | None = None,
    ) -> tuple[list[str], torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """`generate`, plus the log-probability of each sampled token where the sampler gives it.

        Returns:
            `generate`'s three values and the log-probs of the response tokens under the distribution
            they were drawn from (after temperature and top-p), shape (P·G, L_response), 0 at padding;
            None where the model samples through `transformers`' `generate` (`decode.supports` is
            false). At temperature 1 and top-p 1 they are `log_probs` of the response, to float rounding.

        Raises:
            ConfigError: If a prompt already fills the model's positions.
        """
        if seed is not None:
            torch.manual_seed(seed)
        with _intra_op_threads(self.sample_threads if self.device.type == "cpu" else None):
            return self._generate(prompts, num_samples, max_new_tokens, temperature, top_p)

    def _generate(
        self, prompts: Sequence[str], num_samples: int, max_new_tokens: int, temperature: float, top_p: float
    ) -> tuple[list[str], torch.Tensor, torch.Tensor, torch.Tensor | None]:
        self.model.eval()
        enc = self.tokenizer(list(prompts), return_tensors="pt", padding=True, add_special_tokens=False)
        prompt_ids, prompt_mask = enc["input_ids"].to(self.device), enc["attention_mask"].to(self.device)
        if self.max_positions is not None:  # never generate past the positions the model was built with
            room = self.max_positions - prompt_ids.shape[1]
            if room < 1:
                raise ConfigError(
                    f"a prompt of {prompt_ids.shape[1]} tokens fills the model's {self.max_positions} positions; "
                    "shorten the prompts or use a model with more positions."
                )
            max_new_tokens = min(max_new_tokens, room)
        pad, eos = self.tokenizer.pad_token_id, self.tokenizer.eos_token_id
        if pad is None or pad == eos:
            raise ValueError(
                "the tokenizer's pad token is missing or equals its EOS token, so EOS could never end a sample; "
                "load the model with load_policy / load_tokenizer, which add a distinct pad token."
            )
        input_ids = prompt_ids.repeat_interleave(num_samples, dim=0)
        attention = prompt_mask.repeat_interleave(num_samples, dim=0)
        first = max_new_tokens if self.tail_after is None else min(max_new_tokens, self.tail_after)
        fast = decode.supports(self.model)
        token_log_probs: torch.Tensor | None = None
        if fast:  # the default model: each prompt's keys attended once for its rows, no `generate` loop
            response, token_log_probs = self._sample_shared(
                prompt_ids, prompt_mask, num_samples, first, temperature, top_p
            )
        else:
            # A preallocated cache instead of one that grows by concatenation every token (measured: a third
            # of the decode time of the default run's 64 rollouts), holding each prompt's prefill computed
            # once for its `num_samples` rows; never compiled (as tested).
            cache = self._prompt_cache(prompt_ids, prompt_mask, num_samples, prompt_ids.shape[1] + first)
            response = self._decode(input_ids, attention, first, temperature, top_p, cache)
        writing = self._still_writing(response) if response.shape[1] == first < max_new_tokens else []
        if writing:  # the long tail continues alone, from its prompt and what it wrote so far
            rows = torch.as_tensor(writing, device=response.device)
            tail_ids = torch.cat([input_ids[rows], response[rows]], dim=1)
            tail_mask = torch.cat([attention[rows], torch.ones_like(response[rows])], dim=1)
            tail_log_probs = None
            if fast:
                tail, tail_log_probs = self._sample_shared(
                    tail_ids, tail_mask, 1, max_new_tokens - first, temperature, top_p
                )
            else:
                tail = self._decode(tail_ids, tail_mask, max_new_tokens - first, temperature, top_p, None)
            pad = self.tokenizer.pad_token_id
            response = torch.cat([response, response.new_full((response.shape[0], tail.shape[1]), pad)], dim=1)
            response[rows, first:] = tail
            if token_log_probs is not None and tail_log_probs is not None:
                token_log_probs = torch.cat(
                    [token_log_probs, token_log_probs.new_zeros(response.shape[0], tail.shape[1])], 1
                )
                token_log_probs[rows, first:] = tail_log_probs
        # everything after the first EOS is padding
        eos = torch.isin(response, torch.as_tensor(self.stop_token_ids, device=response.device))
        after = torch.cumsum(eos.int(), dim=1) - eos.int() > 0
        response = response.masked_fill(after, self.tokenizer.pad_token_id)
        if token_log_probs is not None:
            token_log_probs = token_log_probs.masked_fill(after, 0.0)
        texts = self.tokenizer.batch_decode(response, skip_special_tokens=True)
        return with_prefill(prompts, texts, num_samples, self.prefill), input_ids, response, token_log_probs

    def _decode(
        self,
        input_ids: torch.Tensor,
        attention: torch.Tensor,
        max_new_tokens: int,
        temperature: float,
        top_p: float,
        cache: StaticCache | None,
    ) -> torch.Tensor:
        """`generate`'s new tokens of each row, shape (N, <= max_new_tokens), padded after EOS or a stop string."""
        out = self.model.generate(
            input_ids=input_ids,
            attention_mask=attention,
            do_sample=True,
            temperature=temperature,
            top_p=top_p,
            top_k=0,
            max_new_tokens=max_new_tokens,
            pad_token_id=self.tokenizer.pad_token_id,
            eos_token_id=list(self.stop_token_ids),
            suppress_tokens=[self.tokenizer.pad_token_id],
            disable_compile=True,
            **({"stop_strings": list(self.stop_strings), "tokenizer": self.tokenizer} if self.stop_strings else {}),
            **({"past_key_values": cache} if cache is not None else {"cache_implementation": "static"}),
        )
        return out[:, input_ids.shape[1] :]

    def _sample_shared(
        self,
        prompt_ids: torch.Tensor,
        prompt_mask: torch.Tensor,
        rows_per_prompt: int,
        max_new_tokens: int,
        temperature: float,
        top_p: float,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`decode.sample_shared_prompts` with this policy's tokens: new tokens and their log-probs, (P·G, T) each."""
        stops = None
        if self.stop_strings:  # built once per stop strings: transformers' preprocessing of the vocabulary is slow
            if self._stop_criteria is None or self._stop_criteria[0] != self.stop_strings:
                self._stop_criteria = (self.stop_strings, StopStringCriteria(self.tokenizer, list(self.stop_strings)))
            stops = self._stop_criteria[1]
        return decode.sample_shared_prompts(
            self.model,
            prompt_ids,
            prompt_mask,
            rows_per_prompt=rows_per_prompt,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            pad_id=self.tokenizer.pad_token_id,
            stop_ids=self.stop_token_ids,
            stop_strings=stops,
        )

    def _still_writing(self, response: torch.Tensor) -> list[int]:
        """Rows of a full-width `response` that neither wrote EOS nor a stop string."""
        pad = self.tokenizer.pad_token_id
        eos = torch.isin(response, torch.as_tensor(self.stop_token_ids, device=response.device))
        open_rows = ((response[:, -1] != pad) & ~eos.any(dim=1)).nonzero().flatten().tolist()
        if not self.stop_strings:
            return open_rows
        texts = self.tokenizer.batch_decode(response[open_rows], skip_special_tokens=True)
        return [
            row for row, text in zip(open_rows, texts, strict=True) if not any(s in text for s in self.stop_strings)
        ]

    def _prompt_cache(
        self, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, rows_per_prompt: int, length: int
    ) -> StaticCache | None:
        """A static KV cache of every prompt but its last token, each computed once for its rows.

        Returns None for a model with any layer that is not plain full attention (sliding windows,
        linear attention): generate then prefills a static cache itself.

        Args:
            prompt_ids: Left-padded prompt ids, shape (P, L_p).
            prompt_mask: Their attention mask, shape (P, L_p).
            rows_per_prompt: Rows per prompt in the generation batch (prompt-major), G.
            length: The cache's positions, at least L_p + the longest completion.
        """
        cache = StaticCache(config=self.model.config, max_cache_len=length)
        if prompt_ids.shape[1] < 2 or not all(type(layer) is StaticLayer for layer in cache.layers):
            return None
        head, head_mask = prompt_ids[:, :-1], prompt_mask[:, :-1]
        positions = left_padded_positions(head_mask)
        prefill = self.model(input_ids=head, attention_mask=head_mask, position_ids=positions, use_cache=True)
        for index, layer in enumerate(prefill.past_key_values.layers):
            keys = layer.keys.repeat_interleave(rows_per_prompt, dim=0)
            values = layer.values.repeat_interleave(rows_per_prompt, dim=0)
            cache.update(keys, values, index)
        return cache

    def sample(
        self, prompts: Sequence[str], *, num_samples: int, settings: SamplingSettings, seed: int | None = None
    ) -> list[str]:
        """The P·num_samples whole assistant turns of `generate` (prompt-major), for evaluation.

        `vpo_core.evaluation.Sampler`'s signature, as every sampler of the model floor; `seed` seeds torch's
        sampling RNG (None keeps its current state).
        """
        texts, _, _ = self.generate(prompts, num_samples=num_samples, seed=seed, **settings.as_kwargs())
        return texts

    def response_mask(self, response: torch.Tensor) -> torch.Tensor:
        """1 for generated tokens up to and including EOS, 0 for padding, shape (N, L_response)."""
        pad = self.tokenizer.pad_token_id
        is_pad = response == pad
        return (~is_pad).float()

    def log_probs(
        self, prompt_ids: torch.Tensor, response: torch.Tensor, *, with_entropy: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Log-probabilities of the response tokens under the policy that samples them.

        That policy never samples the pad token (`generate` suppresses it, and the pad may be a row the
        loader added to the embeddings), so its logit is excluded here too: the probabilities are the
        model's renormalised over every other token, and the PPO ratio compares the sampling policy
        with itself.

        Rows that share a prompt (a GRPO group) share its forward pass: each distinct prompt runs once,
        its key/value cache is gathered to the rows, and only the responses run per row. This is the
        same computation as one forward over every prompt + response (values and gradients agree to
        float rounding: ``tests/local/test_policy_log_probs.py``), with the prompt work divided by the
        group size.

        Args:
            prompt_ids: Left-padded prompt ids, shape (N, L_p).
            response: Right-padded response ids, shape (N, L_r).
            with_entropy: Also return the per-token entropy of the predictive distribution.

        Returns:
            Log-probs, shape (N, L_r) (0 at padding), and the entropies (N, L_r) or None.
        """
        pad = self.tokenizer.pad_token_id
        logits = self._response_logits(prompt_ids, response)
        logits = logits.to(torch.promote_types(logits.dtype, torch.float32))  # bf16 up to float32; float64 kept
        # a new tensor (cat or gather of the model's output), not saved for backward: safe to edit in place.
        # The most negative finite value, not -inf: its probability is exactly 0 and 0 * logp stays 0 in the entropy.
        logits[..., pad] = torch.finfo(logits.dtype).min
        logp = F.log_softmax(logits, dim=-1)
        token_logp = torch.gather(logp, 2, response.unsqueeze(-1)).squeeze(-1)
        token_logp = token_logp.masked_fill(response == pad, 0.0)  # padding after a finished row: no token
        entropy = -(logp.exp() * logp).sum(-1) if with_entropy else None
        return token_logp, entropy

    def _response_logits(self, prompt_ids: torch.Tensor, response: torch.Tensor) -> torch.Tensor:
        """The logits predicting each response token, shape (N, L_r, V): prompts once, responses per row."""
        pad = self.tokenizer.pad_token_id
        prompts, row_prompt = torch.unique(prompt_ids, dim=0, return_inverse=True)  # (U, L_p), (N,)
        prompt_mask = (prompts != pad).long()
        return shared_prompt_logits(self.model, prompts, prompt_mask, row_prompt, response)


def shared_prompt_logits(
    model: Any, prompts: torch.Tensor, prompt_mask: torch.Tensor, rows: torch.Tensor, tokens: torch.Tensor
) -> torch.Tensor:
    """The logits predicting each row's tokens, each distinct prompt run once (with gradients).

    The prompts run left-padded in one pass that keeps their key/value cache; the cache is gathered to the
    rows (so a prompt's gradients sum over its rows), and each row's tokens run after it.

    Args:
        model: A causal LM (``transformers``).
        prompts: The distinct prompts, left-padded, shape (U, L_p).
        prompt_mask: Their attention mask, shape (U, L_p).
        rows: Each row's prompt index, shape (N,).
        tokens: Each row's tokens after its prompt, right-padded, shape (N, L).

    Returns:
        Logits, shape (N, L, V): position t predicts token t.
    """
    prompt_out = model(
        input_ids=prompts,
        attention_mask=prompt_mask,
        position_ids=left_padded_positions(prompt_mask),
        use_cache=True,
        logits_to_keep=1,  # the last prompt position predicts the first token
    )
    cache = prompt_out.past_key_values
    # (U, ...) -> (N, ...): a gather, so gradients sum per prompt. `index_select`'s backward adds each prompt's
    # rows in order; advanced indexing's (`cache.batch_select_indices`, `x[rows]`) adds them with atomics when
    # torch has several CPU threads, so its sums, and a run's numbers, would change from run to run.
    for layer in cache.layers:
        layer.keys = layer.keys.index_select(0, rows)
        layer.values = layer.values.index_select(0, rows)
    first = prompt_out.logits.index_select(0, rows)  # (N, 1, V)
    if tokens.shape[1] == 1:
        return first
    row_mask = prompt_mask[rows]
    steps = torch.arange(tokens.shape[1] - 1, device=tokens.device)
    rest = model(
        input_ids=tokens[:, :-1],  # right padding comes after a row's tokens: causal attention ignores it
        attention_mask=torch.cat([row_mask, torch.ones_like(tokens[:, :-1])], dim=1),
        position_ids=row_mask.sum(dim=1, keepdim=True) + steps,
        past_key_values=cache,
        use_cache=True,
    ).logits  # (N, L - 1, V): position t predicts token t + 1
    return torch.cat([first, rest], dim=1)


@dataclass(frozen=True)
class ModelSpec:
    """The size of the default small model: a Qwen2 decoder with tied embeddings and an MLP 4 x `hidden_size` wide.

    Attributes:
        vocab_size: BPE vocabulary size the tokenizer is trained to (the env's text may give fewer tokens).
        hidden_size: Width of the residual stream; a multiple of `heads`.
        layers: Transformer layers.
        heads: Attention heads (as many key/value heads).
        max_positions: Positions the model is built with (prompt and completion together).
    """

    vocab_size: int
    hidden_size: int
    layers: int
    heads: int
    max_positions: int = 1024

    def __post_init__(self) -> None:
        """Check the sizes.

        Raises:
            ConfigError: For a size below 1, or `heads` that does not divide `hidden_size`.
        """
        small = [
            name
            for name in ("vocab_size", "hidden_size", "layers", "heads", "max_positions")
            if getattr(self, name) < 1
        ]
        if small:
            raise ConfigError(f"the default model's {', '.join(small)} must be >= 1, got {self}.")
        if self.hidden_size % self.heads:
            raise ConfigError(f"heads must divide hidden_size, got hidden_size={self.hidden_size} heads={self.heads}.")

    @classmethod
    def from_run(cls, run: Any, *, max_positions: int = 1024) -> ModelSpec:
        """The spec of an engine's run config: any record with ``vocab_size``, ``hidden_size``, ``layers``, ``heads``."""
        return cls(run.vocab_size, run.hidden_size, run.layers, run.heads, max_positions)


def new_policy(texts: Iterable[str], spec: ModelSpec, *, seed: int, device: str = "cpu") -> Policy:
    """Build the default small model of size `spec` and its tokenizer from the env's own text (seeded by `seed`)."""
    tokenizer = build_tokenizer(texts, spec.vocab_size)
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.hidden_size * 4,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.heads,
        max_position_embeddings=spec.max_positions,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    # transformers wraps .to with functools.wraps, whose stub loses the method binding
    model = Qwen2ForCausalLM(config).to(device)  # type: ignore[arg-type]
    return Policy(model=model, tokenizer=tokenizer, device=torch.device(device))


def answer_stops(env: Any, mode: str, m: int, enabled: bool) -> tuple[str, ...]:
    """The stop strings of a policy's samples: the env's answer end (`TextEnv.answer_stop`) if `enabled`."""
    stop = env.answer_stop(mode=mode, m=m) if enabled else None
    return (stop,) if stop else ()


def load_tokenizer(path: str | Path, *, add_pad: bool = True) -> Any:
    """The tokenizer of a model directory, set up as the policy uses it (left padding, a chat template).

    Args:
        path: The model directory.
        add_pad: Add a distinct pad token when the tokenizer has none or pads with EOS (the model then
            needs a row for it, as `load_policy` gives it). False leaves the pad as saved, for a trainer
            with its own convention (TRL pads with EOS and masks after the first EOS).

    Raises:
        MissingDataError: If the directory or its tokenizer files are missing (a FileNotFoundError).
    """
    path = Path(path)
    if not path.is_dir():
        raise MissingDataError(f"model directory {path} does not exist; pass model=<a local HF model dir> or omit it.")
    if not any((path / name).exists() for name in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")):
        raise MissingDataError(
            f"{path} has no tokenizer files; save the tokenizer next to the model (tokenizer.save_pretrained)."
        )
    tokenizer_config = path / "tokenizer_config.json"
    tokenizer_class = (
        json.loads(tokenizer_config.read_text()).get("tokenizer_class") if tokenizer_config.exists() else None
    )
    if tokenizer_class in ("TokenizersBackend", "PreTrainedTokenizerFast") and (path / "tokenizer.json").exists():
        # a tokenizer built by `build_tokenizer`: load it as saved (AutoTokenizer would pick the model
        # type's tokenizer class, e.g. Qwen2's, and replace our pre-tokenizer)
        tokenizer = PreTrainedTokenizerFast.from_pretrained(path)
    else:
        tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    if add_pad and (tokenizer.pad_token is None or tokenizer.pad_token_id == tokenizer.eos_token_id):
        # Llama-family tokenizers ship without a pad token. Padding with EOS would make EOS unsampleable
        # (generation suppresses the pad) and mask every EOS inside a prompt (e.g. Llama 3's end of
        # turn), so a distinct pad token is added; `load_policy` gives the model a row for it.
        tokenizer.add_special_tokens({"pad_token": PAD})
    if tokenizer.chat_template is None:
        tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def check_model_dir(path: str | Path) -> Policy:
    """Load a model directory the user named (``model=``) on the CPU: the check before a run starts.

    Returns:
        The loaded policy (on the CPU).

    Raises:
        MissingDataError: If the directory, its config or its tokenizer files are missing.
        DataFileError: If transformers cannot load it (the message names the directory and transformers' reason).
    """
    try:
        return load_policy(path, "cpu")
    except UserError:
        raise
    except (OSError, ValueError, KeyError) as exc:  # transformers' refusals: missing weights, unknown model type
        reason = str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc).splitlines()[0]
        raise DataFileError(
            f"model={path} could not be loaded as a Hugging Face causal LM ({type(exc).__name__}: {reason}); give a "
            "directory written by save_pretrained (config.json, weights, tokenizer)."
        ) from exc


def load_policy(path: str | Path, device: str = "cpu") -> Policy:
    """Load a model directory (``save_pretrained`` layout) with its tokenizer.

    Raises:
        MissingDataError: If the directory, its weights or its tokenizer are missing (a FileNotFoundError).
    """
    path = Path(path)
    if path.is_dir() and not (path / "config.json").exists():
        raise MissingDataError(f"{path} has no config.json: it is not a Hugging Face model directory.")
    tokenizer = load_tokenizer(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    embeddings: Any = model.get_input_embeddings()
    rows = int(embeddings.weight.shape[0])
    if tokenizer.pad_token_id >= rows:  # the pad token `load_tokenizer` added: never sampled, never attended
        model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    model.config.pad_token_id = tokenizer.pad_token_id
    model = model.to(device)  # type: ignore[arg-type]  # as above
    return Policy(model=model, tokenizer=tokenizer, device=torch.device(device))
