"""What an install costs: download size (from uv.lock) and installed size (from a venv's RECORD files).

    uv run python .ci/install_size.py                      # the default `uv sync` (dev group)
    uv run python .ci/install_size.py --group verl         # plus an opt-in group
    uv run python .ci/install_size.py --venv /tmp/v/.venv  # also the installed size of that venv
    uv run python .ci/install_size.py --package env-maze   # `pip install env-maze` alone

Download sizes are the wheels uv.lock pins for this interpreter and platform (markers evaluated
here, best-matching wheel tag), read from ``uv export --format pylock.toml``; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import tomllib
from packaging.markers import Marker
from packaging.tags import sys_tags
from packaging.utils import parse_wheel_filename

ROOT = Path(__file__).resolve().parents[1]
CATEGORIES = (
    ("CUDA libraries (nvidia-*, cuda-*)", lambda n: n.startswith(("nvidia-", "cuda-"))),
    ("torch", lambda n: n == "torch"),
    ("triton", lambda n: n == "triton"),
    ("veRL stack (verl, ray, vllm, wandb, tensorboard, ...)", None),
)
VERL_STACK = {"verl", "ray", "vllm", "wandb", "tensorboard", "tensorboard-data-server", "tensordict", "torchdata"}


def _category(name: str) -> str:
    for label, test in CATEGORIES:
        if test is None and name in VERL_STACK:
            return label
        if test is not None and test(name):
            return label
    return "everything else"


def _gb(size: float) -> str:
    return f"{size / 1e9:.2f} GB" if size >= 1e8 else f"{size / 1e6:.0f} MB"


def download_sizes(groups: Iterable[str], package: str | None = None) -> dict[str, int]:
    """Wheel size per package of the locked install with `groups` (or of one workspace package), here."""
    command = [
        os.environ.get("UV", "uv"),
        "export",
        "--frozen",
        "--quiet",
        "--format",
        "pylock.toml",
        "--no-emit-workspace",
    ]
    if package:
        command += ["--package", package, "--no-default-groups"]
    for group in groups:
        command += ["--group", group]
    lock = tomllib.loads(subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout)
    rank = {tag: i for i, tag in enumerate(sys_tags())}
    sizes: dict[str, int] = {}
    for package in lock["packages"]:
        if "marker" in package and not Marker(package["marker"]).evaluate():
            continue
        best: tuple[int, int] | None = None
        for wheel in package.get("wheels", []):
            filename = wheel["url"].rsplit("/", 1)[-1]
            tags = parse_wheel_filename(filename)[3]
            score = min((rank[t] for t in tags if t in rank), default=None)
            if score is not None and (best is None or score < best[0]):
                best = (score, wheel["size"])
        if best is None:
            sdist = package.get("sdist")
            best = (0, sdist["size"]) if sdist else (0, 0)
        sizes[package["name"]] = best[1]
    return sizes


def installed_sizes(venv: Path) -> dict[str, int]:
    """Bytes on disk per distribution installed in `venv`, from its RECORD files."""
    site = next(venv.glob("lib/python3*/site-packages"))
    sizes: dict[str, int] = {}
    for dist in importlib.metadata.distributions(path=[str(site)]):
        total = 0
        for file in dist.files or []:
            path = Path(dist.locate_file(file))
            if path.is_file():
                total += path.stat().st_size
        sizes[dist.metadata["Name"].lower().replace("_", "-")] = total
    return sizes


def report(title: str, sizes: dict[str, int], top: int) -> None:
    """Print the total, the per-category split and the largest packages."""
    print(f"## {title}: {len(sizes)} packages, {_gb(sum(sizes.values()))}")
    by_category: dict[str, int] = {}
    for name, size in sizes.items():
        by_category[_category(name)] = by_category.get(_category(name), 0) + size
    for label, size in sorted(by_category.items(), key=lambda kv: -kv[1]):
        print(f"  {label:<55} {_gb(size):>9}")
    print("  largest: " + ", ".join(f"{n} {_gb(s)}" for n, s in sorted(sizes.items(), key=lambda kv: -kv[1])[:top]))


def main(argv: list[str] | None = None) -> int:
    """Print the download size of the locked install with the given groups (and a venv's installed size)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--group", action="append", default=[], help="dependency group added to the default ones")
    parser.add_argument("--package", help="measure `pip install PACKAGE` (a workspace member) instead")
    parser.add_argument("--venv", type=Path, help="a virtual environment to measure on disk")
    parser.add_argument("--top", type=int, default=8, help="how many of the largest packages to name")
    args = parser.parse_args(argv)
    what = args.package or " + ".join(["default", *args.group])
    here = f"{sys.platform}, Python {sys.version_info[0]}.{sys.version_info[1]}"
    report(f"download ({what}, {here})", download_sizes(args.group, args.package), args.top)
    if args.venv:
        report(f"installed in {args.venv}", installed_sizes(args.venv), args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
