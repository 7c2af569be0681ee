"""Sandbox worker: a broker that talks to the host and a zygote that forks test children. Stdlib only.

Started once per worker slot inside bubblewrap (``python -I -S worker.py``).

Trust boundary
==============
Three kinds of process live in one worker sandbox (one uid, one pid namespace):

* the **broker** (this process's main loop; pid 1 of the sandbox, ``bwrap --as-pid-1``): reads
  jobs from the host (program, mode, test *inputs*, limits; never expected outputs), writes
  per-test records back, owns every descriptor of the job. It never runs untrusted code.
* the **zygote**: forked from the broker at start-up, *before any job exists*. It holds the
  LiveCodeBench preamble, the prebuilt seccomp filters and nothing else, and runs under the
  large filter itself. It keeps one **spare** child cloned ahead of time: the spare waits on the
  command socket, takes one command (numeric limits and, as SCM_RIGHTS descriptors, its memfds),
  tells the zygote, which clones the next spare meanwhile, and becomes that command's child. The
  zygote itself never receives a command or a descriptor: it never sees a program, an input, an
  output, an exit status or a CPU time, so its memory (frames, heap, freed blocks) holds no data.
* **children** (one per compile and one per test): ``clone(CLONE_PARENT)`` of the zygote, so the
  broker is their parent and reaps them (exit status, CPU time from ``wait4``). A child reads its
  own program (a sealed, write-protected memfd of the marshalled code) and its own stdin memfd,
  then in trusted harness code: new process group, rlimits, a small stacked seccomp filter (no
  clone but threads, no setpgid) on the zygote's, a sealed "ready" mark, and
  every descriptor but 0/1/2 and its result memfd (3) closed. Only then does untrusted code run.

What untrusted code can see and touch, and why each attack class is closed:

1. Previous jobs / other tests: it is a copy of the zygote, which never held job data (above),
   plus its own program and input. Nothing of the broker's memory is mapped in it.
2. Forged protocol messages: its descriptors are its own stdin, stdout, stderr and result memfds
   (fresh per test); the host pipes and the zygote socket are closed before untrusted code runs,
   and ``/proc/<broker>/fd`` is refused (not dumpable, below). Whatever it writes to fd 3 is at
   most its own answer.
3. The worker's memory: broker, zygote and children are ``PR_SET_DUMPABLE=0``, hold no
   capabilities (bubblewrap drops them; ``no_new_privs``), so ``/proc/<pid>/mem``, ``maps``,
   ``environ`` and ``fd`` of every other sandbox process are refused even at the same uid;
   ``ptrace``, ``process_vm_*``, ``kcmp``, ``pidfd_*`` are denied by seccomp.
4. Changing the worker: seccomp denies ``prlimit64`` on any pid but 0, ``setpriority``,
   ``sched_set*``, ``ioprio_set``, ``migrate_pages``/``move_pages``, ``fcntl``
   ``F_SETOWN``/``F_SETOWN_EX``/``F_SETSIG``/``F_SETLEASE``/``F_NOTIFY``, ``ioctl`` ``FIOSETOWN``/
   ``SIOCSPGRP``/``TIOCSTI``/``TIOCSPGRP``, every signal-sending call, and the chmod/chown/xattr
   families; ``/proc`` is mounted read-only (no ``oom_score_adj``, ``autogroup``... of another
   process). The scratch wipe after each test restores permissions (the broker owns every file)
   and walks without recursion or symlinks; after the compile and at the end of every job the
   broker compares its own and the zygote's rlimits, priority, affinity and scheduler with their
   start-up values. Any failure is
   reported as "unhealthy": the host replaces the worker and runs the remaining tests elsewhere.
5. State outliving a test: ``/``, ``/proc`` and ``/dev`` (with ``/dev/shm``) are read-only; the scratch ``/tmp`` is a
   size-capped tmpfs wiped after every test; SysV IPC, POSIX message queues and ``memfd_create``
   are denied, so nothing a test creates survives it and parked memory is bounded by the scratch
   cap plus its output memfds (each capped by RLIMIT_FSIZE), all freed when the test ends.
   The host's dentry cache: no directory of the host's disk is in view (``/usr`` and the prefix are
   read-only tmpfs skeletons of single-file binds, made before the zygote exists), so a storm of
   failed lookups leaves no negative dentries on the host (tmpfs and procfs do not cache them).
6. Verdicts: the broker reports facts (exit status, signal, CPU time, sizes, the ready mark, the
   capped output bytes); the host maps them to verdicts with a total table. A program chooses
   its exit status, but only "exit 0 and the right output" passes.
"""

import contextlib
import ctypes
import fcntl
import gc
import json
import marshal
import os
import resource
import select
import signal
import socket
import stat
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

