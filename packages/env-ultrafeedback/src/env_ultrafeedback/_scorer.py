"""The reward model behind ultrafeedback-v1: ArmoRM's five UltraFeedback objectives, batched, through transformers.

Interface: a scorer has ``names`` (the d dimensions) and ``score(prompts, responses) -> (n, d)``
float64 rewards, each response judged as the assistant's answer to its user prompt.

ArmoRM (``RLHFlow/ArmoRM-Llama3-8B-v0.1``, model card and ``modeling_custom.py`` of that Hub
repository): a Llama-3-8B backbone whose linear regression head predicts 19 named objectives at the
last token (``output.rewards``, shape (batch, 19)); a prompt-conditioned gating network mixes them
into one preference score (``output.score``). The 19 objectives, in head order, are `ARMORM_OBJECTIVES`.
The paper's "ArmoRM-5" with the "overall" dimension as GRPO scalar is read here as the five
UltraFeedback objectives, head indices 5-9 in head order: overall_score, instruction_following,
truthfulness, honesty, helpfulness (a choice: the authors' public code has no UltraFeedback task, see
the README).

Normalisation. The regression head is unbounded. ArmoRM was fit to ratings rescaled to [0, 1], so its
outputs on the UltraFeedback objectives sit in or near [0, 1] (the paper's UltraFeedback best@k,
0.70-0.78, is on that scale). The reward is ``clip(scale * raw + offset, 0, 1)`` with scale 1 and
offset 0 by default: the identity keeps the paper's numbers comparable, and the clip makes the
declared bounds [0, 1] true for every output (the RewardSpec, the VPO simplex and check_env need
bounded rewards). Pass another affine map (``rm_scale``, ``rm_offset``) to rescale a different head.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "ARMORM_ID",
    "ARMORM_OBJECTIVES",
    "DIMENSIONS",
    "OBJECTIVE_INDICES",
    "ArmoRMScorer",
    "RewardScorer",
    "WeightsNotFoundError",
    "check_batch",
]

ARMORM_ID = "RLHFlow/ArmoRM-Llama3-8B-v0.1"

ARMORM_OBJECTIVES: tuple[str, ...] = (
    "helpsteer-helpfulness",
    "helpsteer-correctness",
    "helpsteer-coherence",
    "helpsteer-complexity",
    "helpsteer-verbosity",
    "ultrafeedback-overall_score",
    "ultrafeedback-instruction_following",
    "ultrafeedback-truthfulness",
    "ultrafeedback-honesty",
    "ultrafeedback-helpfulness",
    "beavertails-is_safe",
    "prometheus-score",
    "argilla-overall_quality",
    "argilla-judge_lm",
    "code-complexity",
    "code-style",
    "code-explanation",
    "code-instruction-following",
    "code-readability",
)
"""The 19 outputs of ArmoRM's regression head, in order (model card of RLHFlow/ArmoRM-Llama3-8B-v0.1)."""

DIMENSIONS: tuple[str, ...] = ("overall", "instruction_following", "truthfulness", "honesty", "helpfulness")
OBJECTIVE_INDICES: tuple[int, ...] = tuple(
    ARMORM_OBJECTIVES.index(f"ultrafeedback-{n if n != 'overall' else 'overall_score'}") for n in DIMENSIONS
)
"""Head indices of the five dimensions: (5, 6, 7, 8, 9)."""


class WeightsNotFoundError(FileNotFoundError):
    """The reward model's weights are not on this machine (the message says what to download)."""


class RewardScorer(Protocol):
    """Anything that scores (prompt, response) pairs on named dimensions."""

    @property
    def names(self) -> tuple[str, ...]:
        """The d dimension names, in column order."""
        ...

    def score(self, prompts: Sequence[str], responses: Sequence[str]) -> NDArray[np.float64]:
        """Rewards of each response to its prompt, shape (n, d)."""
        ...


def check_batch(prompts: Sequence[str], responses: Sequence[str]) -> tuple[list[str], list[str]]:
    """The batch as two lists of strings of equal length.

    Raises:
        ValueError: On lengths that differ or items that are not strings.
    """
    prompts, responses = list(prompts), list(responses)
    if len(prompts) != len(responses):
        raise ValueError(f"{len(prompts)} prompts but {len(responses)} responses; pass one prompt per response.")
    bad = [i for i, x in enumerate(prompts + responses) if not isinstance(x, str)]
    if bad:
        raise ValueError(f"prompts and responses must be strings (item {bad[0]} is not).")
    return prompts, responses


def _remote_code_compat() -> None:
    """Names ArmoRM's ``modeling_custom.py`` imports that newer transformers dropped.

    It imports ``LLAMA_INPUTS_DOCSTRING`` from ``transformers.models.llama.modeling_llama`` only to
    decorate ``forward`` with its docstring; transformers 5 removed the constant. An empty docstring
    restores the import without changing any computation.
    """
    from transformers.models.llama import modeling_llama

    if not hasattr(modeling_llama, "LLAMA_INPUTS_DOCSTRING"):
        setattr(modeling_llama, "LLAMA_INPUTS_DOCSTRING", "")  # noqa: B010 - a name mypy does not know


