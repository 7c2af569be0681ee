"""Hostile programs by attack class (issue 11), graded through `env_lcb.grade` / `LcbEnv.score` only.

Every case asserts the grading outcome AND that the worker is not poisoned afterwards: a correct
program still passes, a wrong one still fails, the seccomp filter still holds, and no process is
left behind. Each test gets a fresh one-worker default sandbox so that a poisoned worker cannot
leak into the next case.
"""

from __future__ import annotations

import os
import resource
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import env_lcb
import env_lcb.sandbox.host as host
from env_lcb import LcbEnv, Problem
from env_lcb.sandbox import Sandbox
from vpo_core import Task

sys.path.insert(0, str(Path(__file__).resolve().parent))
from worker_processes import descendants, leftovers

pytestmark = pytest.mark.sandbox

MARK = "PREV-ANSWER-271828"  # an output of a previous program, which later programs must never see


@pytest.fixture
def box():
    """A fresh one-worker sandbox installed as `env_lcb.grade`'s default."""
    previous = host._DEFAULT
    sandbox = Sandbox(workers=1)
    host._DEFAULT = sandbox
    env_lcb.grade("print(1)", [{"input": "", "output": "1"}])
    sandbox.baseline = 3  # broker, zygote and the zygote's spare
    yield sandbox
    host._DEFAULT = previous
    sandbox.close()


def grade(code, tests, **kw):
    kw.setdefault("time_limit_s", 1.0)
    return env_lcb.grade(code, tests, **kw)


def assert_worker_healthy(sandbox):
    """A correct program passes, a wrong one fails, seccomp holds, nothing is left behind."""
    tests = [{"input": "21", "output": "42"}, {"input": "5\n", "output": "10"}]
    for _ in range(2):
        assert grade("print(int(input()) * 2)", tests).verdicts == ["ok", "ok"]
        assert grade("print(int(input()) * 2 + 1)", tests).verdicts == ["wa", "wa"]
    fn = "class Solution:\n    def f(self, a):\n        return a + 1\n"
    assert grade(fn, [{"input": "1", "output": "2"}, {"input": "2", "output": "2"}], fn_name="f").verdicts == [
        "ok",
        "wa",
    ]
    escape = "import os, socket\ntry:\n    os.fork()\nexcept OSError:\n    socket.socket()\nprint(42)"
    assert grade(escape, [{"input": "", "output": "42"}]).verdicts == ["re"]
    time.sleep(0.05)
    for pid in sandbox.worker_pids():
        assert len(descendants(pid)) <= sandbox.baseline, "processes left behind"
        assert not leftovers(pid), "processes left behind"


def attack(sandbox, code, tests, expected, **kw):
    start = time.monotonic()
    result = grade(code, tests, **kw)
    assert result.verdicts == expected, result.stderr
    assert time.monotonic() - start < 30
    assert_worker_healthy(sandbox)
    return result


def refused(sandbox, snippet, **kw):
    """`snippet`, run with ctypes' `libc` loaded, sets `ok` if it made its kernel object: it must not."""
    code = f"import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n{snippet}\nprint('made' if ok else 'refused')"
    return attack(sandbox, code, [{"input": "", "output": "refused"}], ["ok"], **kw)


# ============================================================ class 1: reading the previous job
# The scanners look for the pattern PREV-ANSWER-<digits>: their own code holds no such string, so
# whatever they find came from another program or job.
FRAME_WALK = """
import re, sys
pattern = re.compile('PREV-ANSWER-[0-9]+')
found = []
def scan(value, depth=0):
    if depth > 6:
        return
    if isinstance(value, (str, bytes)):
        found.extend(pattern.findall(value if isinstance(value, str) else value.decode('latin-1')))
    elif isinstance(value, dict):
        for k, v in list(value.items())[:10000]:
            scan(k, depth + 1); scan(v, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in list(value)[:10000]:
            scan(v, depth + 1)
frame = sys._getframe()
while frame is not None:
    for v in list(frame.f_locals.values()) + list(frame.f_globals.values()):
        scan(v)
    frame = frame.f_back
print(found[0] if found else 'nothing')
"""

GC_SCAN = """
import gc, re
pattern = re.compile('PREV-ANSWER-[0-9]+')
found = []
for o in gc.get_objects():
    try:
        if isinstance(o, (dict, list, tuple, set)):
            found += pattern.findall(repr(o)[:10**6])
        elif hasattr(o, '__dict__'):
            found += pattern.findall(repr(vars(o))[:10**6])
    except Exception:
        pass
print(found[0] if found else 'nothing')
"""

RAW_MEMORY_SCAN = """
import ctypes, re
pattern = re.compile(b'PREV-ANSWER-[0-9]+')
found = []
for line in open('/proc/self/maps'):
    parts = line.split()
    lo, hi = (int(x, 16) for x in parts[0].split('-'))
    if 'r' not in parts[1] or (len(parts) > 5 and parts[5].startswith('[v')) or hi - lo > 1 << 30:
        continue
    try:
        found += pattern.findall(ctypes.string_at(lo, hi - lo))
    except Exception:
        pass
print(found[0].decode() if found else 'nothing')
"""