# ----------------------------------------------------------------------------------------- seccomp
# x86-64 syscall numbers denied with EPERM.
DENIED = sorted(
    {
        *(57, 58, 59, 322),  # fork, vfork, execve, execveat
        *(41, 53, 42, 49, 50, 43, 288),  # socket, socketpair, connect, bind, listen, accept, accept4
        *(62, 200, 234, 129, 297, 424, 434, 438),  # kill, tkill, tgkill, rt_(tg)sigqueueinfo, pidfd_*
        *(101, 310, 311, 440, 448, 312),  # ptrace, process_vm_readv/writev, process_madvise/mrelease, kcmp
        112,  # setsid (setpgid: denied by the children's own filter, after they made their group)
        *(272, 308, 165, 166, 161, 155),  # unshare, setns, mount, umount2, chroot, pivot_root
        *(428, 429, 430, 431, 432, 433, 442),  # the new mount API
        *(321, 298, 248, 249, 250, 323, 425, 426, 427, 317),  # bpf, perf, keys, userfaultfd, io_uring, seccomp
        *(105, 106, 113, 114, 117, 119, 122, 123, 116, 135),  # set*id, setgroups, personality
        *(103, 153, 159, 163, 164, 167, 168, 169, 170, 171, 172, 173),  # admin calls
        *(175, 176, 179, 212, 227, 246, 305, 313, 320),  # modules, quotas, clocks, kexec
        # class 4: acting on other processes, permissions that could trap the scratch wipe
        *(141, 142, 144, 203, 314, 251, 256, 279),  # setpriority, sched_set*, ioprio_set, migrate/move_pages
        *(90, 91, 268, 452, 92, 93, 94, 260),  # chmod family, chown family
        *(188, 189, 190, 197, 198, 199),  # set/remove xattr (ACLs)
        *(303, 304, 300),  # name_to_handle_at, open_by_handle_at, fanotify_init
        # class 5: objects that outlive a process
        *(319, 447),  # memfd_create, memfd_secret
        *(29, 30, 31, 67, 64, 65, 66, 220, 68, 69, 70, 71),  # SysV shm, sem, msg
        *(240, 241, 242, 243, 244, 245),  # POSIX message queues
        # host-wide kernel quotas (aio contexts: fs.aio-max-nr; inotify instances: per host uid)
        # and host-wide writeback (sync, syncfs on a read-only bind of the host's disk)
        *(206, 253, 294, 162, 306),  # io_setup, inotify_init, inotify_init1, sync, syncfs
        # POSIX timers: each holds a preallocated queued signal, counted against the host uid's
        # RLIMIT_SIGPENDING (host root's when bubblewrap runs as root); with the signal-sending calls,
        # mq_notify and F_SETSIG above, no call is left that queues a signal (issue 37)
        *(222, 223, 224, 225, 226),  # timer_create, timer_settime, timer_gettime, timer_getoverrun, timer_delete
    }
)
NR_CLONE, NR_CLONE3, NR_PRLIMIT64, NR_FCNTL, NR_IOCTL, NR_SETPGID = 56, 435, 302, 72, 16, 109
CLONE_THREAD, CLONE_PARENT, SIGCHLD = 0x00010000, 0x00008000, 17
# fcntl: F_SETOWN, F_SETSIG, F_SETOWN_EX, F_SETLEASE, F_NOTIFY; ioctl: FIOSETOWN, SIOCSPGRP, TIOCSTI, TIOCSPGRP
DENIED_FCNTL = (8, 10, 15, 1024, 1026)
DENIED_IOCTL = (0x8901, 0x8902, 0x5412, 0x5410)
AUDIT_ARCH_X86_64 = 0xC000003E


def _bpf(stage):
    """Classic BPF programs, stacked (the strictest answer wins).

    ``"zygote"``: loaded once into the zygote and inherited by every child: architecture check,
    argument checks, the deny list; ``clone`` only for threads or as the zygote's exact
    ``CLONE_PARENT | SIGCHLD``. ``"child"``: a few instructions each child adds after making its
    process group: ``clone`` only for threads, no ``setpgid`` (stacking a small filter is cheaper than
    loading the large one per child).
    """
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, eperm, enosys, kill = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38, 0x80000000
    prog, labels = [], {}

    def emit(code, k, jt=0, jf=0):
        prog.append([code, jt, jf, k])

    def label(name):
        labels[name] = len(prog)

    emit(ld, 4)  # seccomp_data.arch
    emit(jeq, AUDIT_ARCH_X86_64, 0, "kill")
    emit(ld, 0)  # seccomp_data.nr
    if stage == "child":
        emit(jeq, NR_CLONE, 0, "not_clone")
        emit(ld, 16)  # args[0] (flags), low 32 bits
        emit(jset, CLONE_THREAD, "allow", "eperm")
        label("not_clone")
        emit(jeq, NR_SETPGID, "eperm", 0)
        emit(ret, allow)
    else:
        emit(jge, 0x40000000, "eperm", 0)  # x32 ABI numbers
        for nr, target in ((NR_CLONE, "clone"), (NR_PRLIMIT64, "prlimit"), (NR_FCNTL, "fcntl"), (NR_IOCTL, "ioctl")):
            emit(jeq, nr, target, 0)
        emit(jeq, NR_CLONE3, "enosys", 0)  # glibc falls back to clone for threads
        for nr in DENIED:
            emit(jeq, nr, "eperm", 0)
        emit(ret, allow)  # not denied
        label("clone")  # threads, and the zygote's own clone
        emit(ld, 16)  # args[0] (flags), low 32 bits
        emit(jset, CLONE_THREAD, "allow", 0)
        emit(jeq, CLONE_PARENT | SIGCHLD, "allow", "eperm")
        label("prlimit")  # this process only
        emit(ld, 16)
        emit(jeq, 0, "allow", "eperm")
        for name, commands in (("fcntl", DENIED_FCNTL), ("ioctl", DENIED_IOCTL)):
            label(name)
            emit(ld, 24)  # args[1] (cmd), low 32 bits
            for command in commands:
                emit(jeq, command, "eperm", 0)
            emit(ret, allow)
    label("allow")  # classic BPF jumps forward only: the shared returns come last
    emit(ret, allow)
    label("eperm")
    emit(ret, eperm)
    label("enosys")
    emit(ret, enosys)
    label("kill")
    emit(ret, kill)
    out = []
    for i, (code, jt, jf, k) in enumerate(prog):
        jt = labels[jt] - i - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - i - 1 if isinstance(jf, str) else jf
        if not (0 <= jt < 256 and 0 <= jf < 256):
            raise ValueError(f"BPF jump out of range at instruction {i}: {jt}, {jf}")
        out.append(struct.pack("=HBBI", code, jt, jf, k))
    return b"".join(out), len(prog)


