"""``vpo train engine=verl env=<id> method=<m> [own keys] [env.KEY=VALUE] [section.key=value] [--dry-run]``.

Resolves the cell (env × method × n) from the env's profile (`recipes.cell`), composes veRL's own
``ppo_trainer`` Hydra config with it plus any ``section.key=value`` overrides, and validates it with
veRL's ``validate_config`` (batch divisibility, micro-batches), all before anything is exported or
launched. ``--dry-run`` prints a short summary (model, GPUs, batch sizes, lengths, epochs, estimator,
m, K, checkpoints, the launch command), writes the full composed YAML to ``<out>/verl_config.yaml``
and exits. Otherwise the env's splits are exported as parquet under ``<out>/data``, the prompts over
``data.max_prompt_length`` are counted (veRL drops them: ``data.filter_overlong_prompts=true``), and
``python -m verl.trainer.main_ppo`` runs with the same overrides, once three checks pass: this machine
has the accelerators the run asks for (`check_accelerators`: veRL has no CPU rollout or actor), the
trainer that ``main_ppo`` dispatches to imports (`check_trainer`), and the rollout engine is installed
(`check_rollout`). Each failing stops the run with one sentence (`CannotLaunch`) instead of a Ray
traceback minutes later.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vpo_core.cli_config import HelpRequested, exit_status, option, parse_config
from vpo_core.errors import ConfigError, MissingDataError, UserError
from vpo_core.methods import get_method
from vpo_core.registry import check_env_options, resolve_env_class
from vpo_core.weights import WEIGHT_SAMPLERS, check_weight_options, weight_sampler_help
from vpo_engines.verl.recipes import LOGGERS, RUN_DEFAULTS, Cell, cell, overrides

__all__ = [
    "LEGACY_TRAINER",
    "CannotLaunch",
    "LaunchConfig",
    "LaunchPlan",
    "check_accelerators",
    "check_rollout",
    "check_trainer",
    "compose",
    "local_accelerators",
    "main",
    "merge_command",
    "parse_launch",
    "plan",
    "summary",
    "trainer_modules",
    "validate",
]

LEGACY_TRAINER = ("verl.trainer.main_ppo_v0", "TaskRunner")
"""(module, class) of the legacy (v0) trainer's Ray task runner, which ``main_ppo`` runs when
``trainer.use_v1=false``: the GDPO route (`recipes._gdpo_overrides`) needs it, because only its
``RayPPOTrainer`` hands the per-dimension reward extras to veRL's ``gdpo`` estimator."""

V1_TRAINER_MODULES = ("transfer_queue", "verl.trainer.ppo.v1")
"""What ``main_ppo.TaskRunnerV1.run`` imports (the default trainer, ``trainer.use_v1=true``)."""


class CannotLaunch(Exception):
    """The run is valid, but this machine cannot start veRL's trainer (no accelerators, or it does not import)."""


_DESCRIPTION = """\
Train one cell (env x method x n) on veRL: the env's profile gives the recipe, veRL's ppo_trainer config is
composed with it and any section.key=value overrides and validated, the env's splits are exported as parquet
under <out>/data, then python -m verl.trainer.main_ppo runs. --dry-run stops after printing the summary and
writing <out>/verl_config.yaml."""