@pytest.mark.parametrize("scanner", ["frame_walk", "gc_scan", "raw_memory_scan"])
@pytest.mark.parametrize("mode", ["stdin", "functional"])
def test_class1_previous_job_is_invisible(box, scanner, mode):
    program = {"frame_walk": FRAME_WALK, "gc_scan": GC_SCAN, "raw_memory_scan": RAW_MEMORY_SCAN}[scanner]
    if mode == "stdin":
        honest = f"input()\nprint({MARK!r})"
        assert grade(honest, [{"input": "x", "output": MARK}] * 2).verdicts == ["ok", "ok"]
        attack(box, program, [{"input": "x", "output": MARK}] * 2, ["wa", "wa"])
    else:
        honest = f"class Solution:\n    def f(self, a):\n        return {MARK!r}\n"
        assert grade(honest, [{"input": "1", "output": f'"{MARK}"'}], fn_name="f").verdicts == ["ok"]
        last = program.rstrip().splitlines()[-1]
        assert last.startswith("print(")
        hostile = program.rstrip()[: -len(last)] + "RESULT = " + last[len("print(") : -1] + "\n"
        hostile += "class Solution:\n    def f(self, a):\n        return RESULT\n"
        attack(box, hostile, [{"input": "1", "output": f'"{MARK}"'}], ["wa"], fn_name="f")


def test_class1_a_test_sees_only_its_own_input(box):
    # each test's input holds a unique token; the program looks for the tokens of the *other* tests
    scan = """
import ctypes, gc, sys
own = sys.stdin.read().split()[0]
seen = set()
for o in gc.get_objects():
    if isinstance(o, (str, bytes)):
        s = o if isinstance(o, str) else o.decode('latin-1')
        if 'TOKEN' + '-' in s:
            seen.update(w for w in s.split() if w.startswith('TOKEN' + '-'))
for line in open('/proc/self/maps'):
    parts = line.split()
    lo, hi = (int(x, 16) for x in parts[0].split('-'))
    if 'r' in parts[1] and hi - lo < 1 << 30 and not (len(parts) > 5 and parts[5].startswith('[v')):
        try:
            blob = ctypes.string_at(lo, hi - lo)
        except Exception:
            continue
        i = blob.find(b'TOKEN' + b'-')
        while i >= 0:
            seen.add(blob[i:i + 8].decode('latin-1'))
            i = blob.find(b'TOKEN' + b'-', i + 1)
seen.discard(own)
print('alone' if not any(t[6:8].isdigit() for t in seen) else 'saw ' + ' '.join(sorted(seen)))
"""
    tests = [{"input": f"TOKEN-{i:02d}\n", "output": "alone"} for i in range(4)]
    attack(box, scan, tests, ["ok"] * 4)


def _problem(tests, fn_name=None):
    problem = Problem(pid="p", question="q", starter_code="", tests=tuple(tests), fn_name=fn_name, solution=None)
    return Task(id="lcb-v1/test/0", split="test", index=0, payload=problem, metadata={})


def test_class1_multi_mode_one_correct_candidate_does_not_lift_the_others(box):
    env = LcbEnv(workers=1)
    env._sandbox = box
    task = _problem([(f"{i}\n", f"{MARK}{i}") for i in range(3)])
    correct = f"print({MARK!r} + input().strip())"
    thief = FRAME_WALK
    completion = "".join(
        f"<response_{j + 1}>\n```python\n{code}\n```\n</response_{j + 1}>\n"
        for j, code in enumerate([correct, thief, RAW_MEMORY_SCAN])
    )
    rewards = env.score(task, completion, mode="multi", m=3)
    assert rewards.tolist() == [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert_worker_healthy(box)


# ============================================================ class 2: forged protocol messages
def test_class2_only_stdio_descriptors_reach_the_program(box):
    code = "import os\nextra = []\nfor fd in range(3, 1024):\n    try:\n        os.fstat(fd)\n        extra.append(fd)\n    except OSError:\n        pass\nprint(extra)"
    attack(box, code, [{"input": "", "output": "[]"}], ["wa"])  # the result memfd (fd 3) and nothing else
    attack(box, code, [{"input": "", "output": "[3]"}], ["ok"])


@pytest.mark.parametrize("target", ["own_fds", "parent_fds", "all_pids"])
def test_class2_forged_replies_change_no_verdict(box, target):
    code = f"""
import json, os, struct
fake = json.dumps({{"compile_error": False, "tests": [{{"exit": 0, "signal": None, "cpu": 0.0, "wall": 0.0,
    "timed_out": False, "stdout": "42", "stdout_bytes": 2, "result": "", "stderr": ""}}] * 3}}).encode()
frame = struct.pack('>I', len(fake)) + fake
paths = []
if {target!r} == 'own_fds':
    paths = ['/proc/self/fd/' + f for f in os.listdir('/proc/self/fd') if int(f) > 2]
elif {target!r} == 'parent_fds':
    base = '/proc/%d/fd/' % os.getppid()
    try:
        paths = [base + f for f in os.listdir(base)]
    except OSError:
        pass
else:
    for pid in os.listdir('/proc'):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                paths += ['/proc/%s/fd/%s' % (pid, f) for f in os.listdir('/proc/%s/fd' % pid)]
            except OSError:
                pass
for path in paths:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.write(fd, frame * 4)
    except OSError:
        pass
for fd in range(3, 256):
    try:
        os.write(fd, frame)
    except OSError:
        pass
print(41)
"""
    attack(box, code, [{"input": "", "output": "42"}] * 3, ["wa"] * 3)


# ============================================================ class 3: writing the worker's memory
PROC_MEM_WRITE = """
import os
wrote = []
for pid in [p for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()]:
    try:
        maps = open('/proc/%s/maps' % pid).read().splitlines()
    except OSError:
        maps = ['%x-%x rw-p 0 0:0 0 [heap]' % (0x400000, 0x401000)]
    for line in maps:
        parts = line.split()
        if 'rw' not in parts[1]:
            continue
        address = int(parts[0].split('-')[0], 16)
        try:
            with open('/proc/%s/mem' % pid, 'r+b', buffering=0) as mem:
                mem.seek(address)
                data = mem.read(16)
                mem.seek(address)
                mem.write(data)  # the same bytes: harmless, but proves write access
                wrote.append(pid)
                break
        except OSError:
            pass
print('wrote ' + ' '.join(wrote) if wrote else 'refused')
"""


def test_class3_proc_mem_of_every_other_process_is_refused(box):
    attack(box, PROC_MEM_WRITE, [{"input": "", "output": "refused"}], ["ok"])


def test_class3_process_vm_and_proc_files_of_others_are_refused(box):
    code = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(16)
class iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
local = iovec(ctypes.addressof(buf), 16)
leaks = []
for pid in [int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()]:
    remote = iovec(0x400000, 16)
    if libc.syscall(310, pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) >= 0:
        leaks.append('vm%d' % pid)
    for name in ('environ', 'maps', 'mem', 'auxv', 'stack', 'syscall', 'fd/0', 'fd/1', 'fd/3', 'fd/4', 'fd/5'):
        try:
            open('/proc/%d/%s' % (pid, name), 'rb').read(1)
            leaks.append('%s%d' % (name, pid))
        except OSError:
            pass
    try:  # the fd numbers can be listed when the sandbox uid maps to host root (bwrap run as root), not opened
        for fd in os.listdir('/proc/%d/fd' % pid):
            try:
                os.close(os.open('/proc/%d/fd/%s' % (pid, fd), os.O_RDONLY | os.O_NONBLOCK))
                leaks.append('open-fd%d' % pid)
            except OSError:
                pass
    except OSError:
        pass
print(' '.join(leaks) or 'refused')
"""
    attack(box, code, [{"input": "", "output": "refused"}], ["ok"])


@pytest.mark.parametrize("flags", [0x8011, 0x11, 0x8000, 0x10000 | 0x8011, 0x4000 | 0x11])
def test_class3_no_raw_clone_creates_a_process(box, flags):
    # the zygote's own clone(CLONE_PARENT | SIGCHLD) is allowed by its filter; each child's filter denies it
    code = (
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        f"pid = libc.syscall(56, {flags}, 0, 0, 0, 0)\n"
        "if pid == 0:\n    os._exit(0)\nprint('made' if pid > 0 else 'refused')"
    )
    attack(box, code, [{"input": "", "output": "refused"}], ["ok"])


def test_class3_worker_is_not_dumpable_and_children_hold_no_capabilities(box):
    code = """
status = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines() if ':' in l)
caps = [status[k].strip() for k in ('CapInh', 'CapPrm', 'CapEff', 'CapAmb')]
print('ok' if set(caps) == {'0000000000000000'} and status['NoNewPrivs'].strip() == '1'
      and status['Seccomp'].strip() == '2' else status)
