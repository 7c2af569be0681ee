"""``python -m vpo_core.adapters.local train|evaluate [key=value ...]``: the local engine's commands.

``train`` is `vpo_core.adapters.local.train` (what ``apps/train.py`` runs for engine=local) and
``evaluate`` is `vpo_core.evaluation.cli` (``apps/evaluate.py``, ``vpo-eval``), so an installed vpo-core
runs them without a checkout (the experiment runner starts its jobs this way).
"""

from __future__ import annotations

import importlib
import sys

COMMANDS = {"train": "vpo_core.adapters.local.train", "evaluate": "vpo_core.evaluation.cli"}
"""Command name -> the module whose ``main(argv)`` runs it."""


def main(argv: list[str] | None = None) -> int:
    """Run the command named by the first argument with the rest; 2 for an unknown command."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in COMMANDS:
        print(f"usage: python -m vpo_core.adapters.local {{{','.join(COMMANDS)}}} [key=value ...]", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[args[0]])
    return int(module.main(args[1:]))


if __name__ == "__main__":
    raise SystemExit(main())
