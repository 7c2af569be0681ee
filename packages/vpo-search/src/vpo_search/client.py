"""OpenEvolve's model client for a search: one model call per search iteration, m candidates from it.

OpenEvolve asks its LLM for one program per iteration. `CandidateFeed` makes one request to the
OpenAI-compatible endpoint per *search iteration* (in the env's multi-answer format: one completion with
m candidates; or, for a single-answer model, m completions), records it in the ledger, and hands the m
candidate programs out over the next m OpenEvolve iterations, one fenced program each. So a search of
T iterations is T model calls, m·T candidates and m·T OpenEvolve iterations. The prompt of a call is the
one OpenEvolve built for the first iteration of its group; the prompts it builds for the other m − 1 are
not sent (the ledger keeps the prompt that was).

The env's chat-template options (`SearchContext.chat_template_kwargs`; Qwen3's thinking off) travel in each
request as vLLM's ``chat_template_kwargs`` extra field, and the text the served template then pre-fills in
the assistant turn (Qwen3's empty think block), which no server returns, is learned from the vLLM server
(`vpo_engines.models.prefill.ServerPrefill`, the same code `vpo-eval` uses) and put before each completion: the
env parses the whole assistant turn, as in training and evaluation.

A candidate the completion lacks (malformed output) is handed out as an empty reply: OpenEvolve records
that iteration as failed ("No valid code found"), and the ledger counts it as a failed candidate. A
failed request is recorded as ``call_error``; after ``max_consecutive_errors`` failures in a row the feed
records ``abort`` and fails fast, and the search stops with a clear error.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import deque
from pathlib import Path
from typing import Any

from vpo_engines.models.prefill import ServerPrefill
from vpo_search.context import SearchContext, load_context
from vpo_search.ledger import Ledger
from vpo_search.protocol import candidate_program

__all__ = ["BudgetReached", "CandidateFeed", "EndpointUnavailable", "call_seed", "make_feed"]


class BudgetReached(RuntimeError):
    """The search already made its target number of model calls."""


class EndpointUnavailable(RuntimeError):
    """Too many model calls failed in a row; the search stops (its progress stays on disk)."""


def call_seed(seed: int, arm: str, task_id: str, call: int, sample: int = 0) -> int:
    """The sampling seed of one request: distinct per call, reproducible from the run's seed."""
    digest = hashlib.sha256(f"{seed}:{arm}:{task_id}:{call}:{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class CandidateFeed:
    """The LLM interface OpenEvolve calls (``generate``, ``generate_with_context``).

    Args:
        state_dir: The run's state directory (context and ledger).
        model_cfg: OpenEvolve's model config (endpoint, model name, key, sampling, timeout, retries).
    """

    def __init__(self, state_dir: str, model_cfg: Any) -> None:
        self.state_dir = state_dir
        self.model = model_cfg.name  # OpenEvolve's ensemble logs vars(client)["model"]
        self.system_message = model_cfg.system_message or ""
        self.last_usage: dict[str, Any] | None = None
        self._cfg = model_cfg
        self._inner: Any = None
        self._prefill: ServerPrefill | None = None  # what the served template pre-fills (with template options)
        self._queue: deque[str | None] = deque()
        self._failures = 0
        self._aborted: str | None = None
        self._calls = 0  # successful calls in the ledger up to byte _offset (any process's)
        self._offset = 0

    def _llm(self) -> Any:
        if self._inner is None:
            from openevolve.llm.openai import OpenAILLM

            options = dict(load_context(self.state_dir).chat_template_kwargs or {})
            if options:
                self._inner = _with_template_options(OpenAILLM, options)(self._cfg)
                self._prefill = ServerPrefill(
                    self._cfg.api_base,
                    model=self._cfg.name,
                    chat_template_kwargs=options,
                    api_key=self._cfg.api_key,
                    timeout_s=min(float(self._cfg.timeout or 60), 60.0),
                )
            else:
                self._inner = OpenAILLM(self._cfg)
        return self._inner

    async def generate(self, prompt: str, **kwargs: Any) -> str:
        """One candidate for a bare prompt (with the configured system message)."""
        return await self.generate_with_context(self.system_message, [{"role": "user", "content": prompt}], **kwargs)

    async def generate_with_context(self, system_message: str, messages: list[dict[str, str]], **kwargs: Any) -> str:
        """The next candidate as a fenced program, calling the model when the last call's candidates are used up.

        Returns:
            The program in a fence of the env's language, or "" for a candidate the completion lacked.

        Raises:
            BudgetReached: The search already made its target number of calls.
            EndpointUnavailable: Too many calls failed in a row.
            Exception: The endpoint's error for this call (after the configured retries).
        """
        context = load_context(self.state_dir)
        if not self._queue:
            await self._fetch(context, system_message, messages)
        program = self._queue.popleft()
        return "" if program is None else f"```{context.env.program_language}\n{program}\n```"

    async def _fetch(self, context: SearchContext, system_message: str, messages: list[dict[str, str]]) -> None:
        ledger = Ledger(Path(self.state_dir))
        if self._aborted:
            raise EndpointUnavailable(self._aborted)
        records, self._offset = ledger.calls_after(self._offset)
        self._calls += sum(r.get("kind") == "call" for r in records)
        if self._calls >= context.iterations:
            raise BudgetReached(f"the search already made its {context.iterations} model calls")
        if context.stop_when_solved and ledger.solved():  # no model call once a candidate solved the problem
            raise BudgetReached("a candidate already solves the problem (the full evaluation, hidden tests included)")
        call = ledger.next_ticket()  # unique across worker processes and resumed runs: so are the seeds
        seeds = [call_seed(context.seed, context.arm, context.task.id, call, j) for j in range(self._requests(context))]
        completions: list[str] = []
        usage: list[dict[str, Any] | None] = []
        prefill = ""
        try:
            llm = self._llm()
            if self._prefill is not None:  # OpenEvolve's client sends the system message first, even an empty one
                sent = [{"role": "system", "content": system_message}, *messages]
                prefill = await asyncio.to_thread(self._prefill, sent)
            for seed in seeds:
                text = await llm.generate_with_context(system_message, messages, seed=seed)
                completions.append(prefill + (text or ""))
                usage.append(getattr(self._inner, "last_usage", None))
        except Exception as exc:
            self._failures += 1
            error = f"{type(exc).__name__}: {exc}"
            ledger.add_call({"kind": "call_error", "call": call, "error": error})
            if self._failures >= context.max_consecutive_errors:
                self._aborted = (
                    f"{self._failures} model calls in a row failed (last: {error}); check that the endpoint "
                    f"{self._cfg.api_base} serves {self._cfg.name!r}"
                )
                ledger.add_call({"kind": "abort", "error": self._aborted})
            raise
        self._failures = 0
        candidates, errors = self._candidates(context, completions)
        self.last_usage = usage[-1] if usage else None
        ledger.add_call(
            {
                "kind": "call",
                "call": call,
                "seeds": seeds,
                "prompt": {"system": system_message, "messages": messages},
                "completions": completions,
                "prefill": prefill,
                "candidates": candidates,
                "errors": errors,
                "usage": usage,
            }
        )
        self._queue.extend(candidates)

    @staticmethod
    def _requests(context: SearchContext) -> int:
        return 1 if context.mode == "multi" else context.m

    @staticmethod
    def _candidates(context: SearchContext, completions: list[str]) -> tuple[list[str | None], list[str | None]]:
        env, task, m = context.env, context.task, context.m
        programs: list[str | None] = []
        errors: list[str | None] = []
        per_completion = m if context.mode == "multi" else 1
        for text in completions:
            try:
                parsed = env.parse(task, text, mode=context.mode, m=per_completion)
            except Exception as exc:  # a parser bug must not lose the call: its candidates count as failed
                programs += [None] * per_completion
                errors += [f"parse failed: {type(exc).__name__}: {exc}"] * per_completion
                continue
            for candidate in parsed[:per_completion]:
                program = candidate_program(env, candidate)
                programs.append(program)
                errors.append(None if program else (candidate.error or "no program"))
        programs, errors = programs[:m], errors[:m]
        while len(programs) < m:
            programs.append(None)
            errors.append("missing")
        return programs, errors


def _with_template_options(llm_class: Any, options: dict[str, Any]) -> Any:
    """OpenEvolve's OpenAI client class, sending `options` as vLLM's ``chat_template_kwargs`` in each request.

    OpenEvolve builds the request's fields itself (model, messages, sampling, seed) and has no option for
    extra ones; its `_call_api` passes them to ``openai``'s ``chat.completions.create``, whose
    ``extra_body`` adds fields to the JSON body.
    """

    class TemplateOptionsLLM(llm_class):
        async def _call_api(self, params: dict[str, Any]) -> str:
            extra = {**(params.get("extra_body") or {}), "chat_template_kwargs": dict(options)}
            return str(await super()._call_api({**params, "extra_body": extra}))

    return TemplateOptionsLLM


def make_feed(state_dir: str, model_cfg: Any) -> CandidateFeed:
    """OpenEvolve's ``init_client`` factory (bound to a state directory with `functools.partial`)."""
    return CandidateFeed(state_dir, model_cfg)
