"""The TRL adapter: TRL's GRPOTrainer with vpo-core's set-level advantages (``vpo train engine=trl``).

Needs the ``trl`` dependency group (``uv sync --group trl``); nothing here is imported by vpo-engines'
base install.
"""