@dataclass
class LaunchConfig:
    """The options of ``vpo train engine=verl``: own keys, ``env.KEY=VALUE`` and veRL's ``section.key=value``."""

    env: str | None = option(None, "env id, required (vpo_core.list_envs(); or package.module:Class)")
    method: str = option("vpo", "training method")
    model: str | None = option(
        None,
        "policy model, a Hub id or a local HF directory (the env's recipe; generic envs: Qwen/Qwen2.5-1.5B-Instruct)",
    )
    m: int | None = option(None, "answers per completion of multi-answer methods (the method's, 3)")
    n: int = option(8, "rollouts per prompt (the paper's ablation: 24)")
    n_gpus: int | None = option(None, "GPUs per node (the env's recipe: 4, LiveCodeBench 8)")
    nnodes: int = option(RUN_DEFAULTS["nnodes"], "nodes of the Ray cluster")
    seed: int = option(0, "data order and group-shared Dirichlet weights")
    num_weights: int = option(100, "K, Dirichlet draws per group for VPO")
    alpha: float = option(1.0, "Dirichlet concentration")
    weight_sampler: str = option("dirichlet", weight_sampler_help())
    k: int | None = option(None, "k of Max@k (max(2, n // 2))")
    out: str | None = option(
        None, "run directory: data/, checkpoints/, verl_config.yaml (runs/verl/<env>-<method>[-n<n>])"
    )
    logger: str = option("console", f"comma-separated trackers among {','.join(LOGGERS)}")
    save_freq: int = option(RUN_DEFAULTS["save_freq"], "checkpoint every N steps and at the last step; -1 never")
    test_freq: int = option(RUN_DEFAULTS["test_freq"], "validate (greedy) every N steps and at the last step; -1 never")
    max_ckpt_to_keep: int = option(RUN_DEFAULTS["max_ckpt_to_keep"], "checkpoints kept on disk")
    resume_mode: str = option(
        RUN_DEFAULTS["resume_mode"], "auto: rerun the same command to resume after a crash; disable"
    )
    limit: int | None = option(None, "export only the first N tasks of each split (smoke runs)")
    dry_run: bool = option(
        False, "print the summary, write the composed config to <out>/verl_config.yaml, export and launch nothing"
    )
    env_options: dict[str, Any] = option(  # noqa: RUF009 - option() is dataclasses.field with a help text
        default_factory=dict, help="an option of the env's config record (e.g. env.data_dir=/data/mine)"
    )
    verl_overrides: list[str] = option(  # noqa: RUF009 - option() is dataclasses.field with a help text
        default_factory=list,
        help="any other dotted key is a veRL config override, e.g. trainer.n_gpus_per_node=4 (unknown keys fail "
        "before launch; prefix a new key with '+')",
    )


def parse_launch(argv: Sequence[str]) -> LaunchConfig:
    """The launcher's options, parsed by the one option layer (`vpo_core.cli_config`).

    Raises:
        vpo_core.cli_config.HelpRequested: For ``--help``.
        ConfigError: For an unknown key (naming the known ones) or a value of the wrong type.
    """
    return parse_config(
        LaunchConfig,
        argv,
        prog="vpo train engine=verl",
        description=_DESCRIPTION,
        passthrough={"env": "env_options"},
        flags={"--dry-run": "dry_run"},
        overrides="verl_overrides",
    )


