"""vpo-lab: the VPO project's research code, on top of the vpo-core library (which never imports it).

- `vpo_lab.tabular`: the mechanism study without a language model (tabular policies over an env's
  enumerated outcomes, `vpo_core.types.OutcomeTable`); ``apps/mechanism.py``.
- `vpo_lab.experiment`: the methods × seeds grid of local runs with shared warm starts, its evaluation
  and resumable done-markers; ``apps/experiment.py``.
- `vpo_lab.experiment_report`: the grid's tables with seed-level intervals, ``summary.json`` and plots.
- `vpo_lab.recipes`: the grid's named recipes (``recipe=v2``).
"""

import importlib.metadata as _metadata

try:  # single source: [project] version in pyproject.toml, read from the installed metadata
    __version__ = _metadata.version("vpo-lab")
except _metadata.PackageNotFoundError:  # pragma: no cover - a source tree on sys.path, not installed
    __version__ = "0+unknown"