"""
    attack(box, code, [{"input": "", "output": "ok"}], ["ok"])


# ============================================================ class 4: changing the worker
def _on_other_pids(body):
    return (
        "import ctypes, os, resource\nlibc = ctypes.CDLL(None, use_errno=True)\ndone = []\n"
        "for pid in [int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()]:\n"
        + textwrap.indent(body, "    ")
        + "\nprint(' '.join(done) or 'refused')"
    )


CHANGE_WORKER = {
    "prlimit_cpu": "try:\n    resource.prlimit(pid, resource.RLIMIT_CPU, (1, 1))\n    done.append('cpu%d' % pid)\nexcept OSError:\n    pass",
    "prlimit_nofile": "try:\n    resource.prlimit(pid, resource.RLIMIT_NOFILE, (4, 4))\n    done.append('nofile%d' % pid)\nexcept OSError:\n    pass",
    "prlimit_as_raw": (
        "class rl(ctypes.Structure):\n    _fields_ = [('cur', ctypes.c_ulong), ('max', ctypes.c_ulong)]\n"
        "if libc.syscall(302, pid, 9, ctypes.byref(rl(1 << 20, 1 << 20)), 0) == 0:\n    done.append('as%d' % pid)"
    ),
    "setpriority": "try:\n    os.setpriority(os.PRIO_PROCESS, pid, 19)\n    done.append('nice%d' % pid)\nexcept OSError:\n    pass",
    "setpriority_group": "try:\n    os.setpriority(os.PRIO_PGRP, 0, 19)\n    os.setpriority(os.PRIO_USER, 0, 19)\n    done.append('pgrp')\nexcept OSError:\n    pass",
    "affinity": "try:\n    os.sched_setaffinity(pid, {0})\n    done.append('cpu%d' % pid)\nexcept OSError:\n    pass",
    "scheduler": "try:\n    os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))\n    done.append('idle%d' % pid)\nexcept OSError:\n    pass",
    "ioprio": "if libc.syscall(251, 1, pid, (3 << 13)) == 0:\n    done.append('io%d' % pid)",
    "sched_setattr": (
        "attr = (ctypes.c_uint32 * 14)(56, 5)\n"
        "if libc.syscall(314, pid, ctypes.byref(attr), 0) == 0:\n    done.append('attr%d' % pid)"
    ),
    "fcntl_setown": (
        "import fcntl\nr, w = os.pipe()\ntry:\n    fcntl.fcntl(r, fcntl.F_SETOWN, pid)\n"
        "    fcntl.fcntl(r, fcntl.F_SETSIG, 9)\n    fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC | os.O_NONBLOCK)\n"
        "    os.write(w, b'x')\n    done.append('sigio%d' % pid)\nexcept OSError:\n    pass"
    ),
    "ioctl_fiosetown": (
        "import fcntl, struct\nr, w = os.pipe()\ntry:\n    fcntl.ioctl(r, 0x8901, struct.pack('i', pid))\n"
        "    fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC)\n    os.write(w, b'x')\n    done.append('fio%d' % pid)\n"
        "except OSError:\n    pass"
    ),
}


@pytest.mark.parametrize("name", sorted(CHANGE_WORKER))
def test_class4_no_program_changes_another_process(box, name):
    before = [(os.getpriority(os.PRIO_PROCESS, p), os.sched_getaffinity(p)) for p in box.worker_pids()]
    attack(box, _on_other_pids(CHANGE_WORKER[name]), [{"input": "", "output": "refused"}], ["ok"])
    assert before == [(os.getpriority(os.PRIO_PROCESS, p), os.sched_getaffinity(p)) for p in box.worker_pids()]


def test_class4_proc_files_of_other_processes_are_read_only(box):
    code = _on_other_pids(
        "for name, value in (('oom_score_adj', '1000'), ('autogroup', '19'), ('clear_refs', '1'), ('comm', 'x'),"
        " ('timerslack_ns', '1'), ('attr/current', 'x'), ('loginuid', '0')):\n"
        "    try:\n"
        "        with open('/proc/%d/%s' % (pid, name), 'w') as f:\n"
        "            f.write(value)\n"
        "        done.append('%s%d' % (name, pid))\n"
        "    except OSError:\n"
        "        pass"
    )
    attack(box, code, [{"input": "", "output": "refused"}], ["ok"])


SCRATCH_TRAPS = {
    "chmod_500_dir": "import os\nos.makedirs('d/e')\nopen('d/e/f', 'w').write('x')\nos.chmod('d/e', 0o500)\nos.chmod('d', 0o500)\nprint(1)",
    "chmod_cwd_000": "import os\nopen('f', 'w').write('x')\nos.chmod('.', 0)\nprint(1)",
    "umask_777": "import os\nos.umask(0o777)\nos.mkdir('a')\nos.makedirs('b/c', exist_ok=True)\nprint(1)",
    "deep_tree": "import os\nfor _ in range(3000):\n    os.mkdir('d')\n    os.chdir('d')\nopen('f', 'w').write('x')\nprint(1)",
    "many_files": "for i in range(20000):\n    open('f%d' % i, 'w').close()\nprint(1)",
    "symlink_to_root": "import os\nos.symlink('/', 'root')\nos.symlink('/usr', 'usr')\nos.mkdir('x')\nos.symlink('..', 'x/up')\nprint(1)",
    "fifo": "import os\nos.mkfifo('p')\nos.mkfifo('q', 0)\nprint(1)",
    "hard_to_delete_names": "import os\nfor name in ('-rf', '..a', ' ', '\\n', 'x' * 255):\n    open(name, 'w').close()\nprint(1)",
}


@pytest.mark.parametrize("name", sorted(SCRATCH_TRAPS))
def test_class4_scratch_traps_are_wiped_and_nothing_is_seen_later(box, name):
    grade(SCRATCH_TRAPS[name], [{"input": "", "output": "1"}] * 2, time_limit_s=2)
    probe = "import os\nprint(sorted(os.listdir('.')) or 'empty', os.access('.', os.W_OK))"
    assert grade(probe, [{"input": "", "output": "empty True"}] * 2).verdicts == ["ok", "ok"]
    assert_worker_healthy(box)


# ============================================================ class 5: state and memory outliving a test
def test_class5_dev_shm_parking_is_impossible(box):
    code = (
        "import os\ntry:\n    with open('/dev/shm/park', 'wb') as f:\n        for _ in range(640):\n"
        "            f.write(b'x' * (1 << 20))\n    print('parked')\nexcept OSError:\n    print('refused')"
    )
    attack(box, code, [{"input": "", "output": "refused"}], ["ok"], memory_mb=64)
    probe = "import os\nprint((os.path.isdir('/dev/shm') and os.listdir('/dev/shm')) or 'empty')"  # no /dev/shm now
    assert grade(probe, [{"input": "", "output": "empty"}]).verdicts == ["ok"]


@pytest.mark.parametrize("where", ["/dev/x", "/dev/shm/x", "/dev/pts/x", "/proc/x", "/sys/x", "/x", "/usr/x"])
def test_class5_nothing_outside_scratch_is_writable(box, where):
    code = f"try:\n    open({where!r}, 'w').write('x')\n    print('wrote')\nexcept OSError:\n    print('refused')"
    attack(box, code, [{"input": "", "output": "refused"}], ["ok"])


def test_class5_scratch_is_capped_and_files_do_not_outlive_the_test(box):
    fill = (
        "import os\nn = 0\ntry:\n    for i in range(100):\n        with open('f%d' % i, 'wb') as f:\n"
        "            f.write(b'x' * (15 << 20))\n        n += 15\nexcept OSError:\n    pass\nprint('capped' if n < 640 else n)"
    )
    attack(box, fill, [{"input": "", "output": "capped"}], ["ok"], memory_mb=64)
    probe = "import os\nprint(os.listdir('.') or 'empty', os.listdir('/tmp') or 'empty')"
    assert grade(probe, [{"input": "", "output": "empty empty"}]).verdicts == ["ok"]


IPC = {
    "sysv_shm": "seg = libc.shmget(0, 640 << 20, 0o1000 | 0o600)\nok = seg >= 0",
    "sysv_msg": "ok = libc.msgget(0, 0o1000 | 0o600) >= 0",
    "sysv_sem": "ok = libc.semget(0, 1, 0o1000 | 0o600) >= 0",
    "posix_mq": "ok = libc.syscall(240, b'/q', 0o100 | 2, 0o600, None) >= 0",
    "memfd_park": "fd = libc.syscall(319, b'x', 0)\nok = fd >= 0\nif ok:\n    os.ftruncate(fd, 1 << 20)",
}


@pytest.mark.parametrize("name", sorted(IPC))
def test_class5_no_ipc_object_can_be_created(box, name):
    refused(box, IPC[name], memory_mb=64)
    probe = "print([l for l in open('/proc/sysvipc/shm').read().splitlines()[1:]] or 'none')"
    assert grade(probe, [{"input": "", "output": "none"}]).verdicts == ["ok"]


# ============================================================ class 6: a verdict for everything
VERDICT_CASES = [
    ("os_exit_97", "import os\nprint(42, flush=True)\nos._exit(97)", "42", None, "re"),
    ("exit_92_after_correct_output", "import sys\nprint(42)\nsys.exit(92)", "42", None, "re"),
    ("exit_3_after_correct_output", "import sys\nprint(42)\nsys.exit(3)", "42", None, "re"),
    ("exit_message", "import sys\nprint(42)\nsys.exit('done')", "42", None, "re"),
    ("exit_256", "import sys\nprint(42)\nsys.exit(256)", "42", None, "re"),
    ("exit_zero_correct", "import sys\nprint(42)\nsys.exit(0)", "42", None, "ok"),
    ("print_snan", "print('sNaN')", "1", None, "wa"),
    ("expected_snan", "print('1')", "sNaN", None, "wa"),
    ("snan_equals_itself_as_text", "print('sNaN')", "sNaN", None, "ok"),
    ("nan_tokens", "print('NaN 1')", "nan 1", None, "wa"),
    ("infinity_tokens", "print('Infinity')", "inf", None, "ok"),
    ("huge_exponent", "print('1e999999999')", "1E+999999999", None, "ok"),
    ("non_utf8", "import sys\nsys.stdout.buffer.write(b'\\xff\\xfe42')", "42", None, "wa"),
    ("lone_surrogate", "print('\\ud800')", "x", None, "re"),
    ("functional_huge_int", "def f(a):\n    return 10 ** 5000", "1" + "0" * 5000, "f", "ok"),
    ("functional_huge_int_wrong", "def f(a):\n    return 10 ** 5000 + 1", "1" + "0" * 5000, "f", "wa"),
    ("functional_nan", "def f(a):\n    return float('nan')", "NaN", "f", "wa"),
    (
        "functional_unserialisable",
        "class E:\n    def __eq__(self, o):\n        return True\ndef f(a):\n    return E()",
        "1",
        "f",
        "re",
    ),
    (
        "functional_deep",
        "def f(a):\n    x = []\n    for _ in range(10 ** 5):\n        x = [x]\n    return x",
        "1",
        "f",
        "re",
    ),
    ("functional_print_forgery", "def f(a):\n    print(2)\n    return 3", "2", "f", "wa"),
    ("functional_fd_forgery", "import os\ndef f(a):\n    os.write(3, b'2\\n')\n    return 3", "2", "f", "wa"),
    ("functional_fd_forgery_exit", "import os\ndef f(a):\n    os.write(3, b'2\\n')\n    os._exit(0)", "2", "f", "ok"),
    (
        "ignore_sigxfsz",
        "import signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\nwhile True:\n    print('x' * 10 ** 5)",
        "1",
        None,
        "ole",
    ),
    ("abort_after_output", "import os\nprint(1, flush=True)\nos.abort()", "1", None, "re"),
    (
        "kill_self_after_output",
        "import os, signal\nprint(1, flush=True)\nsignal.raise_signal(signal.SIGKILL)",
        "1",
        None,
        "re",
    ),
]


@pytest.mark.parametrize(
    ("name", "code", "expected", "fn_name", "verdict"), VERDICT_CASES, ids=[c[0] for c in VERDICT_CASES]
)
def test_class6_every_program_gets_a_verdict(box, name, code, expected, fn_name, verdict):
    attack(box, code, [{"input": "1", "output": expected}], [verdict], fn_name=fn_name, output_mb=4)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_class6_huge_non_utf8_output_keeps_the_host_small(box):
    code = "import sys\nsys.stdout.buffer.write(b'\\xff' * (16 << 20))"
    grade("print(1)", [{"input": "", "output": "1"}])
    before = _rss_mb()
    attack(box, code, [{"input": "", "output": "1"}] * 3, ["wa"] * 3, output_mb=17)
    assert _rss_mb() - before < 120


def test_class6_huge_replies_are_bounded(box):
    many_lines = "import sys\nsys.stdout.write('0\\n' * (7 << 20))"
    one_line = "import sys\nsys.stdout.write('0 ' * (7 << 20))"
    grade("print(1)", [{"input": "", "output": "1"}])
    before = _rss_mb()
    attack(box, many_lines, [{"input": "", "output": "0"}] * 4, ["wa"] * 4, output_mb=15)
    attack(box, one_line, [{"input": "", "output": "0 0"}] * 4, ["wa"] * 4, output_mb=15)
    assert _rss_mb() - before < 200


def test_class6_a_harness_exit_code_is_not_a_sandbox_error(box):
    # exit codes a program can produce never raise and never pass
    for status in (1, 2, 92, 97, 98, 126, 127, 255):
        assert grade(
            f"import os\nprint(1, flush=True)\nos._exit({status})", [{"input": "", "output": "1"}]
        ).verdicts == ["re"]
    assert_worker_healthy(box)


def test_class6_score_never_raises(box):
    env = LcbEnv(workers=1)
    env._sandbox = box
    task = _problem([("1", "42"), ("2", "42")])
    programs = ["import os\nos._exit(97)", "print('sNaN')", "import sys\nprint(42)\nsys.exit(92)", "print(42)"]
    completion = "".join(
        f"<response_{j + 1}>\n```python\n{c}\n```\n</response_{j + 1}>\n" for j, c in enumerate(programs)
    )
    rewards = env.score(task, completion, mode="multi", m=4)
    assert np.array_equal(rewards, [[0, 0], [0, 0], [0, 0], [1, 1]])


# ============================================================ class 7: fairness and host paths
def test_class7_proc_1_cmdline_shows_no_host_path(box):
    checkout = str(Path(__file__).resolve().parents[3])
    code = f"import os\ntext = open('/proc/1/cmdline', 'rb').read().decode()\nprint('leak' if {checkout!r} in text or 'ro-bind' in text else 'clean')"
    attack(box, code, [{"input": "", "output": "clean"}], ["ok"])


def test_class7_waiting_threads_are_served_in_arrival_order(box):
    order, threads = [], []
    lock = threading.Lock()

    def one(i):
        env_lcb.grade("import time\ntime.sleep(0.05)\nprint(1)", [{"input": "", "output": "1"}])
        with lock:
            order.append(i)

    blocker = threading.Thread(
        target=env_lcb.grade, args=("import time\ntime.sleep(0.5)\nprint(1)", [{"input": "", "output": "1"}])
    )
    blocker.start()
    time.sleep(0.2)
    for i in range(6):
        threads.append(threading.Thread(target=one, args=(i,)))
        threads[-1].start()
        time.sleep(0.03)
    blocker.join()
    for t in threads:
        t.join()
    assert order == list(range(6))


def test_class2_forgers_under_load_change_no_other_verdict():
    # the issue's load case: forgers interleaved with correct programs on two workers, graded from threads
    from concurrent.futures import ThreadPoolExecutor

    forger = (
        "import json, os, struct\nfake = json.dumps({'outcome': 'ok'}).encode()\n"
        "frame = struct.pack('>cII', b'T', len(fake), 0) + fake\n"
        "for fd in range(3, 256):\n    try:\n        os.write(fd, frame * 8)\n    except OSError:\n        pass\nprint(0)"
    )
    correct = "print(int(input()) * 2)"
    tests = [{"input": str(i), "output": str(2 * i)} for i in range(3)]
    jobs = [forger if i % 5 == 0 else correct for i in range(30)]
    with Sandbox(workers=2) as sandbox, ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda code: sandbox.grade(code, tests, time_limit_s=1).verdicts, jobs))
        assert sandbox.restarts == 0
    for code, verdicts in zip(jobs, results, strict=True):
        assert verdicts == (["ok", "wa", "wa"] if code is forger else ["ok"] * 3)


def test_class7_a_released_worker_goes_to_the_first_waiter_not_to_a_barging_caller(box):
    worker = box._acquire()
    got = []
    waiter = threading.Thread(target=lambda: got.append(box._acquire()))
    waiter.start()
    deadline = time.monotonic() + 5
    while not box._waiters and time.monotonic() < deadline:
        time.sleep(0.01)
    box._release(worker)
    assert not box._idle  # handed to the waiter: a caller arriving now waits its turn
    waiter.join(5)
    assert got == [worker]
    box._release(worker)
    assert_worker_healthy(box)


# ============================================================ issue 22: denial of service of the grader
THREAD_FLOOD = """
import threading, time
threading.stack_size(64 << 10)
started = 0
try:
    for _ in range(3000):
        threading.Thread(target=time.sleep, args=(1000,), daemon=True).start()
        started += 1
