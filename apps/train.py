"""Train a policy with VPO or a baseline.

    uv run apps/train.py                                   # embedded default: maze, VPO, local engine, CPU
    uv run apps/train.py env=maze-v1 method=grpo steps=40  # another method on the local engine
    uv run apps/train.py engine=verl env=musique-v1 method=vpo model=Qwen/Qwen3-1.7B --dry-run

Arguments are `key=value` pairs (plus flags such as `--dry-run`); `engine` picks the engine
(`local`, the default, or `verl`) and every other argument goes to it.
"""

from __future__ import annotations

import importlib
import sys

ENGINES = ("local", "verl")


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
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not module_name.startswith(exc.name):
            raise  # a dependency of the engine is missing: show the real error
        print(f"engine={engine} is not yet available in this version ({module_name} is not implemented yet).")
        return 0
    return module.main(rest)


if __name__ == "__main__":
    raise SystemExit(main())
