"""The `ctx` Python module (crates/ctx-py): each mode, batches, exceptions, threads, and the
sandbox attack suite. scripts/test builds and installs the module into the venv first."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import ctxlayer
import attack_fixture


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("import os\n\ndef main():\n    # TODO: parse args\n    return 0\n")
    (root / "src" / "util.py").write_text("def helper():\n    return 'todo later'\n")
    (root / "README.md").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    (root / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    (root / "latin1.txt").write_bytes(b"caf\xe9\n")
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "out.txt").write_text("TODO generated\n")
    return root


def test_line_mode_ranges_and_negative_indexes(tree: Path) -> None:
    assert ctxlayer.fs_read("README.md", "Line", start_line=10, end_line=12, root=tree) == "line 10\nline 11\nline 12"
    assert ctxlayer.fs_read("README.md", "Line", start_line=-2, root=tree) == "line 99\nline 100"
    assert ctxlayer.fs_read("crlf.txt", "Line", root=tree) == "a\nb"
    whole = ctxlayer.fs_read(str(tree / "README.md"), "Line", root=tree)
    assert whole.count("\n") == 99


def test_line_mode_truncates_with_a_continuation(tree: Path) -> None:
    text = ctxlayer.fs_read("README.md", "Line", root=tree, max_bytes=30)
    assert text.startswith("line 1\nline 2\n")
    assert "continue with start_line=" in text


def test_directory_mode_lists_breadth_first_and_honours_gitignore(tree: Path) -> None:
    entries = ctxlayer.fs_read(".", "Directory", depth=1, root=tree)
    paths = [e["path"] for e in entries]
    assert paths == [".gitignore", "README.md", "crlf.txt", "latin1.txt", "src", "src/main.py", "src/util.py"]
    src = next(e for e in entries if e["path"] == "src")
    assert src["kind"] == "dir"
    readme = next(e for e in entries if e["path"] == "README.md")
    assert readme["kind"] == "file" and readme["size"] == (tree / "README.md").stat().st_size
    assert isinstance(readme["mtime"], int)


def test_search_mode_is_case_insensitive_literal_with_context(tree: Path) -> None:
    matches = ctxlayer.fs_read("src", "Search", pattern="todo", context_lines=1, root=tree)
    assert [(m["path"], m["line_number"]) for m in matches] == [("src/main.py", 4), ("src/util.py", 2)]
    assert matches[0]["context"] == "  3: def main():\n→ 4:     # TODO: parse args\n  5:     return 0\n"
    regex = ctxlayer.fs_read("src", "Search", pattern=r"def \w+\(", regex=True, context_lines=0, root=tree)
    assert len(regex) == 2
    assert ctxlayer.fs_read("src", "Search", pattern="todo", case_sensitive=True, root=tree) == [
        m for m in ctxlayer.fs_read("src", "Search", pattern="todo", root=tree) if m["path"] == "src/util.py"
    ]


def test_batch_reports_a_failing_operation_and_runs_the_others(tree: Path) -> None:
    results = ctxlayer.fs_read_batch(
        [
            {"mode": "Line", "path": "README.md", "start_line": 1, "end_line": 1},
            {"mode": "Line", "path": "missing.txt"},
            {"mode": "Search", "path": "src", "pattern": "helper"},
            {"mode": "Nope", "path": "src"},
        ],
        root=tree,
    )
    assert [r["ok"] for r in results] == [True, False, True, False]
    assert results[0]["result"]["content"] == "line 1"
    assert results[1]["error"]["kind"] == "not_found"
    assert results[2]["result"]["total_matches"] == 1
    assert "unknown mode" in results[3]["error"]["message"]
    same = ctxlayer.fs_read(operations=[{"mode": "Line", "path": "crlf.txt"}], root=tree)
    assert same[0]["result"]["content"] == "a\nb"


def test_exceptions_fit_the_error(tree: Path) -> None:
    with pytest.raises(FileNotFoundError):
        ctxlayer.fs_read("nope.txt", "Line", root=tree)
    with pytest.raises(PermissionError):
        ctxlayer.fs_read("../../etc/passwd", "Line", root=tree)
    with pytest.raises(PermissionError):
        ctxlayer.fs_read("/etc/passwd", "Line", root=tree)
    with pytest.raises(ValueError, match="unknown mode"):
        ctxlayer.fs_read("README.md", "Sideways", root=tree)
    with pytest.raises(ValueError, match="pattern"):
        ctxlayer.fs_read("src", "Search", root=tree)
    with pytest.raises(ValueError, match="depth"):
        ctxlayer.fs_read("src", "Directory", depth=-1, root=tree)
    with pytest.raises(ValueError, match=r"not UTF-8.*5 bytes"):
        ctxlayer.fs_read("latin1.txt", "Line", root=tree)
    with pytest.raises(ValueError, match="has 100 lines"):
        ctxlayer.fs_read("README.md", "Line", start_line=101, root=tree)
    with pytest.raises(FileNotFoundError):
        ctxlayer.fs_read("x", "Line", root=tree / "no-such-root")
    with pytest.raises(TypeError):
        ctxlayer.fs_read_batch([{"mode": "Line", "path": object()}], root=tree)


def test_the_default_root_is_the_working_directory(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree / "src")
    assert ctxlayer.fs_read("util.py", "Line", start_line=1, end_line=1) == "def helper():"
    with pytest.raises(PermissionError):
        ctxlayer.fs_read("../README.md", "Line")


def test_a_workspace_object_reads_many_times(tree: Path) -> None:
    ws = ctxlayer.Workspace(tree)
    assert Path(ws.root) == tree.resolve()
    assert ws.fs_read("README.md", "Line", start_line=-1) == "line 100"
    assert ws.fs_read_batch([{"mode": "Directory", "path": "src"}])[0]["ok"]


def test_two_threads_read_concurrently_with_the_gil_released(tmp_path: Path) -> None:
    root = tmp_path / "big"
    root.mkdir()
    (root / "big.txt").write_text("".join(f"row {i} some filler text to scan\n" for i in range(200_000)))
    op = {"mode": "Search", "path": "big.txt", "pattern": "row 199999 ", "context_lines": 0}
    # Calibrate: enough operations per call that one call takes about 0.3 s.
    started = time.perf_counter()
    ctxlayer.fs_read_batch([op] * 4, root=root)
    per_op = max((time.perf_counter() - started) / 4, 1e-4)
    count = max(4, min(2000, int(0.3 / per_op)))
    results: dict[str, object] = {}
    window: dict[str, float] = {}

    def reader(name: str) -> None:
        window[f"{name}_start"] = time.perf_counter()
        results[name] = ctxlayer.fs_read_batch([op] * count, root=root)
        window[f"{name}_end"] = time.perf_counter()

    threads = [threading.Thread(target=reader, args=(n,)) for n in ("a", "b")]
    ticks: list[float] = []
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    for t in threads:
        t.join()
    for name in ("a", "b"):
        outcomes = results[name]
        assert isinstance(outcomes, list) and len(outcomes) == count
        assert all(o["ok"] and o["result"]["total_matches"] == 1 for o in outcomes)
    # While both reads ran, this thread kept running Python: the GIL was free.
    start = max(window["a_start"], window["b_start"])
    end = min(window["a_end"], window["b_end"])
    assert end - start > 0.05, f"the calls did not overlap ({end - start:.3f}s)"
    during = [t for t in ticks if start < t < end]
    assert len(during) >= 5, f"main thread ran {len(during)} times in {end - start:.3f}s"


def test_every_attack_is_refused(tmp_path: Path) -> None:
    fixture = attack_fixture.build(tmp_path)
    cases = attack_fixture.cases(fixture)
    assert len(cases) >= 30
    exceptions = {"permission_denied": PermissionError, "not_found": FileNotFoundError, "invalid_input": ValueError}
    for case in cases:
        for mode, extra in (("Line", {}), ("Directory", {"depth": 2}), ("Search", {"pattern": "secret"})):
            with pytest.raises((PermissionError, FileNotFoundError, ValueError)) as raised:
                ctxlayer.fs_read(case.path, mode, root=fixture.root, **extra)
            allowed = tuple(exceptions[k] for k in case.expect)
            assert isinstance(raised.value, allowed), f"{case.name} {mode}: {raised.value!r}"
            assert attack_fixture.SECRET not in str(raised.value)
    listing = ctxlayer.fs_read(".", "Directory", depth=5, root=fixture.root)
    assert not any("only_outside" in e["path"] for e in listing)
    assert ctxlayer.fs_read(".", "Search", pattern="secret", root=fixture.root) == []


def test_a_symlink_swapped_during_reads_never_escapes(tmp_path: Path) -> None:
    fixture = attack_fixture.build(tmp_path)
    stop = threading.Event()
    flips = [0]
    flipper = threading.Thread(target=lambda: attack_fixture.flip(fixture.root, stop, flips))
    flipper.start()
    inside = 0
    batches = 0
    deadline = time.monotonic() + 120
    try:
        # At least 400 batches and 50 flips: on an idle machine 400 batches take less time
        # than 50 flips, and a race that never happened proves nothing.
        while (batches < 400 or flips[0] < 50) and time.monotonic() < deadline:
            batches += 1
            results = ctxlayer.fs_read_batch(
                [
                    {"mode": "Line", "path": "race/only_outside.txt"},
                    {"mode": "Line", "path": "race/only_inside.txt"},
                    {"mode": "Directory", "path": "race"},
                    {"mode": "Search", "path": "race", "pattern": "secret"},
                ],
                root=fixture.root,
            )
            text = repr(results)
            assert attack_fixture.SECRET not in text
            assert "only_outside.txt', 'kind'" not in text
            assert not results[0]["ok"]
            inside += results[1]["ok"]
    finally:
        stop.set()
        flipper.join()
    assert flips[0] >= 50, f"only {flips[0]} flips in {batches} batches"
    assert inside > 0


def test_the_docs_example_runs_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/python.md's first example, run literally from the repository root."""
    repo = Path(__file__).resolve().parents[2]
    page = (repo / "docs/python.md").read_text()
    readme = (repo / "README.md").read_text()
    assert "pip install ./crates/ctx-py" in page.split("```python", 1)[0]
    example = page.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(example.strip().splitlines()) == 3, example
    monkeypatch.chdir(repo)
    names: dict = {}
    exec(compile(example, "docs/python.md", "exec"), names)  # noqa: S102 - the docs' own example
    assert isinstance(names["tail"], str) and names["tail"].count("\n") == 2
    assert names["tail"] == "\n".join(readme.rstrip("\n").split("\n")[-3:])
    hits = names["hits"]
    assert hits and {"path", "line_number", "context"} <= set(hits[0])
    assert any(h["path"].startswith("crates/ctx-py/") for h in hits)
