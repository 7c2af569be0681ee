"""The small shared helpers that replaced repeated blocks (issue 39): versions, exit status, scripts, JSON server."""

from __future__ import annotations

import json
import sys
import urllib.request

import pytest

import vpo_core
from vpo_core.cli_config import ConfigError, HelpRequested, exit_status
from vpo_core.errors import DataFileError
from vpo_core.http_json import JsonHandler, ServerThread, UnreachableError, request_json
from vpo_core.testing import load_script
from vpo_core.versions import UNKNOWN_VERSION, installed_version


def test_installed_version_reads_the_metadata_or_says_unknown():
    assert installed_version("vpo-core") == vpo_core.__version__ != UNKNOWN_VERSION
    assert installed_version("no-such-distribution-vpo") == UNKNOWN_VERSION


def test_exit_status_prints_help_or_one_line_error(capsys):
    assert exit_status(HelpRequested("usage: x")) == 0
    assert capsys.readouterr().out == "usage: x\n"
    assert exit_status(ConfigError("steps must be > 0")) == 2
    assert exit_status(DataFileError("bad file")) == 2
    assert capsys.readouterr().err == "error: steps must be > 0\nerror: bad file\n"


def test_load_script_imports_once_and_forgets_a_failed_file(tmp_path):
    good = tmp_path / "good.py"
    good.write_text("import dataclasses\n\n@dataclasses.dataclass\nclass C:\n    x: int = 1\n\nRUNS = [1]\n")
    module = load_script(good, "_shared_helpers_good")
    assert module.C().x == 1  # a dataclass resolves its module: registered before it ran
    module.RUNS.append(2)
    assert load_script(good, "_shared_helpers_good").RUNS == [1, 2]  # the same module, not run again
    bad = tmp_path / "bad.py"
    bad.write_text("raise RuntimeError('broken script')\n")
    with pytest.raises(RuntimeError, match="broken script"):
        load_script(bad, "_shared_helpers_bad")
    assert "_shared_helpers_bad" not in sys.modules
    with pytest.raises(ImportError, match="cannot be imported"):
        load_script(tmp_path / "data.json", "_shared_helpers_json")
    del sys.modules["_shared_helpers_good"]


def test_json_server_thread_answers_and_reads_json():
    class Echo(JsonHandler):
        def do_GET(self):
            self.send_json(200, {"path": self.path})

        def do_POST(self):
            self.send_json(201, {"got": self.read_json()})

    with ServerThread(Echo) as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert request_json(server.url + "/a", timeout_s=10, max_bytes=1024) == {"path": "/a"}
        assert request_json(server.url, {"n": [1, 2]}, timeout_s=10, max_bytes=1024) == {"got": {"n": [1, 2]}}
        with urllib.request.urlopen(server.url + "/b", timeout=10) as answer:
            assert answer.headers["Content-Type"] == "application/json"
            assert json.loads(answer.read()) == {"path": "/b"}
    with pytest.raises(UnreachableError):  # closed: nothing listens any more
        request_json(server.url, timeout_s=5, max_bytes=1024)
    never_started = ServerThread(Echo)
    never_started.close()  # returns at once (shutdown() would wait for a serve_forever that never ran)
