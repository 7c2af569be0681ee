"""The vLLM evaluation path's glue, on CPU.

vLLM itself needs a CUDA GPU and is not installed by a CPU `uv sync`, so these tests cover what runs
around it: the backend choice, the per-prompt SamplingParams fields, and decoding vLLM's token-id
outputs with the checkpoint's tokenizer. The request outputs are plain objects with the two
attributes vLLM's `CompletionOutput` is read for (`index`, `token_ids`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

from vpo_core.sampling_settings import SamplingSettings
from vpo_engines.models.policy import EOS, build_tokenizer
from vpo_engines.models.vllm import choose_backend, completion_texts, sampling_requests

ROOT = Path(__file__).resolve().parents[4]
needs_no_vllm = pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")


def test_backend_choice():
    assert choose_backend("transformers", "cuda") == "transformers"
    assert choose_backend("auto", "cpu") == "transformers"
    with pytest.raises(ValueError, match="backend must be one of"):
        choose_backend("sglang", "cpu")


@needs_no_vllm
def test_vllm_backend_without_vllm_names_the_fix(tmp_path, capsys):
    with pytest.raises(ValueError, match="uv sync --group vllm"):
        choose_backend("vllm", "cuda")
    from vpo_engines.cli import main as vpo

    assert vpo(["eval", f"checkpoints={tmp_path}", "backend=vllm", "mode=single"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1
    assert "uv sync --group vllm" in errors[0]


def test_sampling_requests_seed_each_prompt_and_stop_at_eos():
    requests = sampling_requests(
        [[1, 2], [3], [4, 5, 6]],
        num_samples=4,
        settings=SamplingSettings(temperature=0.7, top_p=0.95, max_new_tokens=64),
        seed=100,
        eos_token_id=2,
    )
    assert [r["seed"] for r in requests] == [100, 101, 102]
    assert all(r["n"] == 4 and r["max_tokens"] == 64 and r["stop_token_ids"] == [2] for r in requests)
    assert all(r["temperature"] == 0.7 and r["top_p"] == 0.95 and r["detokenize"] is False for r in requests)
    with pytest.raises(ValueError, match="num_samples must be >= 1"):
        sampling_requests([[1]], num_samples=0, settings=SamplingSettings(1.0, 1.0, 8), seed=0, eos_token_id=2)


def test_completion_texts_decode_prompt_major_in_index_order():
    texts = ["<route_1>UP RIGHT</route_1>", "<route_1>DOWN</route_1>", "LEFT LEFT", "no route"]
    tokenizer = build_tokenizer(texts * 20, vocab_size=300)
    eos = tokenizer.convert_tokens_to_ids(EOS)

    def completion(index: int, text: str) -> SimpleNamespace:
        return SimpleNamespace(index=index, token_ids=tokenizer(text, add_special_tokens=False)["input_ids"] + [eos])

    outputs = [
        SimpleNamespace(outputs=[completion(1, texts[1]), completion(0, texts[0])]),  # vLLM may reorder
        SimpleNamespace(outputs=[completion(0, texts[2]), completion(1, texts[3])]),
    ]
    assert completion_texts(outputs, tokenizer, num_samples=2) == texts
    with pytest.raises(RuntimeError, match="returned 1 completions for prompt 0, expected 2"):
        completion_texts([SimpleNamespace(outputs=[completion(0, texts[0])])], tokenizer, num_samples=2)
