"""Options of a search, typed with OmegaConf and given as ``key=value`` arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

__all__ = ["COMMANDS", "SearchConfig", "parse_args"]

COMMANDS = ("run", "report", "select")


@dataclass
class SearchConfig:
    """Everything a search run depends on (the defaults are the paper's case study).

    Problems: ``problems=hardest`` picks, from the saved pools of `apps/evaluate.py` (``pools=``: pool
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

    env: str = "lcb-v1"
    env_args: dict[str, Any] = field(default_factory=dict)
    split: str = "test"
    problems: str = "hardest"
    pools: list[str] = field(default_factory=list)
    hardest_k: int = 30
    max_problems: int | None = 32
    shard: str | None = None  # "i/n": this run takes every n-th selected problem, starting at i
    # the arm
    arm: str = "vpo"
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str | None = None  # served model name; default: the arm's label
    api_key: str = "EMPTY"
    mode: str = "multi"
    m: int = 3
    temperature: float = 0.8
    top_p: float = 1.0
    max_tokens: int = 4096
    chat_template_kwargs: dict[str, Any] | None = None  # None: the env profile's; {}: none (any server)
    request_timeout_s: int = 600
    retries: int = 2
    max_consecutive_errors: int = 5
    # the search
    iterations: int = 200  # search iterations = model calls per problem; m candidates each
    budget_s: float | None = None  # wall-clock seconds per problem and arm (None: no limit)
    stop_when_solved: bool = True
    feedback: str = "public"  # public | all: which tests' results the search shows and selects on
    seed: int = 0
    num_islands: int = 5
    population_size: int = 1000
    num_top_programs: int = 3
    num_diverse_programs: int = 2
    workers: int = 1
    eval_timeout_s: int = 1800
    checkpoint_every: int = 10  # search iterations between OpenEvolve checkpoints
    out: str = "results/search"
    skip_preflight: bool = False

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


def parse_args(argv: list[str]) -> tuple[str, SearchConfig]:
    """An optional command (``run``, ``report``, ``select``) and ``key=value`` options.

    Values are parsed as YAML by OmegaConf (``budget_s=null``, ``pools=[a.npy,b.npy]``) and checked
    against the field types; a comma-separated ``pools=a.npy,b.npy`` is accepted too.

    Raises:
        ValueError: For an unknown command or option, a missing ``=``, or a value of the wrong type.
    """
    command = "run"
    if argv and argv[0] in COMMANDS:
        command, argv = argv[0], argv[1:]
    dotlist = []
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep:
            raise ValueError(
                f"arguments are an optional command ({', '.join(COMMANDS)}) then key=value pairs, got {arg!r} "
                "(e.g. iterations=200 m=3)."
            )
        key = key.lstrip("-").replace("-", "_")
        if key == "pools" and value and not value.startswith("["):
            value = "[" + ",".join(value.split(",")) + "]"
        if key == "problems":
            value = value.strip("[]")
            value = f"'{value}'"
        dotlist.append(f"{key}={value}")
    schema = OmegaConf.structured(SearchConfig)
    try:
        merged = OmegaConf.merge(schema, OmegaConf.from_dotlist(dotlist))
        config: SearchConfig = OmegaConf.to_object(merged)  # type: ignore[assignment]
    except OmegaConfBaseException as exc:
        known = ", ".join(f.name for f in SearchConfig.__dataclass_fields__.values())
        message = str(exc).splitlines()[0]
        raise ValueError(f"bad option: {message}. Valid options: {known}.") from None
    return command, config.validate()
