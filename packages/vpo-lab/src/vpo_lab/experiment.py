"""A grid of local runs (methods × seeds) with shared warm starts, their evaluation and a summary.

``uv run apps/experiment.py env=maze-v1`` regenerates a results folder from nothing:

1. one warm start per (prompt mode, seed): ``train steps=0`` saves ``init_model`` after the
   supervised warm-up, so every method of a mode starts a seed from the same weights and the methods
   differ only in the estimator, as in the paper;
2. one RL run per (method, seed) from that warm start (``model=<warm start> warmup_steps=0``);
3. ``evaluate`` on every final model and every warm start (the paper's pools);
4. the compact summary of each run (config, per-step metrics gzipped, pools as ``.npz``) copied into
   ``out/``, where `vpo_lab.experiment_report` turns it into tables with intervals.

Every job runs as a subprocess of the local engine's commands (``python -m vpo_engines.local
train|evaluate``, what ``apps/train.py`` and ``apps/evaluate.py`` run; no checkout needed) and leaves a
``done.json`` marker holding its command, so re-running the same command skips what is finished and
resumes what is not (a killed RL run resumes from its checkpoint; markers written when jobs ran
``apps/<command>.py`` by path still count). A job whose dependency runs again runs again too (a warm
start or run redone from scratch is a new trajectory; `pending_jobs`). ``jobs=2`` runs two at a time,
each on ``threads`` torch threads.

The committed ``out/`` folder is the grid's state too: collecting writes ``out/done/`` markers for the
evaluations whose pools it holds once their run is finished, for the runs all of whose evaluations it
holds (and, with
``keep_warm=true``, for the warm starts whose models it keeps in ``out/warm/``), so a fresh clone with
an empty ``work/`` skips those jobs, restores the kept warm starts and runs only what is missing; its
``index.json`` keeps the records of those earlier pools.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vpo_core.cli_config import option, run_cli
from vpo_core.errors import ConfigError
from vpo_core.evaluation import load_pool, save_pool
from vpo_core.methods import METHODS, get_method
from vpo_core.registry import DEFAULT_ENV
from vpo_core.weights import check_weight_sampler
from vpo_lab.experiment_report import KEPT_METRICS, write_report
from vpo_lab.recipes import RECIPES

MARKER_IDENTITY = 3
"""Written into every new done-marker: its ``args`` name every option whose engine default has changed."""
LEGACY_PINS = {"lr=0.0001": 2, "prompts_per_step=8": 3}
"""Options a recipe pins at the local engine's earlier default, each with the marker identity from which markers
name it (lr 1e-4 until session 25, 8 prompts per step until session 26; a marker without ``"identity"`` is 1): an
older marker that does not name the key ran with this value, so it still counts for the pinned job."""

__all__ = ["ExperimentConfig", "Job", "main", "plan", "recipe_options", "restore_warm_starts"]


@dataclass
class ExperimentConfig:
    """What the experiment runs (every field is a ``key=value`` option of ``apps/experiment.py``)."""

    env: str = option(DEFAULT_ENV, "env id")
    methods: str = option(
        "grpo,multi_rlvr,vpo,random_w,max_at_k,maxrl,goal_cond,gdpo", "methods, comma-separated (the paper's eight)"
    )
    main_methods: str = option("grpo,multi_rlvr,vpo", "methods run with main_seeds seeds; the others get other_seeds")
    main_seeds: int = option(5, "seeds of the main methods")
    other_seeds: int = option(3, "seeds of the other methods")
    ablation_options: str = option(
        "env.demonstrations=solver",
        "extra train options of the warm-start ablation (run for the main methods' first ablation_seeds seeds); "
        "empty = no ablation",
    )
    ablation_seeds: int = option(2, "seeds of the warm-start ablation")
    starts: str = option(
        "",
        "warm starts, ';'-separated name:train-options (each start runs every method with its full seeds, "
        "e.g. 'random:env.demonstrations=random;direct:env.demonstrations=direct'); empty: the start 'main' "
        "plus the ablation",
    )
    recipe: str = option(
        "", "a named recipe of the env (vpo_lab.recipes, e.g. v2 of maze-v1); options given here override it"
    )
    warm_seeds: int = option(
        0, "distinct warm starts per (start, mode): RL seed s starts from warm start s % warm_seeds (0: one per seed)"
    )
    steps: int = option(50, "RL steps per run")
    eval_steps: str = option(
        "", "RL steps whose model (kept with keep_steps=) is evaluated besides the final one, e.g. 50,150"
    )
    budget_single: int = option(0, "token budget of single-answer runs in training and evaluation (0: the defaults)")
    budget_multi: int = option(0, "token budget of multi-answer runs in training and evaluation (0: the defaults)")
    train: str = option("", "extra apps/train.py options for every run, space-separated key=value")
    warm_train: str = option(
        "",
        "extra apps/train.py options of the warm-start jobs only, space-separated key=value (e.g. "
        "'device=cuda warmup_steps=8000 warmup_batch=64': warm starts made on a GPU, RL runs on the CPU)",
    )
    only: str = option(
        "", "run only part of the grid: 'warm' (the warm starts and their evaluations, e.g. on a GPU machine)"
    )
    weight_sampler: str = option(
        "dirichlet", "weights of VPO/random_w in every run: dirichlet or sobol (quasi-Monte Carlo)"
    )
    eval_tasks: int = option(100, "test tasks evaluated")
    eval_samples: int = option(30, "candidates per task (samples // m chains in multi mode)")
    evaluate: str = option("", "extra apps/evaluate.py options, space-separated key=value")
    jobs: int = option(2, "jobs run at once")
    threads: int = option(1, "torch threads per job")
    work: str | None = option(None, "run directories (big; not committed); default runs/experiment-<env>")
    out: str | None = option(None, "summary folder (small; committed); default results/<env>-miniature")
    keep_warm: bool = option(
        False,
        "also keep each warm start's model in out/warm/ (committed, ~4 bytes per parameter), so that a fresh clone "
        "resumes the grid without redoing its warm-ups",
    )
    dry_run: bool = option(False, "print the jobs and exit")
    collect_only: bool = option(
        False, "run nothing: write out/ (summary, tables) from the jobs finished so far, e.g. of a grid still running"
    )

    def __post_init__(self) -> None:
        unknown = [m for m in self.method_list if m not in METHODS]
        if unknown:
            raise ValueError(f"unknown methods {unknown}; choose from {sorted(METHODS)}.")
        for name in ("main_seeds", "other_seeds", "jobs", "threads", "eval_tasks", "eval_samples"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        for name in ("steps", "ablation_seeds", "budget_single", "budget_multi", "warm_seeds"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}.")
        try:
            steps = self.eval_step_list
        except ValueError:
            raise ValueError(f"eval_steps must be comma-separated step numbers, got {self.eval_steps!r}.") from None
        if any(not 1 <= step < self.steps for step in steps):
            raise ValueError(f"eval_steps must lie in [1, steps) = [1, {self.steps}), got {self.eval_steps!r}.")
        for text in self.starts.split(";"):
            if text.strip() and not text.partition(":")[0].strip():
                raise ValueError(f"each start is name:train-options, got {text!r} in starts={self.starts!r}.")
        check_weight_sampler(self.weight_sampler)
        if self.only not in ("", "warm"):
            raise ValueError(f"only must be empty or 'warm', got only={self.only!r}.")

    @property
    def eval_step_list(self) -> list[int]:
        """The intermediate RL steps evaluated (sorted); the final model is always evaluated."""
        return sorted({int(part) for part in self.eval_steps.strip("[]").split(",") if part.strip()})

    def budget(self, mode: str) -> int:
        """The token budget of a prompt mode (0: the engines' defaults)."""
        return self.budget_multi if mode == "multi" else self.budget_single

    @property
    def method_list(self) -> list[str]:
        """The methods, in the order given."""
        return [m.strip() for m in self.methods.split(",") if m.strip()]

    def seeds(self, method: str) -> int:
        """How many seeds `method` runs."""
        main = {m.strip() for m in self.main_methods.split(",")}
        return self.main_seeds if method in main else self.other_seeds

    @property
    def work_dir(self) -> Path:
        """Where the run directories go."""
        return Path(self.work or f"runs/experiment-{self.env}")

    @property
    def out_dir(self) -> Path:
        """Where the committed summary goes."""
        return Path(self.out or f"results/{self.env}-miniature")


@dataclass
class Job:
    """One subprocess of the experiment.

    Attributes:
        name: Unique name (also the folder of its marker).
        kind: ``"warm"``, ``"train"`` or ``"eval"``.
        args: The command and its options: ``["train" | "evaluate", key=value, ...]``, run as
            ``python -m vpo_engines.local <args>``.
        after: Names of the jobs that must finish first.
        info: What the summary needs to know (method, seed, mode, variant, run directory).
    """

    name: str
    kind: str
    args: list[str]
    after: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


def _variants(config: ExperimentConfig) -> list[tuple[str, list[str], int | None]]:
    """(variant name, extra train options, seed cap): the starts, or the main grid and the warm-start ablation."""
    if config.starts.strip():
        starts = [text.partition(":") for text in config.starts.split(";") if text.strip()]
        return [(name.strip(), opts.split(), None) for name, _, opts in starts]
    out: list[tuple[str, list[str], int | None]] = [("main", [], None)]
    if config.ablation_options.strip() and config.ablation_seeds:
        out.append(("ablation", config.ablation_options.split(), config.ablation_seeds))
    return out


def plan(config: ExperimentConfig) -> list[Job]:
    """Every job of the experiment, dependencies before dependants.

    Seed 0 of every arm comes first and each evaluation right after its run, so that results land
    arm by arm when the jobs run in this order.
    """
    jobs: list[Job] = []
    warm_names: set[str] = set()
    main = {m.strip() for m in config.main_methods.split(",")}
    for variant, extra, cap in _variants(config):
        for method in config.method_list:
            if variant == "ablation" and method not in main:
                continue
            mode = get_method(method).mode
            seeds = config.seeds(method) if cap is None else min(cap, config.seeds(method))
            for seed in range(seeds):
                warm_seed = seed % config.warm_seeds if config.warm_seeds else seed
                warm = _warm_start_jobs(config, variant, mode, warm_seed, extra)
                if warm[0].name not in warm_names:
                    warm_names.add(warm[0].name)
                    jobs.extend(warm)
                jobs.extend(_run_jobs(config, variant, method, seed, warm[0], extra))
    return sorted(jobs, key=lambda job: int(job.info.get("seed", 0)))


def _warm_start_jobs(config: ExperimentConfig, variant: str, mode: str, seed: int, extra: list[str]) -> list[Job]:
    """The warm start of (start, mode, seed) and its evaluation."""
    name = f"{variant}/warm-{mode}-seed{seed}"
    warm_dir = config.work_dir / name
    # any method of the mode gives the same warm-up (it depends on mode, m and seed only)
    warm_method = next(m for m in config.method_list if get_method(m).mode == mode)
    common = _common_train_args(config)
    warm = Job(
        name,
        "warm",
        [*_train_args(warm_method, seed, 0), f"out={warm_dir}", *common, *extra, *config.warm_train.split()],
        info={"variant": variant, "mode": mode, "seed": seed, "run": str(warm_dir)},
    )
    evaluation = _eval_job(config, f"{name}@init", f"{warm_dir}@init", [name], mode)
    evaluation.info.update(variant=variant, method=f"warm-{mode}", seed=seed, mode=mode)
    return [warm, evaluation]


def _run_jobs(config: ExperimentConfig, variant: str, method: str, seed: int, warm: Job, extra: list[str]) -> list[Job]:
    """The RL run of (start, method, seed) from `warm`, then the evaluation of each kept step and the final model."""
    mode = get_method(method).mode
    name = f"{variant}/{method}-seed{seed}"
    run_dir = config.work_dir / name
    common = _common_train_args(config)
    budget = [f"max_new_tokens={config.budget(mode)}"] if config.budget(mode) else []
    kept = [f"keep_steps={','.join(map(str, config.eval_step_list))}"] if config.eval_step_list else []
    train = Job(
        name,
        "train",
        [
            *_train_args(method, seed, config.steps),
            f"model={Path(warm.info['run']) / 'init_model'}",
            "warmup_steps=0",
            f"out={run_dir}",
            *common,
            *budget,
            *kept,
            *extra,
        ],
        after=[warm.name],
        info={"variant": variant, "method": method, "seed": seed, "mode": mode},
    )
    jobs = [train]
    for step in [*config.eval_step_list, None]:
        suffix = "" if step is None else f"@step{step}"
        job = _eval_job(config, f"{name}{suffix}", f"{run_dir}{suffix}", [name], mode)
        job.info.update(variant=variant, method=method, seed=seed, mode=mode, run=str(run_dir))
        if config.eval_step_list:
            job.info["step"] = config.steps if step is None else step
        jobs.append(job)
    return jobs


def _common_train_args(config: ExperimentConfig) -> list[str]:
    """The train options every warm start and run shares."""
    common = [f"env={config.env}", f"threads={config.threads}", "eval_tasks=0", *config.train.split()]
    if config.weight_sampler != "dirichlet":  # the default stays off the command lines of earlier grids
        common.append(f"weight_sampler={config.weight_sampler}")
    return common


def _train_args(method: str, seed: int, steps: int) -> list[str]:
    return ["train", f"method={method}", f"seed={seed}", f"steps={steps}"]


def _eval_job(config: ExperimentConfig, name: str, checkpoint: str, after: list[str], mode: str) -> Job:
    out = config.work_dir / "eval" / name.replace("@", "-")
    args = ["evaluate", f"env={config.env}", f"checkpoints={checkpoint}", f"out={out}"]
    args += [f"tasks={config.eval_tasks}", f"samples={config.eval_samples}"]
    args += [f"max_new_tokens={config.budget(mode)}"] if config.budget(mode) else []
    return Job(f"eval/{name}", "eval", [*args, *config.evaluate.split()], after=after, info={"eval_dir": str(out)})


def _marker_name(job: Job) -> str:
    return f"{job.name.replace('/', '__').replace('@', '-')}.json"


def _marker(config: ExperimentConfig, job: Job) -> Path:
    return config.work_dir / "done" / _marker_name(job)


def _kept_marker(config: ExperimentConfig, job: Job) -> Path:
    """The marker `collect` writes into the committed ``out/done/`` (see the module docstring)."""
    return config.out_dir / "done" / _marker_name(job)


def _kept_warm(config: ExperimentConfig, job: Job) -> Path:
    """Where ``keep_warm=true`` keeps a warm start's ``init_model``."""
    return config.out_dir / "warm" / _marker_name(job).removesuffix(".json")


def _is_done(config: ExperimentConfig, job: Job) -> bool:
    """Whether `job` has a marker of the same command (or of the same ``apps/<command>.py`` command line).

    A ``device=`` option does not count: a job run on a GPU machine is the same job (its config.json
    records the device), so warm starts or runs made there are not redone on the CPU. Nor does a warm
    start's ``method=``: the warm-up depends on the prompt mode, m and seed only, and the method named is
    the grid's first of that mode, which a grid of fewer methods names differently.
    """
    if _same_job(_marker(config, job), job):
        return True
    if not _same_job(_kept_marker(config, job), job):
        return False
    # a warm start counts as done from out/ only while its model is there to restore
    return job.kind != "warm" or (_kept_warm(config, job) / "config.json").exists()


def _same_job(marker: Path, job: Job) -> bool:
    """Whether `marker` exists and records `job`'s command (up to options that change nothing).

    A marker written before its identity named a `LEGACY_PINS` key, and that does not name it, ran with the
    pinned value (the engine's default then), so a job that pins it is that job.
    """
    if not marker.exists():
        return False
    data = json.loads(marker.read_text())
    ignored = ("device=", "method=") if job.kind == "warm" else ("device=",)
    recorded = _identity(data.get("args") or [], ignored)
    identity = data.get("identity") or 1
    named = {arg.split("=", 1)[0] for arg in recorded}
    args = [arg for arg in job.args if not (identity < LEGACY_PINS.get(arg, 0) and arg.split("=", 1)[0] not in named)]
    alias = [f"apps/{args[0]}.py", *args[1:]]
    return recorded in (_identity(args, ignored), _identity(alias, ignored))


def _keep_metrics(source: Path, target: Path) -> None:
    """Keep a run's ``metrics.jsonl`` in ``out/`` gzip-compressed (``metrics.jsonl.gz``, about 6x smaller).

    The bytes depend on the records alone (no timestamp), so collecting again leaves an identical file.
    """
    data = gzip.compress(source.read_bytes(), compresslevel=9, mtime=0)
    if not target.exists() or target.read_bytes() != data:
        target.write_bytes(data)


def restore_warm_starts(config: ExperimentConfig, jobs: Sequence[Job]) -> list[str]:
    """Copy each warm start kept in ``out/warm/`` (``keep_warm=true``) back into an empty work folder.

    Returns:
        The names of the warm starts restored.
    """
    restored = []
    for job in (job for job in jobs if job.kind == "warm"):
        target, kept = Path(job.info["run"]) / "init_model", _kept_warm(config, job)
        if not target.exists() and kept.exists() and _is_done(config, job):
            shutil.copytree(kept, target)
            restored.append(job.name)
    return restored


def _identity(args: Sequence[str], ignored: tuple[str, ...]) -> list[str]:
    """A job's options without those that do not change what it computes."""
    return [arg for arg in args if not arg.startswith(ignored)]


def _run_job(config: ExperimentConfig, job: Job) -> float:
    """Run one job to completion (its output goes to a log file beside the marker); returns seconds."""
    log_dir = config.work_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_file = log_dir / f"{job.name.replace('/', '__').replace('@', '-')}.log"
    started = time.perf_counter()
    with log_file.open("a") as log:
        command = [sys.executable, "-m", "vpo_engines.local", *job.args]
        log.write(f"$ {' '.join(command)}\n")
        log.flush()
        result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"job {job.name} failed (exit {result.returncode}); see {log_file}")
    marker = _marker(config, job)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"args": job.args, "seconds": seconds, "identity": MARKER_IDENTITY}))
    return seconds