except RuntimeError:
    pass
print('capped' if started < host_cap else started)
"""


def test_issue22_threads_per_test_are_capped(box):
    """As host root RLIMIT_NPROC is not enforced outside a user namespace; inside the sandbox's own it is."""
    code = THREAD_FLOOD.replace("host_cap", str(host.TASKS_PER_TEST))
    attack(box, code, [{"input": "", "output": "capped"}] * 2, ["ok", "ok"])


def test_issue22_a_thousand_sleeping_threads_at_32_mb_end_in_a_verdict(box):
    code = "import threading, time\nthreading.stack_size(32 << 10)\n" + (
        "for _ in range(1000):\n    threading.Thread(target=time.sleep, args=(1000,), daemon=True).start()\n"
        "time.sleep(1000)"
    )
    result = grade(code, [{"input": "", "output": "1"}] * 2, memory_mb=32)
    assert set(result.verdicts) <= {"re", "mle", "tle"}, result.verdicts
    assert_worker_healthy(box)


def test_issue22_scratch_inodes_are_capped_and_a_tree_of_directories_costs_the_next_test_nothing(box):
    fill = (
        "import os\nn = 0\ntry:\n    for i in range(100000):\n        os.mkdir('d%d' % i)\n        n += 1\n"
        "except OSError:\n    pass\nprint('capped' if n < 20000 else n)"
    )
    attack(box, fill, [{"input": "", "output": "capped"}] * 3, ["ok"] * 3)
    probe = "import os\nprint(os.listdir('.') or 'empty', os.listdir('/tmp') or 'empty', os.getcwd())"
    assert grade(probe, [{"input": "", "output": "empty empty /tmp"}]).verdicts == ["ok"]
    assert box.restarts == 0  # the scratch was replaced, not found dirty


