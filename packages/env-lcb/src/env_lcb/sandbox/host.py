"""The trusted side of the sandbox: worker processes in bubblewrap, job dispatch, verdicts.

Expected outputs stay in this process: workers receive programs and test inputs only, and every
comparison happens here with LiveCodeBench's rules.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import shutil
import signal
import struct
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["GradeResult", "Sandbox", "SandboxError", "compare_stdout", "default_sandbox", "grade"]

logger = logging.getLogger(__name__)
WORKER = Path(__file__).with_name("worker.py")
VERDICTS = ("ok", "wa", "tle", "mle", "ole", "re", "ce", "infra")


class SandboxError(RuntimeError):
    """The sandbox itself failed (a worker died or hung twice): never a pass, never a silent 0."""


@dataclass
class GradeResult:
    """Per-test outcome of one program.

    Attributes:
        verdicts: One of ok, wa, tle, mle, ole, re, ce per test.
        passed: ``verdicts == "ok"``, shape (n_tests,).
        cpu_s: CPU seconds per test, shape (n_tests,).
        wall_s: Wall seconds per test, shape (n_tests,).
        isolation: ``"bubblewrap"`` or ``"degraded"`` (rlimits + seccomp only).
        stderr: Tail of the program's stderr per test.
    """

    verdicts: list[str]
    passed: NDArray[np.bool_]
    cpu_s: NDArray[np.float64]
    wall_s: NDArray[np.float64]
    isolation: str
    stderr: list[str] = field(default_factory=list)


def _decimal_tokens(line: str) -> list[Decimal] | None:
    try:
        return [Decimal(token) for token in line.split()]
    except (InvalidOperation, ValueError):
        return None


def compare_stdout(output: str, expected: str) -> bool:
    """LiveCodeBench's stdin/stdout rule: stripped, line by line, equal or equal as Decimal tokens."""
    got = output.strip().split("\n")
    want = expected.strip().split("\n")
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        g, w = g.strip(), w.strip()
        if g == w:
            continue
        g_dec, w_dec = _decimal_tokens(g), _decimal_tokens(w)
        if g_dec is None or w_dec is None or g_dec != w_dec:
            return False
    return True


def compare_functional(result: str, expected: str) -> bool:
    """Exactly one JSON record, equal to the expected JSON value (top-level tuples became lists)."""
    lines = [line for line in result.split("\n") if line.strip()]
    if len(lines) != 1:
        return False
    try:
        got = json.loads(lines[0])
        want = json.loads(expected)
    except (json.JSONDecodeError, RecursionError):
        return False
    if isinstance(want, tuple):
        want = list(want)
    return got == want


def _bwrap_command(python: str, program: Sequence[str] = ("/sandbox/worker.py",)) -> list[str]:
    prefix = str(Path(python).resolve().parents[1])
    command = [
        "bwrap",
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--uid",
        "65534",
        "--gid",
        "65534",
        "--ro-bind",
        "/usr",
        "/usr",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
        "--symlink",
        "usr/bin",
        "/bin",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "--chdir",
        "/tmp",
        "--ro-bind",
        str(WORKER),
        "/sandbox/worker.py",
        "--setenv",
        "PYTHONHASHSEED",
        "0",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
    ]
    if not prefix.startswith("/usr"):
        command += ["--ro-bind", prefix, prefix]
    return [*command, "--", python, "-I", "-S", *program]