def pending_jobs(config: ExperimentConfig, jobs: Sequence[Job]) -> list[Job]:
    """The jobs still to run: those not done, and those whose dependency runs again.

    A run redone from scratch is a new trajectory, so the evaluations made of the old one (or a run made
    from an old warm start) must not stand beside it: they run again too.
    """
    pending: list[Job] = []
    names: set[str] = set()
    for job in jobs:  # `plan` lists each job after its dependencies
        if not _is_done(config, job) or names.intersection(job.after):
            pending.append(job)
            names.add(job.name)
    return pending


def run_jobs(config: ExperimentConfig, jobs: Sequence[Job]) -> None:
    """Run the jobs `config.jobs` at a time, each after its dependencies; finished jobs are skipped.

    A finished job that runs again because its dependency does (see `pending_jobs`) loses its markers
    first, so that an interrupted grid does not count the old trajectory's evaluation as done.
    """
    pending = pending_jobs(config, jobs)
    for job in pending:
        if _is_done(config, job):
            for marker in (_marker(config, job), _kept_marker(config, job)):
                marker.unlink(missing_ok=True)
            print(f"{job.name}: runs again, as a job it depends on does", file=sys.stderr)
    done = {j.name for j in jobs} - {j.name for j in pending}
    failed: set[str] = set()
    total = len(pending)
    print(f"{len(jobs) - total} of {len(jobs)} jobs already done; running {total}", file=sys.stderr)
    with ThreadPoolExecutor(config.jobs) as pool:
        running: dict[Any, Job] = {}
        while pending or running:
            ready = [j for j in pending if all(a in done for a in j.after)]
            blocked = [j for j in pending if any(a in failed for a in j.after)]
            for job in blocked:
                pending.remove(job)
                failed.add(job.name)
            for job in ready[: config.jobs - len(running)]:
                pending.remove(job)
                running[pool.submit(_run_job, config, job)] = job
            if not running:
                break
            finished = next(iter(wait(running, return_when=FIRST_COMPLETED).done))
            job = running.pop(finished)
            try:
                seconds = finished.result()
                done.add(job.name)
                print(f"[{len(done)}/{len(jobs)}] {job.name} done in {seconds:.0f}s", file=sys.stderr)
            except RuntimeError as exc:
                failed.add(job.name)
                print(f"error: {exc}", file=sys.stderr)
    if failed:
        raise RuntimeError(f"{len(failed)} job(s) failed or were blocked: {sorted(failed)[:5]} ...")