HOST_WIDE = {  # host-wide kernel quotas (per host uid or system-wide) and host-wide writeback
    "io_setup": "ctx = ctypes.c_ulong(0)\nok = libc.syscall(206, 64, ctypes.byref(ctx)) == 0",
    "io_uring_setup": "params = (ctypes.c_char * 120)()\nok = libc.syscall(425, 8, params) >= 0",
    "inotify_init": "ok = libc.syscall(253) >= 0",
    "inotify_init1": "ok = libc.syscall(294, 0) >= 0",
    "fanotify_init": "ok = libc.syscall(300, 0, 0) >= 0",
    "sync": "ok = libc.syscall(162) == 0",
    "syncfs": "fd = os.open('/usr', os.O_RDONLY)\nok = libc.syscall(306, fd) == 0",
}


@pytest.mark.parametrize("name", sorted(HOST_WIDE))
def test_issue22_host_wide_kernel_quotas_and_writeback_are_denied(box, name):
    refused(box, HOST_WIDE[name])


def test_issue22_huge_output_is_not_parsed_in_the_callers_thread(box):
    """A 16 MiB number equal to the expected one as a Decimal is a wrong answer, decided by its size alone."""
    huge = "1." + "0" * (16 << 20)
    assert not host.compare_stdout(huge, "1")
    assert not host.compare_stdout("1" + " " * (1 << 20) + "\n", "1")  # padding past the bound too
    assert host.compare_stdout("1.000\n", "1")  # a normal-sized Decimal-equal line still matches
    code = "import sys\nsys.stdout.write('1.' + '0' * (15 << 20))"
    attack(box, code, [{"input": "", "output": "1"}], ["wa"])


