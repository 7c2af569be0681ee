"""``python -m vpo_engines.local train|evaluate [key=value ...]``: the local engine's commands.

``train`` is `vpo_engines.local.train` (what ``vpo train`` runs for engine=local) and ``evaluate`` is
`vpo_engines.evaluate` (``vpo eval``, ``vpo-eval``). The experiment grid of vpo-lab starts its jobs this
way and records these command names in its done markers, so they stay as they are.
"""

from __future__ import annotations

import sys
from collections.abc import Callable


def _train(argv: list[str]) -> int:
    from vpo_engines.local.train import main

    return main(argv)


def _evaluate(argv: list[str]) -> int:
    from vpo_engines.evaluate import main

    return main(argv)


COMMANDS: dict[str, Callable[[list[str]], int]] = {"train": _train, "evaluate": _evaluate}
"""Command name -> the function that runs it (its module is imported only when it runs)."""


def main(argv: list[str] | None = None) -> int:
    """Run the command named by the first argument with the rest; 2 for an unknown command."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in COMMANDS:
        print(f"usage: python -m vpo_engines.local {{{','.join(COMMANDS)}}} [key=value ...]", file=sys.stderr)
        return 2
    return int(COMMANDS[args[0]](args[1:]))


if __name__ == "__main__":
    raise SystemExit(main())
