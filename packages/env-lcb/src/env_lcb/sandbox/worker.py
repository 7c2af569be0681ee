"""Sandbox worker: runs untrusted Python programs test by test. Standard library only.

Started once per worker slot inside bubblewrap (``python -I -S worker.py``), it reads jobs from
stdin and writes results to stdout, each a 4-byte big-endian length then JSON. A job holds the
program, its mode and the test *inputs* only: expected outputs never reach this process. Every test
runs in a forked child that sets rlimits, installs a seccomp filter (no process creation beyond
threads, no sockets, no signals to others, no ptrace, no namespace or mount calls), then runs the
program; the worker measures CPU time with wait4 and kills the child's process group at a wall-clock
backstop.
"""

import contextlib
import ctypes
import json
import marshal
import os
import resource
import signal
import struct
import sys
import time

PREAMBLE = (
    "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\n"
    "from heapq import *\nfrom bisect import *\nfrom copy import *\nfrom math import *\nfrom random import *\n"
    "from statistics import *\nfrom itertools import *\nfrom functools import *\nfrom operator import *\n"
    "from io import *\nfrom sys import *\nfrom json import *\nfrom builtins import *\nfrom typing import *\n"
    "import string, re, datetime, collections, heapq, bisect, copy, math, random, statistics, itertools\n"
    "import functools, operator, io, sys, json\nsys.setrecursionlimit(50000)\n"
)

# x86-64 syscall numbers denied with EPERM (clone is allowed only with CLONE_THREAD; clone3 gets ENOSYS
# so that glibc falls back to clone for threads).
DENIED = [
    57,
    58,
    59,
    322,  # fork, vfork, execve, execveat
    41,
    53,
    42,
    49,
    50,
    43,
    288,  # socket, socketpair, connect, bind, listen, accept, accept4
    62,
    200,
    234,
    129,
    297,
    424,
    434,
    438,  # kill, tkill, tgkill, rt_(tg)sigqueueinfo, pidfd_*
    101,
    310,
    311,
    440,  # ptrace, process_vm_readv/writev, process_madvise
    112,
    109,  # setsid, setpgid
    272,
    308,
    165,
    166,
    161,
    155,  # unshare, setns, mount, umount2, chroot, pivot_root
    321,
    298,
    250,
    248,
    249,
    323,
    425,
    426,
    427,  # bpf, perf_event_open, keys, userfaultfd, io_uring
    105,
    106,
    113,
    114,
    117,
    119,
    135,  # set*id, personality
    169,
    246,
    175,
    313,
    176,
    172,
    173,
    167,
    168,
    170,
    171,
    163,
    179,  # admin calls
]
NR_CLONE, NR_CLONE3, CLONE_THREAD = 56, 435, 0x00010000
AUDIT_ARCH_X86_64 = 0xC000003E
# The only writable directory: /tmp inside bubblewrap; a private temporary directory in degraded mode.
SCRATCH = os.environ.get("VPO_SANDBOX_SCRATCH", "/tmp")


def _bpf():
    ld, jeq, ret, and_ = 0x20, 0x15, 0x06, 0x54
    allow, eperm, enosys, kill = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38, 0x80000000
    prog = [(ld, 0, 0, 4), (jeq, 1, 0, AUDIT_ARCH_X86_64), (ret, 0, 0, kill), (ld, 0, 0, 0)]
    n = len(DENIED)
    # layout after the syscall load: [clone check][clone3 check][denied checks...][allow][eperm][enosys][clone args]
    prog.append((jeq, n + 4, 0, NR_CLONE))  # -> clone argument check
    prog.append((jeq, n + 2, 0, NR_CLONE3))  # -> enosys
    for i, nr in enumerate(DENIED):
        prog.append((jeq, n - i, 0, nr))  # -> eperm
    prog += [(ret, 0, 0, allow), (ret, 0, 0, eperm), (ret, 0, 0, enosys)]
    prog += [
        (ld, 0, 0, 16),
        (and_, 0, 0, CLONE_THREAD),
        (jeq, 1, 0, CLONE_THREAD),
        (ret, 0, 0, eperm),
        (ret, 0, 0, allow),
    ]
    return b"".join(struct.pack("=HBBI", *ins) for ins in prog), len(prog)