# ============================================================ issue 37: host-wide queued-signal quota, dentry cache
# Every POSIX timer holds a preallocated queued signal, counted for the sandbox uid in its own user namespace
# AND for the host uid it maps to (host root when bubblewrap runs as root): a test holding thousands of timers
# would leave every process of that host uid without timers or queued signals for its whole wall time.
SIGNAL_QUEUERS = {
    "timer_create": "tid = ctypes.c_int(0)\nok = libc.syscall(222, 1, None, ctypes.byref(tid)) == 0",
    "timer_create_cputime": "tid = ctypes.c_int(0)\nok = libc.syscall(222, 2, None, ctypes.byref(tid)) == 0",
    "timer_settime": "spec = (ctypes.c_long * 4)(0, 0, 100, 0)\nok = libc.syscall(223, 0, 0, spec, None) == 0",
    "timer_delete": "ok = libc.syscall(226, 0) == 0",
    "rt_sigqueueinfo": "info = (ctypes.c_int * 32)(34, 0, -1)\nok = libc.syscall(129, os.getpid(), 34, info) == 0",
    "rt_tgsigqueueinfo": (
        "info = (ctypes.c_int * 32)(34, 0, -1)\nok = libc.syscall(297, os.getpid(), os.getpid(), 34, info) == 0"
    ),
    "mq_notify": "ok = libc.syscall(244, 0, None) == 0",
    "tkill_rt_signal": "import signal\nsignal.signal(34, lambda *a: None)\nok = libc.syscall(200, os.getpid(), 34) == 0",
}


