"""End to end against the real OpenEvolve and the real sandbox, with a local OpenAI-compatible server.

The server's answers are programs the test controls; the tests check the loop (m candidates per model
call), the evaluator, what the model is shown (the first failing public test, never a hidden one), the
bookkeeping (ledger, curves, best program), resuming, and failures of the endpoint and of the output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("openevolve")

from env_lcb import LcbEnv
from vpo_search import Ledger, SearchError, parse_args, problem_summary, search_problem
from vpo_search.cli import main as cli_main
from vpo_search.engine import problem_dir

pytestmark = pytest.mark.sandbox
DATA = Path(__file__).parent / "data" / "lite"
WRONG = "print(0)"
PARTIAL = "print(3)"  # passes the statement's example only
RIGHT = "a, b = map(int, input().split())\nprint(a + b)"
HIDDEN = ("123456 654321", "777777", "40000", "40002")


class Script:
    """Answers from a list (the last one repeats); a callable entry raises to make the server answer 500."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls = 0

    def __call__(self, body):
        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        if callable(answer):
            answer()
        return answer


def _fail():
    raise RuntimeError("the model is down")


@pytest.fixture(scope="module")
def env():
    env = LcbEnv(data_dir=DATA, source="lcb_lite", time_limit_s=2.0)
    yield env
    env.sandbox.close()  # no sandbox worker outlives the module


def _options(server, tmp_path, *extra):
    return parse_args([f"base_url={server.base_url}", "model=test-model", f"out={tmp_path}", "num_islands=1", *extra])[
        1
    ]


def _user_prompts(root: Path) -> list[str]:
    return [call["prompt"]["messages"][-1]["content"] for call in Ledger(root).completed_calls()]


def test_search_finds_the_solution_with_feedback_and_exact_bookkeeping(
    env, tmp_path, openai_server, no_proxy, chain_of
):
    script = Script(chain_of(WRONG, PARTIAL, None), chain_of("print(1)", RIGHT, "print(2)"))
    server = openai_server(script, model="test-model")
    task = env.tasks("test")[0]
    status = search_problem(env, task, _options(server, tmp_path, "iterations=4"), tmp_path)
    assert (status.calls, status.solved, status.reason) == (2, True, "solved")  # stopped when solved
    assert len(server.requests) == 2  # one model call per search iteration, m = 3 candidates each
    request = server.requests[0]
    assert request["model"] == "test-model"
    assert request["temperature"] == 0.8
    assert "seed" in request
    assert server.requests[0]["seed"] != server.requests[1]["seed"]
    root = problem_dir(tmp_path, "vpo", task.id)
    prompts = _user_prompts(root)
    first = prompts[0]
    assert first.startswith("### Question:\nRead two integers")  # the env's prompt...
    assert "<response_1>...</response_1> through <response_3>" in first  # ...in its multi-answer format
    assert "## Program to improve" in first
    assert "# YOUR CODE HERE" in first
    assert "First failing public test (test 0): wrong answer\nInput:\n1 2\nExpected output:\n3" in first
    assert "Verdict per public test: test 0: wa" in first
    assert "2 hidden tests score the final answer only; their results are not shown." in first
    for prompt in prompts:
        assert not any(hidden in prompt for hidden in HIDDEN)
        assert "Verdict per test" not in prompt
    summary = problem_summary(root)
    assert summary["pass_at_k"] == [0.0, 1.0]
    assert summary["best_at_k"] == [pytest.approx(1 / 3), 1.0]
    assert (summary["candidates"], summary["failed_candidates"], summary["solved_at_iteration"]) == (6, 1, 2)
    assert summary["best"]["program"] == RIGHT
    assert summary["best"]["verdicts"] == ["ok", "ok", "ok"]
    calls = Ledger(root).completed_calls()
    assert calls[0]["candidates"] == [WRONG, PARTIAL, None]
    assert calls[0]["errors"][2] == "no code"
    assert (root / "openevolve" / "checkpoints").is_dir()
    # the re-run of a solved search makes no call
    assert search_problem(env, task, _options(server, tmp_path, "iterations=4"), tmp_path).reason == "solved"
    assert len(server.requests) == 2


