"""Fixtures of env-ultrafeedback's tests: a tiny ArmoRM-shaped reward model built locally, no downloads."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
MODELING = DATA / "tiny_armorm" / "modeling_tiny_armorm.py"


def build_tiny_armorm(out: Path, n_objectives: int = 19) -> Path:
    """A randomly initialised model with ArmoRM's interface and head shape, saved as remote code in `out`."""
    torch = pytest.importorskip("torch")
    from transformers import LlamaConfig

    from vpo_engines.models.policy import build_tokenizer

    rows = [json.loads(line) for line in (DATA / "ultrafeedback" / "rows.jsonl").read_text().splitlines()]
    texts = [r["instruction"] for r in rows] + [c["response"] for r in rows for c in r["completions"]]
    tokenizer = build_tokenizer(texts, vocab_size=400)
    from env_ultrafeedback._scorer import _remote_code_compat

    _remote_code_compat()  # the file imports what ArmoRM's does
    spec = importlib.util.spec_from_file_location("modeling_tiny_armorm", MODELING)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=1024,
        pad_token_id=tokenizer.pad_token_id,
        num_objectives=n_objectives,
        auto_map={"AutoModelForSequenceClassification": "modeling_tiny_armorm.TinyArmoRM"},
    )
    torch.manual_seed(0)
    model = module.TinyArmoRM(config)
    with torch.no_grad():  # spread the head so that raw outputs cover [0, 1] and beyond
        model.regression_layer.weight.normal_(0.0, 0.1)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    shutil.copy(MODELING, out / MODELING.name)
    return out


@pytest.fixture(scope="session")
def tiny_rm(tmp_path_factory) -> Path:
    return build_tiny_armorm(tmp_path_factory.mktemp("tiny_armorm"))


@pytest.fixture
def make_env():
    """Builds envs on the fixture rows (3 test prompts); with a model dir, scored in process (offset 0.5)."""
    from env_ultrafeedback import UltrafeedbackEnv

    def new_env(tiny_rm: Path | None = None, **config):
        options = {"data_dir": DATA / "ultrafeedback", "test_size": 3}
        if tiny_rm is not None:
            options.update(scorer="inprocess", rm_model=str(tiny_rm), rm_offset=0.5, rm_max_length=64)
        return UltrafeedbackEnv(**(options | config))

    return new_env
