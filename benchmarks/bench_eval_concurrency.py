"""Requests in flight: the OpenAI sampler (and ``vpo-eval``) at concurrency 1 and 16 against a 50 ms server.

    uv run python benchmarks/bench_eval_concurrency.py

A local threaded server answers each completion request after 50 ms (a server whose latency, not its
compute, bounds the client). The same prompts are sampled with ``max_workers=1`` and ``max_workers=16``
in one run (alternating, best of `REPEATS`); the throughput ratio is the claim of issue 40 item 3 (16 in
flight give at least 12x the throughput of one; 16x is the ideal). The server counts the most requests it
held at once, so the figure is explained by what reached it. Then ``vpo-eval`` itself (maze-v1, one
completion per task) with ``concurrency=1`` and ``16``, the same way.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from vpo_core.http_json import JsonHandler, ServerThread
from vpo_core.sampling_settings import SamplingSettings
from vpo_engines.models.openai import OpenAISampler

LATENCY_S = 0.05
PROMPTS = 64
REPEATS = 2
TARGET = 12.0


class _Listener(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # listen()'s backlog: the default 5 drops simultaneous connects (a 1 s SYN retry)


class SlowServer(ServerThread):
    """``/v1/models`` at once, ``/v1/chat/completions`` after `LATENCY_S`; counts requests held at once."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.most = 0
        self.lock = threading.Lock()
        owner = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                self.send_json(
                    200, {"object": "list", "data": [{"id": "slow", "object": "model", "owned_by": "bench"}]}
                )

            def do_POST(self) -> None:
                payload = self.read_json()
                with owner.lock:
                    owner.in_flight += 1
                    owner.most = max(owner.most, owner.in_flight)
                time.sleep(LATENCY_S)
                with owner.lock:
                    owner.in_flight -= 1
                n = int(payload.get("n", 1))
                choices = [{"index": i, "message": {"role": "assistant", "content": "no route"}} for i in range(n)]
                self.send_json(200, {"choices": choices})

        super().__init__(Handler, server_class=_Listener)
        self.start()
        self.base_url = f"{self.url}/v1"

    def reset(self) -> None:
        with self.lock:
            self.most = 0


def sampler_seconds(server: SlowServer, workers: int, prompts: list[str]) -> tuple[float, int]:
    """Seconds to sample `prompts` with `workers` requests in flight, and the most the server held at once."""
    sampler = OpenAISampler(server.base_url, max_workers=workers, retries=0, timeout_s=60)
    server.reset()
    start = time.perf_counter()
    texts = sampler.sample(
        prompts, num_samples=1, settings=SamplingSettings(temperature=0.7, top_p=1.0, max_new_tokens=64)
    )
    seconds = time.perf_counter() - start
    assert texts == ["no route"] * len(prompts)
    return seconds, server.most


def vpo_eval_seconds(server: SlowServer, concurrency: int, tasks: int, *, phase: bool = False) -> tuple[float, int]:
    """Seconds of ``vpo-eval`` on `tasks` maze-v1 tasks (one completion each), and the most held at once.

    ``phase=True``: the seconds of its sampling phase only (``evaluation.cli._sample_row``: the requests and the
    scoring), without the command's fixed cost (env, probe, metrics, bootstrap, the saved pool).
    """
    from vpo_engines import evaluate as cli
    from vpo_engines.evaluate import main

    server.reset()
    sample_all = cli._sample_row
    spent: list[float] = []

    def timed(*args: Any, **kwargs: Any) -> Any:
        begin = time.perf_counter()
        try:
            return sample_all(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - begin)

    cli._sample_row = timed  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["env=maze-v1", f"base_url={server.base_url}", "template_options=none", "samples=1"]
        argv += [f"tasks={tasks}", f"concurrency={concurrency}", f"out={Path(tmp) / 'eval'}"]
        argv += [f"env.test_size={tasks}", "env.train_size=1"]
        start = time.perf_counter()
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
        seconds = time.perf_counter() - start
    cli._sample_row = sample_all  # type: ignore[assignment]
    assert code == 0, f"vpo-eval exited {code}"
    return (spent[0] if phase else seconds), server.most


def measure(run: Any, label: str, size: int) -> float:
    """Print one table row per concurrency and return the throughput ratio of 16 to 1."""
    best = {1: (float("inf"), 0), 16: (float("inf"), 0)}
    for _ in range(REPEATS):
        for workers in (1, 16):
            seconds, most = run(workers)
            if seconds < best[workers][0]:
                best[workers] = (seconds, most)
    for workers, (seconds, most) in best.items():
        print(f"| {label} | {workers} | {size} | {seconds:.2f} | {size / seconds:.1f} | {most} |")
    return best[1][0] / best[16][0]


def main() -> int:
    server = SlowServer()
    try:
        prompts = [json.dumps([{"role": "user", "content": f"question {i}"}]) for i in range(PROMPTS)]
        print(f"server latency {LATENCY_S * 1000:.0f} ms per completion request; best of {REPEATS} runs each\n")
        print("| client | in flight asked | requests | seconds | requests/s | most held by the server |")
        print("|---|---:|---:|---:|---:|---:|")
        ratio = measure(lambda w: sampler_seconds(server, w, prompts), "OpenAISampler.sample", PROMPTS)
        eval_ratio = measure(
            lambda w: vpo_eval_seconds(server, w, PROMPTS), "vpo-eval (maze-v1), whole command", PROMPTS
        )
        phase_ratio = measure(
            lambda w: vpo_eval_seconds(server, w, PROMPTS, phase=True), "vpo-eval (maze-v1), sampling phase", PROMPTS
        )
    finally:
        server.close()
    print(f"\nOpenAISampler: 16 in flight give {ratio:.1f}x the throughput of 1 (target >= {TARGET:.0f}x, ideal 16x)")
    print(
        f"vpo-eval: concurrency=16 gives {phase_ratio:.1f}x the sampling phase's throughput of concurrency=1 "
        f"(target >= {TARGET:.0f}x); {eval_ratio:.1f}x on the whole command, fixed costs included"
    )
    return 0 if min(ratio, phase_ratio) >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