_LIBC = ctypes.CDLL(None, use_errno=True)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


# Built and exercised once in the zygote, so a test child's two prctl calls touch no fresh ctypes
# state: resolving the symbol and building the call in each child cost ~0.2 ms of copy-on-write
# page faults per test.
_BPF_CODE, _BPF_COUNT = _bpf()
_BPF_BUFFER = ctypes.create_string_buffer(_BPF_CODE)
_BPF_PROG = _SockFprog(_BPF_COUNT, ctypes.cast(_BPF_BUFFER, ctypes.c_void_p))
_BPF_PROG_ADDRESS = ctypes.addressof(_BPF_PROG)
_PRCTL = _LIBC.prctl
_PRCTL.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
_PRCTL.restype = ctypes.c_int
_PRCTL(39, 0, 0, 0, 0)  # PR_GET_NO_NEW_PRIVS: a harmless call that binds the symbol here

# The zygote step: run the preamble once here. Every test is a fresh fork, so a child can execute the
# program directly in this namespace: its writes land in the child's copy-on-write pages and die
# with it. (Re-running the preamble in each child cost ~0.8 ms: every `import *` touches, and so
# copies, the pages of all the objects it binds.)
_PREAMBLE_CODE = compile(PREAMBLE, "<preamble>", "exec")
_PREAMBLE_SCOPE = {"__name__": "__preamble__", "__builtins__": __builtins__}
exec(_PREAMBLE_CODE, _PREAMBLE_SCOPE)


_TEST_STREAMS = ()  # (stdin, stdout, stderr) text wrappers on fds 0, 1, 2, made once by main()


