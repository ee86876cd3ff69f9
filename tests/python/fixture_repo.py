"""Shared pieces of the MCP end-to-end suites: the binary under test, a clean environment,
a deterministic `git`, and the fixture library source both suites commit."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from pathlib import Path

CTX_BIN = os.environ.get("CTX_BIN", "")

LIB_RS = """//! The library.

/// Parses input.
pub struct Parser {
    pub depth: usize,
}

/// Helps.
pub fn helper(x: u32) -> u32 {
    x + 1
}
"""


def clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTX_")}
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["NO_COLOR"] = "1"
    return env


def git(repo: Path, *args: str) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(repo),
        "GIT_AUTHOR_NAME": "Fixture",
        "GIT_AUTHOR_EMAIL": "fixture@example.com",
        "GIT_COMMITTER_NAME": "Fixture",
        "GIT_COMMITTER_EMAIL": "fixture@example.com",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(proc: subprocess.Popen, port: int, why=lambda: "", seconds: float = 20) -> None:
    """Waits until `proc` listens on loopback `port`; fails with `why()` if it exits first."""
    deadline = time.monotonic() + seconds
    while True:
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        assert proc.poll() is None, why()
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
