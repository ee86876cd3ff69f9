"""Secure egress through every front end, end to end with the real binary.

The same hostile workspace is read through the CLI, `ctx serve` (`/tool` and `/mcp/ID`),
`ctx mcp` over stdio and Streamable HTTP (the official Python client), and the Python module:
- a pattern whose compiled automaton would need ~100 GB (it used to abort the process);
- pack sources and reads that lead outside the workspace (a symlink at add time, a file
  turned into a symlink after it was added, a hard link to an outside file);
- five kinds of secret in the repository (AWS key pair, GitHub token, a password in a
  database URL, a PEM private key, and a provider-less key in a constant), which must not
  appear raw in any answer, log (at -vvv), index file or store file (SQLite bytes included),
  nor in a run recorded with `ctx mcp --record`.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest
from fixture_repo import CTX_BIN, clean_env, free_port, git, wait_for_port
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

import ctxlayer

pytestmark = pytest.mark.skipif(not CTX_BIN, reason="CTX_BIN is not set (scripts/test sets it)")

OUTSIDE = "OUTSIDE_WORKSPACE_MARKER"
# Each used to abort the process (a ~115 GB allocation); now refused before compiling.
BOMBS = ["()" * 60_000, "()" * 30_000, "(a|b)*" * 1_000]
BOMB = BOMBS[1]
REFUSAL = ("capture groups", "bytes long")

SECRETS = [
    "AKIAQYLPMN5HHHFPZAM2",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz7kq3pL9v",
    "ghp_R7sZ0vK3mQ9xW2yT5uB8nL4cE6fH1jA0pD3g",
    "Zq8vN3kP7wR2mX5t",
    "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn",
    "XBt7wRkl8OZfIa2AUk7z7gTqBu4wweocv81k2lsN",
]

CONFIG_PY = '''"""Deployment configuration for the billing service."""
AWS_ACCESS_KEY_ID = "AKIAQYLPMN5HHHFPZAM2"
AWS_SECRET_ACCESS_KEY = "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"
GITHUB_TOKEN = "ghp_R7sZ0vK3mQ9xW2yT5uB8nL4cE6fH1jA0pD3g"
DATABASE_URL = "postgresql://billing:Zq8vN3kP7wR2mX5t@db.internal.example.com:5432/billing"
PRIVATE_KEY = """-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MbtPkZc4dd7LH6Hy
lGK8fZl5Y2nBd0aHh1eH7LJx8K5pQfUpN3nJZ0m3aW9nZ2VyX2RlbW9fa2V5X2Zv
-----END RSA PRIVATE KEY-----"""

def billing_client():
    """Connect the billing client."""
    return connect(DATABASE_URL)
'''

KEYS_RS = 'pub const AWS_SECRET: &str = "XBt7wRkl8OZfIa2AUk7z7gTqBu4wweocv81k2lsN";\n'


class Workspace:
    def __init__(self, base: Path):
        self.workspaces = base / "workspaces"
        self.root = self.workspaces / "billing"
        self.outside = base / "outside"
        self.home = base / "home"
        self.env = clean_env(self.home)

    def ctx(self, *args: str, stdin: bytes | None = None, expect: int | None = 0) -> subprocess.CompletedProcess[bytes]:
        run = subprocess.run([CTX_BIN, *args], cwd=self.root, env=self.env, capture_output=True, input=stdin)
        if expect is not None:
            assert run.returncode == expect, (args, run.stdout.decode(), run.stderr.decode())
        return run


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    w = Workspace(tmp_path_factory.mktemp("egress"))
    w.home.mkdir()
    w.outside.mkdir()
    (w.outside / "notes.md").write_text(f"# {OUTSIDE}\n")
    (w.outside / "linked.md").write_text(f"# hard-linked {OUTSIDE}\n")
    files = {
        "src/config.py": CONFIG_PY,
        "src/keys.rs": KEYS_RS,
        "src/lib.rs": "/// Helps.\npub fn helper(x: u32) -> u32 {\n    x + 1\n}\n",
        "long.txt": "ab" * 150 + "\n",
        "docs/inside.md": "# Inside\n\nThe billing guide.\n",
        "docs/later.md": "# Later\n\nBecomes a symlink after it is added.\n",
        ".gitignore": "/.ctx\n",
    }
    for path, text in files.items():
        full = w.root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
    git(w.root, "init", "-q")
    git(w.root, "add", "-A")
    git(w.root, "commit", "-q", "-m", "Billing service")
    (w.root / "pw.md").symlink_to(w.outside / "notes.md")
    os.link(w.outside / "linked.md", w.root / "hard.md")
    w.ctx("init")
    w.ctx("pack", "create", "docs")
    w.ctx("pack", "add", "docs", "file:docs/inside.md")
    w.ctx("pack", "add", "docs", "file:docs/later.md")
    w.ctx("pack", "add", "docs", "file:src/config.py")
    # Turned into a symlink out of the workspace after it was added.
    (w.root / "docs/later.md").unlink()
    (w.root / "docs/later.md").symlink_to(w.outside / "notes.md")
    return w


def assert_clean(text: str, what: str) -> None:
    assert OUTSIDE not in text, f"{what} read outside the workspace: {text[:2000]}"
    for secret in SECRETS:
        assert secret not in text, f"{what} returned {secret}"


def one_line(text: str) -> None:
    assert text.strip() and "\n" not in text.strip(), text[:500]


# ---------------------------------------------------------------------------------- CLI


def test_cli_refuses_the_pattern_bomb_in_one_line(ws: Workspace) -> None:
    for bomb in BOMBS:
        for args in (["read", "long.txt", "--search", bomb, "--regex"], ["search", bomb, "--regex"]):
            run = ws.ctx(*args, expect=2)
            one_line(run.stderr.decode())
            assert any(r in run.stderr.decode() for r in REFUSAL), run.stderr.decode()[-300:]


def test_cli_pack_sources_stay_inside(ws: Workspace) -> None:
    for source in ("file:pw.md", "md:pw.md", "file:hard.md"):
        run = ws.ctx("pack", "add", "docs", source, expect=2)
        one_line(run.stderr.decode())
    for args in (["pack", "render", "docs"], ["pack", "preview", "docs", "--json"]):
        run = ws.ctx(*args, expect=None)
        assert_clean(run.stdout.decode() + run.stderr.decode(), " ".join(args))
    run = ws.ctx("read", "pw.md", expect=2)
    assert_clean(run.stdout.decode() + run.stderr.decode(), "read pw.md")
    run = ws.ctx("read", "hard.md", expect=2)
    assert_clean(run.stdout.decode() + run.stderr.decode(), "read hard.md")


def test_cli_select_inject_hook_and_logs_hold_no_secret(ws: Workspace) -> None:
    outputs = []
    for args in (
        ["select", "billing client configuration", "--budget", "8000"],
        ["-vvv", "select", "billing client configuration AWS GITHUB_TOKEN", "--json"],
        ["search", "AWS", "--json"],
        ["-vvv", "summarize", "src/config.py"],
        ["summarize", "src/keys.rs", "--skeleton"],
        ["map"],
        ["pack", "render", "docs"],
    ):
        run = ws.ctx(*args, expect=None)
        outputs.append((args, run.stdout.decode() + run.stderr.decode()))
    inject = ws.ctx("-vvv", "inject", stdin=b"fix the billing client configuration", expect=None)
    outputs.append((["inject"], inject.stdout.decode() + inject.stderr.decode()))
    hook_input = json.dumps(
        {
            "hook_event_name": "UserPromptSubmit",
            "prompt": "where is the billing client configured?",
            "session_id": "s",
            "cwd": str(ws.root),
        }
    ).encode()
    hook = ws.ctx("-vvv", "hook", "claude-code", stdin=hook_input, expect=0)
    outputs.append((["hook"], hook.stdout.decode() + hook.stderr.decode()))
    assert "billing" in hook.stdout.decode(), "the hook answered with context"
    assert "[REDACTED" in outputs[0][1] or "REDACTED" in outputs[0][1], outputs[0][1][:2000]
    for args, text in outputs:
        assert_clean(text, " ".join(args))


# ------------------------------------------------------------------------ Python module


def test_python_module_refuses_the_bomb_links_and_secrets(ws: Workspace) -> None:
    for bomb in BOMBS:
        with pytest.raises(ValueError, match="capture groups|bytes long"):
            ctxlayer.fs_read("long.txt", "Search", pattern=bomb, regex=True, root=ws.root)
    for path in ("pw.md", "hard.md", "docs/later.md"):
        with pytest.raises((PermissionError, FileNotFoundError, ValueError)) as raised:
            ctxlayer.fs_read(path, "Line", root=ws.root)
        assert OUTSIDE not in str(raised.value)
    result = ctxlayer.fs_read("src/config.py", "Line", root=ws.root)
    assert_clean(repr(result), "python fs_read")
    listing = ctxlayer.fs_read(".", "Directory", depth=3, root=ws.root)
    assert not any(e["path"] == "hard.md" for e in listing), "hard links are not listed"


# ----------------------------------------------------------------------- MCP front ends


@contextlib.contextmanager
def process(ws: Workspace, args: list[str], port: int, log: Path):
    with open(log, "wb") as errlog:
        proc = subprocess.Popen(
            [CTX_BIN, *args],
            cwd=ws.root,
            env=ws.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
        )
        try:
            wait_for_port(proc, port, log.read_text)
            yield proc
        finally:
            proc.terminate()
            proc.wait(timeout=10)


@contextlib.asynccontextmanager
async def mcp_session(ws: Workspace, transport: str, log: Path, *extra: str):
    if transport == "stdio":
        params = StdioServerParameters(
            command=CTX_BIN, args=["-vvv", "mcp", "--tools", "all", *extra], cwd=ws.root, env=ws.env
        )
        with open(log, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    yield s
        return
    port = free_port()
    if transport == "mcp-http":
        args = ["-vvv", "mcp", "--tools", "all", "--http", f"127.0.0.1:{port}", *extra]
        url = f"http://127.0.0.1:{port}/mcp"
    else:
        args = ["-vvv", "serve", "--workspaces", str(ws.workspaces), "--addr", f"127.0.0.1:{port}", "--tools", "all"]
        url = f"http://127.0.0.1:{port}/mcp/billing"
    with process(ws, args, port, log):
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


def answer_text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content) + json.dumps(result.structured_content or {})


TOOL_CALLS = [
    ("ctx_select", {"query": "billing client configuration"}),
    ("ctx_search", {"pattern": "AWS", "context": 3}),
    ("ctx_search", {"pattern": "billing_client", "mode": "symbol", "context": 8}),
    ("ctx_search", {"pattern": "OUTSIDE"}),
    ("ctx_summarize", {"path": "src/config.py"}),
    ("ctx_summarize", {"path": "src/keys.rs"}),
    ("ctx_map", {}),
    ("ctx_packs_render", {"packs": ["docs"]}),
    ("ctx_packs_preview", {"packs": ["docs"], "show_payload": True}),
    (
        "fs_read",
        {
            "operations": [
                {"mode": "Line", "path": "src/config.py"},
                {"mode": "Directory", "path": ".", "depth": 3},
                {"mode": "Search", "path": ".", "pattern": "KEY", "context_lines": 3},
            ]
        },
    ),
]

REFUSED_CALLS = [
    ("fs_read", {"operations": [{"mode": "Search", "path": "long.txt", "pattern": BOMB, "regex": True}]}),
    ("ctx_search", {"pattern": BOMB, "mode": "regex"}),
    ("fs_read", {"operations": [{"mode": "Line", "path": "pw.md"}]}),
    ("fs_read", {"operations": [{"mode": "Line", "path": "hard.md"}]}),
    ("ctx_summarize", {"path": "hard.md"}),
    ("ctx_summarize", {"path": "pw.md"}),
]


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", ["stdio", "mcp-http", "serve-mcp"])
# Every tool that takes a path or returns content is called, so the servers offer all of them.
async def test_mcp_front_ends_refuse_and_redact(ws: Workspace, transport: str, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    async with mcp_session(ws, transport, log) as s:
        for tool, args in REFUSED_CALLS:
            result = await s.call_tool(tool, args)
            text = answer_text(result)
            assert_clean(text, f"{transport} {tool}")
            if tool == "fs_read":
                # A batch answers per operation; the one operation failed.
                assert result.is_error or '"ok": false' in text or '"ok":false' in text, text[:500]
            else:
                assert result.is_error, text[:500]
        for tool, args in TOOL_CALLS:
            result = await s.call_tool(tool, args)
            assert not result.is_error, (tool, answer_text(result)[:500])
            assert_clean(answer_text(result), f"{transport} {tool}")
        # The server is still there after the pattern bomb.
        result = await s.call_tool("ctx_search", {"pattern": "helper"})
        assert not result.is_error
    assert_clean(log.read_text(errors="replace"), f"{transport} -vvv log")


def test_serve_tool_endpoint_refuses_and_redacts(ws: Workspace, tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    args = ["-vvv", "serve", "--workspaces", str(ws.workspaces), "--addr", f"127.0.0.1:{port}"]
    with process(ws, args, port, log):
        base = f"http://127.0.0.1:{port}"

        def tool(operations: list[dict]) -> dict:
            body = {"workspace": "billing", "tool": "fs_read", "params": {"operations": operations}}
            answer = httpx.post(f"{base}/tool", json=body, timeout=30)
            assert answer.status_code in (200, 400), answer.text[:500]
            return answer.json()

        for pattern in BOMBS:
            bomb = json.dumps(tool([{"mode": "Search", "path": "long.txt", "pattern": pattern, "regex": True}]))
            assert any(r in bomb for r in REFUSAL), bomb[-500:]
        for path in ("pw.md", "hard.md", "docs/later.md"):
            assert_clean(json.dumps(tool([{"mode": "Line", "path": path}])), f"/tool {path}")
        read = tool(
            [
                {"mode": "Line", "path": "src/config.py"},
                {"mode": "Search", "path": ".", "pattern": "KEY", "context_lines": 3},
                {"mode": "Directory", "path": ".", "depth": 3},
            ]
        )
        assert "src/config.py" in json.dumps(read) or "billing" in json.dumps(read)
        assert_clean(json.dumps(read), "/tool fs_read")
        assert "hard.md" not in json.dumps(read), "hard links are not listed"
        assert httpx.get(f"{base}/health", timeout=10).status_code == 200
    assert_clean(log.read_text(errors="replace"), "serve -vvv log")


@pytest.mark.asyncio
async def test_recorded_runs_index_and_store_hold_no_secret(ws: Workspace, tmp_path: Path) -> None:
    log = tmp_path / "record.log"
    async with mcp_session(ws, "stdio", log, "--record", "egress") as s:
        for tool, args in TOOL_CALLS:
            result = await s.call_tool(tool, args)
            assert not result.is_error, (tool, answer_text(result)[:500])
    show = ws.ctx("run", "show", "egress", "--json")
    assert json.loads(show.stdout)["steps"], "the run was recorded"
    # Every file ctx keeps, byte for byte: state.db (what `strings` would show), its WAL,
    # the object store (recorded runs, snapshots) and the index documents.
    store = ws.root / ".ctx"
    checked = 0
    for path in sorted(store.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        checked += 1
        assert OUTSIDE.encode() not in data, path
        for secret in SECRETS:
            assert secret.encode() not in data, f"{path.relative_to(store)} holds {secret}"
    assert checked > 10
    assert list(store.glob("indexes/*/documents/*.json")), "the index was built and checked"
