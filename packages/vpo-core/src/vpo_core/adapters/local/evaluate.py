"""Evaluate checkpoints on an env's test split and write the paper's table, the pools and a best@k plot.

    uv run apps/evaluate.py env=maze-v1 checkpoints=runs/maze-v1-grpo-seed0,runs/maze-v1-vpo-seed0
    uv run apps/evaluate.py env=musique-v1 checkpoints=path/to/hf_model method=vpo env.data_dir=/data/musique
    uv run apps/evaluate.py env=lcb-v1 endpoint=http://127.0.0.1:8000/v1 method=vpo name=lcb-vpo

A checkpoint is a local run directory of apps/train.py (its config names the method, hence the mode,
m and whether prompts carry the goal suffix; the final checkpoint is used, or the warm-started model
with ``@init`` appended, or the snapshot of RL step N with ``@stepN``, see ``keep_steps=``) or a Hugging Face
model directory, e.g. a merged veRL checkpoint (pass method=, or mode= and m=). Checkpoints whose folders
share a name are labelled by their paths' tails.
endpoint= samples from an OpenAI-compatible server instead (``vllm serve <checkpoint>``; served_model=,
api_key=, api=chat|completions, server=auto|vllm|other: vLLM-only request fields go to vLLM only;
tokenizer=<the checkpoint> tells what the chat template pre-fills, which is scored with each reply).

Sampling follows the paper's final evaluation as the env's profile declares it (``env.profile.eval``:
temperature, top-p, the token budget of the mode and m (a run directory's own budget, recorded by
apps/train.py, for its checkpoints; never past the model's positions); ``eval_samples`` candidates per task and
``eval_seeds`` seeds) and its chat-template options (Qwen3: thinking off); every option below
overrides the profile. A goal-conditioned method (goal-conditioned GRPO) is evaluated twice,
conditioned on w* and on one w ~ Dir(1) per task (conditioning=), reported as two rows.
backend=auto samples with vLLM when it is installed and a CUDA GPU is present, else with
transformers on device= (auto: cuda when available).

Writes table.md, results.json (metrics, curve and settings per row), pool_<row>.npy (rewards,
shape (tasks, completions, m, d); pool_<label>@w_star.npy and @dirichlet for goal-conditioned
rows; each with its metadata in pool_<row>.json, read back by vpo_core.evaluation.load_pool) and
best_at_k.png to out= (default runs/eval/<name or UTC time>, outside the committed results/).
"""

import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vpo_core.cli_config import ConfigError, HelpRequested, option, parse_config
from vpo_core.registry import DEFAULT_ENV

CONDITIONING_CHOICES = ("both", "w_star", "dirichlet")
BACKENDS = ("auto", "transformers", "vllm")


