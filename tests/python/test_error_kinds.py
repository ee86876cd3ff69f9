"""Every front end keeps the kind of a failure (README, "Exit codes" and "Errors").

The facade gives each error a kind: user input, not found, conflict, damaged store, I/O,
internal. Each front end maps it its own way, and this suite triggers each kind through each:

- the CLI: exit 2 for the request's faults (user input, not found, conflict, damaged), 74 for
  an I/O failure;
- MCP (stdio and `ctx serve`'s /mcp, through the official client): an `isError` result with
  ctx's message as its text, no `structuredContent` (a client validating it against the
  tool's output schema would replace the message), and the kind in `_meta["ctx/error"]`;
- the HTTP `/tool` endpoint: 4xx for the request's faults, with `kind` in the body (the file
  engine is read-only: it has no conflict, damage or store I/O to report);
- the Python module: one exception class per kind.

The I/O case makes the store read-only with a read-only bind mount in a private mount
namespace (`unshare -m`, as root, where permissions would not stop a write), and is skipped
with a reason where that is not possible. Internal failures are bugs and cannot be triggered
on purpose; their mapping is unit-tested in each front end.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fixture_repo import CTX_BIN, clean_env, free_port, git, wait_for_port
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

import ctxlayer

READ_ONLY_WRAPPER = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'


def can_make_read_only_mounts() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind / /tmp && true"], capture_output=True)
    return probe.returncode == 0


READ_ONLY = can_make_read_only_mounts()
NEEDS_READ_ONLY = pytest.mark.skipif(
    not READ_ONLY, reason="a read-only store needs root and a private mount namespace (unshare -m)"
)


class Repo:
    """A project with a pack `docs`, a snapshot `v1`, and a damaged copy whose objects are junk."""

    def __init__(self, base: Path):
        self.home = base / "home"
        self.home.mkdir()
        self.env = clean_env(self.home)
        self.workspaces = base / "workspaces"
        self.root = self.workspaces / "proj"
        (self.root / "src").mkdir(parents=True)
        (self.root / "README.md").write_text("# Proj\n\nParses words.\n")
        (self.root / "src" / "words.py").write_text("def parse_words(text):\n    return text.split()\n")
        git(self.root, "init", "-q", "-b", "main")
        git(self.root, "add", ".")
        git(self.root, "commit", "-q", "-m", "proj")
        self.ctx("init")
        self.ctx("pack", "create", "docs")
        self.ctx("pack", "add", "docs", "file:README.md")
        self.ctx("pack", "snapshot", "docs", "--name", "v1")
        # The damaged copy: the same store with every object overwritten.
        self.damaged = self.workspaces / "damaged"
        shutil.copytree(self.root, self.damaged, symlinks=True)
        for obj in (self.damaged / ".ctx" / "objects").rglob("*"):
            if obj.is_file():
                obj.write_bytes(b"not what the hash says\n")

    def ctx(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CTX_BIN, *args], cwd=cwd or self.root, env=self.env, capture_output=True, text=True, timeout=120
        )

    def read_only(self, *command: str) -> list[str]:
        """`command` run with the store mounted read-only."""
        return ["unshare", "-m", "sh", "-c", READ_ONLY_WRAPPER, "sh", str(self.root / ".ctx"), *command]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    return Repo(tmp_path_factory.mktemp("kinds"))


def one_line_error(run: subprocess.CompletedProcess[str], code: int, needle: str) -> None:
    assert run.returncode == code, (run.returncode, run.stderr)
    assert run.stderr.count("\n") == 1, run.stderr
    assert needle in run.stderr, run.stderr


# ---------------------------------------------------------------------------------------- CLI


def test_cli_exit_codes_follow_the_kind(repo: Repo) -> None:
    one_line_error(repo.ctx("search", "--regex", "(unclosed"), 2, "(unclosed")  # user input
    one_line_error(repo.ctx("pack", "show", "nosuch"), 2, "nosuch")  # not found
    one_line_error(repo.ctx("pack", "create", "docs"), 2, "already exists")  # conflict
    damaged = repo.ctx("pack", "render", "--snapshot", "v1", cwd=repo.damaged)
    one_line_error(damaged, 2, "ctx store verify")  # damaged


@NEEDS_READ_ONLY
def test_cli_io_failure_exits_74(repo: Repo) -> None:
    run = subprocess.run(
        repo.read_only(CTX_BIN, "pack", "create", "more"),
        cwd=repo.root,
        env=repo.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    one_line_error(run, 74, "read-only")


# ---------------------------------------------------------------------------------------- MCP


@contextlib.contextmanager
def serving(repo: Repo, port: int, log: Path):
    args = [CTX_BIN, "serve", "--workspaces", str(repo.workspaces), "--addr", f"127.0.0.1:{port}", "--tools", "all"]
    with open(log, "wb") as errlog:
        proc = subprocess.Popen(args, cwd=repo.root, env=repo.env, stdin=subprocess.DEVNULL, stderr=errlog)
        try:
            wait_for_port(proc, port, log.read_text)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(timeout=10)


@contextlib.asynccontextmanager
async def stdio_session(repo: Repo, command: list[str], cwd: Path, log: Path):
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=cwd, env=repo.env)
    with open(log, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def kind_of_failure(session: ClientSession, tool: str, arguments: dict) -> str:
    result = await session.call_tool(tool, arguments)
    text = "".join(getattr(c, "text", "") for c in result.content)
    assert result.is_error, f"{tool} {arguments} should fail: {text[:300]}"
    assert result.structured_content is None, result.structured_content
    error = (result.meta or {}).get("ctx/error", {})
    assert error.get("message") == text, result.meta
    return error.get("kind")


REQUEST_FAULTS = [
    ("ctx_search", {"pattern": "(unclosed", "mode": "regex"}, "user_input"),
    ("fs_read", {"operations": [{"mode": "Line", "path": "../../etc/passwd"}]}, "user_input"),
    ("ctx_packs_get", {"pack": "nosuch"}, "not_found"),
    ("fs_read", {"operations": [{"mode": "Line", "path": "src/nosuch.py"}]}, "not_found"),
    ("ctx_packs_create", {"name": "docs"}, "conflict"),
]


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", ["stdio", "serve-mcp"])
async def test_mcp_results_carry_the_kind(repo: Repo, transport: str, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    if transport == "stdio":
        command = [CTX_BIN, "mcp", "--tools", "all", "--allow-write"]
        async with stdio_session(repo, command, repo.root, log) as session:
            for tool, arguments, kind in REQUEST_FAULTS:
                assert await kind_of_failure(session, tool, arguments) == kind, (tool, arguments)
        async with stdio_session(repo, command, repo.damaged, tmp_path / "damaged.log") as session:
            assert await kind_of_failure(session, "ctx_packs_render", {"snapshot_id": "v1"}) == "damaged"
        return
    port = free_port()
    with serving(repo, port, log) as base:
        for workspace, calls in (
            ("proj", [c for c in REQUEST_FAULTS if c[0] != "ctx_packs_create"]),
            ("damaged", [("ctx_packs_render", {"snapshot_id": "v1"}, "damaged")]),
        ):
            async with streamable_http_client(f"{base}/mcp/{workspace}") as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    for tool, arguments, kind in calls:
                        assert await kind_of_failure(session, tool, arguments) == kind, (tool, arguments)


@NEEDS_READ_ONLY
@pytest.mark.asyncio
async def test_mcp_io_failure_is_kind_io(repo: Repo, tmp_path: Path) -> None:
    command = repo.read_only(CTX_BIN, "mcp", "--tools", "all", "--allow-write")
    async with stdio_session(repo, command, repo.root, tmp_path / "ro.log") as session:
        assert await kind_of_failure(session, "ctx_packs_create", {"name": "more"}) == "io"


# --------------------------------------------------------------------------------- HTTP /tool


def test_tool_endpoint_answers_4xx_with_the_kind(repo: Repo, tmp_path: Path) -> None:
    port = free_port()
    with serving(repo, port, tmp_path / "serve.log") as base:

        def tool(params: dict) -> httpx.Response:
            body = {"workspace": "proj", "tool": "fs_read", "params": params}
            return httpx.post(f"{base}/tool", json=body, timeout=30)

        cases = [
            ({"mode": "Search", "path": ".", "pattern": "(unclosed", "regex": True}, 400, "user_input"),
            ({"mode": "Line", "path": "src/nosuch.py"}, 404, "not_found"),
            ({"mode": "Line", "path": "../../etc/passwd"}, 403, "user_input"),
        ]
        for params, status, kind in cases:
            answer = tool(params)
            assert answer.status_code == status, (params, answer.status_code, answer.text[:300])
            body = answer.json()
            assert body["success"] is False and body["kind"] == kind and body["error"], body
        ok = tool({"mode": "Line", "path": "src/words.py"})
        assert ok.status_code == 200 and ok.json()["success"] is True
        # In a batch, errors are per operation and the call itself succeeds.
        batch = tool({"operations": [{"mode": "Line", "path": "src/nosuch.py"}, {"mode": "Line", "path": "README.md"}]})
        assert batch.status_code == 200, batch.text[:300]
        results = batch.json()["result"]["results"]
        assert results[0]["error"]["kind"] == "not_found", results
        assert not results[1].get("error"), results
        unknown = httpx.post(f"{base}/tool", json={"workspace": "nosuch", "tool": "fs_read", "params": {}}, timeout=30)
        assert unknown.status_code == 404


# ------------------------------------------------------------------------------------- Python


def test_python_exceptions_follow_the_kind(repo: Repo) -> None:
    ws = ctxlayer.Workspace(repo.root)
    with pytest.raises(ctxlayer.InvalidInputError):
        ws.search("(unclosed", regex=True)
    with pytest.raises(ctxlayer.NotFoundError):
        ws.pack_show("nosuch")
    with pytest.raises(ctxlayer.ConflictError):
        ws.pack_create("docs")
    with pytest.raises(ctxlayer.DamagedError):
        ctxlayer.Workspace(repo.damaged).pack_snapshot_payload("v1")


@NEEDS_READ_ONLY
def test_python_io_failure_raises_store_io_error(repo: Repo) -> None:
    script = (
        "import ctxlayer, sys\n"
        "try:\n"
        "    ctxlayer.Workspace(sys.argv[1]).pack_create('more')\n"
        "except ctxlayer.StoreIOError as err:\n"
        "    print('StoreIOError', err)\n"
    )
    run = subprocess.run(
        repo.read_only(sys.executable, "-c", script, str(repo.root)),
        env={**repo.env, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.stdout.startswith("StoreIOError") and "read-only" in run.stdout, (run.stdout, run.stderr)
    assert run.stdout.count("\n") == 1, run.stdout