LOOKUP = "s = input()\nprint(777777 if s.strip() == '123456 654321' else 3)\n"  # learnt a hidden answer


def test_the_search_sees_public_tests_only_and_hidden_feedback_is_an_opt_in(
    env, tmp_path, openai_server, no_proxy, chain_of
):
    # issue 22: every hidden verdict used to be shown, and the score OpenEvolve selects on and shows was the
    # pass rate over all tests: a lookup table could learn hidden answers across iterations.
    script = Script(chain_of(PARTIAL, LOOKUP, WRONG))
    server = openai_server(script, model="test-model")
    task = env.tasks("test")[0]
    public_root, all_root = tmp_path / "public", tmp_path / "all"
    search_problem(env, task, _options(server, public_root, "iterations=3", "num_top_programs=3"), public_root)
    search_problem(env, task, _options(server, all_root, "iterations=3", "feedback=all"), all_root)
    for root, shown in ((public_root, False), (all_root, True)):
        prompts = _user_prompts(problem_dir(root, "vpo", task.id))
        assert len(prompts) == 3
        later = "\n".join(prompts[1:])
        assert ("Verdict per test, in order: ok ok wa" in later) is shown  # the lookup's hidden pass
        assert ("0.6667" in later) is shown  # the lookup's full pass rate as a score
        assert ("0.3333" in later) is shown
        for prompt in prompts:  # the lookup program itself quotes the first hidden test
            assert not any(hidden in prompt for hidden in HIDDEN[2:])
    evals = Ledger(problem_dir(public_root, "vpo", task.id)).evaluations()
    lookup = next(r for r in evals.values() if r["rewards"] == [1.0, 1.0, 0.0])
    assert (lookup["score"], lookup["search_score"]) == (pytest.approx(2 / 3), 1.0)  # measured, not shown
    with pytest.raises(SearchError, match="other settings"):  # a run is continued with the feedback it had
        search_problem(env, task, _options(server, public_root, "iterations=4", "feedback=all"), public_root)


def test_resume_continues_the_search(env, tmp_path, openai_server, no_proxy, chain_of):
    script = Script(chain_of(WRONG, PARTIAL, "print(1)"), chain_of("print(2)", "print(4)", "print(5)"))
    server = openai_server(script, model="test-model")
    task = env.tasks("test")[0]
    assert search_problem(env, task, _options(server, tmp_path, "iterations=1"), tmp_path).calls == 1
    root = problem_dir(tmp_path, "vpo", task.id)
    checkpoints = sorted((root / "openevolve" / "checkpoints").iterdir())
    assert checkpoints, "a round ends with a checkpoint"
    status = search_problem(env, task, _options(server, tmp_path, "iterations=2"), tmp_path)
    assert (status.calls, status.reason) == (2, "done")
    assert len(server.requests) == 2  # the first iteration was not redone
    second = _user_prompts(root)[1]
    assert "print(3)" in second  # OpenEvolve resumed with the programs of the first run in its population
    with pytest.raises(SearchError, match=r"other settings .*'m': \(3, 4\)"):
        search_problem(env, task, _options(server, tmp_path, "iterations=2", "m=4"), tmp_path)


def test_malformed_output_is_a_recorded_failed_iteration(env, tmp_path, openai_server, no_proxy):
    server = openai_server(Script("I cannot solve this.", "<response_1>no code here</response_1>"), model="test-model")
    task = env.tasks("test")[0]
    status = search_problem(env, task, _options(server, tmp_path, "iterations=2"), tmp_path)
    assert (status.calls, status.solved) == (2, False)
    summary = problem_summary(problem_dir(tmp_path, "vpo", task.id))
    assert summary["failed_candidates"] == 5
    assert summary["best_at_k"] == [0.0, 0.0]
    # the env reads an unfenced answer as the program itself: it is evaluated, and fails to compile
    assert summary["best"]["program"] == "no code here"
    assert summary["best"]["verdicts"] == ["ce", "ce", "ce"]