@dataclass
class EvalConfig:
    """Options of apps/evaluate.py (None: the env profile's value)."""

    env: str = option(DEFAULT_ENV, "env id (vpo_core.list_envs())")
    env_options: dict[str, Any] = option(  # noqa: RUF009 - option() is dataclasses.field with a help text
        help="env constructor options", default_factory=dict
    )
    checkpoints: str = option(
        "",
        "comma-separated run directories (dir@init: the warm-started model; dir@step50: the snapshot kept after "
        "step 50 by keep_steps=) or HF model dirs",
    )
    endpoint: str | None = option(
        None, "OpenAI-compatible API root to sample from instead (vllm serve), e.g. http://127.0.0.1:8000/v1"
    )
    served_model: str | None = option(None, "model name at the endpoint (default: the first it serves)")
    api_key: str = option("EMPTY", "API key for the endpoint")
    server: str = option(
        "auto",
        "endpoint kind: vllm (sends vLLM's extra fields), other (OpenAI's fields only) or auto (vLLM if it says so)",
    )
    api: str = option(
        "chat", "endpoint API: chat (server renders the chat template) or completions (tokenizer= renders)"
    )
    tokenizer: str | None = option(
        None, "the checkpoint's tokenizer directory: renders prompts (api=completions), knows the template's pre-fill"
    )
    request_timeout_s: float = option(600.0, "seconds per endpoint request")
    max_workers: int = option(32, "concurrent endpoint requests (prompts sent together: the larger of this and batch=)")
    method: str | None = option(None, "the method of an HF model dir or endpoint (gives mode, m and goal conditioning)")
    mode: str | None = option(None, "prompt mode of an HF model dir or endpoint without method= (single or multi)")
    m: int | None = option(None, "answers per completion (default: the method's, or 3 in multi mode)")
    tasks: int | None = option(None, "evaluate the first N test tasks (default: the whole split)")
    samples: int | None = option(None, "candidates per task and seed (default: env.profile.eval_samples)")
    seeds: int | None = option(None, "evaluation seeds (default: env.profile.eval_seeds)")
    temperature: float | None = option(None, "sampling temperature (default: env.profile.eval.temperature)")
    top_p: float | None = option(None, "nucleus mass (default: env.profile.eval.top_p)")
    max_new_tokens: int | None = option(
        None, "token budget per completion (default: env.profile.eval for the mode and m)"
    )
    ks: list[int] | None = option(  # noqa: RUF009 - option() is dataclasses.field with a help text
        None, "k of best@k, pass@k and E_w[best@k], e.g. ks=[3,6] (the goal-conditioned table); default 1,3,5,10,30"
    )
    conditioning: str = option("both", "goal-conditioned checkpoints: both, w_star or dirichlet (w ~ Dir(1) per task)")
    goal_seed: int = option(0, "seed of the per-task Dir(1) goal weights")
    batch: int = option(16, "prompts sampled together")
    name: str | None = option(None, "name of this evaluation (out= defaults to runs/eval/<name>)")
    out: str | None = option(None, "output directory (default runs/eval/<name or UTC time>)")
    device: str = option("auto", "device of the in-process model: auto (cuda when available), cpu or cuda")
    backend: str = option("auto", "auto, transformers or vllm (ignored with endpoint=)")
    stop_at_answer: bool = option(
        True,
        "transformers backend: end each sample where the env's last answer closes (TextEnv.answer_stop), as "
        "training does; false: sample to EOS or the token budget",
    )
    gpu_memory_utilization: float = option(0.5, "share of GPU memory vLLM may take")
    progress: bool = option(True, "show a progress bar per evaluated row")

    def __post_init__(self) -> None:
        if not self.checkpoints and not self.endpoint:
            raise ValueError("pass checkpoints=<run dir or HF model dir>[,<another>...] or endpoint=<API root>.")
        if self.checkpoints and self.endpoint:
            raise ValueError("pass checkpoints= or endpoint=, not both (evaluate a served model on its own).")
        if self.conditioning not in CONDITIONING_CHOICES:
            raise ValueError(f"conditioning must be one of {CONDITIONING_CHOICES}, got {self.conditioning!r}.")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}.")
        if self.mode is not None and self.mode not in ("single", "multi"):
            raise ValueError(f"mode must be single or multi, got {self.mode!r}.")
        for key in ("tasks", "samples", "seeds", "max_new_tokens", "m"):
            value = getattr(self, key)
            if value is not None and value < 1:
                raise ValueError(f"{key} must be >= 1, got {value}.")
        if self.ks is not None and (not self.ks or min(self.ks) < 1):
            raise ValueError(f"ks must be a non-empty list of k >= 1, got {self.ks}.")
        if self.batch < 1 or self.max_workers < 1:
            raise ValueError("batch and max_workers must be >= 1.")


@dataclass
class Target:
    """One model to evaluate: its label, where it is, and the prompts it was trained with."""

    label: str
    model_dir: Path | None
    mode: str
    m: int
    goal_prompt: bool
    extra: dict[str, Any] = field(default_factory=dict)
    max_new_tokens: int | None = None
    """The token budget the run trained and evaluated with (a run directory's), or None."""


def _method_target(label: str, model_dir: Path | None, config: EvalConfig) -> Target:
    from vpo_core.methods import get_method

    if config.method is not None:
        try:
            method = get_method(config.method)
            m = method.resolve_m(config.m)
        except (KeyError, ValueError) as exc:
            raise SystemExit(str(exc.args[0] if exc.args else exc)) from None
        if config.mode is not None and config.mode != method.mode:
            raise SystemExit(f"method={config.method} prompts in {method.mode} mode; drop mode={config.mode}.")
        return Target(label, model_dir, method.mode, m, method.goal_prompt)
    if config.mode is None:
        where = model_dir if model_dir is not None else config.endpoint
        raise SystemExit(
            f"{where} is a plain model directory: pass mode=single|multi (and m=), or method=<its training method>."
        )
    m = config.m if config.m is not None else (3 if config.mode == "multi" else 1)
    from vpo_core.methods import check_mode_m

    try:
        check_mode_m(config.mode, m)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    return Target(label, model_dir, config.mode, m, False)