def collect(config: ExperimentConfig, jobs: Sequence[Job]) -> Path:
    """Copy each finished run's small summary into ``out/`` and write ``out/index.json``.

    The pools are saved by `vpo_core.evaluation.save_pool` as compressed ``.npz`` (rewards as float32,
    with their metadata).

    Returns:
        The index file: one record per evaluated model (variant, method, seed, mode, pool file).
    """
    out = config.out_dir
    (out / "pools").mkdir(parents=True, exist_ok=True)
    index = out / "index.json"
    earlier = json.loads(index.read_text()).get("pools", []) if index.exists() else []
    by_name = {job.name: job for job in jobs}
    records = []
    collected: set[str] = set()
    for job in jobs:
        if job.kind != "eval" or not _is_done(config, job):
            continue
        eval_dir = Path(job.info["eval_dir"])
        pools = sorted(eval_dir.glob("pool_*.npy"))
        job_records = []
        for pool_file in pools:
            label = pool_file.stem.removeprefix("pool_")
            key = f"{job.name.removeprefix('eval/').replace('/', '__').replace('@', '-')}__{label}"
            target = out / "pools" / f"{key}.npz"
            pool = load_pool(pool_file)
            save_pool(target, dataclasses.replace(pool, rewards=pool.rewards.astype(np.float32)))
            job_records.append({**job.info, "job": job.name, "label": label, "pool": str(target.relative_to(out))})
        if not pools:  # evaluated in an earlier clone: its records and pools are already in out/
            job_records = [r for r in earlier if r.get("job") == job.name and (out / r["pool"]).exists()]
        records += job_records
        # kept as done only once its run is finished: an unfinished run is redone whole in a fresh clone,
        # and every checkpoint of it evaluated again, so no pool mixes two trajectories
        if job_records and all(_is_done(config, by_name[name]) for name in job.after):
            collected.add(job.name)
            _keep_marker(config, job)
        run = job.info.get("run")
        if run and not str(job.info["method"]).startswith("warm-"):
            run_out = out / "runs" / f"{job.info['variant']}__{Path(run).name}"
            run_out.mkdir(parents=True, exist_ok=True)
            for name in ("config.json", "report.json"):
                source = Path(run) / name
                if source.exists():
                    shutil.copy2(source, run_out / name)
            if (Path(run) / "metrics.jsonl").exists():
                _keep_metrics(Path(run) / "metrics.jsonl", run_out / KEPT_METRICS)
    evaluations: dict[str, list[str]] = {}
    for job in (job for job in jobs if job.kind == "eval"):
        for name in job.after:
            evaluations.setdefault(name, []).append(job.name)
    for job in jobs:
        evaluated = evaluations.get(job.name, [])
        if job.kind == "train" and _is_done(config, job) and evaluated and collected.issuperset(evaluated):
            _keep_marker(config, job)
        if job.kind == "warm" and config.keep_warm and _is_done(config, job):
            model, kept = Path(job.info["run"]) / "init_model", _kept_warm(config, job)
            if model.exists() and not kept.exists():
                shutil.copytree(model, kept)
            _keep_marker(config, job)
    # the records of jobs outside this command's plan (another start or method subset) stay in the index
    planned: set[str | None] = {None, *(job.name for job in jobs)}
    records += [r for r in earlier if r.get("job") not in planned and (out / r["pool"]).exists()]
    settings = {k: v for k, v in vars(config).items() if k not in ("dry_run", "collect_only")}
    index.write_text(json.dumps({"config": settings, "pools": records}, indent=1))
    return index


