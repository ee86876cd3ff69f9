"""ctx for Python: fs_read over sandboxed workspaces, and packs, token counts, selection, code
intelligence and run records through ``ctxlayer.Workspace``.

Every path is resolved inside the workspace root (``root=``, default the current
directory): ``..``, absolute paths elsewhere, symlinks leaving the root, NUL bytes, FIFOs
and devices are refused with PermissionError (or ValueError for malformed paths). The GIL
is released while files are read.
"""

from os import PathLike
from pathlib import Path
from typing import Any, Dict, List, Literal, Optional, Sequence, TypedDict, Union, overload

__version__: str

Mode = Literal["Line", "Directory", "Search"]
StrPath = Union[str, PathLike[str]]

class DirEntry(TypedDict):
    path: str
    """Path relative to the workspace root."""
    kind: Literal["file", "dir"]
    size: int
    mtime: int
    """Seconds since the Unix epoch (UTC)."""

class SearchMatch(TypedDict):
    path: str
    line_number: int
    context: str
    """The matching line (prefixed "→ ") with its context lines, each "N: text\\n"."""

class OperationError(TypedDict):
    kind: Literal["not_found", "permission_denied", "invalid_input", "io"]
    message: str

class OperationOutcome(TypedDict, total=False):
    mode: str
    path: str
    ok: bool
    result: Dict[str, Any]
    """Line: content, start_line, end_line, total_lines, lines_returned, file_bytes, truncated,
    next_start_line. Directory: path, entries, total_entries, truncated, next_offset.
    Search: path, pattern, matches, total_matches, files_searched, files_skipped, truncated,
    next_offset."""
    error: OperationError

Operation = Dict[str, Any]
"""{"mode": "Line"|"Directory"|"Search", "path": str, "start_line": int, "end_line": int,
"depth": int, "pattern": str, "context_lines": int, "regex": bool, "case_sensitive": bool,
"offset": int}"""

@overload
def fs_read(
    path: str,
    mode: Literal["Line"],
    start_line: Optional[int] = None,
    end_line: Optional[int] = None,
    depth: int = 0,
    pattern: Optional[str] = None,
    context_lines: int = 2,
    operations: None = None,
    *,
    root: Optional[StrPath] = None,
    regex: bool = False,
    case_sensitive: bool = False,
    max_bytes: Optional[int] = None,
) -> str: ...
@overload
def fs_read(
    path: str,
    mode: Literal["Directory"],
    start_line: Optional[int] = None,
    end_line: Optional[int] = None,
    depth: int = 0,
    pattern: Optional[str] = None,
    context_lines: int = 2,
    operations: None = None,
    *,
    root: Optional[StrPath] = None,
    regex: bool = False,
    case_sensitive: bool = False,
    max_bytes: Optional[int] = None,
) -> List[DirEntry]: ...
@overload
def fs_read(
    path: str,
    mode: Literal["Search"],
    start_line: Optional[int] = None,
    end_line: Optional[int] = None,
    depth: int = 0,
    pattern: Optional[str] = None,
    context_lines: int = 2,
    operations: None = None,
    *,
    root: Optional[StrPath] = None,
    regex: bool = False,
    case_sensitive: bool = False,
    max_bytes: Optional[int] = None,
) -> List[SearchMatch]: ...
@overload
def fs_read(
    path: None = None,
    mode: None = None,
    start_line: None = None,
    end_line: None = None,
    depth: int = 0,
    pattern: None = None,
    context_lines: int = 2,
    *,
    operations: Sequence[Operation],
    root: Optional[StrPath] = None,
    regex: bool = False,
    case_sensitive: bool = False,
    max_bytes: Optional[int] = None,
) -> List[OperationOutcome]: ...
def fs_read_batch(
    operations: Sequence[Operation],
    *,
    root: Optional[StrPath] = None,
    max_bytes: Optional[int] = None,
) -> List[OperationOutcome]:
    """Runs the operations independently (in parallel); a failing one gives an entry with
    ok=False and an error, and does not stop the others."""

class CtxError(Exception):
    """A ctx operation failed; the subclass says how."""

class InvalidInputError(CtxError):
    """The request is wrong: fix the input."""

class NotFoundError(CtxError):
    """What the request names does not exist."""

class ConflictError(CtxError):
    """It exists already, or is in the way."""

class DamagedError(CtxError):
    """The store or an index is damaged: verify, repair or rebuild it."""

class StoreIOError(CtxError):
    """The file system failed (permissions, a full disk, a read-only store)."""

class InternalError(CtxError):
    """A bug in ctx; please report it."""

Style = Literal["markdown", "xml", "json", "plain"]
Packs = Union[str, Sequence[str]]

class PackRecord(TypedDict):
    name: str
    budget_tokens: int
    tokenizer: str
    created_at: int
    """Seconds since the Unix epoch."""
    artifact_count: int

class Artifact(TypedDict, total=False):
    pack: str
    artifact_id: str
    seq: int
    priority: int
    uri: str
    source_json: str
    added_at: int
    allow_sensitive: bool

class PackView(TypedDict):
    pack: PackRecord
    artifacts: List[Artifact]

class AddReport(TypedDict, total=False):
    pack: str
    artifact: Artifact
    matches: Optional[int]
    warnings: List[str]

class RenderReport(TypedDict, total=False):
    render_hash: str
    payload_hash: str
    tokens_used: int
    budget_tokens: int
    tokenizer: str
    included: List[Dict[str, Any]]
    excluded: List[Dict[str, Any]]
    redactions: List[Dict[str, Any]]
    payload: str
    """Only in pack_preview's answer."""

class Snapshot(TypedDict):
    snapshot: Dict[str, Any]
    """snapshot_id, label, packs, render_hash, payload_object, tokens, created_at."""
    report: RenderReport

