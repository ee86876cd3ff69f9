"""Recording an MCP session with the official Python MCP client, then replaying it.

`ctx mcp --record NAME` (stdio) records every tool call the client makes as a step of a run;
`ctx run replay NAME --json` re-executes the deterministic steps with ctx's own tools and
reports `exact`; after a file the run read changes, `degraded` naming that step; after it is
deleted, `failed`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
from fixture_repo import CTX_BIN, LIB_RS, clean_env, git
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.skipif(not CTX_BIN, reason="CTX_BIN is not set (scripts/test sets it)")


class Repo:
    def __init__(self, root: Path, home: Path):
        self.root = root
        self.env = clean_env(home)

    def ctx(self, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
        run = subprocess.run(
            [CTX_BIN, *args], cwd=self.root, env=self.env, capture_output=True, text=True
        )
        assert run.returncode == expect, (run.returncode, run.stdout, run.stderr)
        return run


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    root, home = tmp_path / "repo", tmp_path / "home"
    home.mkdir()
    files = {
        "Cargo.toml": '[package]\nname = "demo"\nversion = "0.1.0"\n',
        "README.md": "# Demo\n\nUse `helper` to add one.\n",
        "src/lib.rs": LIB_RS,
        "src/main.rs": "use demo::helper;\n\nfn main() {\n    println!(\"{}\", helper(41));\n}\n",
        ".gitignore": "/.ctx\n",
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "First commit")
    r = Repo(root, home)
    r.ctx("init")
    return r


async def record_session(repo: Repo, name: str) -> None:
    """Calls fs_read (step 0), ctx_search (1), ctx_summarize (2), ctx_status (3), in order."""
    params = StdioServerParameters(
        command=CTX_BIN, args=["mcp", "--tools", "all", "--record", name], cwd=repo.root, env=repo.env
    )
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                calls = [
                    ("fs_read", {"operations": [{"mode": "Line", "path": "src/lib.rs"}]}),
                    ("ctx_search", {"pattern": "helper"}),
                    ("ctx_summarize", {"path": "src/main.rs"}),
                    ("ctx_status", {}),
                ]
                for tool, arguments in calls:
                    result = await s.call_tool(tool, arguments)
                    assert not result.is_error, (tool, result.content)


def replay(repo: Repo, name: str, expect: int) -> dict:
    run = repo.ctx("run", "replay", name, "--json", "--steps", expect=expect)
    return json.loads(run.stdout)


@pytest.mark.asyncio
async def test_recorded_session_replays_exact_degraded_failed(repo: Repo) -> None:
    await record_session(repo, "py-session")

    shown = json.loads(repo.ctx("run", "show", "py-session", "--json").stdout)
    text = json.dumps(shown)
    for tool in ("fs_read", "ctx_search", "ctx_summarize", "ctx_status"):
        assert tool in text

    report = replay(repo, "py-session", expect=0)
    assert report["fidelity"] == "exact", report
    assert report["steps"] == 4
    assert report["exact"] == 4
    assert [r["tool"] for r in report["results"]] == [
        "fs_read",
        "ctx_search",
        "ctx_summarize",
        "ctx_status",
    ]
    assert report["first_divergence"] is None

    # A file the run read changes: degraded, and the first divergence is the fs_read step.
    (repo.root / "src/lib.rs").write_text(LIB_RS.replace("x + 1", "x + 2"))
    report = replay(repo, "py-session", expect=1)
    assert report["fidelity"] == "degraded", report
    first = report["first_divergence"]
    assert first["index"] == 0 and first["tool"] == "fs_read"
    assert first["outcome"] == "diverged"
    lines = first["diff"].splitlines()
    assert any(line.startswith("-") and line.strip("- ") == "x + 1" for line in lines), lines
    assert any(line.startswith("+") and line.strip("+ ") == "x + 2" for line in lines), lines

    # It is deleted: the read fails, so the replay fails at that step.
    (repo.root / "src/lib.rs").unlink()
    report = replay(repo, "py-session", expect=1)
    assert report["fidelity"] == "failed", report
    assert report["first_divergence"]["index"] == 0
    assert report["first_divergence"]["outcome"] == "failed"
    assert "src/lib.rs" in report["first_divergence"]["error"]
    assert report["results"][0]["outcome"] == "failed"


@pytest.mark.asyncio
async def test_http_recording_is_finished_on_sigterm(repo: Repo) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [CTX_BIN, "mcp", "--http", f"127.0.0.1:{port}", "--record", "web"],
        cwd=repo.root,
        env=repo.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.05)
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                result = await s.call_tool(
                    "fs_read", {"operations": [{"mode": "Line", "path": "README.md"}]}
                )
                assert not result.is_error, result.content
                result = await s.call_tool("ctx_search", {"pattern": "helper"})
                assert not result.is_error, result.content
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert proc.returncode == 0
    assert proc.stderr is not None
    assert "as `web`" in proc.stderr.read().decode()

    report = replay(repo, "web", expect=0)
    assert report["fidelity"] == "exact", report
    assert [r["tool"] for r in report["results"]] == ["fs_read", "ctx_search"]