def _keep_marker(config: ExperimentConfig, job: Job) -> None:
    """Copy a finished job's marker into ``out/done/`` (from the work folder, where it ran)."""
    source, target = _marker(config, job), _kept_marker(config, job)
    if source.exists() and not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def recipe_options(argv: Sequence[str]) -> list[str]:
    """The ``key=value`` options of the recipe named by ``recipe=`` (`vpo_lab.recipes`), or none.

    Args:
        argv: The command line; its last ``env=`` and ``recipe=`` are read.

    Returns:
        The recipe's options, to go before `argv` (so the command line overrides them).

    Raises:
        ConfigError: If no recipe of that name is declared for the env (the message lists those that are).
    """
    found = {key: value for key, _, value in (arg.partition("=") for arg in argv) if key in ("env", "recipe")}
    name = found.get("recipe", "").strip()
    if not name:
        return []
    env_id = found.get("env", DEFAULT_ENV)
    recipes = RECIPES.get(env_id, {})
    if name not in recipes:
        raise ConfigError(
            f"{env_id} declares no experiment recipe {name!r} (vpo_lab.recipes); it declares {sorted(recipes) or 'none'}."
        )
    return [f"{key}={value}" for key, value in recipes[name].items()]


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``apps/experiment.py``: 0 on success, 1 if a job failed, 2 on bad options."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        recipe = recipe_options(argv)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    config = run_cli(
        ExperimentConfig,
        [*recipe, *argv],
        prog="apps/experiment.py",
        description="Methods × seeds on the local engine with shared warm starts, evaluation and a summary.",
    )
    if isinstance(config, int):
        return config
    jobs = plan(config)
    if config.only == "warm":
        jobs = [job for job in jobs if job.kind == "warm" or str(job.info.get("method", "")).startswith("warm-")]
    if config.dry_run:
        todo = {job.name for job in pending_jobs(config, jobs)}
        for job in jobs:
            state = "todo" if job.name in todo else "done"
            print(f"{state}  {job.name:40s} {' '.join(job.args)}")
        return 0
    try:
        if not config.collect_only:
            for name in restore_warm_starts(config, jobs):
                print(f"restored the warm start {name} from {config.out_dir / 'warm'}", file=sys.stderr)
            run_jobs(config, jobs)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        collect(config, jobs)
        return 1
    index = collect(config, jobs)
    report = write_report(index)
    print(f"wrote {index.parent}/ ({report.name})", file=sys.stderr)
    return 0
