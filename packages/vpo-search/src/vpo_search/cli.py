"""The search command line behind ``vpo search``."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from vpo_core.cli_config import HelpRequested, exit_status
from vpo_core.errors import ConfigError
from vpo_search.config import SearchConfig, parse_args

__all__ = ["main"]


def _fill_missing(env: Any) -> Any:
    def evaluate_missing(root: Path, program: str) -> dict[str, Any]:
        from vpo_search.context import load_context, register_context
        from vpo_search.evaluator import score_program
        from vpo_search.ledger import Ledger, program_hash

        context = load_context(root)
        if env is not None:
            register_context(root, dataclasses.replace(context, env=env))
        score_program(root, program)
        return Ledger(root).evaluations()[program_hash(program)]

    return evaluate_missing


def _report(out: Path, env: Any, options: SearchConfig) -> dict[str, Any]:
    from vpo_search.report import write_report

    report = write_report(out, _fill_missing(env), title=f"{options.env} {options.split}: OpenEvolve search")
    for name, arm in report["arms"].items():
        count = len(arm["problems"])
        best = arm["best_at_k"][-1] if arm["best_at_k"] else 0.0
        print(f"{name}: {arm['solved']}/{count} solved, mean best@k {best:.3f} after {report['iterations']} iterations")
    print(f"wrote {out / 'search.json'} and {out / 'search.png'}", file=sys.stderr)
    return report


def main(argv: list[str] | None = None) -> int:
    """Parse options and run the command.

    Returns:
        The exit status.
    """
    args = sys.argv[1:] if argv is None else argv
    try:
        command, options = parse_args(args)
    except (HelpRequested, ConfigError) as exc:
        return exit_status(exc)
    import vpo_core
    from vpo_search.adapter import AnswerSearch
    from vpo_search.engine import SearchError, search_problem, template_options
    from vpo_search.preflight import EndpointError, check_endpoint, check_template_options
    from vpo_search.protocol import check_searchable
    from vpo_search.selection import resolve_problems

    out = Path(options.out)
    try:
        made = vpo_core.make(options.env, **options.env_args)
    except (TypeError, ValueError, KeyError) as exc:
        raise SystemExit(f"env {options.env}: {exc}") from None
    try:
        env = check_searchable(made)
    except TypeError:
        env = AnswerSearch(made)
        print(f"{options.env} has no search hooks: its answers are searched with its own reward (AnswerSearch)")
    if command == "report":
        _report(out, env, options)
        return 0
    tasks = env.tasks(options.split)
    try:
        problems = resolve_problems(
            env, tasks, options.problems, options.pools, k=options.hardest_k, max_problems=options.max_problems
        )
    except (ValueError, FileNotFoundError) as exc:
        raise SystemExit(str(exc)) from None
    if options.shard:
        index, count = (int(v) for v in options.shard.split("/"))
        problems = problems[index::count]
    if command == "select":
        out.mkdir(parents=True, exist_ok=True)
        (out / "problems.json").write_text(json.dumps([t.id for t in problems], indent=2))
        print("\n".join(t.id for t in problems))
        print(f"{len(problems)} problems; wrote {out / 'problems.json'}", file=sys.stderr)
        return 0
    try:
        import openevolve  # noqa: F401
    except ImportError:
        raise SystemExit("the search needs OpenEvolve: uv sync --inexact --group search") from None
    if not problems:
        raise SystemExit("no problem to search (the selection is empty).")
    try:
        if not options.skip_preflight:
            check_endpoint(options.base_url, options.served_model, options.api_key)
            template_kwargs = template_options(env, options)
            if template_kwargs:
                prefill = check_template_options(
                    options.base_url, options.served_model, options.api_key, template_kwargs
                )
                print(f"chat template options {template_kwargs}: the served template pre-fills {prefill!r}", flush=True)
        for number, task in enumerate(problems, start=1):
            status = search_problem(env, task, options, out)
            state = "solved" if status.solved else status.reason
            print(f"[{number}/{len(problems)}] {options.arm} {task.id}: {status.calls} iterations, {state}", flush=True)
    except (EndpointError, SearchError) as exc:
        raise SystemExit(str(exc)) from None
    _report(out, env, options)
    return 0
