"""vpo-lab: the VPO project's research code, on top of the vpo-core library (which never imports it).

- `vpo_lab.tabular`: the mechanism study without a language model (tabular policies over an env's
  enumerated outcomes, `vpo_core.types.OutcomeTable`); ``apps/mechanism.py``.
- `vpo_lab.experiment`: the methods × seeds grid of local runs with shared warm starts, its evaluation
  and resumable done-markers; ``apps/experiment.py``.
- `vpo_lab.experiment_report`: the grid's tables with seed-level intervals, ``summary.json`` and plots.
- `vpo_lab.recipes`: the grid's named recipes (``recipe=v2``).
"""

from vpo_core.versions import installed_version

__version__ = installed_version("vpo-lab")  # single source: [project] version in pyproject.toml