@pytest.mark.parametrize("name", sorted(SIGNAL_QUEUERS))
def test_issue37_no_call_queues_signals_or_holds_posix_timers(box, name):
    refused(box, SIGNAL_QUEUERS[name])


def _queued_signals_of_this_uid() -> int:
    """The host's count of queued signals (POSIX timers included) of this process's uid (``SigQ`` n/limit)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("SigQ:"):
            return int(line.split()[1].split("/")[0])
    raise AssertionError("no SigQ line in /proc/self/status")


TIMER_HOARD = """
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
tid = ctypes.c_int(0)
made = 0
for _ in range(ATTEMPTS):
    if libc.syscall(222, 1, None, ctypes.byref(tid)) != 0:
        break
    made += 1
print(made)
sys.stdout.flush()
time.sleep(1.5)
"""


def test_issue37_a_test_cannot_hold_the_hosts_queued_signal_quota(box):
    """The host uid's queued-signal count stays flat while a test tries to create thousands of timers."""
    import ctypes

    attempts = 5000  # well below any host's limit (so today's failure harms nothing), far above the bound
    baseline = _queued_signals_of_this_uid()
    done: list = []
    worker = threading.Thread(
        target=lambda: done.append(
            grade(TIMER_HOARD.replace("ATTEMPTS", str(attempts)), [{"input": "", "output": "0"}])
        )
    )
    worker.start()
    peak = 0
    libc = ctypes.CDLL(None, use_errno=True)
    host_timers = []
    while worker.is_alive():
        peak = max(peak, _queued_signals_of_this_uid() - baseline)
        tid = ctypes.c_int(0)  # this (host) process can still create a POSIX timer meanwhile
        assert libc.syscall(222, 1, None, ctypes.byref(tid)) == 0, os.strerror(ctypes.get_errno())
        host_timers.append(tid.value)
        time.sleep(0.02)
    worker.join()
    for tid in host_timers:
        libc.syscall(226, tid)
    # other processes of this uid (background jobs) may queue a few signals meanwhile; the hoard would be 5000
    assert peak < 100 + len(host_timers), peak
    assert done[0].verdicts == ["ok"], (done[0].verdicts, done[0].stderr)
    assert_worker_healthy(box)


