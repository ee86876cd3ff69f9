"""The `ctxlayer.Workspace` API beyond fs_read: packs, tokens, selection, code intelligence and runs,
each method through the facade the CLI uses, with exceptions per error kind, pathlib.Path
accepted everywhere, and the GIL released while it works."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest

import ctxlayer
from fixture_repo import CTX_BIN, clean_env, git

FILES = {
    "src/tokens.py": '"""Token counting with a cache."""\n\n\ndef count_tokens(text):\n    """Counts tokens."""\n    return len(text.split())\n',
    "src/cache.py": "from tokens import count_tokens\n\n\nclass Cache:\n    def get(self, text):\n        return count_tokens(text)\n",
    "tests/test_tokens.py": "from tokens import count_tokens\n\n\ndef test_count():\n    assert count_tokens('a b') == 2\n",
    "docs/guide.md": "# Guide\n\nTokens are counted in `src/tokens.py`.\n",
    "docs/secrets.md": "# Keys\n\nGITHUB_TOKEN = ghp_R7sZ0vK3mQ9xW2yT5uB8nL4cE6fH1jA0pD3g\n",
}

SESSION = [
    {"type": "user", "message": {"role": "user", "content": "count the tokens"}, "timestamp": "2026-01-01T00:00:00Z", "sessionId": "s"},
    {
        "type": "assistant",
        "message": {"role": "assistant", "model": "m", "content": [{"type": "text", "text": "done"}]},
        "timestamp": "2026-01-01T00:00:01Z",
        "sessionId": "s",
    },
]


def test_the_distribution_and_the_module_are_both_named_ctxlayer() -> None:
    # PyPI's `ctx` was a hijacked package, removed in 2022: never install or import as `ctx`.
    import importlib.metadata
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[2] / "crates/ctx-py/pyproject.toml").read_text())
    assert pyproject["project"]["name"] == "ctxlayer"
    assert pyproject["tool"]["maturin"]["module-name"] == "ctxlayer"
    assert importlib.metadata.version("ctxlayer") == ctxlayer.__version__
    assert ctxlayer.__name__ == "ctxlayer"
    assert ctxlayer.Workspace.__module__ == "ctxlayer"
    assert ctxlayer.NotFoundError.__module__ == "ctxlayer"
    assert (Path(__file__).parents[2] / "crates/ctx-py/ctxlayer.pyi").is_file()


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "First")
    # No developer settings leak in: a fresh HOME, no CTX_* variables.
    home = tmp_path / "home"
    home.mkdir()
    for key, value in clean_env(home).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("CTX_HOME", raising=False)
    return root


def test_packs_round_trip_with_paths_as_pathlib(project: Path) -> None:
    ws = ctxlayer.Workspace(project, init=True)
    assert not (project / ".ctx").exists(), "the store is opened on first use"
    made = ws.pack_create("docs", budget=4000)
    assert (project / ".ctx" / "state.db").is_file(), "init=True made the project store"
    assert made["name"] == "docs" and made["budget_tokens"] == 4000
    added = ws.pack_add("docs", "glob:docs/**/*.md")
    assert added["artifact"]["uri"].startswith("glob:")
    ws.pack_add("docs", "text:Read the guide first.", priority=5)
    assert [p["name"] for p in ws.pack_list()] == ["docs"]
    shown = ws.pack_show("docs")
    assert len(shown["artifacts"]) == 2
    payload = ws.pack_render("docs")
    assert "Tokens are counted" in payload
    assert "ghp_R7sZ0vK3mQ9xW2yT5uB8nL4cE6fH1jA0pD3g" not in payload, "redacted"
    assert payload == ws.pack_render(["docs"]), "deterministic"
    cli = subprocess.run([CTX_BIN, "pack", "render", "docs"], cwd=project, capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout == payload, "the same bytes as the CLI"
    preview = ws.pack_preview("docs", style="xml")
    assert preview["tokens_used"] > 0 and preview["payload"].lstrip().startswith("<")
    snap = ws.pack_snapshot("docs", label="v1")
    assert snap["snapshot"]["label"] == "v1"
    assert ws.pack_snapshot_payload("v1") == payload
    assert ws.pack_verify("v1")["identical"] is True
    (project / "docs" / "guide.md").write_text("# Guide\n\nChanged.\n")
    assert ws.pack_verify("v1")["identical"] is False
    removed = ws.pack_remove("docs", added["artifact"]["artifact_id"][:8])
    assert removed["uri"].startswith("glob:")
    ws.pack_delete("docs")
    assert ws.pack_list() == []


def test_each_error_kind_has_its_exception_class(project: Path, tmp_path: Path) -> None:
    ws = ctxlayer.Workspace(project, init=True)
    with pytest.raises(ctxlayer.NotFoundError, match="no pack named `nope`"):
        ws.pack_show("nope")
    ws.pack_create("docs")
    with pytest.raises(ctxlayer.ConflictError, match="already exists"):
        ws.pack_create("docs")
    with pytest.raises(ctxlayer.InvalidInputError, match="style"):
        ws.pack_render("docs", style="yaml")
    with pytest.raises(ctxlayer.InvalidInputError):
        ws.pack_create("../escape")
    with pytest.raises(ctxlayer.NotFoundError):
        ws.run_show("no-such-run")
    assert issubclass(ctxlayer.DamagedError, ctxlayer.CtxError) and issubclass(ctxlayer.StoreIOError, ctxlayer.CtxError)
    # A damaged store: state.db emptied.
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".ctx").mkdir()
    (broken / ".ctx" / "state.db").write_bytes(b"")
    with pytest.raises(ctxlayer.DamagedError, match="ctx init"):
        ctxlayer.Workspace(broken).pack_list()
    with pytest.raises(ctxlayer.CtxError):
        ctxlayer.Workspace(broken).pack_list()


def test_tokens_select_and_code_intelligence(project: Path) -> None:
    ws = ctxlayer.Workspace(project, init=True)
    assert ws.tokens("hello world") == 2
    assert ws.tokens(["hello world", "a b c"], tokenizer="cl100k_base") == [2, 3]
    picked = ws.select("where are tokens counted", budget=2000)
    ids = [d["id"] for d in picked["documents"]]
    assert "src/tokens.py" in ids[:2], ids
    assert picked["index"]["documents"] >= 4
    assert "def count_tokens" in picked["documents"][ids.index("src/tokens.py")]["content"]
    cli = subprocess.run(
        [CTX_BIN, "--json", "select", "where are tokens counted", "--budget", "2000"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0, cli.stderr
    assert [d["id"] for d in json.loads(cli.stdout)["documents"]] == ids, "same ranking as the CLI"
    with pytest.raises(ctxlayer.NotFoundError, match="no index `nosuch`"):
        ws.select("tokens", index="nosuch")
    summary = ws.summarize(Path("src"))
    assert "count_tokens" in json.dumps(summary)
    one = ws.summarize("src/tokens.py", skeleton=True)
    assert "count_tokens" in json.dumps(one)
    hits = ws.search("count_tokens", "src")
    assert {h["path"] for h in hits} >= {"src/tokens.py", "src/cache.py"}, hits
    assert ws.search("count_tok.*s", Path("."), regex=True)
    symbols = ws.search("count_tokens", mode="symbol")
    assert symbols and symbols[0]["path"] == "src/tokens.py", symbols
    callers = ws.search("count_tokens", mode="caller")
    assert any(c["path"] == "src/cache.py" for c in callers), callers
    related = ws.related(Path("src/tokens.py"))
    assert "tests/test_tokens.py" in json.dumps(related) or "src/cache.py" in json.dumps(related), related
    with pytest.raises(ctxlayer.InvalidInputError, match="mode"):
        ws.search("x", mode="fuzzy")
    with pytest.raises(ctxlayer.NotFoundError):
        ws.summarize("no/such/dir")


def test_runs_import_list_show_and_diff(project: Path, tmp_path: Path) -> None:
    ws = ctxlayer.Workspace(project, init=True)
    session = tmp_path / "session.jsonl"
    session.write_text("\n".join(json.dumps(r) for r in SESSION) + "\n")
    first = ws.run_import(session)
    assert first["run"].startswith("sha256:")
    other = tmp_path / "other.jsonl"
    changed = [dict(SESSION[0]), SESSION[1]]
    changed[0] = {**SESSION[0], "message": {"role": "user", "content": "count them twice"}}
    other.write_text("\n".join(json.dumps(r) for r in changed) + "\n")
    second = ws.run_import(other, format="claude-code")
    listed = ws.run_list()
    assert [r["id"] for r in listed][:2] == [second["run"], first["run"]]
    shown = ws.run_show(first["run"][:15])
    assert shown["run"]["id"] == first["run"] and shown["steps"], shown
    diff = ws.run_diff(first["run"], "latest")
    assert diff["a"] == first["run"] and diff["b"] == second["run"], diff
    assert diff["drift"], "the changed prompt is a drift"
    assert "count them twice" in json.dumps(diff["drift"]) or sum(diff["counts"].values()) > 0, diff
    same = ws.run_diff(first["run"], first["run"])
    assert same["drift"] == [], same
    with pytest.raises(ctxlayer.InvalidInputError, match="format"):
        ws.run_import(session, format="nonsense")


def test_long_calls_release_the_gil(project: Path) -> None:
    # A tree big enough that a cold summarize takes a while.
    for i in range(300):
        (project / "gen" / f"m{i}.py").parent.mkdir(exist_ok=True)
        (project / "gen" / f"m{i}.py").write_text(
            "".join(f"def f{j}(x):\n    return x + {j}\n\n" for j in range(60))
        )
    ws = ctxlayer.Workspace(project, init=True)
    ticks: list[float] = []
    window: dict[str, float] = {}

    def work() -> None:
        window["start"] = time.monotonic()
        ws.summarize("gen")
        window["end"] = time.monotonic()

    worker = threading.Thread(target=work)
    worker.start()
    while worker.is_alive():
        ticks.append(time.monotonic())
        time.sleep(0.001)
    worker.join()
    during = [t for t in ticks if window["start"] < t < window["end"]]
    elapsed = window["end"] - window["start"]
    assert elapsed > 0.02, f"too quick to tell ({elapsed:.3f}s)"
    assert len(during) >= 5, f"this thread ran {len(during)} times in {elapsed:.3f}s"


def test_the_docs_workspace_example_runs_as_written(project: Path) -> None:
    """docs/python.md's packs-and-select example, run with the fixture project as its path."""
    page = (Path(__file__).resolve().parents[2] / "docs/python.md").read_text()
    blocks = [b.split("```", 1)[0] for b in page.split("```python\n")[1:]]
    example = next(b for b in blocks if "ctxlayer.Workspace(" in b)
    assert '"path/to/project"' in example, example
    names: dict = {}
    code = example.replace('"path/to/project"', repr(str(project)))
    exec(compile(code, "docs/python.md", "exec"), names)  # noqa: S102 - the docs' own example
    assert "Tokens are counted" in names["payload"]
    assert "src/tokens.py" in names["files"][:2], names["files"]