def compose(overrides: list[str]) -> Any:
    """VeRL's ``ppo_trainer`` config composed with Hydra and `overrides`.

    Raises:
        ConfigError: If an override names a key veRL's config does not have (or is malformed).
    """
    import verl
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=config_dir, version_base=None):
            return hydra_compose(config_name="ppo_trainer", overrides=overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(
            f"veRL's ppo_trainer config rejected the overrides: {exc}. Check the key names (prefix a new key "
            "with '+', e.g. +algorithm.vpo.k=4)."
        ) from exc


def validate(config: Any) -> None:
    """VeRL's own ``validate_config`` (what ``main_ppo`` runs first), with its failures as `ConfigError`."""
    import warnings

    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    try:
        # validate_config prints a success line; the launcher's summary comes first
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.filterwarnings("ignore", message="Disabled critic")
            validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    except (AssertionError, ValueError) as exc:
        raise ConfigError(
            f"veRL's validate_config rejected the cell: {exc}. Batch sizes must satisfy: train_batch x n divisible "
            "by n_gpus x nnodes, and the mini-batch divisible by micro_batch x n_gpus."
        ) from exc


def trainer_modules(config: Any) -> tuple[str, ...]:
    """The modules ``python -m verl.trainer.main_ppo`` imports to run `config`: its own and its trainer's."""
    trainer = V1_TRAINER_MODULES if bool(config.trainer.get("use_v1", True)) else (LEGACY_TRAINER[0],)
    return ("verl.trainer.main_ppo", *trainer)


def check_trainer(config: Any) -> None:
    """Import what ``main_ppo`` will import for `config`, so that a partial install fails here, not in a Ray actor.

    Raises:
        CannotLaunch: If one of `trainer_modules` is missing (a module missing from the environment), naming
            the module and the fix. Any other import failure propagates with its traceback.
    """
    import importlib

    modules = trainer_modules(config)
    which = "legacy (trainer.use_v1=false)" if LEGACY_TRAINER[0] in modules else "v1"
    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            raise CannotLaunch(
                f"veRL's {which} trainer does not import here (importing {module} fails: no module named "
                f"{exc.name!r}), so install vpo-engines' verl dependencies in full (uv sync --group verl, or pip "
                "install 'vpo-engines[verl]') and rerun."
            ) from exc


ROLLOUT_MODULES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt_llm"}
"""The module of each rollout engine veRL 0.9.1 registers (``actor_rollout_ref.rollout.name``)."""


def check_rollout(config: Any) -> None:
    """Check that the rollout engine the config names is installed (found, not imported: vLLM's import is slow).

    Raises:
        CannotLaunch: If it is not, naming the engine and the install that brings it.
    """
    import importlib.util

    name = str(config.actor_rollout_ref.rollout.name)
    module = ROLLOUT_MODULES.get(name)
    if module is not None and importlib.util.find_spec(module) is None:
        fix = "uv sync --group vllm, which brings veRL's vllm extra" if name == "vllm" else f"install {module}"
        raise CannotLaunch(
            f"veRL's rollout engine {name} (actor_rollout_ref.rollout.name) is not installed here, so install it on "
            f"the GPU machines ({fix}) and rerun."
        )


def local_accelerators() -> tuple[str, int]:
    """The kind and number of accelerators veRL could use on this machine: (``"CUDA GPU"`` or ``"NPU"``, count)."""
    import torch
    from verl.utils.device import is_npu_available

    if is_npu_available:
        return "NPU", int(torch.npu.device_count())  # type: ignore[attr-defined]  # registered by torch_npu
    return "CUDA GPU", int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def check_accelerators(config: Any, done: str) -> None:
    """Stop before launching unless this machine has the accelerators the run asks for.

    veRL has no CPU path (its rollouts are vLLM/SGLang/TensorRT-LLM servers and its actor is FSDP or
    Megatron on CUDA or NPU devices), so a single-node run needs ``trainer.n_gpus_per_node`` devices
    here. A run that joins an existing Ray cluster (``RAY_ADDRESS`` or ``ray_kwargs.ray_init.address``)
    or spans several nodes is not checked: Ray counts that cluster's devices.

    Args:
        config: The composed veRL config.
        done: What already ran, for the message (e.g. the exported files).

    Raises:
        CannotLaunch: With one sentence naming what is missing, what already ran and what to do instead.
    """
    ray_init = config.ray_kwargs.get("ray_init", None) or {}
    if os.environ.get("RAY_ADDRESS") or ray_init.get("address") or int(config.trainer.nnodes) > 1:
        return
    need = int(config.trainer.n_gpus_per_node)
    kind, found = local_accelerators()
    if found >= need:
        return
    if found == 0:
        raise CannotLaunch(
            f"veRL needs {need} {kind}s for its rollout (vLLM) and actor (FSDP) and this machine has none: everything "
            f"before that ran ({done}), so run the same command on a GPU machine, or train on CPU with engine=local "
            "or engine=trl."
        )
    raise CannotLaunch(
        f"veRL was asked for {need} {kind}s per node (trainer.n_gpus_per_node) and this machine has {found}: "
        f"everything before that ran ({done}), so pass n_gpus={found} (the batch sizes must divide by it) or run on "
        f"a machine with {need}."
    )


def merge_command(checkpoint_dir: str | Path, target_dir: str | Path, step: int | str = "<N>") -> str:
    """The one command that turns a veRL FSDP checkpoint into a Hugging Face model directory."""
    actor = Path(checkpoint_dir) / f"global_step_{step}" / "actor"
    return (
        f"python -m verl.model_merger merge --backend fsdp --local_dir {shlex.quote(str(actor))} "
        f"--target_dir {shlex.quote(str(target_dir))}"
    )


@dataclass(frozen=True)
class LaunchPlan:
    """A resolved, composed and validated run: what `main` prints, exports and launches."""

    cell: Cell
    out: Path
    overrides: list[str]
    config: Any
    env_config: dict[str, Any]
    options: dict[str, Any]

    @property
    def command(self) -> list[str]:
        """The launch command."""
        return [sys.executable, "-m", "verl.trainer.main_ppo", *self.overrides]

    @property
    def train_file(self) -> Path:
        """Parquet of the train split."""
        return self.out / "data" / "train.parquet"

    @property
    def val_file(self) -> Path:
        """Parquet of the test split."""
        return self.out / "data" / "test.parquet"

    @property
    def checkpoint_dir(self) -> Path:
        """``trainer.default_local_dir``."""
        return self.out / "checkpoints"

    @property
    def config_file(self) -> Path:
        """Where the composed YAML is written."""
        return self.out / "verl_config.yaml"


def _check_choices(env_id: str, method: str, m: int | None) -> None:
    """The env id, method and m the user named, refused as `ConfigError` (the registry's own messages)."""
    try:
        resolve_env_class(env_id)
    except KeyError as exc:
        raise ConfigError(f"env={env_id}: {exc.args[0]}") from exc
    try:
        get_method(method).resolve_m(m)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


def _check_model(model: str | None) -> None:
    if model is None:
        return
    # a Hub id is "name" or "org/name"; anything else is a path
    looks_local = model.startswith((".", "/", "~")) or model.count("/") > 1 or Path(model).exists()
    if looks_local and not Path(model).expanduser().is_dir():
        raise MissingDataError(
            f"model path {model!r} does not exist; pass a local HF model directory or a Hub id like Qwen/Qwen3-4B."
        )


def plan(argv: Sequence[str]) -> tuple[LaunchPlan, bool]:
    """Parse, resolve, compose and validate; returns the plan and whether this is a dry run.

    Raises:
        ConfigError: On a bad option (unknown key, env, method, m, veRL key or batch size).
        MissingDataError: On a model path that is not a directory.
    """
    config = parse_launch(argv)
    if config.env is None:
        from vpo_core.registry import list_envs

        raise ConfigError(f"pass env=ID (installed: {', '.join(list_envs()) or 'none'}).")
    env_id = config.env
    _check_choices(env_id, config.method, config.m)
    _check_model(config.model)
    c = cell(
        env_id, config.method, m=config.m, n=config.n, model=config.model, n_gpus=config.n_gpus, nnodes=config.nnodes
    )
    env_config = check_env_options(env_id, config.env_options)[1] if config.env_options else {}
    suffix = "" if c.n == 8 else f"-n{c.n}"
    out = Path(config.out if config.out is not None else f"runs/verl/{c.env_id}-{c.method}{suffix}")
    logger = tuple(name for name in config.logger.split(",") if name)
    options: dict[str, Any] = {
        "seed": config.seed,
        "num_weights": config.num_weights,
        "alpha": config.alpha,
        "weight_sampler": config.weight_sampler,
        "k": config.k,
        "logger": logger,
        "save_freq": config.save_freq,
        "test_freq": config.test_freq,
        "max_ckpt_to_keep": config.max_ckpt_to_keep,
        "resume_mode": config.resume_mode,
        "limit": config.limit,
    }
    check_weight_options(options["alpha"], options["num_weights"], options["weight_sampler"])
    cell_overrides = overrides(
        c,
        train_files=str(out / "data" / "train.parquet"),
        val_files=str(out / "data" / "test.parquet"),
        checkpoint_dir=str(out / "checkpoints"),
        **{key: value for key, value in options.items() if key != "limit"},
    )
    tracker_env = _tracker_env(logger, out)
    cell_overrides += [f"+ray_kwargs.ray_init.runtime_env.env_vars.{key}={value}" for key, value in tracker_env.items()]
    all_overrides = cell_overrides + config.verl_overrides
    composed = compose(all_overrides)
    validate(composed)
    options["env_ref"] = env_id  # what the user named: an entry-point id or "package.module:Class"
    return LaunchPlan(c, out, all_overrides, composed, env_config, options), config.dry_run


def _tracker_env(logger: Sequence[str], out: Path) -> dict[str, str]:
    """Where offline trackers write inside the run directory (unless the user's environment says)."""
    env: dict[str, str] = {}
    if "tensorboard" in logger and "TENSORBOARD_DIR" not in os.environ:
        env["TENSORBOARD_DIR"] = str(out / "tensorboard")
    if "file" in logger and "VERL_FILE_LOGGER_PATH" not in os.environ:
        env["VERL_FILE_LOGGER_PATH"] = str(out / "metrics.jsonl")
    return env


def summary(p: LaunchPlan) -> str:
    """The short human summary printed before anything else."""
    c = p.cell
    chat = ", ".join(f"{k}={v}" for k, v in c.chat_template_kwargs.items()) or "none"
    source = f"the paper recipe of {c.env_id}" if c.paper_recipe else "vpo-engines' generic defaults (no recipe)"
    draws = WEIGHT_SAMPLERS[p.options["weight_sampler"]].description
    vpo = f"K = {p.options['num_weights']} {draws} per group, alpha {p.options['alpha']}, seed {p.options['seed']}"
    total = c.n_gpus * c.nnodes
    lines = [
        f"veRL run: {c.env_id} x {c.method} (n = {c.n}), values from {source}",
        f"  model        {c.model}",
        f"  GPUs         {c.n_gpus} per node x {c.nnodes} node(s) = {total}",
        f"  batch        {c.train_batch} prompts x {c.n} rollouts per step; mini-batch {c.mini_batch}, "
        f"micro-batch {c.micro_batch} per GPU",
        f"  lengths      prompt <= {c.prompt_length}, response <= {c.response_length} tokens (chat template: {chat})",
        f"  sampling     T = {c.temperature}, top-p {c.top_p}; validation greedy",
        f"  epochs       {c.epochs}",
        f"  estimator    {c.estimator} (mode {c.mode}, m = {c.m}; {vpo}"
        + (f"; max@k k = {p.options['k'] or 'max(2, n // 2)'}" if c.estimator == "max_at_k" else "")
        + ")",
        f"  checkpoints  {p.checkpoint_dir} (every {p.options['save_freq']} steps and the last; keep "
        f"{p.options['max_ckpt_to_keep']}; resume {p.options['resume_mode']})",
        f"  logger       {','.join(p.options['logger'])}",
        f"  data         {p.train_file}, {p.val_file}",
        f"  config       {p.config_file}",
        f"  merge        {merge_command(p.checkpoint_dir, p.out / 'hf')}",
        f"  launch       {shlex.join(p.command)}",
    ]
    return "\n".join(lines)


def _write_config(p: LaunchPlan) -> None:
    from omegaconf import OmegaConf

    p.config_file.parent.mkdir(parents=True, exist_ok=True)
    p.config_file.write_text(OmegaConf.to_yaml(p.config))


def _report_overlong(p: LaunchPlan, split: str, path: Path) -> None:
    from vpo_engines.verl.export import count_overlong, load_tokenizer

    tokenizer = load_tokenizer(p.cell.model)
    if tokenizer is None:
        print(
            f"note: could not load the tokenizer of {p.cell.model} here to count {split} prompts over "
            f"{p.cell.prompt_length} tokens; veRL prints 'filter dataset len: N' when it drops them.",
            file=sys.stderr,
        )
        return
    import datasets

    rows = datasets.Dataset.from_parquet(str(path)).to_list()
    report = count_overlong(rows, tokenizer, p.cell.prompt_length, p.cell.chat_template_kwargs)
    (path.parent / f"{split}_overlong.json").write_text(json.dumps(report.as_dict(), indent=2))
    print(f"{split}: {report.describe()}", file=sys.stderr)


def _write_data_source(p: LaunchPlan) -> None:
    """Record where the env's data came from (Hub id, revision, resolved commit, files) beside the parquet files."""
    from vpo_core.registry import make

    env = make(str(p.options["env_ref"]), **p.env_config)
    (p.train_file.parent / "data_source.json").write_text(json.dumps(env.data_source(), indent=2, default=str))


def _rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.read_metadata(str(path)).num_rows)


