"""The veRL adapter (``vpo-engines[verl]``): a plugin for stock veRL 0.9.1 and the ``engine=verl`` launcher.

The only code of the project that imports verl. ``plugin`` (loaded in every Ray process through the
``verl.plugins`` entry point) registers the ``vpo`` reward manager and the ``grpo_pop``, ``maxrl``
and ``max_at_k`` group estimators; ``export`` writes env splits as veRL parquet; ``recipes`` turns
an env's profile (its paper recipe, or generic defaults) and a method into veRL overrides, holding only
the settings every domain shares; ``launch`` composes veRL's Hydra config, validates it and runs it.
"""