def resolve(text: str, config: EvalConfig) -> Target:
    """A checkpoint argument as a `Target` (run directories are read through `RunDir` only)."""
    from vpo_core.methods import get_method
    from vpo_core.runs import RunDir, RunDirError

    which_match = re.fullmatch(r"(.+)@(init|step[0-9]+)", text)
    which = which_match.group(2) if which_match else "final"
    path = Path(which_match.group(1) if which_match else text)
    run = RunDir(path)
    try:
        saved = run.read_config() if run.exists() else {}
    except RunDirError as exc:
        raise SystemExit(str(exc)) from None
    if "method" in saved:  # a run directory (an HF model directory's config.json names no method)
        try:
            model_dir = run.model_dir(which)
            method = get_method(saved["method"])
            budget = run.read_token_budget()
        except (RunDirError, KeyError) as exc:
            raise SystemExit(str(exc.args[0] if exc.args else exc)) from None
        if budget is None and isinstance(saved.get("max_new_tokens"), int) and saved["max_new_tokens"] > 0:
            budget = int(saved["max_new_tokens"])
        label = path.name if which == "final" else f"{path.name}@{which}"
        m = method.resolve_m(saved.get("m"))
        return Target(label, model_dir, method.mode, m, method.goal_prompt, max_new_tokens=budget)
    if which != "final":
        raise SystemExit(f"{path} is not a run directory of apps/train.py, so it has no @{which} model.")
    if not path.exists():
        raise SystemExit(f"checkpoint {path} does not exist.")
    return _method_target(path.name, path, config)


def unique_labels(targets: list[Target], texts: list[str]) -> None:
    """Give targets whose labels collide (folders of the same name) labels made from their paths.

    Each colliding label becomes the shortest tail of its checkpoint's path that no other target shares
    (``a/run``, ``b/run``), so no row, pool file or results.json entry overwrites another.

    Args:
        targets: The targets, labels set from the folder names (changed in place).
        texts: The checkpoint arguments they came from, same order.

    Raises:
        SystemExit: If one checkpoint is given twice.
    """
    paths = []
    for text in texts:
        which = re.fullmatch(r"(.+)(@init|@step[0-9]+)", text)
        base, suffix = (which.group(1), which.group(2)) if which else (text, "")
        paths.append(str(Path(base).resolve()) + suffix)
    for i, path in enumerate(paths):
        if path in paths[:i]:
            raise SystemExit(f"checkpoint {texts[i]} is given twice in checkpoints=; list each once.")
    labels = [t.label for t in targets]
    for i, target in enumerate(targets):
        if labels.count(labels[i]) == 1:
            continue
        parts = Path(paths[i]).parts
        others = [Path(p).parts for j, p in enumerate(paths) if j != i and labels[j] == labels[i]]
        for n in range(2, len(parts) + 1):
            if all(tuple(o[-n:]) != tuple(parts[-n:]) for o in others):
                target.label = "/".join(parts[-n:]).lstrip("/")
                break


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]+", "_", text).strip("_") or "model"


def _sampler(target: Target, config: EvalConfig, env: Any, backend: str) -> Any:
    template_kwargs = dict(env.profile.chat_template_kwargs)
    if config.endpoint:
        from vpo_core.models.openai import EndpointError, OpenAISampler

        try:
            return OpenAISampler(
                config.endpoint,
                model=config.served_model,
                api_key=config.api_key,
                api=config.api,
                tokenizer=config.tokenizer,
                chat_template_kwargs=template_kwargs,
                timeout_s=config.request_timeout_s,
                max_workers=config.max_workers,
                server=config.server,
            )
        except (EndpointError, FileNotFoundError) as exc:
            raise SystemExit(str(exc)) from None
    assert target.model_dir is not None
    if backend == "vllm":
        from vpo_core.models.vllm import VllmSampler

        return VllmSampler(
            target.model_dir,
            chat_template_kwargs=template_kwargs,
            gpu_memory_utilization=config.gpu_memory_utilization,
        )
    from vpo_core.models.policy import answer_stops, load_policy
    from vpo_core.runs import check_weights

    check_weights(target.model_dir, "Save the model again or evaluate another checkpoint.")
    try:
        policy = load_policy(target.model_dir, config.device)
    except FileNotFoundError as exc:
        raise SystemExit(str(exc)) from None
    policy.stop_strings = answer_stops(env, target.mode, target.m, config.stop_at_answer)
    policy.chat_template_kwargs = template_kwargs  # renders and pre-fills with the env's template options
    return policy


