"""``python -m vpo_core COMMAND [key=value ...]``: the ``vpo`` console script (`vpo_core.cli.main`)."""

from vpo_core.cli import main

raise SystemExit(main())
