"""The ctx file engine: Amazon-Q-compatible fs_read over sandboxed workspaces.

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

class Workspace:
    """A workspace root kept open for many reads."""

    def __init__(self, root: StrPath) -> None: ...
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
