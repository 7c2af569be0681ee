"""vpo-search: test-time search (OpenEvolve) with a served checkpoint over any env that can evaluate programs.

The env decides how a program is evaluated and what the model is shown (`SearchableEnv`); OpenEvolve
runs the search through its library API; the model is any OpenAI-compatible endpoint; the ledger keeps
every model call and evaluation on disk, so searches resume and their pass@k / best@k curves are exact.
"""

from vpo_core.versions import installed_version
from vpo_search.adapter import AnswerSearch
from vpo_search.config import SearchConfig, parse_args
from vpo_search.engine import RunStatus, SearchError, search_problem
from vpo_search.ledger import Ledger, program_hash
from vpo_search.preflight import EndpointError, check_endpoint
from vpo_search.protocol import ProgramEvaluation, SearchableEnv, check_searchable, evaluate, program_of
from vpo_search.report import collect, plot_curves, problem_summary, write_report
from vpo_search.selection import hardest_problems, load_pools, pool_best_at_k, resolve_problems

__all__ = [
    "AnswerSearch",
    "EndpointError",
    "Ledger",
    "ProgramEvaluation",
    "RunStatus",
    "SearchConfig",
    "SearchError",
    "SearchableEnv",
    "check_endpoint",
    "check_searchable",
    "collect",
    "evaluate",
    "hardest_problems",
    "load_pools",
    "parse_args",
    "plot_curves",
    "pool_best_at_k",
    "problem_summary",
    "program_hash",
    "program_of",
    "resolve_problems",
    "search_problem",
    "write_report",
]
__version__ = installed_version("vpo-search")  # single source: [project] version in pyproject.toml
