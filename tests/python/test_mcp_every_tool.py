"""Every tool of `ctx mcp`, through the official Python MCP client, succeeding and failing.

The same checks as tests/mcp-clients/ts-client.mjs (scripts/mcp-clients), which drives the
TypeScript SDK: each tool is called once with arguments that succeed and with each of its
failing arguments (a missing path, a path outside the workspace, a bad enum value, a missing
required argument, …). A success has structuredContent that validates against the tool's
outputSchema (the client checks it; so does this test, with jsonschema). A failure is an
`isError` result whose text is ctx's own message, naming the bad value or argument; if it
carries structuredContent, that must validate against the outputSchema too, because clients
that check failed results (the TypeScript SDK does) otherwise replace ctx's message with their
complaint about the shape.

CASES holds the arguments per tool, read from each tool's inputSchema and its implementation
in crates/ctx-mcp/src/tools; a tool that tools/list shows and CASES lacks is a failure, so a
new tool must be added here.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fixture_repo import CTX_BIN, LIB_RS, clean_env, git
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

try:
    from jsonschema.validators import validator_for
except ImportError:  # pragma: no cover - the mcp client depends on it
    validator_for = None

pytestmark = pytest.mark.skipif(not CTX_BIN, reason="CTX_BIN is not set (scripts/test sets it)")

APP_PY = '''"""The fixture application: greets people by name."""

import sys


class Greeter:
    """Greets people, politely or not."""

    def __init__(self, greeting="Hello"):
        self.greeting = greeting

    def greet(self, name):
        """Returns the greeting for `name`."""
        return f"{self.greeting}, {name}!"


def main(argv):
    """Greets each name on the command line."""
    greeter = Greeter()
    for name in argv[1:]:
        print(greeter.greet(name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
'''

FILES = {
    ".gitignore": "/.ctx\n",
    "README.md": "# Demo\n\nA Rust library (src/lib.rs), a Python app (src/app.py) and a guide.\n",
    "src/lib.rs": LIB_RS,
    "src/app.py": APP_PY,
    "docs/guide.md": "# Guide\n\nCall `helper` to add one; `Greeter` greets people by name.\n",
}


class Repo:
    def __init__(self, root: Path, home: Path, ctx_home: Path):
        self.root = root
        self.env = clean_env(home)
        self.env["CTX_HOME"] = str(ctx_home)

    def ctx(self, *args: str) -> subprocess.CompletedProcess[str]:
        run = subprocess.run(
            [CTX_BIN, "-q", "-C", str(self.root), *args], env=self.env, capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, (args, run.stderr)
        return run


def record_run(repo: Repo, name: str, calls: list[tuple[str, dict]]) -> None:
    """Records a run NAME of `calls` with `ctx mcp --record NAME`, speaking JSON-RPC over stdio."""
    proc = subprocess.Popen(
        [CTX_BIN, "-C", str(repo.root), "mcp", "--record", name],
        env=repo.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict) -> None:
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    def answer(request_id: int) -> dict:
        while True:
            line = proc.stdout.readline()
            assert line, f"ctx mcp --record {name} stopped answering"
            message = json.loads(line)
            if message.get("id") == request_id:
                assert "result" in message, message
                return message["result"]

    client = {"name": "every-tool", "version": "1"}
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client}})
    answer(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for i, (tool, arguments) in enumerate(calls, start=2):
        send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
        assert not answer(i).get("isError"), (name, tool)
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    base = tmp_path_factory.mktemp("every-tool")
    root, home = base / "workspace", base / "home"
    home.mkdir()
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "First commit")
    (root / "src/lib.rs").write_text(LIB_RS.replace("x + 1", "x + 2"))  # a change to diff
    r = Repo(root, home, base / "ctx-home")
    r.ctx("init")
    r.ctx("pack", "create", "docs")
    r.ctx("pack", "add", "docs", "file:README.md")
    r.ctx("pack", "add", "docs", "md_dir:docs")
    r.ctx("pack", "create", "notes")
    r.ctx("index", "build")
    record_run(r, "first", [("fs_read", {"operations": [{"mode": "Line", "path": "src/lib.rs"}]}),
                            ("ctx_search", {"pattern": "helper"})])
    record_run(r, "second", [("fs_read", {"operations": [{"mode": "Line", "path": "src/app.py"}]})])
    return r


@contextlib.asynccontextmanager
async def session(repo: Repo):
    params = StdioServerParameters(
        command=CTX_BIN, args=["-C", str(repo.root), "mcp", "--tools", "all", "--allow-write"],
        cwd=repo.root, env=repo.env,
    )
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


# ------------------------------------------------------------------------------------ the cases


@dataclass
class Fail:
    args: dict
    names: str | tuple[str, ...]  # what the message must contain (of a tuple, any one)
    why: str


async def _added_artifact(s: ClientSession) -> dict:
    """Arguments of ctx_packs_remove: an artifact this session adds to `notes` first."""
    added = await s.call_tool("ctx_packs_add", {"pack": "notes", "source": "file:README.md"})
    assert not added.is_error, added.content
    return {"pack": "notes", "artifact_id": added.structured_content["artifact"]["artifact_id"]}


@dataclass
class Case:
    ok: dict | Callable[[ClientSession], Awaitable[dict]]
    fail: list[Fail] = field(default_factory=list)


MISSING = "missing required argument"
OUTSIDE = "a path outside the workspace"

CASES: dict[str, Case] = {
    "ctx_packs_list": Case({}, [Fail({"max_tokens": 1}, "max_tokens", "max_tokens below the minimum"),
                                Fail({"bogus": True}, "bogus", "an unknown argument")]),
    "ctx_packs_create": Case({"name": "created", "budget": 4000}, [
        Fail({"name": "docs"}, "docs", "a pack that exists"),
        Fail({}, "name", MISSING),
        Fail({"name": "spare", "tokenizer": "nosuch_tokenizer"}, "nosuch_tokenizer", "an unknown tokenizer"),
    ]),
    "ctx_packs_add": Case({"pack": "notes", "source": "file:src/app.py"}, [
        Fail({"pack": "notes", "source": "file:../x"}, "../x", OUTSIDE),
        Fail({"pack": "nope", "source": "file:README.md"}, "nope", "an unknown pack"),
        Fail({"pack": "notes", "source": "cmd:ls"}, "cmd", "a cmd: source"),
        Fail({"pack": "notes"}, "source", MISSING),
    ]),
    "ctx_packs_get": Case({"pack": "docs"}, [Fail({"pack": "nope"}, "nope", "an unknown pack"),
                                             Fail({}, "pack", MISSING)]),
    "ctx_packs_preview": Case({"packs": ["docs"], "show_payload": True}, [
        Fail({"packs": ["nope"]}, "nope", "an unknown pack"),
        Fail({"packs": ["docs"], "style": "fancy"}, "fancy", "an unknown style"),
        Fail({"packs": []}, "packs", "no packs"),
    ]),
    "ctx_packs_render": Case({"packs": ["docs"]}, [
        Fail({"snapshot_id": "nope"}, "nope", "an unknown snapshot"),
        Fail({}, "packs", "neither packs nor snapshot_id"),
        Fail({"packs": ["docs"], "cursor": "nope"}, "nope", "a cursor never handed out"),
    ]),
    "ctx_packs_snapshot": Case({"packs": ["docs"]}, [Fail({"packs": ["nope"]}, "nope", "an unknown pack"),
                                                     Fail({}, "packs", MISSING)]),
    "ctx_packs_remove": Case(_added_artifact, [
        Fail({"pack": "notes", "artifact_id": "ffffffffffff"}, "ffffffffffff", "an unknown artifact"),
        Fail({"pack": "notes"}, "artifact_id", MISSING),
    ]),
    "ctx_status": Case({}, [Fail({"max_tokens": 1}, "max_tokens", "max_tokens below the minimum"),
                            Fail({"cursor": "nope"}, "nope", "a cursor never handed out")]),
    "ctx_map": Case({"depth": 2}, [
        Fail({"path": "../x"}, "../x", OUTSIDE),
        Fail({"path": "nope.py"}, "nope.py", "a missing path"),
        Fail({"depth": "deep"}, ("depth", "deep"), "a string for a number"),
    ]),
    "ctx_summarize": Case({"path": "src/app.py"}, [
        Fail({"path": "nope.py"}, "nope.py", "a missing path"),
        Fail({"path": "../x"}, "../x", OUTSIDE),
        Fail({}, "path", MISSING),
    ]),
    "ctx_search": Case({"pattern": "helper"}, [
        Fail({"pattern": "helper", "mode": "fuzzy"}, "fuzzy", "a bad mode"),
        Fail({"pattern": "helper", "path": "../x"}, "../x", OUTSIDE),
        Fail({"pattern": "helper", "path": "nope.py"}, "nope.py", "a missing path"),
        Fail({"pattern": "(unclosed", "mode": "regex"}, "(unclosed", "a bad regex"),
        Fail({}, "pattern", MISSING),
    ]),
    "ctx_related": Case({"file": "src/lib.rs"}, [
        Fail({"file": "nope.py"}, "nope.py", "a missing path"),
        Fail({"file": "../x"}, "../x", OUTSIDE),
        Fail({}, "file", MISSING),
    ]),
    "ctx_diff_context": Case({}, [Fail({"base": "nope"}, "nope", "an unknown revision"),
                                  Fail({"path": "../x"}, "../x", OUTSIDE)]),
    "fs_read": Case({"operations": [{"mode": "Line", "path": "src/lib.rs"}, {"mode": "Directory", "path": "docs"}]}, [
        Fail({"operations": [{"mode": "Line", "path": "nope.py"}]}, "nope.py", "a missing path"),
        Fail({"operations": [{"mode": "Line", "path": "../x"}]}, "../x", OUTSIDE),
        Fail({"operations": [{"mode": "Sideways", "path": "README.md"}]}, "Sideways", "a bad mode"),
        Fail({}, "operations", MISSING),
    ]),
    "ctx_select": Case({"query": "where does the Greeter class greet people"}, [
        Fail({"query": " "}, "query", "an empty query"),
        Fail({"query": "greeter", "index": "nope"}, "nope", "an unknown index"),
        Fail({"query": "greeter", "budget": -1}, "budget", "a negative budget"),
        Fail({}, "query", MISSING),
    ]),
    "ctx_index_inspect": Case({}, [Fail({"index": "nope"}, "nope", "an unknown index")]),
    "ctx_runs_list": Case({}, [Fail({"max_tokens": 1}, "max_tokens", "max_tokens below the minimum")]),
    "ctx_runs_show": Case({"run": "first", "include_content": True}, [
        Fail({"run": "nope"}, "nope", "an unknown run"),
        Fail({"run": "first", "max_output_bytes": 0}, "max_output_bytes", "max_output_bytes 0"),
        Fail({}, "run", MISSING),
    ]),
    "ctx_runs_diff": Case({"a": "first", "b": "second"}, [
        Fail({"a": "first", "b": "nope"}, "nope", "an unknown run"),
        Fail({"a": "first"}, "`b`", MISSING),
    ]),
}


# ----------------------------------------------------------------------------------- the checks


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


def schema_errors(schema: dict, value: Any) -> list[str]:
    """Why `value` does not validate against `schema` (empty when it does)."""
    validator = validator_for(schema)(schema)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in validator.iter_errors(value)][:5]


@pytest.mark.asyncio
async def test_every_listed_tool_has_cases(repo: Repo) -> None:
    async with session(repo) as s:
        listed = [t.name for t in (await s.list_tools()).tools]
    assert not set(listed) - set(CASES), f"add arguments for these tools to CASES: {sorted(set(listed) - set(CASES))}"
    assert not set(CASES) - set(listed), f"in CASES but not in tools/list: {sorted(set(CASES) - set(listed))}"


@pytest.mark.asyncio
@pytest.mark.parametrize("tool", list(CASES))
async def test_tool_succeeds_and_fails_with_its_own_message(repo: Repo, tool: str) -> None:
    case = CASES[tool]
    problems: list[str] = []
    async with session(repo) as s:
        listed = {t.name: t for t in (await s.list_tools()).tools}
        assert tool in listed, f"{tool} is not in tools/list"
        schema = listed[tool].output_schema
        assert schema is not None, f"{tool} declares no outputSchema"

        args = case.ok if isinstance(case.ok, dict) else await case.ok(s)
        where = f"{tool} {json.dumps(args)}"
        try:
            # call_tool validates a successful result's structuredContent against outputSchema.
            result = await s.call_tool(tool, args)
        except Exception as err:  # noqa: BLE001 - every failure is reported
            problems.append(f"{where}: success call raised {type(err).__name__}: {err}")
        else:
            text = text_of(result)
            if result.is_error:
                problems.append(f"{where}: success call: isError: {text[:300]}")
            elif result.structured_content is None:
                problems.append(f"{where}: success call: no structuredContent though the tool declares an outputSchema")
            elif validator_for is not None:
                errors = schema_errors(schema, result.structured_content)
                problems += [f"{where}: success structuredContent: {e}" for e in errors]
            if not text:
                problems.append(f"{where}: success call: no text content")

        for bad in case.fail:
            where = f"{tool} {json.dumps(bad.args)} ({bad.why})"
            try:
                failed = await s.call_tool(tool, bad.args)
            except Exception as err:  # noqa: BLE001
                problems.append(f"{where}: raised {type(err).__name__} instead of an isError result: {err}")
                continue
            text = text_of(failed)
            if failed.is_error is not True:
                problems.append(f"{where}: no isError (it succeeded): {text[:300]}")
            if not text or "-32602" in text or "Structured content does not match" in text:
                problems.append(f"{where}: the text is not ctx's message: {text[:300]!r}")
            names = bad.names if isinstance(bad.names, tuple) else (bad.names,)
            if not any(n in text for n in names):
                wanted = " or ".join(f"`{n}`" for n in names)
                problems.append(f"{where}: the message does not name {wanted}: {text[:300]!r}")
            if failed.structured_content is not None and validator_for is not None:
                errors = schema_errors(schema, failed.structured_content)
                if errors:
                    problems.append(
                        f"{where}: the failed result's structuredContent does not match the outputSchema "
                        f"(the TypeScript SDK replaces ctx's message with -32602 for it): {'; '.join(errors)}"
                    )
    assert not problems, "\n".join(problems)
    if validator_for is None:
        pytest.skip("jsonschema is not installed (scripts/python-env installs it): structuredContent was not validated")