def _bwrap_works(python: str) -> bool:
    if shutil.which("bwrap") is None:
        return False
    try:
        probe = subprocess.run(_bwrap_command(python, ("-c", "print(1)")), capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0 and probe.stdout.strip() == b"1"


_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-spawner")


class _Worker:
    def __init__(self, command: list[str], degraded: bool = False) -> None:
        env = None
        self.scratch: str | None = None
        if degraded:  # a private scratch directory instead of the sandbox's own /tmp
            import tempfile

            self.scratch = tempfile.mkdtemp(prefix="vpo-sandbox-")
            env = {"VPO_SANDBOX_SCRATCH": self.scratch, "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"}
        # bubblewrap's --die-with-parent (PR_SET_PDEATHSIG) fires when the *thread* that started it exits,
        # so every worker is started from one long-lived spawner thread, never from a short-lived caller
        # thread such as a ThreadPoolExecutor's.
        self.process = _SPAWNER.submit(
            subprocess.Popen,
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        ).result()

    def call(self, job: dict[str, Any], timeout: float) -> dict[str, Any]:
        payload = json.dumps(job).encode()
        result: dict[str, Any] = {}

        def exchange() -> None:
            stdin, stdout = self.process.stdin, self.process.stdout
            if stdin is None or stdout is None:
                return
            try:
                stdin.write(struct.pack(">I", len(payload)) + payload)
                stdin.flush()
                header = stdout.read(4)
                if len(header) == 4:
                    result["reply"] = json.loads(stdout.read(struct.unpack(">I", header)[0]))
            except (OSError, ValueError) as exc:  # a dead worker: reported by the caller as SandboxError
                result["error"] = repr(exc)

        thread = threading.Thread(target=exchange, daemon=True)
        thread.start()
        thread.join(timeout)
        if "reply" not in result:
            self.kill()
            raise SandboxError(f"the sandbox worker died or hung ({result.get('error', 'no reply in time')})")
        return result["reply"]

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, 9)
        self.process.wait(timeout=10)
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)