def _release_memory() -> None:
    """Collect a dropped sampler's model and return cached GPU memory (vLLM's engine holds it)."""
    import gc

    gc.collect()
    if "torch" in sys.modules:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def _model_positions(model_dir: Path | None) -> int | None:
    """The longest sequence a model directory's config allows (max_position_embeddings), or None."""
    if model_dir is None:
        return None
    try:
        value = json.loads((model_dir / "config.json").read_text()).get("max_position_embeddings")
    except (OSError, ValueError, AttributeError):
        return None
    return int(value) if isinstance(value, int) and value > 0 else None


def settings_for(target: Target, config: EvalConfig, env: Any) -> dict[str, Any]:
    """The sampling settings of a target: the env profile's final evaluation, overridden by options.

    The token budget is ``max_new_tokens=`` if given, else the budget a run directory trained and
    evaluated with, else the profile's; never more than the model's positions (the sampler also stops
    each batch where its prompt leaves no more room).
    """
    profile = env.profile
    budget = config.max_new_tokens or target.max_new_tokens or profile.eval.max_new_tokens(target.mode, target.m)
    positions = _model_positions(target.model_dir)
    return {
        "temperature": profile.eval.temperature if config.temperature is None else config.temperature,
        "top_p": profile.eval.top_p if config.top_p is None else config.top_p,
        "max_new_tokens": min(budget, positions) if positions else budget,
        "samples": profile.eval_samples if config.samples is None else config.samples,
        "seeds": profile.eval_seeds if config.seeds is None else config.seeds,
    }


def _progress(total: int, description: str, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=description, unit="task", file=sys.stderr, disable=not enabled, dynamic_ncols=True)


def _out_dir(config: EvalConfig) -> Path:
    if config.out:
        return Path(config.out)
    return Path("runs") / "eval" / (config.name or time.strftime("%Y%m%d-%H%M%S", time.gmtime()))


def _targets(config: EvalConfig) -> list[Target]:
    """The models to evaluate: the endpoint's, or one per checkpoint with unique labels."""
    if config.endpoint:
        return [_method_target(config.served_model or config.name or "endpoint", None, config)]
    texts = [text for text in config.checkpoints.split(",") if text]
    targets = [resolve(text, config) for text in texts]
    unique_labels(targets, texts)
    return targets


def _backend(config: EvalConfig) -> str:
    """The sampling backend (``openai`` with endpoint=); resolves ``device=auto`` in place."""
    if config.endpoint:
        return "openai"
    from vpo_core.models.vllm import choose_backend

    if config.device == "auto":
        import torch

        config.device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        return choose_backend(config.backend, config.device)
    except ValueError as error:
        raise SystemExit(str(error)) from None


def _evaluate_row(
    target: Target, conditioning: str | None, sampler: Any, env: Any, tasks: list[Any], config: EvalConfig, **how: Any
) -> Any:
    """One row of the table: `target` sampled under `conditioning` (None: no goal suffix).

    Args:
        target: The model.
        conditioning: ``"w_star"``, ``"dirichlet"`` or None.
        sampler: Its sampler.
        env: The environment.
        tasks: The evaluated tasks.
        config: The options.
        **how: ``backend`` (its name), ``settings`` (`settings_for`) and ``ks``.

    Returns:
        The `EvalResult`, its settings completed with what results.json records.
    """
    from vpo_core.evaluation import evaluate_policy, goal_weights_for_eval
    from vpo_core.models.openai import EndpointError

    backend, settings = how["backend"], how["settings"]
    shown = "w*" if conditioning == "w_star" else "~Dir(1)"
    label = target.label if conditioning is None else f"{target.label} (w={shown})"
    weights = None if conditioning is None else goal_weights_for_eval(env, tasks, conditioning, seed=config.goal_seed)
    print(
        f"evaluating {label} ({target.mode}, m={target.m}) on {len(tasks)} {config.env} tasks with {backend}: "
        + ", ".join(f"{k}={v}" for k, v in settings.items()),
        file=sys.stderr,
    )
    bar = _progress(len(tasks) * settings["seeds"], label, config.progress)
    try:
        result = evaluate_policy(
            sampler,
            env,
            tasks,
            name=label,
            mode=target.mode,
            m=target.m,
            **{key: settings[key] for key in ("samples", "temperature", "top_p", "seeds", "max_new_tokens")},
            prompts_per_batch=max(config.batch, config.max_workers) if config.endpoint else config.batch,
            goal_weights=weights,
            progress=bar.update,
            ks=how["ks"],
        )
    except EndpointError as exc:
        raise SystemExit(str(exc)) from None
    finally:
        bar.close()
    result.settings.update(
        backend=backend,
        conditioning=conditioning,
        goal_seed=config.goal_seed if conditioning == "dirichlet" else None,
        chat_template_kwargs=dict(env.profile.chat_template_kwargs),
        model=str(target.model_dir) if target.model_dir else config.endpoint,
        file=f"pool_{_slug(target.label if conditioning is None else f'{target.label}@{conditioning}')}.npy",
    )
    return result


