"""Evaluation sampling through vLLM on one GPU, with the policy's own tokenizer on both ends.

vLLM only samples: prompts go in as token ids made by the checkpoint's tokenizer (exactly as the
transformers path tokenizes them) and completions come back as token ids that the same tokenizer
decodes, so a checkpoint whose tokenizer vLLM's ``AutoTokenizer`` would load differently (the
default model's own BPE tokenizer) samples the same text distribution on both paths. vLLM is
imported only when a `VllmSampler` is built; install it with ``uv sync --group vllm`` on a CUDA
machine.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vpo_core.sampling_settings import SamplingSettings
from vpo_core.types import Message
from vpo_engines.models.chat import render_chat, template_prefill, with_prefill
from vpo_engines.models.policy import load_tokenizer

__all__ = ["VllmSampler", "choose_backend", "completion_texts", "sampling_requests"]

BACKENDS = ("auto", "transformers", "vllm")


def choose_backend(requested: str, device: str) -> str:
    """The sampling backend for evaluation.

    Args:
        requested: ``"auto"`` (vLLM when it is installed and CUDA is available, else transformers),
            ``"transformers"`` or ``"vllm"``.
        device: The device asked for the transformers path (``"cpu"``, ``"cuda"``...).

    Returns:
        ``"transformers"`` or ``"vllm"``.

    Raises:
        ValueError: For an unknown backend, or ``"vllm"`` where it cannot run, naming the fix.
    """
    if requested not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {requested!r}.")
    if requested == "transformers":
        return "transformers"
    installed = importlib.util.find_spec("vllm") is not None
    if requested == "vllm" and not installed:
        raise ValueError("backend=vllm needs vLLM: run `uv sync --group vllm` on a CUDA machine, or pass backend=auto.")
    gpu = installed and not device.startswith("cpu") and _cuda_available()
    if requested == "vllm" and not gpu:
        raise ValueError("backend=vllm needs a CUDA GPU (and device other than cpu); pass backend=transformers.")
    return "vllm" if gpu else "transformers"


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def sampling_requests(
    prompt_ids: Sequence[Sequence[int]],
    *,
    num_samples: int,
    settings: SamplingSettings,
    seed: int,
    eos_token_id: int,
) -> list[dict[str, Any]]:
    """The keyword arguments of one ``vllm.SamplingParams`` per prompt.

    Each prompt gets its own seed (``seed + i``), so a pool is reproducible and does not depend on
    how vLLM batches the requests. Sampling stops at the tokenizer's EOS; nothing is detokenized
    inside vLLM.

    Args:
        prompt_ids: Token ids of P prompts.
        num_samples: Completions per prompt.
        settings: Temperature, top-p and token budget (``max_tokens``).
        seed: Seed of the first prompt.
        eos_token_id: The tokenizer's end-of-sequence id.

    Returns:
        P dicts of SamplingParams fields.
    """
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}.")
    return [
        {
            "n": num_samples,
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            "max_tokens": settings.max_new_tokens,
            "seed": seed + i,
            "stop_token_ids": [eos_token_id],
            "detokenize": False,
        }
        for i in range(len(prompt_ids))
    ]


def completion_texts(outputs: Sequence[Any], tokenizer: Any, num_samples: int) -> list[str]:
    """Decode vLLM's request outputs into the P·num_samples texts, prompt-major like `Policy.sample`.

    Args:
        outputs: ``vllm.RequestOutput`` per prompt, in prompt order; each holds ``outputs``, a list
            of completions with ``index`` and ``token_ids``.
        tokenizer: The checkpoint's tokenizer.
        num_samples: Completions each request must hold.

    Returns:
        The texts, special tokens (EOS) removed.

    Raises:
        RuntimeError: If a request came back with a different number of completions.
    """
    token_ids: list[list[int]] = []
    for p, request in enumerate(outputs):
        completions = sorted(request.outputs, key=lambda c: c.index)
        if len(completions) != num_samples:
            raise RuntimeError(f"vLLM returned {len(completions)} completions for prompt {p}, expected {num_samples}.")
        token_ids += [list(c.token_ids) for c in completions]
    return tokenizer.batch_decode(token_ids, skip_special_tokens=True)


class VllmSampler:
    """Samples evaluation pools with vLLM; the same `prompt_text`/`sample` interface as `Policy`.

    Args:
        model_dir: A ``save_pretrained`` model directory with its tokenizer.
        dtype: Weights and activations on the GPU (bf16 by default).
        gpu_memory_utilization: Share of GPU memory vLLM may take.
        seed: vLLM's engine seed (per-request seeds are set by `sample`).
        max_model_len: Longest prompt + completion; default the model's maximum.
        chat_template_kwargs: Extra variables of the chat template (an env's
            ``profile.chat_template_kwargs``, e.g. Qwen3's ``enable_thinking=False``).
    """

    def __init__(
        self,
        model_dir: str | Path,
        *,
        dtype: str = "bfloat16",
        gpu_memory_utilization: float = 0.5,
        seed: int = 0,
        max_model_len: int | None = None,
        chat_template_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        from vllm import LLM

        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.tokenizer = load_tokenizer(model_dir)
        self.llm = LLM(
            model=str(model_dir),
            skip_tokenizer_init=True,
            dtype=dtype,
            seed=seed,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
        )

    def prompt_text(self, messages: Sequence[Message]) -> str:
        """Chat messages rendered with the tokenizer's template and `chat_template_kwargs`, ending with the assistant header."""
        return render_chat(self.tokenizer, messages, self.chat_template_kwargs)

    def sample(
        self, prompts: Sequence[str], *, num_samples: int, settings: SamplingSettings, seed: int | None = None
    ) -> list[str]:
        """The P·num_samples whole assistant turns (prompt-major; the template's pre-fill included).

        `vpo_core.evaluation.Sampler`'s signature; prompt i samples with seed ``seed + i`` (None counts as 0).
        """
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        prompt_ids = self.tokenizer(list(prompts), add_special_tokens=False)["input_ids"]
        requests = sampling_requests(
            prompt_ids,
            num_samples=num_samples,
            settings=settings,
            seed=0 if seed is None else seed,
            eos_token_id=self.tokenizer.eos_token_id,
        )
        outputs = self.llm.generate(
            [TokensPrompt(prompt_token_ids=ids) for ids in prompt_ids],
            [SamplingParams(**fields) for fields in requests],
            use_tqdm=False,
        )
        texts = completion_texts(outputs, self.tokenizer, num_samples)
        # the whole assistant turn, as the transformers path returns it (the template's pre-fill first)
        return with_prefill(prompts, texts, num_samples, template_prefill(self.tokenizer, self.chat_template_kwargs))
