"""Sandbox tests need a bubblewrap that starts here: they skip, with one reason, where none does."""

from __future__ import annotations

import functools
import os
import sys

import pytest


@functools.cache
def _no_bubblewrap_reason() -> str | None:
    from env_lcb.sandbox.host import _bwrap_works

    found = _bwrap_works(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
    return f"no bubblewrap can start here (system or bundled): {found}" if isinstance(found, str) else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    sandboxed = [item for item in items if item.get_closest_marker("sandbox")]
    if sandboxed and (reason := _no_bubblewrap_reason()):
        for item in sandboxed:
            item.add_marker(pytest.mark.skip(reason=reason))
