"""Options of a search, given as ``key=value`` arguments and parsed by the one option layer (`vpo_core.cli_config`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vpo_core.cli_config import option, parse_config, split_command

__all__ = ["COMMANDS", "USAGE", "SearchConfig", "parse_args"]

COMMANDS = ("run", "report", "select")


@dataclass
class SearchConfig:
    """Everything a search run depends on (the defaults are the paper's case study).

    Problems: ``problems=hardest`` picks, from the saved pools of `vpo eval` (``pools=``: pool
    files or evaluation directories, one per arm), the tasks on which every arm scores 0 at
    best@``hardest_k``, keeping the first ``max_problems``; or give task indices or ids
    (``problems=[3,17]`` or ``problems=3,17``), or ``problems=all``.

    Model: one arm per run, the checkpoint behind an OpenAI-compatible endpoint (``base_url``, ``model``,
    ``api_key``); ``mode=multi`` asks for m candidates in the env's multi-answer format in one completion,
    ``mode=single`` makes m single-answer requests per iteration. Chat-template options
    (``chat_template_kwargs``; default the env profile's, e.g. Qwen3's thinking off, as in training and
    evaluation) travel in each request, which only a vLLM server takes, and what the template then pre-fills
    in the assistant turn (Qwen3's empty think block) is learned from the server and put before each
    completion; ``chat_template_kwargs={}`` sends none (any server).

    Feedback: ``feedback=public`` (default) shows the model, and lets the search select on, the env's
    public dimensions only (LiveCodeBench: the statement's examples); hidden tests score the final
    answer. ``feedback=all`` also shows every hidden test's verdict and selects on the full pass rate
    (the paper's "test feedback", whose scope the paper does not state; an opt-in, see the README).
    """

    env: str = option("lcb-v1", "env id")
    env_args: dict[str, Any] = option(  # noqa: RUF009 - option() is dataclasses.field with a help text
        default_factory=dict,
        help="an option of the env's config record (lcb-v1: data_dir, source, workers, time_limit_s)",
    )
    split: str = option("test", "the split whose problems are searched")
    problems: str = option("hardest", "hardest (from pools=), all, or task indices or ids: 3,17")
    pools: list[str] = option(  # noqa: RUF009 - option() is dataclasses.field with a help text
        default_factory=list, help="saved pools of vpo eval, one per arm (pool files or evaluation directories)"
    )
    hardest_k: int = option(30, "problems=hardest keeps the tasks every arm misses at best@hardest_k")
    max_problems: int | None = option(32, "keep the first max_problems selected problems (null: all)")
    shard: str | None = option(None, "i/n: this run takes every n-th selected problem, starting at i")
    # the arm
    arm: str = option("vpo", "the arm's label (a plain name: vpo, grpo)")
    base_url: str = option("http://127.0.0.1:8000/v1", "the OpenAI-compatible endpoint serving the arm's checkpoint")
    model: str | None = option(None, "served model name (default: the arm's label)")
    api_key: str = option("EMPTY", "the endpoint's API key")
    mode: str = option("multi", "multi: m candidates in one completion; single: m requests per iteration")
    m: int = option(3, "candidates per iteration")
    temperature: float = option(0.8, "sampling temperature")
    top_p: float = option(1.0, "nucleus sampling")
    max_tokens: int = option(4096, "completion tokens per request")
    chat_template_kwargs: dict[str, Any] | None = option(  # noqa: RUF009 - option() is dataclasses.field with help
        None, "chat-template options sent to a vLLM server (null: the env profile's; {}: none, any server)"
    )
    request_timeout_s: int = option(600, "seconds per request")
    retries: int = option(2, "retries of a failed request")
    max_consecutive_errors: int = option(5, "stop a problem after this many failed requests in a row")
    # the search
    iterations: int = option(200, "search iterations = model calls per problem; m candidates each")
    budget_s: float | None = option(None, "wall-clock seconds per problem and arm (null: no limit)")
    stop_when_solved: bool = option(True, "stop a problem once its hidden tests pass")
    feedback: str = option("public", "public | all: which tests' results the search shows and selects on")
    seed: int = option(0, "OpenEvolve's random seed")
    num_islands: int = option(5, "OpenEvolve islands")
    population_size: int = option(1000, "OpenEvolve population")
    num_top_programs: int = option(3, "top programs shown in each prompt")
    num_diverse_programs: int = option(2, "diverse programs shown in each prompt")
    workers: int = option(1, "OpenEvolve's parallel evaluations")
    eval_timeout_s: int = option(1800, "seconds per program evaluation")
    checkpoint_every: int = option(10, "search iterations between OpenEvolve checkpoints")
    out: str = option("results/search", "output directory (one folder per arm and problem)")
    skip_preflight: bool = option(False, "skip the endpoint and chat-template checks before searching")

    def __post_init__(self) -> None:
        self.problems = self.problems.strip("[]")  # problems=[3,17] is problems=3,17
        self.validate()

    def validate(self) -> SearchConfig:
        """Check values that the types do not.

        Raises:
            ValueError: Naming the option and what it accepts.
        """
        if self.mode not in ("single", "multi"):
            raise ValueError(f"mode must be single or multi, got {self.mode!r}.")
        if self.feedback not in ("public", "all"):
            raise ValueError(f"feedback must be public or all, got {self.feedback!r}.")
        if self.m < 1 or (self.mode == "multi" and self.m < 2):
            raise ValueError(f"m must be >= 1 (>= 2 with mode=multi), got {self.m}.")
        for name in ("iterations", "hardest_k", "num_islands", "population_size", "workers", "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        if self.max_consecutive_errors < 1 or self.retries < 0:
            raise ValueError("max_consecutive_errors must be >= 1 and retries >= 0.")
        if self.budget_s is not None and self.budget_s <= 0:
            raise ValueError(f"budget_s must be positive (or null for no limit), got {self.budget_s}.")
        if self.max_problems is not None and self.max_problems < 1:
            raise ValueError(f"max_problems must be >= 1 (or null for all), got {self.max_problems}.")
        if self.shard is not None:
            index, sep, count = self.shard.partition("/")
            if not (sep and index.isdigit() and count.isdigit() and 0 <= int(index) < int(count)):
                raise ValueError(f"shard must be i/n with 0 <= i < n (e.g. shard=0/4), got {self.shard!r}.")
        if not self.arm or "/" in self.arm or self.arm.startswith("."):
            raise ValueError(f"arm must be a plain label such as vpo or grpo, got {self.arm!r}.")
        return self

    @property
    def served_model(self) -> str:
        """The model name sent to the endpoint."""
        return self.model or self.arm


USAGE = """Test-time search: OpenEvolve with a served checkpoint on an env's hardest problems.

    uv sync --inexact --group search      # OpenEvolve (not in the default install)
    vllm serve runs/lcb-vpo/hf --served-model-name vpo --port 8000 --max-model-len 16384
    uv run vpo search select env.data_dir=DATA pools=results/eval       # which problems
    uv run vpo search arm=vpo base_url=http://127.0.0.1:8000/v1 env.data_dir=DATA pools=results/eval
    uv run vpo search arm=grpo base_url=http://127.0.0.1:8001/v1 env.data_dir=DATA pools=results/eval
    uv run vpo search report          # JSON and figure of every arm under out= (default results/search)

Commands: run (the default) searches, select writes the chosen problems, report summarises every arm.
Re-running the same command continues every unfinished search."""

PROG = "vpo search [run|select|report]"


def parse_args(argv: list[str]) -> tuple[str, SearchConfig]:
    """An optional command (``run``, ``report``, ``select``) and ``key=value`` options (`vpo_core.cli_config`).

    Values are typed by the fields (``budget_s=null``, ``pools=[a.npy,b.npy]`` or ``pools=a.npy,b.npy``);
    the env's options are ``env.KEY=VALUE`` (the old ``env_args.KEY=VALUE`` is refused, naming the new spelling).

    Raises:
        HelpRequested: For ``--help`` (or ``help``).
        ConfigError: For an unknown command or option, a missing ``=``, or a value of the wrong type or range.
    """
    argv = ["--help" if a == "help" else a for a in argv]
    command, rest = "run", argv
    if argv and argv[0] not in ("-h", "--help"):
        command, rest = split_command(argv, dict.fromkeys(COMMANDS, ""), prog=PROG, default="run")
    config = parse_config(
        SearchConfig,
        rest,
        prog=PROG,
        description=USAGE,
        passthrough={"env": "env_args"},
        renamed={"env_args": "env"},
    )
    return command, config
