"""vpo-engines: what runs models over vpo-core's library.

- `vpo_engines.models`: the model floor (a Hugging Face `Policy`, the shared-prompt decoder, chat rendering and
  pre-fill, the vLLM and OpenAI-compatible samplers);
- `vpo_engines.local`, `vpo_engines.trl`, `vpo_engines.verl`: the three training engines (one process; TRL's
  GRPOTrainer; stock veRL 0.9.1 through its plugin entry point). No engine imports another;
- `vpo_engines.runs` (the run directory training writes and evaluation reads), `vpo_engines.checkpoints`;
- `vpo_engines.evaluate` (``vpo eval``), `vpo_engines.diagnose` (``vpo diagnose``) and `vpo_engines.cli`, the
  ``vpo`` console script (``python -m vpo_engines``).

The base install needs numpy and vpo-core; each engine's stack is an extra (``local``, ``trl``, ``verl``,
``tracking``), imported lazily.
"""

from vpo_core.versions import installed_version

__version__ = installed_version("vpo-engines")  # single source: [project] version in pyproject.toml