class Sandbox:
    """A pool of long-lived sandbox workers (one bubblewrap sandbox each, at most one per core).

    Args:
        workers: Number of worker processes.
        allow_degraded: Run without bubblewrap (rlimits + seccomp only, the filesystem visible) when
            bubblewrap cannot start; otherwise that is an error.
        python: Interpreter to run programs with (default: this one's base interpreter).
    """

    def __init__(self, workers: int = 1, *, allow_degraded: bool = False, python: str | None = None) -> None:
        self.python = python or os.path.realpath(getattr(sys, "_base_executable", sys.executable))
        if _bwrap_works(self.python):
            self.isolation = "bubblewrap"
            self.command = _bwrap_command(self.python)
        elif allow_degraded:
            self.isolation = "degraded"
            self.command = [self.python, "-I", "-S", str(WORKER)]
            logger.warning(
                "bubblewrap is unavailable: untrusted code runs with rlimits and seccomp only and can READ the host "
                "filesystem. Install bubblewrap (apt-get install bubblewrap) for full isolation."
            )
        else:
            raise SandboxError(
                "bubblewrap cannot start here; install it (apt-get install bubblewrap) or pass "
                "allow_degraded=True to accept rlimits + seccomp only."
            )
        self.restarts = 0  # workers replaced after dying or hanging
        self._idle = [self._new_worker() for _ in range(max(1, workers))]
        self._lock = threading.Condition()
        atexit.register(self.close)

    def _new_worker(self) -> _Worker:
        return _Worker(self.command, degraded=self.isolation == "degraded")

    def close(self) -> None:
        """Stop every worker."""
        with self._lock:
            for worker in self._idle:
                worker.kill()
            self._idle = []

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def worker_pids(self) -> list[int]:
        """Host pids of the idle workers' sandbox processes (for leak checks)."""
        return [w.process.pid for w in self._idle]

    def run(self, job: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one job to a free worker; restart a worker that fails and retry once."""
        for attempt in range(2):
            with self._lock:
                while not self._idle:
                    self._lock.wait()
                worker = self._idle.pop()
            try:
                reply = worker.call(job, timeout)
            except SandboxError:
                self.restarts += 1
                logger.info("restarting a sandbox worker (attempt %d)", attempt + 1)
                worker = self._new_worker()
                if attempt == 1:
                    with self._lock:
                        self._idle.append(worker)
                        self._lock.notify()
                    raise
                with self._lock:
                    self._idle.append(worker)
                    self._lock.notify()
                continue
            with self._lock:
                self._idle.append(worker)
                self._lock.notify()
            return reply
        raise SandboxError("unreachable")

    def grade(
        self,
        code: str,
        tests: Sequence[dict[str, str]],
        *,
        fn_name: str | None = None,
        time_limit_s: float = 6.0,
        memory_mb: int = 1024,
        output_mb: int = 16,
    ) -> GradeResult:
        """Run a program on every test and compare its outputs here, in the trusted process.

        Args:
            code: The Python program.
            tests: LiveCodeBench tests ``{"input": str, "output": str}``.
            fn_name: Functional mode (call ``Solution().fn_name`` or the top-level ``fn_name`` with the
                JSON arguments of each input line); None = stdin/stdout mode.
            time_limit_s: CPU seconds per test (the wall backstop is 3× plus 1 s).
            memory_mb: Address-space limit.
            output_mb: Output (file size) limit.

        Returns:
            Verdicts for every test; never stops at the first failure.

        Raises:
            ValueError: For an empty test list (it would pass vacuously).
            SandboxError: If the sandbox fails twice in a row.
        """
        if not tests:
            raise ValueError("a program needs at least one test; an empty test list would pass vacuously.")
        job = {
            "code": code,
            "mode": "functional" if fn_name else "stdin",
            "fn_name": fn_name,
            "inputs": [str(t["input"]) for t in tests],
            "cpu_s": float(time_limit_s),
            "wall_s": 3.0 * float(time_limit_s) + 1.0,
            "mem_bytes": int(memory_mb) << 20,
            "out_bytes": int(output_mb) << 20,
        }
        reply = self.run(job, timeout=(job["wall_s"] + 1.0) * len(tests) + 10.0)
        if reply.get("compile_error"):
            n = len(tests)
            return GradeResult(["ce"] * n, np.zeros(n, bool), np.zeros(n), np.zeros(n), self.isolation, [""] * n)
        verdicts = [self._verdict(raw, test, fn_name, job) for raw, test in zip(reply["tests"], tests, strict=True)]
        return GradeResult(
            verdicts=verdicts,
            passed=np.array([v == "ok" for v in verdicts]),
            cpu_s=np.array([raw["cpu"] for raw in reply["tests"]]),
            wall_s=np.array([raw["wall"] for raw in reply["tests"]]),
            isolation=self.isolation,
            stderr=[raw["stderr"] for raw in reply["tests"]],
        )

    @staticmethod
    def _verdict(raw: dict[str, Any], test: dict[str, str], fn_name: str | None, job: dict[str, Any]) -> str:
        sig = raw["signal"]
        # SIGXCPU at the soft CPU limit, SIGKILL at the hard one (a program ignoring SIGXCPU), or the wall backstop
        cpu_exhausted = sig == signal.SIGXCPU or (sig == signal.SIGKILL and raw["cpu"] >= job["cpu_s"] - 0.05)
        if raw["timed_out"] or cpu_exhausted:
            return "tle"
        file_too_large = sig == signal.SIGXFSZ or (raw["exit"] == 1 and "File too large" in raw["stderr"])
        if file_too_large or raw["stdout_bytes"] > job["out_bytes"]:
            return "ole"
        if raw["exit"] == 92 or "MemoryError" in raw["stderr"]:
            return "mle"
        if raw["exit"] == 97:
            raise SandboxError(f"the sandbox harness failed: {raw['stderr']}")
        if sig is not None or raw["exit"] not in (0, None):
            return "re"
        if fn_name:
            return "ok" if compare_functional(raw["result"], str(test["output"])) else "wa"
        return "ok" if compare_stdout(raw["stdout"], str(test["output"])) else "wa"


_DEFAULT: Sandbox | None = None
_DEFAULT_LOCK = threading.Lock()


def default_sandbox() -> Sandbox:
    """A process-wide sandbox with one worker per available core (at most 4)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = Sandbox(workers=min(4, len(os.sched_getaffinity(0))))
        return _DEFAULT


def grade(
    code: str, tests: Sequence[dict[str, str]], *, fn_name: str | None = None, time_limit_s: float = 6.0, **limits: Any
) -> GradeResult:
    """Grade one program on LiveCodeBench tests in the default sandbox (see `Sandbox.grade`)."""
    return default_sandbox().grade(code, tests, fn_name=fn_name, time_limit_s=time_limit_s, **limits)
