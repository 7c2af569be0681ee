"""The OpenEvolve evaluator: score a program through the env and record it in the ledger.

OpenEvolve loads a generated ``evaluator.py`` from the run's state directory whose ``evaluate(path)``
calls `evaluate_file`. The metrics OpenEvolve selects on and shows the model are ``combined_score``
(the normalized w*-score over the dimensions the search may see; for LiveCodeBench, the pass rate on
the public tests) and ``success`` (every visible dimension at its maximum); the env's feedback is
returned as the ``test_feedback`` artifact, which OpenEvolve shows in the next prompt that uses this
program. The full score (hidden tests included) goes to the ledger only: it scores the final answer and
decides when a search is solved, and never reaches OpenEvolve.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from vpo_search.context import load_context
from vpo_search.ledger import Ledger, program_hash
from vpo_search.protocol import ProgramEvaluation, evaluate

__all__ = ["EVALUATOR_TEMPLATE", "EvaluationFailed", "evaluate_file", "score_program"]

EVALUATOR_TEMPLATE = '''"""OpenEvolve evaluator of one vpo-search run (generated; edit the options, not this file)."""

from vpo_search.evaluator import evaluate_file

STATE_DIR = {state_dir!r}


def evaluate(program_path):
    return evaluate_file(STATE_DIR, program_path)
'''


class EvaluationFailed(RuntimeError):
    """The evaluation itself failed; the cause is in the ledger, not in this message.

    OpenEvolve shows an evaluator's exception and traceback to the model in the next prompt, and the
    cause of an env failure may quote what the model must not see (a hidden test's output), so only
    the exception's type crosses over.
    """


def score_program(root: str | os.PathLike[str], program: str) -> ProgramEvaluation:
    """Evaluate a program in the env of a state directory and append the result to its ledger.

    Raises:
        Exception: Whatever the env raised (recorded as ``eval_error`` first; never turned into a 0).
    """
    context = load_context(root)
    ledger = Ledger(Path(root))
    digest = program_hash(program)
    try:
        result = evaluate(context.env, context.task, program, hidden_feedback=context.feedback == "all")
    except Exception as exc:
        ledger.add_eval({"kind": "eval_error", "hash": digest, "error": f"{type(exc).__name__}: {exc}"})
        raise
    ledger.add_eval(
        {
            "kind": "eval",
            "hash": digest,
            "rewards": result.rewards.tolist(),
            "verdicts": list(result.verdicts),
            "feedback": result.feedback,
            "score": result.score,
            "success": result.success,
            "search_score": result.search_score,
            "search_success": result.search_success,
        }
    )
    return result


def evaluate_file(root: str | os.PathLike[str], program_path: str) -> Any:
    """OpenEvolve's ``evaluate(program_path)``: an ``EvaluationResult`` with metrics and the feedback artifact."""
    from openevolve.evaluation_result import EvaluationResult

    program = Path(program_path).read_text(encoding="utf-8")
    try:
        result = score_program(root, program)
    except Exception as exc:
        raise EvaluationFailed(
            f"the evaluation itself failed ({type(exc).__name__}); this says nothing about the program"
        ) from None
    return EvaluationResult(
        metrics={"combined_score": result.search_score, "success": float(result.search_success)},
        artifacts={"test_feedback": result.feedback},
    )