_LIBC = ctypes.CDLL(None, use_errno=True)
_SYSCALL = _LIBC.syscall
_SYSCALL.restype = ctypes.c_long


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


# Built once, so a child's prctl call touches no fresh ctypes state.
_FILTERS = {}
for _stage in ("zygote", "child"):
    _code, _count = _bpf(_stage)
    _buffer = ctypes.create_string_buffer(_code)
    _program = _SockFprog(_count, ctypes.cast(_buffer, ctypes.c_void_p))
    _FILTERS[_stage] = (_buffer, _program, ctypes.addressof(_program))
_PRCTL = _LIBC.prctl
_PRCTL.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
_PRCTL.restype = ctypes.c_int
_PRCTL(39, 0, 0, 0, 0)  # PR_GET_NO_NEW_PRIVS: a harmless call that binds the symbol here
_AFTER_FORK = ctypes.pythonapi.PyOS_AfterFork_Child
_AFTER_FORK.restype = None
_AFTER_FORK.argtypes = ()

# The zygote step: the preamble runs once, in the zygote (`main`), never at import, so importing this
# module leaves the importer's interpreter limits alone; every child is a fresh copy-on-write copy, so
# a test executes the program directly in this namespace and its writes die with it.
_PREAMBLE_SCOPE: dict = {"__name__": "__preamble__", "__builtins__": __builtins__}

# The only writable directory: /tmp inside bubblewrap; a private temporary directory in degraded mode.
SCRATCH = os.environ.get("VPO_SANDBOX_SCRATCH", "/tmp")
COMPILE, TEST = 1, 2
# kind, CPU seconds, address-space bytes, file-size bytes, task cap (0: none), queued-signal cap
CONTROL = struct.Struct("=Bdqqqq")
# Inodes of each test's fresh scratch tmpfs (files, directories, symlinks...); its size is bubblewrap's /tmp's.
SCRATCH_INODES = int(os.environ.get("VPO_SCRATCH_INODES", "8192"))
MS_NOSUID, MS_NODEV, MS_NOEXEC, MNT_DETACH = 2, 4, 8, 2
SEALS = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
MEMORY_MARK = b"\nMEMORY\n"  # appended to the result memfd when a MemoryError escapes the program
STDERR_TAIL = 2000
SOURCE_NAME = "<solution>"  # the file name the program is compiled under (its functions carry it)
_TEST_STREAMS = ()  # (stdin, stdout, stderr) text wrappers on fds 0, 1, 2, made once in the zygote