_USER_SENTINEL, _REPLY_SENTINEL = "\ue000vpo-user\ue000", "\ue001vpo-reply\ue001"
"""Placeholders (private-use characters) that locate each message in the rendered chat template."""


def _valid_utf8(text: str) -> str:
    """`text` with lone surrogates (which tokenizers refuse) replaced by U+FFFD-like placeholders."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _how_to_get(model: str) -> str:
    return (
        f"the reward model {model!r} is not available here. Download it once on this machine "
        f"(`hf download {ARMORM_ID}`, about 16 GB; or pass rm_model=<local dir>), then start the scoring "
        "server: `env-ultrafeedback-rm --port 8765`."
    )


class ArmoRMScorer:
    """ArmoRM (or a model with its interface) loaded once, scoring batches on GPU when present.

    Args:
        model: Hub id or local directory of a model whose ``AutoModelForSequenceClassification`` (remote
            code) returns ``.rewards`` of shape (batch, n_objectives) at the last token.
        objective_indices: Head outputs to keep, in dimension order (default: the five UltraFeedback ones).
        names: Names of the kept dimensions.
        device: ``"cuda"``, ``"cpu"``, ...; default: CUDA when available.
        dtype: ``"bfloat16"``, ``"float32"``, ...; default: bfloat16 on CUDA, float32 on CPU.
        batch_size: Sequences per forward pass.
        max_length: Token budget per (prompt, response) conversation; longer ones keep their first
            `max_length` tokens (the prompt and the start of the response).
        scale: Affine map applied to the raw head outputs before clipping to [0, 1].
        offset: See `scale`.
        local_files_only: Never contact the Hub (default: only when ``HF_HUB_OFFLINE`` is set).
    """

    def __init__(
        self,
        model: str = ARMORM_ID,
        *,
        objective_indices: Sequence[int] = OBJECTIVE_INDICES,
        names: Sequence[str] = DIMENSIONS,
        device: str | None = None,
        dtype: str | None = None,
        batch_size: int = 8,
        max_length: int = 4096,
        scale: float = 1.0,
        offset: float = 0.0,
        local_files_only: bool | None = None,
    ) -> None:
        if len(objective_indices) != len(names):
            raise ValueError(f"{len(objective_indices)} objective indices for {len(names)} names.")
        if batch_size < 1 or max_length < 8:
            raise ValueError(f"batch_size must be >= 1 and max_length >= 8, got {batch_size}, {max_length}.")
        if not np.isfinite(scale) or scale == 0 or not np.isfinite(offset):
            raise ValueError(f"scale must be finite and non-zero and offset finite, got {scale}, {offset}.")
        self.model_name = model
        self.objective_indices = tuple(int(i) for i in objective_indices)
        self.names = tuple(names)
        self.batch_size = batch_size
        self.max_length = max_length
        self.scale = float(scale)
        self.offset = float(offset)
        self._lock = threading.Lock()
        self._load(device, dtype, local_files_only)

    def _load(self, device: str | None, dtype: str | None, local_files_only: bool | None) -> None:
        import os

        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError as error:
            raise ImportError(
                "scoring with ArmoRM needs torch and transformers: `uv sync --extra rm` "
                "(or pip install 'env-ultrafeedback[rm]')."
            ) from error
        if local_files_only is None:
            local_files_only = os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0", "false", "False")
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        torch_dtype = (
            getattr(torch, dtype) if dtype else (torch.bfloat16 if self.device.startswith("cuda") else torch.float32)
        )
        _remote_code_compat()
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.model_name, local_files_only=local_files_only)
            self.model = AutoModelForSequenceClassification.from_pretrained(
                self.model_name, trust_remote_code=True, dtype=torch_dtype, local_files_only=local_files_only
            )
        except OSError as error:
            raise WeightsNotFoundError(f"{_how_to_get(self.model_name)} ({error})") from error
        except (ImportError, AttributeError, TypeError) as error:
            import transformers

            raise ImportError(
                f"the remote code of {self.model_name} (modeling_custom.py, written for transformers 4.x) does not "
                f"load under transformers {transformers.__version__}: {type(error).__name__}: {error}"
            ) from error
        self.model.to(self.device).eval()
        n_out = self._n_objectives()
        if n_out is not None and max(self.objective_indices) >= n_out:
            raise ValueError(f"{self.model_name} has {n_out} objectives; indices {self.objective_indices} do not fit.")
        self.pad_id = self._choose_pad_id()
        self.model.config.pad_token_id = self.pad_id
        self._torch = torch

    def _n_objectives(self) -> int | None:
        layer = getattr(self.model, "regression_layer", None)
        return None if layer is None else int(layer.out_features)

    def _choose_pad_id(self) -> int:
        """A pad id that never occurs in chat text: a reserved special token when the vocabulary has one.

        ArmoRM finds the last token of each row as the position before the first pad id, so the pad id
        must not occur inside a conversation (Llama 3's ``<|eot_id|>`` does).
        """
        tok = self.tokenizer
        reserved = tok.convert_tokens_to_ids("<|reserved_special_token_0|>")
        if isinstance(reserved, int) and reserved != tok.unk_token_id and reserved is not None:
            return reserved
        for candidate in (tok.pad_token_id, tok.eos_token_id):
            if candidate is not None:
                return int(candidate)
        raise ValueError(f"the tokenizer of {self.model_name} has neither a pad nor an eos token.")

    def _render(self, prompt: str, response: str) -> str:
        messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
        return str(self.tokenizer.apply_chat_template(messages, tokenize=False))

    def _template_parts(self, prompt: str, response: str) -> list[tuple[str, bool]]:
        """The rendered conversation as (text, is_message_content) pieces, in order.

        The template is rendered with a sentinel in place of each message, which gives its own text
        around the two messages; each message's rendered form is what the template makes of it (a
        template may trim it) between those pieces. Raises ValueError for a template whose text around
        a message depends on the message.
        """
        skeleton = self._render(_USER_SENTINEL, _REPLY_SENTINEL)
        if skeleton.count(_USER_SENTINEL) != 1 or skeleton.count(_REPLY_SENTINEL) != 1:
            raise ValueError(f"the chat template of {self.model_name} does not render each message once.")
        head, rest = skeleton.split(_USER_SENTINEL)
        middle, tail = rest.split(_REPLY_SENTINEL)
        with_prompt, with_response = self._render(prompt, _REPLY_SENTINEL), self._render(_USER_SENTINEL, response)
        after_prompt, before_response = middle + _REPLY_SENTINEL + tail, head + _USER_SENTINEL + middle
        if not (
            with_prompt.startswith(head)
            and with_prompt.endswith(after_prompt)
            and with_response.startswith(before_response)
            and with_response.endswith(tail)
        ):
            raise ValueError(f"the chat template of {self.model_name} changes its own text with the messages.")
        rendered_prompt = with_prompt[len(head) : len(with_prompt) - len(after_prompt)]
        rendered_response = with_response[len(before_response) : len(with_response) - len(tail)]
        return [(head, False), (rendered_prompt, True), (middle, False), (rendered_response, True), (tail, False)]

    def _encode(self, prompt: str, response: str) -> list[int]:
        """Token ids of the conversation: the template's own text with its special tokens, the messages as text.

        A special-token string inside the prompt or the reply (a pad token, an end-of-turn or a role
        header) is tokenised as ordinary text, so it can neither hide the rest of the reply from the
        reward model (ArmoRM reads up to the first pad id) nor forge chat turns.
        """
        prompt, response = _valid_utf8(prompt), _valid_utf8(response)
        ids: list[int] = []
        for text, is_content in self._template_parts(prompt, response):
            if text:
                encoded = self.tokenizer(text, add_special_tokens=False, split_special_tokens=is_content)
                ids.extend(int(i) for i in encoded["input_ids"])
        return ids[: self.max_length]

    def _forward(self, rows: list[list[int]]) -> NDArray[np.float64]:
        torch = self._torch
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):  # right padding: a row's tokens keep the positions they have alone
            ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
            mask[i, : len(row)] = 1
        with torch.no_grad():
            out = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device))
        raw = out.rewards.float().cpu().numpy().astype(np.float64)
        return raw[:, list(self.objective_indices)]

    def raw_scores(self, prompts: Sequence[str], responses: Sequence[str]) -> NDArray[np.float64]:
        """The head's outputs on the kept objectives, before the affine map and clip, shape (n, d)."""
        prompts, responses = check_batch(prompts, responses)
        rows = [self._encode(p, r) for p, r in zip(prompts, responses, strict=True)]
        out = np.zeros((len(rows), len(self.names)))
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))  # similar lengths share a batch
        with self._lock:
            for start in range(0, len(order), self.batch_size):
                chunk = order[start : start + self.batch_size]
                batch = [rows[i] for i in chunk]
                if len(batch) > 1 and any(self.pad_id in row for row in batch):
                    values = np.concatenate([self._forward([row]) for row in batch])  # pad id in the text
                else:
                    values = self._forward(batch)
                out[chunk] = values
        return out

    def score(self, prompts: Sequence[str], responses: Sequence[str]) -> NDArray[np.float64]:
        """Rewards in [0, 1] of each response to its prompt, shape (n, d)."""
        return np.clip(self.scale * self.raw_scores(prompts, responses) + self.offset, 0.0, 1.0)

    def describe(self) -> dict[str, Any]:
        """What the server reports on ``GET /health``."""
        return {"model": self.model_name, "names": list(self.names), "device": self.device}
