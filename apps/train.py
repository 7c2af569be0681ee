"""Train a policy with VPO or a baseline.

    uv run apps/train.py                                   # embedded default: maze, VPO, local engine, CPU
    uv run apps/train.py env=maze-v1 method=grpo steps=40  # another method on the local engine
    uv run apps/train.py engine=verl env=musique-v1 method=vpo model=Qwen/Qwen3-1.7B --dry-run
    uv run --group trl apps/train.py engine=trl env=maze-v1 method=vpo model=<dir> device=cuda

Arguments are `key=value` pairs (plus flags such as `--dry-run` for veRL); `engine` picks the engine
(`local`, the default, `verl` or `trl`) and every other argument goes to it. Options of the env's
constructor are passed as `env.<key>=<value>`. `--help` lists every option of the chosen engine
with its default and meaning.
"""

from __future__ import annotations

import importlib
import sys

ENGINES = ("local", "verl", "trl")


def split_engine(argv: list[str]) -> tuple[str, list[str]]:
    engine = "local"
    rest: list[str] = []
    for arg in argv:
        if arg.startswith("engine="):
            engine = arg.partition("=")[2]
        else:
            rest.append(arg)
    if engine not in ENGINES:
        raise SystemExit(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)} (e.g. engine=local).")
    return engine, rest


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in args) and not any(a.startswith("engine=") for a in args):
        print(__doc__)
    engine, rest = split_engine(args)
    module_name = f"vpo_core.adapters.{engine}.{'launch' if engine == 'verl' else 'train'}"
    module = importlib.import_module(module_name)
    return module.main(rest)


if __name__ == "__main__":
    raise SystemExit(main())