def install_seccomp(stage):
    """Load one of the BPF filters into this process (PR_SET_NO_NEW_PRIVS first)."""
    if _PRCTL(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
    if _PRCTL(22, 2, _FILTERS[stage][2], 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP failed")


def _limits(cpu_s, mem_bytes, out_bytes, tasks=0, sigpending=16):
    """Set a child's rlimits (CPU, address space, file size, 64 files, no core, queued signals; optionally tasks).

    ``tasks`` is RLIMIT_NPROC: in the sandbox's user namespace it counts the tasks (processes and
    threads) of the sandbox uid: the broker, the zygote, this child and its threads. The kernel
    enforces it only where the sandbox uid maps to a host uid other than 0; as host root the host's
    pids cgroup per worker is the cap (`host._PidsCgroup`).

    ``sigpending`` is RLIMIT_SIGPENDING. Queued signals are counted per user namespace level: for the
    sandbox uid in the worker's own namespace (shared by its processes and checked against this limit)
    and for the host uid it maps to. Behind seccomp, which leaves no call that queues one, it bounds
    what one worker can take from the host uid's quota (no capability here, so it cannot be raised).
    """
    resource.setrlimit(resource.RLIMIT_SIGPENDING, (sigpending, sigpending))
    if tasks:
        resource.setrlimit(resource.RLIMIT_NPROC, (tasks, tasks))
    cpu = max(1, int(cpu_s + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (out_bytes, out_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _read_fd(fd, limit=None):
    size = os.fstat(fd).st_size if limit is None else limit
    chunks, offset = [], 0
    while offset < size:
        chunk = os.pread(fd, size - offset, offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _write_fd(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _ready(ack):
    """Mark, unforgeably, that the harness finished its set-up: untrusted code runs next."""
    os.write(ack, b"R")
    fcntl.fcntl(ack, fcntl.F_ADD_SEALS, SEALS)


# ------------------------------------------------------------------------------------ children
def _compile_child(cpu_s, mem_bytes, out_bytes, tasks, sigpending, fds):
    source_fd, code_fd, err_fd, ack = fds
    mode, fn_name, source = marshal.loads(_read_fd(source_fd))
    os.dup2(err_fd, 2)
    _limits(cpu_s, mem_bytes, out_bytes, tasks, sigpending)
    install_seccomp("child")
    _ready(ack)
    os.closerange(3, code_fd)
    os.closerange(code_fd + 1, 1 << 16)
    try:
        code = compile(source, SOURCE_NAME, "exec")
    except (SyntaxError, ValueError):
        os._exit(3)
    _write_fd(code_fd, marshal.dumps((mode, fn_name, code)))
    os._exit(0)


def _entry_point(scope, fn_name):
    """``Solution().fn_name`` or the top-level ``fn_name``, only if the program wrote that function.

    The program runs in the preamble's namespace, so a name such as ``gcd`` or ``median`` resolves to
    the preamble's import even when the program defines nothing. The entry point must be a function
    whose code was compiled from the submission (decorators that keep ``__wrapped__``, such as
    ``lru_cache``, are looked through); an imported, assigned or inherited callable is refused.
    """
    target = getattr(scope["Solution"](), fn_name) if "Solution" in scope else scope[fn_name]
    func = target
    for _ in range(64):
        func = getattr(func, "__func__", func)
        if hasattr(func, "__code__") or not hasattr(func, "__wrapped__"):
            break
        func = func.__wrapped__
    if getattr(getattr(func, "__code__", None), "co_filename", None) != SOURCE_NAME:
        raise NameError(f"{fn_name!r} is not a function defined by the program")
    return target


def _test_child(cpu_s, mem_bytes, out_bytes, tasks, sigpending, fds):
    program_fd, stdin_fd, stdout_fd, stderr_fd, result_fd, ack = fds
    mode, fn_name, program = marshal.loads(_read_fd(program_fd))
    test_input = _read_fd(stdin_fd) if mode == "functional" else b""
    os.dup2(stdin_fd, 0)
    os.dup2(stdout_fd, 1)
    os.dup2(stderr_fd, 2)
    os.dup2(result_fd, 3)
    os.chdir(SCRATCH)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    _limits(cpu_s, mem_bytes, out_bytes, tasks, sigpending)
    install_seccomp("child")
    _ready(ack)
    os.closerange(4, 1 << 16)  # the zygote's socket and every memfd but the test's own 0-3
    sys.stdin, sys.stdout, sys.stderr = _TEST_STREAMS
    status = 0
    try:
        scope = _PREAMBLE_SCOPE
        scope["__name__"] = "__main__" if mode == "stdin" else "__lcb__"
        exec(program, scope)
        if mode == "functional":
            target = _entry_point(scope, fn_name)
            lines = test_input.decode("utf-8", "surrogatepass").split("\n")
            value = target(*[json.loads(line) for line in lines if line.strip()])
            if isinstance(value, tuple):
                value = list(value)
            _write_fd(3, (json.dumps(value) + "\n").encode())
    except SystemExit as exc:
        status = 0 if exc.code in (None, 0) else (exc.code if isinstance(exc.code, int) else 1)
    except MemoryError:
        status = 1
        _write_fd(3, MEMORY_MARK)
    except BaseException:
        import traceback

        traceback.print_exc()
        status = 1
    try:
        sys.stdout.flush()
    except BaseException:
        status = status or 1
    with contextlib.suppress(BaseException):
        sys.stderr.flush()
    os._exit(status if isinstance(status, int) and 0 <= status < 256 else 1)


def _child(kind, cpu_s, mem_bytes, out_bytes, tasks, sigpending, fds):
    """Runs in a spare (a clone of the zygote) that took this command: never returns."""
    try:
        if kind == COMPILE:
            _compile_child(cpu_s, mem_bytes, out_bytes, tasks, sigpending, fds)
        _test_child(cpu_s, mem_bytes, out_bytes, tasks, sigpending, fds)
    except BaseException as exc:  # a harness failure before the ready mark, or the program's after it
        try:
            os.write(2, f"HARNESS {type(exc).__name__}: {exc}".encode())
        finally:
            os._exit(97)


def _spare(control, taken):
    """A clone of the zygote, made before its command exists: take one command and become its child.

    The clone, the interpreter's after-fork work and the new process group happen while the
    previous test runs, so a test's critical path is only: command, set-up, program, exit.
    """
    try:
        _AFTER_FORK()
        os.setpgid(0, 0)
        message, fds, _, _ = socket.recv_fds(control, 64, 8)
        control.send(struct.pack("=i", os.getpid()))  # the broker's wait4 is for this pid
        os.write(taken, b"T")  # the zygote clones the next spare meanwhile
        os.close(taken)
    except BaseException:
        os._exit(0)
    if len(message) != CONTROL.size or len(fds) > 8:
        os._exit(0)  # no ready mark: the broker reports infra
    _child(*CONTROL.unpack(message), fds)


def _zygote():
    """Keep one spare cloned and waiting; never read a command (fd 3 is the command socket)."""
    control = socket.socket(fileno=3)
    taken_r, taken_w = os.pipe()
    while True:
        pid = _SYSCALL(NR_CLONE, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0)
        if pid == 0:
            os.close(taken_r)
            _spare(control, taken_w)
        if pid < 0:  # a running test may hold every task of the cap: try again when it may have ended
            time.sleep(0.002)
            continue
        try:
            if not os.read(taken_r, 1):
                os._exit(0)
        except OSError:
            os._exit(0)


# -------------------------------------------------------------------------------------- broker
class _Broker:
    """The job loop: memfds per child, commands to the zygote, wait4, records to the host."""

    def __init__(self, reader, writer, control, zygote, host_disk="degraded"):
        self.reader, self.writer, self.control, self.zygote = reader, writer, control, zygote
        self.host_disk = host_disk  # "hidden", or why directories of the host's disk are still in view
        self.scratch_mode = stat.S_IMODE(os.stat(SCRATCH).st_mode)
        self.baseline = self._state()
        # A fresh tmpfs per test that wrote to the scratch (needs CAP_SYS_ADMIN in the sandbox's user
        # namespace, which only this process holds); else, as in degraded mode, the scratch is wiped.
        stats = os.statvfs(SCRATCH)
        self.tmpfs_options = (
            f"size={stats.f_blocks * stats.f_frsize},nr_inodes={SCRATCH_INODES},mode={self.scratch_mode:o}"
        )
        self.fresh_tmpfs = SCRATCH == "/tmp" and self._mount_scratch(replace=False)

    def _mount_scratch(self, replace):
        """Mount a new, empty, inode-capped tmpfs on the scratch; the old one (if any) is detached.

        The cost is independent of what a test created: the kernel frees a detached tmpfs whole.
        """
        if replace and _LIBC.umount2(SCRATCH.encode(), MNT_DETACH) != 0:
            return False
        flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
        return _LIBC.mount(b"tmpfs", SCRATCH.encode(), b"tmpfs", flags, self.tmpfs_options.encode()) == 0

    def _clean_scratch(self):
        """Is the scratch empty again? Replaced when a fresh tmpfs is possible, else wiped."""
        if _empty(SCRATCH):  # the common case: nothing was written
            return True
        if self.fresh_tmpfs:
            return self._mount_scratch(replace=True)
        return _wipe(SCRATCH, self.scratch_mode)

    # ----------------------------------------------------------------------- health
    def _state(self):
        limits = (resource.RLIMIT_CPU, resource.RLIMIT_NOFILE, resource.RLIMIT_AS, resource.RLIMIT_FSIZE)
        state = []
        for pid in (0, self.zygote):
            state.append([resource.prlimit(pid, r) for r in limits])
            state.append(os.getpriority(os.PRIO_PROCESS, pid))
            state.append(sorted(os.sched_getaffinity(pid)))
            state.append(os.sched_getscheduler(pid))
        return state

    def _healthy(self, full):
        """Is everything as at start-up? Else the host replaces this worker.

        After every test: the scratch directory is wiped. With ``full`` (after the compile and at
        the end of a job) also: the broker's and the zygote's rlimits, priority, affinity and
        scheduler are compared with their start-up values (seccomp already denies changing them).
        """
        if not self._clean_scratch():
            return False, "the scratch directory could not be replaced or wiped"
        if full:
            try:
                if self._state() != self.baseline:
                    return False, "a worker process's limits, priority, affinity or scheduler changed"
            except OSError as exc:
                return False, f"the zygote is gone ({exc})"
        return True, ""

    # ----------------------------------------------------------------------- children
    def _run_child(self, kind, job, fds):
        """Have the zygote clone a child with these fds and reap it: (pid, timed out, status, rusage) or None.

        The broker does not wait for the zygote's pid reply before blocking in wait4: the reply is
        read after the child exits, or by the deadline handler (one scheduler wake-up less per test).
        """
        message = CONTROL.pack(
            kind, job["cpu_s"], job["mem_bytes"], job["out_bytes"], job.get("tasks", 0), job.get("sigpending", 16)
        )
        try:
            socket.send_fds(self.control, [message], fds)
        except OSError:
            return None
        replies = []

        def child_pid():
            """The pid the spare that took the command reported (-1 if none did within 10 s)."""
            if not replies:
                ready = select.select([self.control], [], [], 10.0)[0]
                reply = self.control.recv(4) if ready else b""
                replies.append(struct.unpack("=i", reply)[0] if len(reply) == 4 else -1)
            return replies[0]

        _DEADLINE["pid"], _DEADLINE["fired"] = child_pid, False
        if signal.getsignal(signal.SIGALRM) is not _on_alarm:
            signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, job["wall_s"])
        try:
            reaped, status, usage = os.wait4(-1, 0)  # retried after the handler runs (PEP 475)
            signal.setitimer(signal.ITIMER_REAL, 0)  # the handler no longer runs: the reply is read once
            pid = child_pid()
        except (ChildProcessError, OSError):
            return None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if pid <= 0 or reaped != pid:  # the zygote died or did not clone
            return None
        _kill_group(pid)  # anything left in its process group
        return pid, _DEADLINE["fired"], status, usage

    @staticmethod
    def _memfd(data=b"", seal=False):
        fd = os.memfd_create("t", os.MFD_CLOEXEC | (os.MFD_ALLOW_SEALING if seal else 0))
        if data:
            _write_fd(fd, data)
            os.lseek(fd, 0, os.SEEK_SET)  # a child reads it from the start through the shared offset
        return fd

    def _compile(self, job):
        """The marshalled (mode, fn_name, code) in a sealed memfd, or None for a compile error."""
        header = marshal.dumps((job["mode"], job["fn_name"], job["code"]))
        fds = [self._memfd(header), self._memfd(seal=True), self._memfd(), self._memfd(seal=True)]
        try:
            done = self._run_child(COMPILE, job, fds)
            if done is None:
                return None, "infra"
            _, timed_out, status, _ = done
            if os.pread(fds[3], 1, 0) != b"R":
                return None, "infra"
            if timed_out or not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
                return None, "ce"
            fcntl.fcntl(fds[1], fcntl.F_ADD_SEALS, SEALS)
            code_fd, fds[1] = fds[1], -1
            return code_fd, "ok"
        finally:
            for fd in fds:
                if fd >= 0:
                    os.close(fd)

    def _run_test(self, job, code_fd, test_input):
        out_cap = job["out_bytes"]
        fds = [code_fd, self._memfd(test_input.encode("utf-8", "surrogatepass"))]
        fds += [self._memfd(), self._memfd(), self._memfd(), self._memfd(seal=True)]
        try:
            start = time.monotonic()
            done = self._run_child(TEST, job, fds)
            wall = time.monotonic() - start
            if done is None:
                return None, b""
            _, timed_out, status, usage = done
            sizes = [os.fstat(fd).st_size for fd in fds[2:5]]
            stdout = _read_fd(fds[2]) if sizes[0] < out_cap else b""
            result = _read_fd(fds[4]) if sizes[2] < out_cap else b""
            stderr = os.pread(fds[3], STDERR_TAIL, max(0, sizes[1] - STDERR_TAIL))
            record = {
                "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                "cpu": usage.ru_utime + usage.ru_stime,
                "wall": wall,
                "timed_out": timed_out,
                "ready": os.pread(fds[5], 1, 0) == b"R",
                "memory_error": result.endswith(MEMORY_MARK),
                "stdout_size": sizes[0],
                "stderr_size": sizes[1],
                "result_size": sizes[2],
                "lengths": [len(stdout), len(result), len(stderr)],
            }
            return record, stdout + result + stderr
        finally:
            for fd in fds[1:]:
                os.close(fd)

    # ----------------------------------------------------------------------- protocol
    def _send(self, kind, header, raw=b""):
        body = json.dumps(header).encode()
        _write_fd(self.writer, struct.pack(">cII", kind, len(body), len(raw)) + body)
        if raw:
            _write_fd(self.writer, raw)

    def serve(self, job):
        code_fd, outcome = self._compile(job)
        self._send(b"C", {"outcome": outcome})
        healthy, reason = self._healthy(full=True)
        if code_fd is not None:
            try:
                for index in job["indices"]:
                    if not healthy:
                        break
                    record, raw = self._run_test(job, code_fd, job["inputs"][index])
                    if record is None:
                        healthy, reason = False, "the zygote did not fork"
                        break
                    healthy, reason = self._healthy(full=False)
                    record["index"] = index
                    self._send(b"T", record, raw)
            finally:
                os.close(code_fd)
            if healthy:
                healthy, reason = self._healthy(full=True)
        self._send(b"E", {"healthy": healthy, "reason": reason, "host_disk": self.host_disk})

    def loop(self):
        while True:
            header = _read_exact(self.reader, 4)
            if header is None:
                return
            job = json.loads(_read_exact(self.reader, struct.unpack(">I", header)[0]) or b"null")
            if job.get("ping"):
                header = {
                    "healthy": True,
                    "reason": "",
                    "pid": os.getpid(),
                    "uid": os.getuid(),
                    "host_disk": self.host_disk,
                }
                self._send(b"E", header)
            else:
                self.serve(job)


def _read_exact(fd, n):
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _kill_group(pid):
    for target in (-pid, pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(target, signal.SIGKILL)


_DEADLINE = {"pid": None, "fired": False}  # how the broker's SIGALRM handler finds the running child


def _on_alarm(signum, frame):
    _DEADLINE["fired"] = True
    pid = _DEADLINE["pid"]()  # the zygote's reply: sent right after the clone
    if pid <= 0:
        raise ChildProcessError("the zygote did not clone")
    _kill_group(pid)


def _empty(root):
    """Whether root holds no entry (False when it cannot be listed; chmod is denied to tests, so its mode is intact)."""
    try:
        with os.scandir(root) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def _wipe(root, mode, budget=1_000_000):
    """Delete everything under root: no recursion, no symlink followed, permissions restored first.

    Returns:
        Whether root is empty afterwards (False also when more than `budget` entries were found).
    """
    if _empty(root):  # the common case: nothing was written
        return True
    names, seen = [], 0
    try:
        if stat.S_IMODE(os.stat(root).st_mode) != mode:
            os.chmod(root, mode)
        os.chdir(root)
        while True:
            below = None
            with os.scandir(".") as entries:
                for entry in entries:
                    seen += 1
                    if entry.is_dir(follow_symlinks=False):
                        below = entry.name
                        break
                    os.unlink(entry.name)
            if seen > budget:
                return False
            if below is not None:
                os.chmod(below, 0o700, follow_symlinks=False)
                os.chdir(below)
                names.append(below)
            elif names:
                os.chdir("..")
                os.rmdir(names.pop())
            else:
                return not os.listdir(root)
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.chdir(root)


# ------------------------------------------------------------------------------------ host disk
# Failed lookups in a directory of a disk filesystem leave a negative dentry in the host's (global) cache;
# on tmpfs and procfs they leave nothing. So before the zygote exists, the broker replaces every directory
# of the host's disk in the sandbox (the read-only binds of /usr and the interpreter prefix) by a read-only
# tmpfs of directories holding single-file read-only binds of what the interpreter can load: the stdlib's
# bytecode, its extension modules and the libraries they link. A lookup cannot go through a file, so no
# process of the sandbox can make the host's disk cache a failed lookup afterwards (issue 37).
NO_DENTRY_FS = ("tmpfs", "proc")  # filesystems that do not cache failed lookups
# CPython's own test modules and Tk (needs X11 and a display): not copied
SKIP_DIRS = frozenset(("site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__", "idlelib"))
SKIP_EXTENSIONS = ("_test", "xx", "_xx", "_ctypes_test", "_tkinter")
LIBRARY_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_MOVE = 1, 32, 4096, 8192


def _mounts():
    """(mount point, filesystem type) of every mount of this mount namespace, from /proc/self/mountinfo."""
    out = []
    with open("/proc/self/mountinfo") as table:
        for line in table:
            fields = line.split()
            point = fields[4]
            for escaped, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
                point = point.replace(escaped, char)
            out.append((point, fields[fields.index("-") + 1]))
    return out


def _disk_directories():
    """Mount points of directories on a filesystem that caches failed lookups (file binds are harmless)."""
    return sorted({point for point, kind in _mounts() if kind not in NO_DENTRY_FS and os.path.isdir(point)})


def _elf_dynamic(path):
    """(DT_NEEDED names, RUNPATH/RPATH directories) of a 64-bit little-endian ELF object; ([], []) otherwise."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4:6] != b"\x02\x01":
        return [], []
    (phoff,) = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    loads, dynamic = [], None
    for i in range(phnum):
        kind, _, offset, vaddr, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)
        if kind == 1:  # PT_LOAD
            loads.append((vaddr, offset, filesz))
        elif kind == 2:  # PT_DYNAMIC
            dynamic = (offset, filesz)
    if dynamic is None:
        return [], []
    entries = []
    for at in range(dynamic[0], dynamic[0] + dynamic[1] - 15, 16):
        tag, value = struct.unpack_from("<qQ", data, at)
        if tag == 0:
            break
        entries.append((tag, value))
    strtab = next((value for tag, value in entries if tag == 5), None)  # DT_STRTAB, a virtual address
    base = next((strtab - v + o for v, o, n in loads if strtab is not None and v <= strtab < v + n), None)
    if base is None:
        return [], []

    def string(index):
        return data[base + index : data.index(b"\0", base + index)].decode()

    origin = os.path.dirname(path)
    needed = [string(value) for tag, value in entries if tag == 1]
    search = [
        part.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
        for tag, value in entries
        if tag in (15, 29)  # DT_RPATH, DT_RUNPATH
        for part in string(value).split(":")
        if part
    ]
    return needed, search


def _interpreter_files():
    """{path in the sandbox: file to bind there} for the stdlib, its extension modules and their libraries.

    Modules are found on ``sys.path`` (site-packages is not on it: the worker runs ``-I -S``). A module
    with a fresh ``__pycache__`` bytecode file appears as a sourceless ``name.pyc`` (the import system's
    own sourceless loader runs it; tracebacks show no stdlib source lines); one without, as its source.
    Libraries are the ELF ``DT_NEEDED`` closure of the extension modules, resolved as the dynamic loader
    does without ``/etc/ld.so.cache`` (which the sandbox does not mount), minus the libraries this process
    has mapped already (found by name when a child loads a module).
    """
    from importlib.machinery import EXTENSION_SUFFIXES
    from importlib.util import MAGIC_NUMBER

    tag = sys.implementation.cache_tag
    files, extensions = {}, []
    for entry in sys.path:
        if not os.path.isdir(entry):
            continue
        for directory, subdirectories, names in os.walk(entry):
            subdirectories[:] = [d for d in subdirectories if d not in SKIP_DIRS and d.isidentifier()]
            for name in names:
                source = os.path.join(directory, name)
                if name.endswith(".py"):
                    compiled = os.path.join(directory, "__pycache__", f"{name[:-3]}.{tag}.pyc")
                    try:
                        with open(compiled, "rb") as f:
                            header = f.read(16)
                        st = os.stat(source)
                        fresh = (  # timestamp-based and matching its source, as the source loader checks
                            header[:8] == MAGIC_NUMBER + bytes(4)
                            and int.from_bytes(header[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
                            and int.from_bytes(header[12:16], "little") == st.st_size & 0xFFFFFFFF
                        )
                    except OSError:
                        fresh = False
                    if fresh:
                        files.setdefault(source[:-3] + ".pyc", compiled)
                    else:
                        files.setdefault(source, source)
                elif name.endswith(tuple(EXTENSION_SUFFIXES)) and not name.startswith(SKIP_EXTENSIONS):
                    files.setdefault(source, source)
                    extensions.append(source)
    with open("/proc/self/maps") as maps:
        loaded = {os.path.realpath(fields[5]) for fields in (line.split(None, 5) for line in maps) if len(fields) == 6}
    pending, seen = list(extensions), set()
    while pending:
        needed, search = _elf_dynamic(pending.pop())
        for name in needed:
            if name in seen:
                continue
            seen.add(name)
            for directory in (*search, *LIBRARY_DIRS):
                found = os.path.join(directory, name)
                if os.path.isfile(found):
                    if os.path.realpath(found) not in loaded:
                        files.setdefault(os.path.join(os.path.realpath(directory), name), os.path.realpath(found))
                        pending.append(found)
                    break
    return files


def _replace_host_disk():
    """Replace every host-disk directory of this mount namespace by a read-only tmpfs skeleton (see above).

    Runs in the broker before the zygote exists (it needs CAP_SYS_ADMIN of the sandbox's user namespace).
    Each skeleton is built on a staging tmpfs mounted on the scratch (directories, and each file a bind of
    the host's file, read-only like the bind it comes from), then the disk bind is detached and the
    skeleton moved onto its mount point and made read-only. Nothing is copied: the files stay in the
    host's page cache.

    Returns:
        ``"hidden"`` when no directory of a dentry-caching filesystem is left in view, else why not.
    """
    points = _disk_directories()
    if not points:
        return "hidden"
    try:
        files = _interpreter_files()
    except OSError as exc:
        return f"the interpreter's files could not be listed ({exc})"
    scratch = SCRATCH.encode()
    for point in points:
        inner = [p for p in points if p != point and p.startswith(point.rstrip("/") + "/")]
        mine = {
            dest: src
            for dest, src in files.items()
            if dest.startswith(point.rstrip("/") + "/") and not any(dest.startswith(p + "/") for p in inner)
        }
        options = b"size=4m,mode=755"  # directories and empty mount points only
        if _LIBC.mount(b"tmpfs", scratch, b"tmpfs", MS_NOSUID | MS_NODEV, options) != 0:
            return f"no tmpfs could be mounted ({os.strerror(ctypes.get_errno())})"
        try:
            for path in inner:
                os.makedirs(SCRATCH + path[len(point.rstrip("/")) :], exist_ok=True)
            for dest, src in mine.items():
                target = SCRATCH + dest[len(point.rstrip("/")) :]
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                if _LIBC.mount(src.encode(), target.encode(), None, MS_BIND, None) != 0:
                    raise OSError(ctypes.get_errno(), f"could not bind {src}")
        except OSError as exc:
            _LIBC.umount2(scratch, MNT_DETACH)
            return f"the interpreter's files could not be bound ({exc})"
        # a mount inside one replaced earlier went with it (MNT_DETACH takes the subtree)
        attached = point in _disk_directories()
        if (attached and _LIBC.umount2(point.encode(), MNT_DETACH) != 0) or _LIBC.mount(
            scratch, point.encode(), None, MS_MOVE, None
        ):
            raise OSError(ctypes.get_errno(), f"could not move the skeleton onto {point}")
        if _LIBC.mount(None, point.encode(), None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, None) != 0:
            raise OSError(ctypes.get_errno(), f"could not make the skeleton on {point} read-only")
    sys.path_importer_cache.clear()
    left = _disk_directories()
    return "hidden" if not left else f"host-disk directories still in view: {left}"


def _drop_capabilities():
    """Empty this process's capability sets (the broker keeps CAP_SYS_ADMIN; nothing below it may)."""
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable x 2 words: all zero
    if _SYSCALL(126, header, data) != 0:  # capset
        raise OSError(ctypes.get_errno(), "capset failed")


def main():
    """Start the zygote, then serve jobs from stdin until it closes."""
    _PRCTL(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no /proc/<pid>/mem, fd, maps for any sandbox process
    os.chdir("/")  # neither the broker nor the zygote keeps a scratch tmpfs busy
    reader, writer = os.dup(0), os.dup(1)  # the host pipes move to private descriptors
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    host_disk = _replace_host_disk() if SCRATCH == "/tmp" else "degraded"  # before the zygote exists
    broker_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    zygote = os.fork()
    if zygote == 0:  # before any job: this process never holds job data
        os.dup2(zygote_end.fileno(), 3)
        os.set_inheritable(3, True)
        os.closerange(4, 1 << 16)  # the host pipes, the broker's socket end
        _drop_capabilities()
        global _TEST_STREAMS
        exec(compile(PREAMBLE, "<preamble>", "exec"), _PREAMBLE_SCOPE)  # sets the recursion limit to 50000
        sys.set_int_max_str_digits(50000)  # as LiveCodeBench does at import (3.11 refuses ints over 4300 digits)
        # Text wrappers over fds 0-2 with empty buffers, made once: each child dup2()s its memfds under them.
        _TEST_STREAMS = (open(0, closefd=False), open(1, "w", closefd=False), open(2, "w", closefd=False))  # noqa: SIM115
        gc.freeze()  # the zygote's objects move to the permanent generation: children's collections skip them
        install_seccomp("zygote")  # inherited by every child, which adds its own small filter
        _zygote()
    zygote_end.close()
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGIO):
        signal.signal(sig, signal.SIG_IGN)  # no sandbox process may signal the broker; belt and braces
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _Broker(reader, writer, broker_end, zygote, host_disk).loop()


if __name__ == "__main__":
    main()