def _write(results: list[Any], env: Any, tasks: list[Any], config: EvalConfig, out: Path, ks: tuple[int, ...]) -> str:
    """Write table.md, results.json, the pools (`save_pool`) and best_at_k.png; returns the table."""
    from vpo_core.evaluation import markdown_table, new_pool, save_pool
    from vpo_core.evaluation.plots import plot_best_at_k
    from vpo_core.evaluation.reporting import settings_digest

    table = markdown_table(results, ks=ks, ew_ks=ks if config.ks else (5,))
    (out / "table.md").write_text(table + "\n")
    payload = {}
    for r in results:
        settings = {**r.settings, "env": config.env, "env_options": config.env_options, "tasks": len(tasks)}
        payload[r.name] = {
            "mode": r.mode,
            "m": r.m,
            "metrics": r.metrics,
            "standard_errors": r.standard_errors,  # bootstrap over tasks, `reporting.BOOTSTRAP_RESAMPLES`, seed 0
            "curve": r.curve,
            "bad_completions": r.bad_completions,
            "settings": settings,
            "settings_digest": settings_digest({**settings, "task_ids": [t.id for t in tasks]}),
        }
    (out / "results.json").write_text(json.dumps(payload, indent=2))
    for r in results:
        settings = {**payload[r.name]["settings"], "bad_completions": r.bad_completions}
        pool = new_pool(env, config.env, tasks, r.rewards, mode=r.mode, label=r.name, settings=settings)
        save_pool(out / r.settings["file"], pool)
    plot_best_at_k(results, out / "best_at_k.png", title=f"{config.env} test")
    return table


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``apps/evaluate.py``: 0 on success (errors exit with a message).

    A user error (`vpo_core.errors.UserError`: a bad option, an unusable run directory or model,
    missing data) exits with one line; any other exception keeps its traceback.
    """
    from vpo_core.errors import UserError

    args = sys.argv[1:] if argv is None else argv
    try:
        config = parse_config(
            EvalConfig, args, prog="apps/evaluate.py", description=__doc__ or "", passthrough={"env": "env_options"}
        )
    except HelpRequested as exc:
        print(exc.text)
        return 0
    except ConfigError as exc:
        raise SystemExit(f"error: {exc}") from None
    try:
        return _evaluate(config)
    except UserError as exc:
        raise SystemExit(f"error: {exc}") from None


def _evaluate(config: EvalConfig) -> int:
    """Evaluate every target of `config` and write the outputs (`main` after parsing)."""
    import vpo_core
    from vpo_core.evaluation import KS
    from vpo_core.registry import env_tasks

    backend = _backend(config)
    targets = _targets(config)
    try:
        env = vpo_core.make(config.env, **config.env_options)
    except (KeyError, ValueError, TypeError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        raise SystemExit(f"error: env {config.env!r}: {message}") from None
    tasks = env_tasks(env, "test")  # missing data: a MissingDataError saying how to get it
    if config.tasks is not None:
        tasks = tasks[: config.tasks]
    out = _out_dir(config)
    out.mkdir(parents=True, exist_ok=True)
    ks = tuple(config.ks) if config.ks else KS
    results = []
    for target in targets:
        sampler = _sampler(target, config, env, backend)
        if config.endpoint:
            target.label = str(getattr(sampler, "model", target.label)).rstrip("/").split("/")[-1]
        settings = settings_for(target, config, env)
        conditionings: list[str | None] = [None]
        if target.goal_prompt:
            conditionings = ["w_star", "dirichlet"] if config.conditioning == "both" else [config.conditioning]
        for conditioning in conditionings:
            row = _evaluate_row(
                target, conditioning, sampler, env, tasks, config, backend=backend, settings=settings, ks=ks
            )
            results.append(row)
        del sampler  # the last reference: free its model before the next checkpoint's is loaded
        _release_memory()
    table = _write(results, env, tasks, config, out, ks)
    print(table)
    print(f"wrote {out}/table.md, results.json, pool_*.npy and best_at_k.png", file=sys.stderr)
    print(f"nothing is uploaded; results stay in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
