"""``vpo COMMAND [key=value ...]``: the one command line of the project (``python -m vpo_engines`` is the same).

    vpo train env=maze-v1 method=vpo            # train (engine=local, the default; engine=verl|trl)
    vpo eval env=maze-v1 checkpoints=runs/x     # evaluate checkpoints or a served model
    vpo diagnose env=maze-v1 vpo=pool_vpo.npy   # will VPO help? ρ̄ and best@16 of saved pools
    vpo new-env name=count                      # create packages/env-count/
    vpo search arm=vpo base_url=...             # test-time search (the vpo-search package)

Each command is one entry of `COMMANDS`, a ``"module:function"`` reference resolved only when the command
runs (so ``vpo eval`` never imports an engine), and each engine of ``vpo train`` one entry of `ENGINES`.
``vpo-eval`` and ``vpo eval`` are the same function (`evaluate`); the scripts under ``apps/`` are aliases.
"""

from __future__ import annotations

import pkgutil
import sys
from collections.abc import Callable, Sequence

from vpo_core.cli_config import HelpRequested, exit_status, split_command
from vpo_core.errors import ConfigError

__all__ = ["COMMANDS", "ENGINES", "evaluate", "main", "split_engine", "train"]

PROG = "vpo"
DESCRIPTION = "Vector Policy Optimization: train, evaluate and diagnose policies, create envs, search."

COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("vpo_engines.cli:train", "train a policy with VPO or a baseline (engine=local|verl|trl)"),
    "eval": ("vpo_engines.cli:evaluate", "evaluate checkpoints or a served model: results.json, pools, table"),
    "diagnose": ("vpo_engines.diagnose:main", "will VPO help on this domain? ρ̄ and best@16 of saved pools"),
    "new-env": ("vpo_core.scaffold:main", "create packages/env-NAME/, a new env package of the standard shape"),
    "search": ("vpo_search.cli:main", "test-time search with OpenEvolve (the vpo-search package)"),
}
"""Command -> (its ``main(argv) -> exit status`` as ``"module:function"``, one line for ``vpo --help``)."""

ENGINES: dict[str, str] = {
    "local": "vpo_engines.local.train:main",
    "verl": "vpo_engines.verl.launch:main",
    "trl": "vpo_engines.trl.train:main",
}
"""Engine of ``vpo train engine=NAME`` -> its ``main(argv) -> exit status`` (``local`` is the default)."""

MISSING_PACKAGE_FIX: dict[str, str] = {
    "vpo_search": (
        "`vpo search` needs the vpo-search package, which is not installed: run `uv sync` at the repository "
        "root (add `--group search` for OpenEvolve) or `pip install vpo-search`."
    ),
}
"""Top-level package of a command that lives outside vpo-engines -> the message naming how to install it."""

TRAIN_HELP = """Train a policy with VPO or a baseline.

    uv run vpo train                                   # embedded default: maze, VPO, local engine, CPU
    uv run vpo train env=maze-v1 method=grpo steps=40  # another method on the local engine
    uv run vpo train engine=verl env=<env-id> method=vpo model=Qwen/Qwen3-1.7B --dry-run
    uv run --group trl vpo train engine=trl env=maze-v1 method=vpo model=<dir> device=cuda

Arguments are `key=value` pairs (plus flags such as `--dry-run` for veRL); `engine` picks the engine
(`local`, the default, `verl` or `trl`) and every other argument goes to it. Options of the env's
constructor are passed as `env.<key>=<value>`. `--help` lists every option of the chosen engine
with its default and meaning.
"""


def _resolve(reference: str) -> Callable[[list[str]], int]:
    """The function a ``"module:function"`` reference names, importing its module now.

    Raises:
        ConfigError: If the module's top-level package is one of `MISSING_PACKAGE_FIX` and is not installed.
    """
    try:
        function: Callable[[list[str]], int] = pkgutil.resolve_name(reference)
    except ModuleNotFoundError as exc:
        package = (exc.name or "").partition(".")[0]
        if package in MISSING_PACKAGE_FIX and reference.startswith(f"{package}."):
            raise ConfigError(MISSING_PACKAGE_FIX[package]) from None
        raise
    return function


def split_engine(argv: Sequence[str]) -> tuple[str, list[str]]:
    """The engine named by ``engine=NAME`` (default ``local``) and the other arguments, in order.

    Raises:
        ConfigError: For an engine that is not in `ENGINES`, naming the valid ones.
    """
    engine = "local"
    rest: list[str] = []
    for arg in argv:
        if arg.startswith("engine="):
            engine = arg.partition("=")[2]
        else:
            rest.append(arg)
    if engine not in ENGINES:
        raise ConfigError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)} (e.g. engine=local).")
    return engine, rest


def train(argv: Sequence[str] | None = None) -> int:
    """``vpo train [engine=local|verl|trl] [key=value ...]``: the chosen engine's ``main`` with the other arguments.

    ``--help`` without ``engine=`` prints `TRAIN_HELP` and then the local engine's options.

    Raises:
        ConfigError: For an unknown engine.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in args) and not any(a.startswith("engine=") for a in args):
        print(TRAIN_HELP)
    engine, rest = split_engine(args)
    return int(_resolve(ENGINES[engine])(rest))


def evaluate(argv: Sequence[str] | None = None) -> int:
    """``vpo eval`` and ``vpo-eval``: `vpo_engines.evaluate.main` (one function for both names)."""
    from vpo_engines.evaluate import main as evaluation_main

    return evaluation_main(sys.argv[1:] if argv is None else argv, prog="vpo eval")


def main(argv: Sequence[str] | None = None) -> int:
    """The ``vpo`` console script: run the command named by the first argument with the rest.

    Returns:
        The command's exit status; 0 for ``--help``; 2 for a missing or unknown command (or engine), or a
        command whose package is not installed, with a one-line message naming the fix.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    summaries = {name: text for name, (_, text) in COMMANDS.items()}
    try:
        command, rest = split_command(args, summaries, prog=PROG, description=DESCRIPTION)
        return int(_resolve(COMMANDS[command][0])(rest))
    except (HelpRequested, ConfigError) as exc:
        return exit_status(exc)