def main(argv: list[str]) -> int:
    """Run (or with ``--dry-run`` summarise and write the config of) one cell on veRL."""
    try:
        return _main(argv)
    except (HelpRequested, UserError) as exc:
        return exit_status(exc)
    except CannotLaunch as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _main(argv: list[str]) -> int:
    from vpo_engines.verl.export import export_split

    p, dry_run = plan(argv)
    print(summary(p))
    _write_config(p)
    if dry_run:
        print(f"dry run: wrote the composed config to {p.config_file}; nothing exported or launched.")
        return 0
    c = p.cell
    for split, path in (("train", p.train_file), ("test", p.val_file)):
        export_split(
            path,
            str(p.options["env_ref"]),
            split,
            c.method,
            m=c.m,
            seed=int(p.options["seed"]),
            env_config=p.env_config,
            limit=p.options["limit"],
        )
        _report_overlong(p, split, path)
    _write_data_source(p)
    done = (
        f"composed and validated veRL's config into {p.config_file}, exported {_rows(p.train_file)} train and "
        f"{_rows(p.val_file)} test prompts to {p.train_file.parent}"
    )
    check_accelerators(p.config, done)
    check_trainer(p.config)
    check_rollout(p.config)
    print("launching:", shlex.join(p.command), file=sys.stderr)
    return subprocess.call(p.command)