def test_failing_endpoint_stops_with_a_clear_error_and_keeps_progress(env, tmp_path, openai_server, no_proxy, chain_of):
    script = Script(chain_of(WRONG, PARTIAL, "print(1)"), _fail)
    server = openai_server(script, model="test-model")
    task = env.tasks("test")[0]
    options = _options(server, tmp_path, "iterations=3", "retries=0", "max_consecutive_errors=2")
    with pytest.raises(SearchError, match=r"2 model calls in a row failed .*re-run the same command to continue"):
        search_problem(env, task, options, tmp_path)
    root = problem_dir(tmp_path, "vpo", task.id)
    ledger = Ledger(root)
    assert len(ledger.completed_calls()) == 1
    assert sum(r["kind"] == "call_error" for r in ledger.calls()) == 2
    script.answers = [chain_of(RIGHT, None, None)]  # the endpoint is back: re-running continues
    status = search_problem(env, task, options, tmp_path)
    assert (status.calls, status.solved) == (2, True)


def test_command_line_run_and_report(env, tmp_path, openai_server, no_proxy, chain_of, capsys):
    server = openai_server(Script(chain_of(WRONG, RIGHT, None)), model="vpo")
    args = [f"base_url={server.base_url}", f"out={tmp_path}", "env.source=lcb_lite", f"env.data_dir={DATA}"]
    assert cli_main([*args, "problems=0", "iterations=2", "num_islands=1"]) == 0
    assert "[1/1] vpo lcb-v1/test/0: 1 iterations, solved" in capsys.readouterr().out
    report = json.loads((tmp_path / "search.json").read_text())
    assert report["arms"]["vpo"]["pass_at_k"] == [1.0]
    assert (tmp_path / "search.png").exists()
    assert (problem_dir(tmp_path, "vpo", "lcb-v1/test/0") / "result.json").exists()
    with pytest.raises(SystemExit, match=r"cannot reach the model endpoint http://127\.0\.0\.1:9/v1"):
        cli_main([*args, "problems=1", "base_url=http://127.0.0.1:9/v1"])


def test_single_answer_mode_makes_m_requests_per_iteration(env, tmp_path, openai_server, no_proxy):
    answers = Script(f"```python\n{WRONG}\n```", f"```python\n{PARTIAL}\n```")
    server = openai_server(answers, model="test-model")
    task = env.tasks("test")[0]
    status = search_problem(env, task, _options(server, tmp_path, "iterations=1", "mode=single", "m=2"), tmp_path)
    assert status.calls == 1
    assert len(server.requests) == 2
    assert server.requests[0]["seed"] != server.requests[1]["seed"]
    prompt = server.requests[0]["messages"][-1]["content"]
    assert "### Answer: (use the provided format with backticks)" in prompt
    assert "Write 1 new solution that fix" in prompt
    calls = Ledger(problem_dir(tmp_path, "vpo", task.id)).completed_calls()
    assert calls[0]["candidates"] == [WRONG, PARTIAL]


def test_time_budget_stops_the_search(env, tmp_path, openai_server, no_proxy, chain_of):
    import time

    def slow(body):
        time.sleep(0.4)
        return chain_of(WRONG, WRONG, WRONG)

    server = openai_server(slow, model="test-model")
    task = env.tasks("test")[0]
    start = time.time()
    status = search_problem(env, task, _options(server, tmp_path, "iterations=200", "budget_s=3"), tmp_path)
    assert status.reason == "budget"
    assert status.calls < 200
    assert time.time() - start < 30


def test_a_failing_evaluation_reaches_openevolve_without_its_cause(env, tmp_path):
    import dataclasses
    import traceback

    from vpo_search.context import SearchContext, register_context
    from vpo_search.evaluator import EvaluationFailed, evaluate_file

    class Leaky(LcbEnv):
        def evaluate_program(self, task, program):  # type: ignore[override]
            raise RuntimeError(f"harness failed near {HIDDEN[1]}")

    task = env.tasks("test")[0]
    context = SearchContext(Leaky(), task, "multi", 3, 1, 0, 5, "vpo")
    register_context(tmp_path, dataclasses.replace(context))
    program = tmp_path / "p.py"
    program.write_text("print(3)")
    with pytest.raises(EvaluationFailed) as failure:
        evaluate_file(tmp_path, str(program))
    shown = "".join(traceback.format_exception(failure.value))  # what OpenEvolve would put in the prompt
    assert HIDDEN[1] not in shown
    assert "RuntimeError" in shown
    errors = [line for line in Ledger(tmp_path).evals_path.read_text().splitlines() if "eval_error" in line]
    assert len(errors) == 1
    assert HIDDEN[1] in errors[0]  # the cause is kept where the model cannot see it


