"""Download the wheels the GPU machine lacks for TRL into ``benchmarks/gpu_smoke/wheels/`` (git-ignored).

    uv run python benchmarks/gpu_smoke/fetch_wheels.py

The GPU machine has torch, transformers, accelerate, pyarrow, pandas, xxhash and fsspec but not TRL,
datasets, dill or multiprocess, and it cannot reach a package index. This fetches those four, at the
versions uv.lock pins, as pure-Python wheels for CPython 3.12 on x86-64 Linux (about 1.8 MB together);
the device call carries the folder and `run.sh` installs it into a private directory there. Without
the folder the TRL part of the smoke check records "trl not installed" and the local engine still runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PACKAGES = ("trl", "datasets", "dill", "multiprocess")
"""What TRL needs that the GPU machine's image does not hold (its package list: .library/device/KINDS.md)."""
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


def locked_versions(lock: Path, names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """The version uv.lock pins for each of `names`.

    Raises:
        KeyError: If the lock has no (single) entry for one of them.
    """
    tomllib = importlib.import_module("tomllib")  # Python >= 3.11, as the project's uv environment

    versions: dict[str, list[str]] = {}
    for package in tomllib.loads(lock.read_text())["package"]:
        versions.setdefault(package["name"], []).append(package["version"])
    out: dict[str, str] = {}
    for name in names:
        found = versions.get(name, [])
        if len(found) != 1:
            raise KeyError(f"{lock} pins {name} {found or 'nowhere'}; expected one version (uv sync --group trl).")
        out[name] = found[0]
    return out


def pip_command() -> list[str]:
    """A Python with pip to download with: this interpreter, else the first ``python3`` on PATH that has pip.

    Raises:
        FileNotFoundError: If none has pip.
    """
    candidates = [sys.executable]
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(folder) / "python3"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            candidates.append(str(candidate))
    for python in candidates:
        probe = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, check=False)
        if probe.returncode == 0:
            return [python, "-m", "pip"]
    raise FileNotFoundError("no pip found: install pip for this interpreter or put a python3 with pip on PATH.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "wheels", help="where the wheels go")
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's Python (default 3.12)")
    args = parser.parse_args(argv)
    versions = locked_versions(ROOT / "uv.lock")
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.whl"):  # one version of each: two would stop the install there
        old.unlink()
    command = [
        *pip_command(),
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        args.python_version,
        "--implementation",
        "cp",
        *(f"--platform={platform}" for platform in PLATFORMS),
        "-d",
        str(args.out),
        *(f"{name}=={version}" for name, version in versions.items()),
    ]
    subprocess.run(command, check=True)
    wheels = sorted(args.out.glob("*.whl"))
    total = sum(path.stat().st_size for path in wheels)
    print(f"{len(wheels)} wheels, {total / 2**20:.2f} MiB, in {args.out}: {', '.join(p.name for p in wheels)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