def test_python_records_a_run_that_the_cli_replays(project: Path) -> None:
    ws = ctxlayer.Workspace(project, init=True)
    with pytest.raises(ctxlayer.InvalidInputError, match="not a usable run name"):
        ws.start_recording("a/b")
    recording = ws.start_recording("agent-1", deterministic=["fs_read"])
    assert repr(recording) == 'ctxlayer.Recording("agent-1")'
    journal = project / ".ctx" / "recordings"
    assert len(list(journal.glob("agent-1.*.jsonl"))) == 1, "the journal exists while recording"
    # The agent reads files through ctx, and the recording keeps what it answered.
    for path in ("src/tokens.py", "docs/secrets.md"):
        answer = ws.fs_read(path, "Line")
        recording.record("fs_read", {"operations": [{"mode": "Line", "path": path}]}, answer, elapsed_ms=2)
    recording.record("edit_file", {"path": "src/tokens.py"}, b"edited\n", is_error=True)
    with pytest.raises(ctxlayer.InvalidInputError, match="dict"):
        recording.record("fs_read", ["not", "a", "dict"], "x")
    done = recording.finish()
    assert done is not None and done["steps"] == 3 and done["run"].startswith("sha256:")
    assert recording.finish() is None, "a recording finishes once"
    assert list(journal.glob("*.jsonl")) == []

    run = ws.run_show("agent-1")
    assert [s["tool"] for s in run["steps"]] == ["fs_read", "fs_read", "edit_file"]
    assert [s["deterministic"] for s in run["steps"]] == [True, True, False]
    assert run["run"]["environment"]["runtime"] == "ctx-python"
    # The files the calls read are the run's inputs, stored redacted.
    names = sorted(i["name"] for i in run["run"]["inputs"])
    assert names == ["docs/secrets.md", "src/tokens.py"]
    show = subprocess.run(
        [CTX_BIN, "run", "show", "agent-1", "--json"], cwd=project, capture_output=True, text=True, check=True
    )
    assert "ghp_R7sZ0vK3mQ9xW2yT5uB8nL4cE6fH1jA0pD3g" not in show.stdout
    # Replay re-runs the fs_read steps with ctx's own tools: fs_read answers as it did, but the
    # MCP tool's answer is JSON, not the Python string, so the steps diverge — replay still
    # runs them, and the edit is skipped as a tool ctx does not have.
    replay = subprocess.run(
        [CTX_BIN, "run", "replay", "agent-1", "--json", "--steps"], cwd=project, capture_output=True, text=True
    )
    report = json.loads(replay.stdout)
    outcomes = [r["outcome"] for r in report["results"]]
    assert outcomes[2] == "skipped" and len(outcomes) == 3, report
