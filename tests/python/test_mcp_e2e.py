"""End-to-end tests of `ctx mcp` with the official Python MCP client (mcp 2.x).

Every test runs the real binary (CTX_BIN) against a fixture git repository built in a temp
dir: over stdio (`stdio_client`) and over Streamable HTTP (`streamable_http_client`), in the
handshake era (`initialize`) and, over HTTP, the stateless era (`server/discover`).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fixture_repo import CTX_BIN, LIB_RS, clean_env, git
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.skipif(not CTX_BIN, reason="CTX_BIN is not set (scripts/test sets it)")

READ_TOOLS = {
    "ctx_packs_list",
    "ctx_packs_get",
    "ctx_packs_preview",
    "ctx_packs_render",
    "ctx_packs_snapshot",
    "ctx_status",
    "ctx_map",
    "ctx_summarize",
    "ctx_search",
    "ctx_related",
    "ctx_diff_context",
    "fs_read",
    "ctx_select",
    "ctx_index_inspect",
}


MAIN_RS = """use demo::helper;

fn main() {
    println!("{}", helper(41));
}
"""


class Repo:
    def __init__(self, root: Path, home: Path):
        self.root = root
        self.home = home
        self.env = clean_env(home)

    def ctx(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        run = subprocess.run([CTX_BIN, *args], cwd=self.root, env=self.env, capture_output=True)
        assert run.returncode == 0, run.stderr.decode()
        return run


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    base = tmp_path_factory.mktemp("mcp")
    root, home = base / "repo", base / "home"
    home.mkdir()
    files = {
        "Cargo.toml": '[package]\nname = "demo"\nversion = "0.1.0"\n',
        "README.md": "# Demo\n\nA demo project for the MCP end-to-end tests.\n",
        "docs/guide.md": "# Guide\n\nUse `helper` to add one.\n",
        "src/lib.rs": LIB_RS,
        "src/main.rs": MAIN_RS,
        "tools/script.py": 'def greet(name):\n    return f"hi {name}"\n',
        ".gitignore": "/.ctx\n",
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    for i in range(30):
        (root / f"src/gen_{i:02}.rs").write_text(
            f"/// Generated {i}.\npub fn generated_{i}(a: u32) -> u32 {{\n    a * {i}\n}}\n"
        )
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "First commit")
    (root / "src/lib.rs").write_text(LIB_RS.replace("x + 1", "x + 2"))
    r = Repo(root, home)
    r.ctx("init")
    r.ctx("pack", "create", "docs", "--budget", "4000")
    r.ctx("pack", "add", "docs", "file:README.md")
    r.ctx("pack", "add", "docs", "md_dir:docs")
    r.ctx("pack", "create", "code")
    r.ctx("pack", "add", "code", "glob:src/**/*.rs")
    r.ctx("pack", "snapshot", "docs", "--name", "v1")
    return r


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def http_server(repo: Repo, *extra: str):
    port = free_port()
    proc = subprocess.Popen(
        [CTX_BIN, "mcp", "--http", f"127.0.0.1:{port}", *extra],
        cwd=repo.root,
        env=repo.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the HTTP server did not start"
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        assert proc.stdout is not None
        assert proc.stdout.read() == b"", "nothing but protocol on stdout (none over HTTP)"


@contextlib.asynccontextmanager
async def session(repo: Repo, transport: str, *extra: str, logging_callback=None):
    """An initialized (or discovered) ClientSession over the named transport, offering every
    tool unless `extra` names a tool set."""
    if "--tools" not in extra:
        extra = ("--tools", "all", *extra)
    if transport == "stdio":
        params = StdioServerParameters(command=CTX_BIN, args=["mcp", *extra], cwd=repo.root, env=repo.env)
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, logging_callback=logging_callback) as s:
                    await s.initialize()
                    yield s
    else:
        with http_server(repo, *extra) as url:
            async with streamable_http_client(url) as (read, write):
                async with ClientSession(read, write, logging_callback=logging_callback) as s:
                    if transport == "http-discover":
                        await s.discover()
                    else:
                        await s.initialize()
                    yield s


TRANSPORTS = ["stdio", "http", "http-discover"]


def structured(result) -> dict:
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    text = result.content[0].text
    assert text, "a text content for the model"
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)  # the compact human form, not the JSON again
    return data


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_initialize_and_list_tools(repo: Repo, transport: str) -> None:
    async with session(repo, transport) as s:
        assert s.server_info is not None
        assert s.server_info.name == "ctx"
        assert s.server_info.version
        expected = "2026-07-28" if transport == "http-discover" else "2025-11-25"
        assert s.protocol_version == expected
        assert "next_cursor" in (s.instructions or "")
        tools = await s.list_tools()
        names = {t.name for t in tools.tools}
        assert READ_TOOLS <= names, READ_TOOLS - names
        # The run-record tools are exercised by test_mcp_record.py.
        assert all(n in READ_TOOLS or n.startswith("ctx_runs_") for n in names), names
        for tool in tools.tools:
            assert tool.output_schema is not None
            assert tool.annotations is not None and tool.annotations.read_only_hint is not None
            for name, prop in tool.input_schema["properties"].items():
                assert prop.get("description"), f"{tool.name}.{name} has no description"


CORE_TOOLS = ["ctx_packs_render", "ctx_map", "ctx_summarize", "ctx_search", "fs_read", "ctx_select"]


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_tool_sets_and_lean_text(repo: Repo, transport: str) -> None:
    # The default set is the core one; --tools names others.
    async with session(repo, transport, "--tools", "core") as s:
        tools = await s.list_tools()
        assert [t.name for t in tools.tools] == CORE_TOOLS
        for tool in tools.tools:
            schema = json.dumps(tool.input_schema) + json.dumps(tool.output_schema)
            assert '"null"' not in schema and "uint64" not in schema, tool.name
        found = await s.call_tool("ctx_search", {"pattern": "helper", "path": "src"})
        assert not found.is_error, found.content
        # `path:line: text` lines under their file, and the typed JSON beside them.
        lines = found.content[0].text.splitlines()
        assert lines[0].endswith("for `helper` (literal)"), lines
        assert "src/main.rs" in lines and "1: use demo::helper;" in lines, lines
        assert found.structured_content["results"][0]["path"].startswith("src/")
        with pytest.raises(MCPError, match="not in this server's tool set"):
            await s.call_tool("ctx_status", {})
    async with session(repo, transport, "--tools", "ctx_search,fs_read") as s:
        tools = await s.list_tools()
        assert [t.name for t in tools.tools] == ["ctx_search", "fs_read"]


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", ["stdio", "http"])
# Logging is deprecated by the 2026-07-28 era (SEP-2577) but part of 2025-11-25, spoken here.
@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
async def test_progress_and_log_notifications_of_long_work(repo: Repo, transport: str) -> None:
    logs: list = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_log(params) -> None:
        logs.append(params)

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    # A new file makes the next selection update the index: long work to report.
    extra = repo.root / "notes" / f"progress-{transport}.md"
    extra.parent.mkdir(exist_ok=True)
    extra.write_text("# Progress\n\nA note that changes the index.\n")
    try:
        async with session(repo, transport, logging_callback=on_log) as s:
            await s.set_logging_level("info")
            result = await s.call_tool(
                "ctx_select", {"query": "parser helper"}, progress_callback=on_progress
            )
            assert not result.is_error, result.content
    finally:
        extra.unlink()
    assert progress, "progress notifications for the call's progress token"
    values = [value for value, _, _ in progress]
    assert values == sorted(values), values
    assert logs and all(log.level == "info" and log.logger == "ctx" for log in logs), logs


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_every_read_only_tool(repo: Repo, transport: str) -> None:
    calls = {
        "ctx_packs_list": {},
        "ctx_packs_get": {"pack": "docs"},
        "ctx_packs_preview": {"packs": ["docs"], "show_payload": True},
        "ctx_packs_render": {"packs": ["docs"]},
        "ctx_packs_snapshot": {"packs": ["code"], "label": f"e2e-{transport}"},
        "ctx_status": {},
        "ctx_map": {"depth": 2},
        "ctx_summarize": {"path": "src/lib.rs", "skeleton": True},
        "ctx_search": {"pattern": "helper"},
        "ctx_related": {"file": "src/main.rs"},
        "ctx_diff_context": {},
        "fs_read": {"operations": [{"mode": "Line", "path": "src/lib.rs"}, {"mode": "Directory", "path": "docs"}]},
        # ctx_select builds the workspace index on demand; ctx_index_inspect then describes it.
        "ctx_select": {"query": "where is the Parser struct in lib.rs", "budget": 2000},
        "ctx_index_inspect": {},
    }
    assert set(calls) == READ_TOOLS
    async with session(repo, transport) as s:
        await s.list_tools()
        answers = {}
        texts = {}
        for name, args in calls.items():
            # call_tool validates structuredContent against the tool's outputSchema.
            result = await s.call_tool(name, args)
            answers[name] = structured(result)
            texts[name] = "".join(getattr(c, "text", "") for c in result.content)
        assert [p["name"] for p in answers["ctx_packs_list"]["packs"]] == ["code", "docs"]
        assert answers["ctx_packs_get"]["artifacts"][0]["uri"] == "file:README.md"
        # A payload is the answer's text, not repeated in structuredContent.
        assert "# Demo" in texts["ctx_packs_preview"] and "payload" not in answers["ctx_packs_preview"]
        assert answers["ctx_packs_render"]["snapshot_id"].startswith("sha256:")
        assert answers["ctx_status"]["branch"] == "main"
        assert any(e["path"] == "src/lib.rs" for e in answers["ctx_map"]["entries"])
        assert answers["ctx_summarize"]["files"][0]["language"] == "rust"
        assert answers["ctx_search"]["total"] >= 2
        assert answers["ctx_related"]["imports"][0]["path"] == "src/lib.rs"
        assert answers["ctx_diff_context"]["files"][0]["path"] == "src/lib.rs"
        assert "//! The library." in texts["fs_read"]
        assert "content" not in answers["fs_read"]["results"][0]["result"]
        selected = answers["ctx_select"]
        assert selected["documents"][0]["id"] == "src/lib.rs"
        assert {sig["name"] for sig in selected["documents"][0]["why"]["signals"]} >= {"filename_mentioned"}
        assert texts["ctx_select"].startswith("## src/lib.rs\n") and "payload" not in selected
        assert selected["selection"]["tokens_used"] <= 2000
        inspected = answers["ctx_index_inspect"]
        assert inspected["valid"] is True and inspected.get("fix") is None  # absent, not null
        assert inspected["documents"] == selected["index"]["documents"] >= 36
        assert inspected["cache_version"] == selected["index"]["cache_version"]

        failed = await s.call_tool("ctx_search", {"pattern": "x", "path": "../.."})
        assert failed.is_error
        assert "outside the workspace" in failed.content[0].text
        bad = await s.call_tool("ctx_map", {"depth": "deep"})
        assert bad.is_error and "invalid arguments" in bad.content[0].text
        empty = await s.call_tool("ctx_select", {"query": " "})
        assert empty.is_error and "query is empty" in empty.content[0].text
        unknown = await s.call_tool("ctx_select", {"query": "parser", "index": "nope"})
        assert unknown.is_error and "no index `nope`" in unknown.content[0].text


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_resources(repo: Repo, transport: str) -> None:
    async with session(repo, transport) as s:
        listed = await s.list_resources()
        uris = [str(r.uri) for r in listed.resources]
        assert "ctx://pack/docs" in uris
        snapshots = [u for u in uris if u.startswith("ctx://snapshot/")]
        assert snapshots
        pack = await s.read_resource("ctx://pack/docs")
        assert json.loads(pack.contents[0].text)["name"] == "docs"
        expected = repo.ctx("pack", "render", "--snapshot", "v1").stdout.decode()
        v1 = await s.read_resource("ctx://snapshot/v1")
        assert v1.contents[0].text == expected
        templates = await s.list_resource_templates()
        assert len(templates.resource_templates) == 2


async def page_through(s: ClientSession, tool: str, args: dict) -> tuple[str, list[dict]]:
    """The payload of a paged answer: each page's first text block, when the page says it carries
    part of the payload (page.text_bytes), checked against that length."""
    text, pages, cursor = "", [], None
    while True:
        call = dict(args)
        if cursor:
            call["cursor"] = cursor
        result = await s.call_tool(tool, call)
        page = structured(result)
        pages.append(page)
        carried = page["page"].get("text_bytes", 0)
        if carried:
            part = result.content[0].text
            assert len(part.encode()) == carried, (len(part.encode()), carried)
            text += part
        cursor = page.get("next_cursor")  # absent on the last page
        if cursor is None:
            return text, pages


@pytest.mark.asyncio
async def test_preview_payload_is_the_cli_payload_byte_for_byte(repo: Repo) -> None:
    cli = repo.ctx("pack", "preview", "code", "--with-pack", "docs", "--show-payload").stdout
    async with session(repo, "stdio") as s:
        whole = await s.call_tool(
            "ctx_packs_preview",
            {"packs": ["code", "docs"], "show_payload": True, "max_tokens": 1_000_000},
        )
        assert "payload" not in structured(whole), "the payload is the text only"
        assert whole.content[0].text.encode() == cli
        paged, pages = await page_through(
            s,
            "ctx_packs_preview",
            {"packs": ["code", "docs"], "show_payload": True, "max_tokens": 600},
        )
        assert len(pages) > 2, "a small max_tokens pages the answer"
        assert paged.encode() == cli, "the pages concatenate to the CLI's bytes"


@pytest.mark.asyncio
async def test_render_with_a_snapshot_id_returns_the_snapshot_bytes(repo: Repo) -> None:
    expected = repo.ctx("pack", "render", "--snapshot", "v1").stdout
    async with session(repo, "http") as s:
        listed = structured(await s.call_tool("ctx_packs_get", {"pack": "docs"}))
        v1 = next(x for x in listed["snapshots"] if x["label"] == "v1")
        by_id = await s.call_tool("ctx_packs_render", {"snapshot_id": v1["snapshot_id"]})
        assert "payload" not in structured(by_id), "the payload is the text only"
        assert by_id.content[0].text.encode() == expected
        rendered, pages = await page_through(s, "ctx_packs_render", {"packs": ["code"], "max_tokens": 700})
        assert len(pages) > 2
        snapshot_id = pages[0]["snapshot_id"]
        cli = repo.ctx("pack", "render", "--snapshot", snapshot_id).stdout
        assert rendered.encode() == cli


def test_http_refuses_foreign_origins_and_hosts(repo: Repo) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "e2e", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with http_server(repo) as url:
        port = url.split(":")[2].split("/")[0]
        evil = httpx.post(url, json=init, headers={**headers, "Origin": "http://evil.example"})
        assert evil.status_code == 403
        rebinding = httpx.post(url, json=init, headers={**headers, "Host": f"evil.example:{port}"})
        assert rebinding.status_code == 403
        local = httpx.post(url, json=init, headers={**headers, "Origin": f"http://localhost:{port}"})
        assert local.status_code == 200
        plain = httpx.post(url, json=init, headers=headers)
        assert plain.status_code == 200
        garbage = httpx.post(url, content=b"{not json", headers=headers)
        assert garbage.status_code in (400, 415, 422)


def test_stdio_exits_promptly_with_zero_when_stdin_closes(repo: Repo) -> None:
    proc = subprocess.Popen(
        [CTX_BIN, "mcp"],
        cwd=repo.root,
        env=repo.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}},
    }
    proc.stdin.write(b"not json at all\n" + json.dumps(request).encode() + b"\n")
    proc.stdin.flush()
    assert proc.stdout is not None
    # A line that is not JSON is answered with a parse error (no id: none can be read) ...
    parse_error = json.loads(proc.stdout.readline())
    assert parse_error["error"]["code"] == -32700 and "id" not in parse_error
    # ... and the session goes on.
    line = proc.stdout.readline()
    assert json.loads(line)["result"]["serverInfo"]["name"] == "ctx"
    started = time.monotonic()
    proc.stdin.close()
    assert proc.wait(timeout=5) == 0
    assert time.monotonic() - started < 3, "exits promptly"
    rest = proc.stdout.read()
    for extra in rest.splitlines():
        json.loads(extra)  # only protocol messages on stdout


def test_stdio_with_nothing_sent_exits_zero(repo: Repo) -> None:
    run = subprocess.run([CTX_BIN, "-v", "mcp"], cwd=repo.root, env=repo.env, input=b"", capture_output=True, timeout=10)
    assert run.returncode == 0, run.stderr.decode()
    assert run.stdout == b""


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