def test_issue37_queued_signals_are_bounded_by_rlimit_sigpending_too(box):
    """Behind seccomp: each test child's RLIMIT_SIGPENDING is `host.SIGPENDING_PER_TEST` (it cannot raise it)."""
    code = (
        "import resource\nsoft, hard = resource.getrlimit(resource.RLIMIT_SIGPENDING)\n"
        "try:\n    resource.setrlimit(resource.RLIMIT_SIGPENDING, (hard + 1, hard + 1))\n    raised = 'raised'\n"
        "except (ValueError, OSError):\n    raised = 'kept'\nprint(soft, hard, raised)"
    )
    cap = host.SIGPENDING_PER_TEST
    attack(box, code, [{"input": "", "output": f"{cap} {cap} kept"}], ["ok"])


def _negative_dentries() -> int:
    """The host's count of negative dentries (``nr_negative``, field 5 of /proc/sys/fs/dentry-state)."""
    return int(Path("/proc/sys/fs/dentry-state").read_text().split()[4])


LOOKUP_STORM = "import os\ni = 0\nwhile True:\n    try:\n        os.stat('WHERE/n%d' % i)\n    except OSError:\n        pass\n    i += 1"


PREFIX = str(Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable))).parents[1])
# The sandbox's own tmpfs and procfs, the former read-only binds of the host's disk (/usr and the interpreter
# prefix, now tmpfs copies whose files are single-file binds), through a file bind, and through /proc's links.
STORM_PLACES = [
    "/tmp",
    "/tmp/d",
    "/dev",
    "/proc",
    "/proc/self",
    "",
    "/sandbox",
    "/usr/../tmp",
    "/usr",
    "/usr/lib",
    "/usr/lib/x86_64-linux-gnu",
    "/lib",
    PREFIX,
    PREFIX + "/lib",
    PREFIX + "/lib/python3.11",
    PREFIX + "/lib/python3.11/lib-dynload",
    PREFIX + "/lib/python3.11/json",
    PREFIX + "/lib/python3.11/os.pyc",
    "/sandbox/worker.py",
    "/proc/self/exe",
    "/proc/self/cwd",
    "/proc/1/root/usr",
]


@pytest.mark.parametrize("where", STORM_PLACES)
def test_issue37_lookup_storms_leave_no_dentries_in_the_hosts_cache(box, where):
    """Failed lookups anywhere a test can reach are not cached: a storm leaves (almost) nothing behind.

    Before issue 37 was closed, /usr and the interpreter prefix were read-only binds of the host's disk
    and each failed lookup under them left a negative dentry (about 10^5 for this 0.5 CPU-second storm,
    10^6 for a 6-second test); the broker now replaces them by tmpfs copies before the zygote exists.
    """
    before = _negative_dentries()
    code = ("import os\nos.makedirs('/tmp/d', exist_ok=True)\n" if where == "/tmp/d" else "") + LOOKUP_STORM
    result = grade(code.replace("WHERE", where), [{"input": "", "output": ""}], time_limit_s=0.5)
    assert result.verdicts == ["tle"]
    # a storm of 0.5 CPU seconds makes ~10^5 lookups; background processes add a few hundred at most
    assert _negative_dentries() - before < 5000
    assert_worker_healthy(box)


NO_HOST_DIRECTORY = """
import os
seen = []
for line in open('/proc/self/mountinfo'):
    fields = line.split()
    point, kind = fields[4], fields[fields.index('-') + 1]
    if kind not in ('tmpfs', 'proc') and os.path.isdir(point):
        seen.append((point, kind))
print(seen)
"""


def test_issue37_no_directory_of_a_dentry_caching_filesystem_is_in_view(box):
    """Every directory a test sees is on tmpfs or procfs (files of the host's disk come as single-file binds)."""
    assert grade(NO_HOST_DIRECTORY, [{"input": "", "output": "[]"}]).verdicts == ["ok"]
    header = next(h for kind, h, _ in box._idle[0].exchange({"ping": True}, 30.0, 0) if kind == b"E")
    assert header["host_disk"] == "hidden"


STDLIB_USE = """
import base64, bz2, lzma, zlib, hashlib, sqlite3, decimal, fractions, unicodedata, ssl, uuid, array, csv, pickle
import xml.etree.ElementTree as ET, email.message, statistics, cmath, struct, json, codecs
print(base64.b64encode(bz2.decompress(bz2.compress(b"ab"))).decode(), lzma.decompress(lzma.compress(b"c")).decode())
print(zlib.crc32(b"x"), hashlib.sha256(b"").hexdigest()[:8], hashlib.md5(b"a").hexdigest()[:8])
print(sqlite3.connect(":memory:").execute("select 6 * 7").fetchone()[0], decimal.Decimal(1) / 4, fractions.Fraction(2, 6))
print(unicodedata.name("a"), ET.fromstring("<a>t</a>").text, codecs.decode(b"\\xe9", "cp1252"), pickle.loads(pickle.dumps(3)))
"""


def test_issue37_the_stdlib_and_its_extension_modules_still_import(box):
    """The tmpfs copies hold the stdlib, its extension modules and the libraries they link (zlib, OpenSSL...)."""
    expected = "YWI= c\n2363233923 e3b0c442 0cc175b9\n42 0.25 1/3\nLATIN SMALL LETTER A t \u00e9 3"
    result = grade(STDLIB_USE, [{"input": "", "output": expected}], time_limit_s=5.0)
    assert result.verdicts == ["ok"], result.stderr
