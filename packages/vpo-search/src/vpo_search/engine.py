"""Run OpenEvolve on one problem for one arm, resumably, through its library API (the `OpenEvolve` controller).

State directory of a run (``<out>/<arm>/<problem>/``):

* ``context.pkl``, ``run.json`` (the options a resumed run must share), ``evaluator.py``,
  ``initial_program.<ext>``, ``templates/full_rewrite_user.txt`` (the env's prompt + the evolution context);
* ``calls.jsonl`` and ``evals.jsonl`` (the ledger: every model call and evaluation);
* ``openevolve/`` (OpenEvolve's output: checkpoints, logs, best program).

Re-running continues: the ledger says how many search iterations (model calls) are done, OpenEvolve
resumes from its latest checkpoint (one is also written whenever a round ends), and only the
remaining iterations are run.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import shutil
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from vpo_core import Mode
from vpo_search.config import SearchConfig
from vpo_search.context import SearchContext, forget_context, register_context
from vpo_search.evaluator import EVALUATOR_TEMPLATE
from vpo_search.ledger import Ledger, program_hash
from vpo_search.protocol import SearchableEnv

__all__ = [
    "RunStatus",
    "SearchError",
    "build_openevolve_config",
    "problem_dir",
    "search_problem",
    "template_options",
    "user_template",
]

logger = logging.getLogger(__name__)

_IDENTITY = ("env", "split", "arm", "model", "mode", "m", "seed", "task", "feedback", "chat_template_kwargs")
# what a state directory written before an option existed ran with (the client sent no template options)
_BEFORE_OPTION: dict[str, Any] = {"feedback": "all", "chat_template_kwargs": {}}
_EVOLUTION = """

# Search so far
You are improving answers to the task above in an evolutionary search. Below is the program to improve with \
its scores and the feedback of its evaluation, then earlier programs of the search.

## Program to improve
```{{language}}
{{current_program}}
```

Scores:
{{metrics}}

{{artifacts}}

{{evolution_history}}