def test_ctrl_c_stops_the_search_keeps_its_state_and_a_rerun_continues(
    env, tmp_path, openai_server, no_proxy, chain_of
):
    import os
    import signal
    import threading
    import time

    def slow(body):
        time.sleep(0.3)
        return chain_of(WRONG, WRONG, WRONG)

    server = openai_server(slow, model="test-model")
    task = env.tasks("test")[0]
    root = problem_dir(tmp_path, "vpo", task.id)

    def interrupt_after_the_first_call():
        deadline = time.time() + 60
        while time.time() < deadline and not (root.exists() and Ledger(root).completed_calls()):
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_after_the_first_call, daemon=True).start()
    with pytest.raises(KeyboardInterrupt, match="stopped by a signal"):
        search_problem(env, task, _options(server, tmp_path, "iterations=50"), tmp_path)
    done = len(Ledger(root).completed_calls())
    assert 1 <= done < 50
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handlers are given back
    server.answer = lambda body: chain_of(RIGHT, None, None)
    status = search_problem(env, task, _options(server, tmp_path, "iterations=50"), tmp_path)
    assert (status.solved, status.calls) == (True, done + 1)


def test_openevolve_config(tmp_path):
    from vpo_search.engine import build_openevolve_config

    options = parse_args(["base_url=http://127.0.0.1:1/v1", "model=m", "iterations=7", "checkpoint_every=2"])[1]
    config = build_openevolve_config(options, tmp_path, "system text", "python")
    assert not config.diff_based_evolution  # the env's format asks for whole programs
    assert config.database.max_snapshot_artifacts is None  # every parent's feedback reaches the prompt
    assert not config.prompt.artifact_security_filter  # test inputs are not redacted
    assert config.max_tasks_per_child is not None  # spawned workers, not forked ones
    # no early stopping on a metric: OpenEvolve's metrics are public-test scores; the engine stops a
    # solved search from the ledger's full evaluations
    assert config.early_stopping_patience is None
    assert (config.max_iterations, config.checkpoint_interval) == (21, 6)  # OpenEvolve iterations: m per call
    (model,) = config.llm.models
    assert (model.name, model.api_base, model.temperature, model.top_p) == ("m", "http://127.0.0.1:1/v1", 0.8, 1.0)
    assert model.init_client.args == (str(tmp_path),)


def test_another_env_through_the_answer_adapter(tmp_path, openai_server, no_proxy):
    import vpo_core
    from vpo_search import AnswerSearch

    maze = AnswerSearch(vpo_core.make("maze-v1"))
    task = maze.tasks("test")[0]
    good = maze.env.reference_completion(task, mode="multi", m=3)
    server = openai_server(Script("<route_1>UP</route_1>", good), model="test-model")
    # the fake is not vLLM, so the maze profile's template options (Qwen3 thinking off) are left out
    # (test_chat_template.py searches the maze with them against a vLLM-shaped server)
    options = _options(
        server, tmp_path, "iterations=3", "stop_when_solved=false", "env=maze-v1", "arm=vpo", "chat_template_kwargs={}"
    )
    status = search_problem(maze, task, options, tmp_path)
    assert (status.calls, status.solved, status.reason) == (3, True, "done")
    root = problem_dir(tmp_path, "vpo", task.id)
    summary = problem_summary(root)
    assert summary["pass_at_k"] == [0.0, 1.0, 1.0]
    assert summary["best_at_k"][0] == 0.0
    assert summary["best_at_k"][1] > 0.5
    assert summary["best"]["verdicts"][0] == "completion=1"
    second = _user_prompts(root)[1]
    assert "Reaching the exit (E) (completion): 0" in second  # the env's feedback on the parent