def install_seccomp():
    """Load the BPF filter into this process (after PR_SET_NO_NEW_PRIVS)."""
    if _PRCTL(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
    if _PRCTL(22, 2, _BPF_PROG_ADDRESS, 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP failed")


def _limits(job):
    cpu = max(1, int(job["cpu_s"] + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (job["mem_bytes"], job["mem_bytes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (job["out_bytes"], job["out_bytes"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _child(job, program, test_input, paths):
    """Runs in the forked child: never returns."""
    try:
        os.setpgid(0, 0)
        os.chdir(SCRATCH)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        stdin_fd = os.open(paths["in"], os.O_RDONLY)
        out_fd = os.open(paths["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err_fd = os.open(paths["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        res_fd = os.open(paths["res"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(stdin_fd, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        for fd in (stdin_fd, out_fd, err_fd):
            os.close(fd)
        sys.stdin, sys.stdout, sys.stderr = _TEST_STREAMS
        _limits(job)
        install_seccomp()
        result_file = os.fdopen(res_fd, "w")
        sys.set_int_max_str_digits(50000)
    except BaseException as exc:  # harness failure, not the program's
        os.write(2, f"HARNESS {type(exc).__name__}: {exc}".encode())
        os._exit(97)
    status = 0
    try:
        scope = _PREAMBLE_SCOPE
        scope["__name__"] = "__main__" if job["mode"] == "stdin" else "__lcb__"
        exec(program, scope)
        if job["mode"] == "functional":
            name = job["fn_name"]
            target = scope[name] if "Solution" not in scope else getattr(scope["Solution"](), name)
            args = [json.loads(line) for line in test_input.split("\n") if line.strip()]
            value = target(*args)
            if isinstance(value, tuple):
                value = list(value)
            result_file.write(json.dumps(value) + "\n")
            result_file.flush()
    except SystemExit as exc:
        status = 0 if exc.code in (None, 0) else (exc.code if isinstance(exc.code, int) else 1)
    except MemoryError:
        status = 92
    except BaseException:
        import traceback

        traceback.print_exc()
        status = 1
    try:
        sys.stdout.flush()
    except BaseException:
        status = status or 1
    os._exit(status if isinstance(status, int) and 0 <= status < 256 else 1)


def _tail(path, limit):
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError:
        return b""
    return data


def _wait_with_deadline(pid, seconds):
    """Block in wait4 until the child exits; an interval timer kills its process group at the deadline."""
    fired = []

    def on_alarm(signum, frame):
        fired.append(True)
        for target in (-pid, pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(target, signal.SIGKILL)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        _, status, usage = os.wait4(pid, 0)  # retried after the handler runs (PEP 475)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return bool(fired), status, usage


def run_test(job, program, index, test_input):
    """Fork a child for one test, supervise it, and return its raw record."""
    base = os.path.join(SCRATCH, f"t{index}")
    paths = {key: f"{base}.{key}" for key in ("in", "out", "err", "res")}
    with open(paths["in"], "w") as handle:
        handle.write(test_input)
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(job, program, test_input, paths)
    timed_out, status, usage = _wait_with_deadline(pid, job["wall_s"])
    wall = time.monotonic() - start
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # anything the program left in its group
    out = _tail(paths["out"], job["out_bytes"])
    record = {
        "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "cpu": (usage.ru_utime + usage.ru_stime) if usage else 0.0,
        "wall": wall,
        "timed_out": timed_out,
        "stdout": out.decode("utf-8", "replace"),
        "stdout_bytes": len(out),
        "result": _tail(paths["res"], job["out_bytes"]).decode("utf-8", "replace"),
        "stderr": _tail(paths["err"], 4096).decode("utf-8", "replace")[-2000:],
    }
    _wipe_tmp()
    return record


def _wipe_tmp():
    """Delete everything in the scratch directory so no state survives a test."""
    import shutil

    for entry in os.listdir(SCRATCH):
        path = os.path.join(SCRATCH, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)


def compile_program(job):
    """Compile the program in a limited child and return its code object; None on a compile error.

    The child (rlimits, seccomp) runs only ``compile()``, so a compile bomb is bounded, and sends
    the code object back marshalled through a scratch file; no untrusted code has run when the
    worker reads it. Test children inherit the code object, so no test compiles again.
    """
    path = os.path.join(SCRATCH, "program.marshal")
    pid = os.fork()
    if pid == 0:
        try:
            _limits(job)
            install_seccomp()
            code = compile(job["code"], "<solution>", "exec")
            with open(path, "wb") as handle:
                handle.write(marshal.dumps(code))
        except SyntaxError:
            os._exit(3)
        except BaseException:
            os._exit(4)
        os._exit(0)
    timed_out, raw, _ = _wait_with_deadline(pid, job["wall_s"])
    try:
        if timed_out or not os.WIFEXITED(raw) or os.WEXITSTATUS(raw) != 0:
            return None
        with open(path, "rb") as handle:
            return marshal.loads(handle.read())
    finally:
        _wipe_tmp()


def main():
    """Serve jobs from stdin until it closes."""
    # The job protocol moves to private descriptors; 0, 1 and 2 are left for the tests' files.
    reader = os.fdopen(os.dup(0), "rb")
    writer = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    global _TEST_STREAMS
    # A test child dup2()s its files onto 0, 1 and 2 and uses these wrappers, made once here with
    # empty buffers (the zygote never reads or writes through them): building three text wrappers
    # in every child cost ~0.2 ms per test.
    _TEST_STREAMS = (open(0, closefd=False), open(1, "w", closefd=False), open(2, "w", closefd=False))  # noqa: SIM115
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:
        header = reader.read(4)
        if len(header) < 4:
            return
        job = json.loads(reader.read(struct.unpack(">I", header)[0]))
        if job.get("ping"):
            reply = {"pong": True, "uid": os.getuid(), "pid": os.getpid()}
        elif (program := compile_program(job)) is None:
            reply = {"compile_error": True, "tests": []}
        else:
            tests = [run_test(job, program, i, t) for i, t in enumerate(job["inputs"])]
            reply = {"compile_error": False, "tests": tests}
        payload = json.dumps(reply).encode()
        writer.write(struct.pack(">I", len(payload)) + payload)
        writer.flush()


if __name__ == "__main__":
    main()