class SnapshotVerify(TypedDict, total=False):
    snapshot_id: str
    identical: bool
    drift: List[Dict[str, Any]]

class SelectedDocument(TypedDict, total=False):
    id: str
    """Path relative to the workspace root."""
    version: str
    score: float
    tokens: int
    degraded: bool
    view: str
    """whole, regions, outline or skeleton."""
    lines: List[List[int]]
    """The lines included (1-based, inclusive) when less than the whole file."""
    file_tokens: int
    content: str
    why: Dict[str, Any]

class Selection(TypedDict):
    selection: Dict[str, Any]
    """What was asked and done: query, budget, tokens used, candidates, what was left out."""
    index: Dict[str, Any]
    """The index read, after its update (documents read, reused, removed)."""
    documents: List[SelectedDocument]
    """The selected files, best first, with why and their text (the answer `ctx select --json --explain` prints)."""

class RunSummary(TypedDict, total=False):
    id: str
    parent: Optional[str]
    source: str
    steps: int
    model: Optional[str]
    started: Optional[str]
    refs: List[str]

class Workspace:
    """A workspace root kept open for many calls.

    fs_read never leaves the root. The other methods use the ctx store found above the root
    (like git finds .git), ``store=`` if given, or the global store; ``init=True`` creates
    ``root/.ctx`` when no project store is found. The store is opened on first use. Every
    method releases the GIL while it works and raises a ``CtxError`` subclass on failure.
    """

    def __init__(
        self, root: Optional[StrPath] = None, *, store: Optional[StrPath] = None, init: bool = False
    ) -> None: ...
    @property
    def root(self) -> Path: ...
    def fs_read(
        self,
        path: Optional[str] = None,
        mode: Optional[Mode] = None,
        start_line: Optional[int] = None,
        end_line: Optional[int] = None,
        depth: int = 0,
        pattern: Optional[str] = None,
        context_lines: int = 2,
        operations: Optional[Sequence[Operation]] = None,
        *,
        regex: bool = False,
        case_sensitive: bool = False,
        max_bytes: Optional[int] = None,
    ) -> Union[str, List[DirEntry], List[SearchMatch], List[OperationOutcome]]: ...
    def fs_read_batch(
        self, operations: Sequence[Operation], *, max_bytes: Optional[int] = None
    ) -> List[OperationOutcome]: ...
    # packs
    def pack_create(
        self, name: str, *, budget: Optional[int] = None, tokenizer: Optional[str] = None
    ) -> PackRecord: ...
    def pack_add(
        self,
        name: str,
        source: str,
        *,
        priority: int = 0,
        recursive: bool = False,
        exclude: Sequence[str] = (),
        max_files: Optional[int] = None,
        allow_sensitive: bool = False,
    ) -> AddReport: ...
    def pack_list(self) -> List[PackRecord]: ...
    def pack_show(self, name: str) -> PackView: ...
    def pack_delete(self, name: str) -> None: ...
    def pack_remove(self, name: str, artifact: str) -> Artifact: ...
    def pack_preview(
        self, packs: Packs, *, budget: Optional[int] = None, style: Style = "markdown"
    ) -> RenderReport: ...
    def pack_render(
        self, packs: Packs, *, budget: Optional[int] = None, style: Style = "markdown"
    ) -> str: ...
    def pack_snapshot(
        self,
        packs: Packs,
        *,
        label: Optional[str] = None,
        budget: Optional[int] = None,
        style: Style = "markdown",
    ) -> Snapshot: ...
    def pack_snapshot_payload(self, snapshot: str) -> str: ...
    def pack_verify(self, snapshot: str) -> SnapshotVerify: ...
    # tokens
    @overload
    def tokens(self, text: str, *, tokenizer: Optional[str] = None) -> int: ...
    @overload
    def tokens(self, text: Sequence[str], *, tokenizer: Optional[str] = None) -> List[int]: ...
    # selection
    def select(self, query: str, *, budget: int = 8000, index: Optional[str] = None) -> Selection: ...
    # code intelligence
    def summarize(
        self, path: StrPath = ".", *, depth: Optional[int] = None, skeleton: bool = False
    ) -> Dict[str, Any]: ...
    def search(
        self,
        pattern: str,
        path: StrPath = ".",
        *,
        mode: Literal["text", "symbol", "caller"] = "text",
        regex: bool = False,
        ignore_case: bool = False,
        context: int = 0,
    ) -> List[Dict[str, Any]]: ...
    def related(self, path: StrPath, *, history: int = 500, limit: int = 10) -> Dict[str, Any]: ...
    # runs
    def run_import(self, path: StrPath, *, format: Optional[str] = None) -> Dict[str, Any]: ...
    def run_list(self) -> List[RunSummary]: ...
    def run_show(self, run: str) -> Dict[str, Any]: ...  # {run: header, steps}, as `ctx run show --json`
    def run_diff(self, a: str, b: str) -> Dict[str, Any]: ...
    def start_recording(self, name: str, *, deterministic: Optional[Sequence[str]] = None) -> Recording: ...

class RecordingFinished(TypedDict):
    run: str
    steps: int

class Recording:
    """A run being recorded: one step per tool call (saved as it is recorded, inputs the
    calls read redacted), written and tagged with its name (and ``latest``) by ``finish``.
    A recording whose process died is finished by the next ``start_recording``."""

    def record(
        self,
        tool: str,
        arguments: Dict[str, Any],
        output: Union[str, bytes],
        *,
        is_error: bool = False,
        elapsed_ms: int = 0,
    ) -> None: ...
    def finish(self) -> Optional[RecordingFinished]: ...