# Your answer
Write {count} new {noun} that fix the failures shown above, genuinely different from each other and from the \
programs shown. Answer in exactly the format the task asks for above.
"""


class SearchError(RuntimeError):
    """A search cannot go on (its progress so far stays on disk; re-running continues)."""


@dataclass(frozen=True)
class RunStatus:
    """Where one problem's search stands after a run.

    Attributes:
        calls: Search iterations done (successful model calls).
        solved: Whether a candidate solves the problem.
        reason: ``done`` (all iterations), ``solved``, ``budget`` (time budget spent).
    """

    calls: int
    solved: bool
    reason: str


def problem_dir(out: Path, arm: str, task_id: str) -> Path:
    """The state directory of one problem and arm."""
    return out / arm / task_id.replace("/", "__")


def user_template(env: SearchableEnv, task: Any, mode: Mode, m: int) -> tuple[str, str]:
    """OpenEvolve's system message and ``full_rewrite_user`` template for a task.

    The env's own prompt (its multi-answer format when ``mode=multi``) comes first, then the evolution
    context that OpenEvolve fills in (``{current_program}``, ``{metrics}``, ``{artifacts}``,
    ``{evolution_history}``); the env's text is brace-escaped for ``str.format``.

    Returns:
        (system message, user template).
    """
    messages = env.render_prompt(task, mode=mode, m=m if mode == "multi" else 1)
    system = "\n\n".join(msg["content"] for msg in messages if msg["role"] == "system")
    user = "\n\n".join(msg["content"].rstrip() for msg in messages if msg["role"] != "system")
    escaped = user.replace("{", "{{").replace("}", "}}")
    count, noun = (m, "solutions") if mode == "multi" else (1, "solution")
    return system, escaped + _EVOLUTION.format(count=count, noun=noun)


def build_openevolve_config(options: SearchConfig, root: Path, system_message: str, language: str) -> Any:
    """OpenEvolve's `Config` for one run.

    Full rewrites (the env's format asks for whole programs), the feed as the model client, artifacts
    shown unfiltered (test inputs must not be redacted), and spawned worker processes (a forked worker
    would inherit the parent's sandbox threads half-dead). No early stopping on a metric: OpenEvolve's
    metrics are the search's view (public tests), and a solved search is one whose candidate passes
    every test, which the engine reads from the ledger (`_round`).
    """
    from openevolve.config import Config, LLMModelConfig

    from vpo_search.client import make_feed

    m = options.m
    config = Config()
    config.max_iterations = options.iterations * m
    config.checkpoint_interval = options.checkpoint_every * m
    config.log_dir = str(root / "openevolve" / "logs")
    config.random_seed = options.seed
    config.language = language
    config.file_suffix = ".py" if language == "python" else ".txt"
    config.diff_based_evolution = False
    config.max_code_length = 1_000_000
    config.max_tasks_per_child = 1_000_000_000  # any value selects the spawn start method
    model = LLMModelConfig(
        name=options.served_model,
        api_base=options.base_url,
        api_key=options.api_key,
        init_client=functools.partial(make_feed, str(root)),
        system_message=system_message,
        temperature=options.temperature,
        top_p=options.top_p,
        max_tokens=options.max_tokens,
        timeout=options.request_timeout_s,
        retries=options.retries,
        retry_delay=1,
    )
    config.llm.models = [model]
    config.llm.evaluator_models = []
    prompt = config.prompt
    prompt.template_dir = str(root / "templates")
    prompt.system_message = system_message
    prompt.num_top_programs = options.num_top_programs
    prompt.num_diverse_programs = options.num_diverse_programs
    prompt.include_artifacts = True
    prompt.artifact_security_filter = False
    prompt.suggest_simplification_after_chars = None
    prompt.use_template_stochasticity = False
    config.database.population_size = options.population_size
    config.database.num_islands = options.num_islands
    config.database.random_seed = options.seed
    # OpenEvolve sends workers the artifacts of only the first 100 programs by default: later parents would
    # reach the prompt without their feedback
    config.database.max_snapshot_artifacts = None
    config.evaluator.timeout = options.eval_timeout_s
    config.evaluator.cascade_evaluation = False
    config.evaluator.parallel_evaluations = options.workers
    config.evaluator.max_retries = 1
    return config


def _mode(options: SearchConfig) -> Mode:
    """``options.mode`` as the protocol's `Mode`: SearchConfig checks it is single or multi."""
    return cast("Mode", options.mode)


def template_options(env: Any, options: SearchConfig) -> dict[str, Any]:
    """The chat-template options of the search's model requests.

    ``options.chat_template_kwargs`` if given, else the env profile's (Qwen3's thinking off for the paper's
    Qwen3 envs, as in training and evaluation; `AnswerSearch` passes its env's profile on).
    """
    if options.chat_template_kwargs is not None:
        return dict(options.chat_template_kwargs)
    profile = getattr(env, "profile", None)
    return dict(getattr(profile, "chat_template_kwargs", None) or {})


def _identity(options: SearchConfig, task: Any, template_kwargs: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {
        "env": options.env,
        "split": options.split,
        "arm": options.arm,
        "model": options.served_model,
    }
    values.update({"mode": options.mode, "m": options.m, "seed": options.seed, "task": task.id})
    values["feedback"] = options.feedback
    values["chat_template_kwargs"] = template_kwargs
    return {key: values[key] for key in _IDENTITY}


def _prepare(env: SearchableEnv, task: Any, options: SearchConfig, root: Path) -> SearchContext:
    root.mkdir(parents=True, exist_ok=True)
    template_kwargs = template_options(env, options)
    identity = _identity(options, task, template_kwargs)
    saved = root / "run.json"
    if saved.exists():
        before = json.loads(saved.read_text())
        changed = {
            k: (before.get(k, _BEFORE_OPTION.get(k)), v)
            for k, v in identity.items()
            if before.get(k, _BEFORE_OPTION.get(k)) != v
        }
        if changed:
            raise SearchError(
                f"{root} holds a search with other settings {changed} (before, now); use the same options to "
                "continue it, or another out= to start a new one."
            )
    saved.write_text(json.dumps(identity, indent=2))
    context = SearchContext(
        env=env,
        task=task,
        mode=_mode(options),
        m=options.m,
        iterations=options.iterations,
        seed=options.seed,
        max_consecutive_errors=options.max_consecutive_errors,
        arm=options.arm,
        feedback=options.feedback,
        stop_when_solved=options.stop_when_solved,
        chat_template_kwargs=template_kwargs or None,
    )
    context.save(root)
    forget_context(root)
    register_context(root, context)
    (root / "evaluator.py").write_text(EVALUATOR_TEMPLATE.format(state_dir=str(root.resolve())))
    suffix = ".py" if env.program_language == "python" else ".txt"
    initial = root / f"initial_program{suffix}"
    if not initial.exists():
        initial.write_text(env.initial_program(task))
    system, template = user_template(env, task, _mode(options), options.m)
    (root / "templates").mkdir(exist_ok=True)
    (root / "templates" / "full_rewrite_user.txt").write_text(template)
    (root / "system_message.txt").write_text(system)
    return context


def _latest_checkpoint(root: Path) -> tuple[str | None, int]:
    folder = root / "openevolve" / "checkpoints"
    found = []
    for path in folder.glob("checkpoint_*") if folder.exists() else []:
        suffix = path.name.removeprefix("checkpoint_")
        if suffix.isdigit() and (path / "metadata.json").exists():
            found.append((int(suffix), path))
    if not found:
        return None, 0
    iteration, path = max(found)
    return str(path), iteration


def _prune_checkpoints(root: Path, keep: int = 2) -> None:
    folder = root / "openevolve" / "checkpoints"
    found = sorted(
        (int(p.name.removeprefix("checkpoint_")), p)
        for p in folder.glob("checkpoint_*")
        if p.name.removeprefix("checkpoint_").isdigit()
    )
    for _, path in found[:-keep]:
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def _openevolve_side_effects() -> Iterator[None]:
    """Undo what the controller does to the process: root-logger handlers and level, signal handlers."""
    root_logger = logging.getLogger()
    handlers, level = list(root_logger.handlers), root_logger.level
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for handler in list(root_logger.handlers):
            if handler not in handlers:
                root_logger.removeHandler(handler)
                handler.close()
        root_logger.setLevel(level)
        for sig, previous in saved.items():
            signal.signal(sig, previous)


async def _round(
    config: Any, root: Path, iterations: int, deadline: float | None, started: float, stop_when_solved: bool
) -> None:
    """One run of the controller; stops it on an abort record, at the deadline, or (if asked) once solved.

    Solved means a model candidate passed every dimension, hidden ones included: the ledger's full
    evaluation, which OpenEvolve never sees.
    """
    from openevolve import OpenEvolve

    checkpoint, _ = _latest_checkpoint(root)
    suffix = ".py" if config.language == "python" else ".txt"
    controller = OpenEvolve(
        initial_program_path=str(root / f"initial_program{suffix}"),
        evaluation_file=str(root / "evaluator.py"),
        config=config,
        output_dir=str(root / "openevolve"),
    )
    for handler in logging.getLogger().handlers:  # OpenEvolve logs INFO to the console; its log file keeps it
        if type(handler) is logging.StreamHandler:
            handler.setLevel(logging.WARNING)
    ledger = Ledger(root)
    _, offset = ledger.calls_after(0)
    candidates = {program_hash(p) for call in ledger.completed_calls() for p in call["candidates"] if p is not None}
    solved: set[str] = set()
    eval_offset = 0
    run = asyncio.ensure_future(controller.run(iterations=iterations, checkpoint_path=checkpoint))
    stopping = False
    while not run.done():
        await asyncio.wait({run}, timeout=0.25)
        if stopping or run.done():
            continue
        records, offset = ledger.calls_after(offset)
        aborted = any(r.get("kind") == "abort" and r["time"] >= started for r in records)
        candidates.update(
            program_hash(p) for r in records if r.get("kind") == "call" for p in r["candidates"] if p is not None
        )
        evaluations, eval_offset = ledger.evals_after(eval_offset)
        solved.update(r["hash"] for r in evaluations if r.get("kind") == "eval" and r.get("success"))
        done = stop_when_solved and not solved.isdisjoint(candidates)
        if aborted or done or (deadline is not None and time.time() > deadline):
            stopping = True
            if controller.parallel_controller is not None:
                controller.parallel_controller.request_shutdown()
    await run
    # OpenEvolve 0.4 answers the first SIGINT/SIGTERM with a graceful stop and arms a forcing handler
    interrupted = getattr(signal.getsignal(signal.SIGINT), "__name__", "") == "force_exit_handler"
    iteration = controller.database.last_iteration
    if iteration > 0:
        path = root / "openevolve" / "checkpoints" / f"checkpoint_{iteration}"
        controller.database.save(str(path), iteration)
        _prune_checkpoints(root)
    if interrupted:
        raise KeyboardInterrupt(f"the search was stopped by a signal; its state is saved in {root}: re-run to continue")


def search_problem(env: SearchableEnv, task: Any, options: SearchConfig, out: Path) -> RunStatus:
    """Run (or continue) the search on one problem for the arm of `options`.

    Args:
        env: The searchable env (already holding its tasks).
        task: The problem.
        options: The run's options.
        out: The output root (the state goes to `problem_dir`).

    Returns:
        The problem's status.

    Raises:
        SearchError: When the endpoint fails repeatedly or a round makes no progress; what was done
            stays on disk and re-running continues.
    """
    root = problem_dir(out, options.arm, task.id)
    _prepare(env, task, options, root)
    ledger = Ledger(root)
    system, _ = user_template(env, task, _mode(options), options.m)
    config = build_openevolve_config(options, root, system, env.program_language)
    deadline = None if options.budget_s is None else time.time() + options.budget_s
    while True:
        done = len(ledger.completed_calls())
        if options.stop_when_solved and ledger.solved():
            return RunStatus(done, True, "solved")
        if done >= options.iterations:
            return RunStatus(done, ledger.solved(), "done")
        if deadline is not None and time.time() > deadline:
            return RunStatus(done, ledger.solved(), "budget")
        started = time.time()
        logger.info("%s %s: iterations %d..%d", options.arm, task.id, done + 1, options.iterations)
        with _openevolve_side_effects():
            asyncio.run(
                _round(
                    config, root, (options.iterations - done) * options.m, deadline, started, options.stop_when_solved
                )
            )
        records = [r for r in ledger.calls() if r["time"] >= started]
        abort = next((r for r in records if r.get("kind") == "abort"), None)
        if abort is not None:
            raise SearchError(
                f"{options.arm} on {task.id}: {abort['error']}. The {len(ledger.completed_calls())} iterations done "
                f"are saved in {root}; fix the endpoint and re-run the same command to continue."
            )
        if deadline is not None and time.time() > deadline:
            return RunStatus(len(ledger.completed_calls()), ledger.solved(), "budget")
        if len(ledger.completed_calls()) == done:
            errors = [r["error"] for r in records if r.get("kind") == "call_error"]
            hint = (
                f" (last model error: {errors[-1]})" if errors else f"; see the logs in {root / 'openevolve' / 'logs'}"
            )
            raise SearchError(f"{options.arm} on {task.id}: a round of OpenEvolve made no model call{hint}.")
