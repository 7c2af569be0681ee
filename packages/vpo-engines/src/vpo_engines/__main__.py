"""``python -m vpo_engines COMMAND [key=value ...]``: the ``vpo`` console script (`vpo_engines.cli.main`)."""

from vpo_engines.cli import main

raise SystemExit(main())
