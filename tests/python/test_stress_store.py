"""Concurrent writers on one store, short form: 8 processes x 20 mixed operations, once.

The long form (8 x 100 x 5) is `scripts/stress-store.py` run by hand; both fail on any
"database is locked" answer, any unexpected exit, or a store or index that does not verify.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fixture_repo import CTX_BIN

pytestmark = pytest.mark.skipif(not CTX_BIN, reason="CTX_BIN is not set (scripts/test sets it)")

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "stress-store.py"


def test_eight_concurrent_writers_never_fail() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), CTX_BIN, "--procs", "8", "--ops", "20", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "total: 0 errors in 160 operations" in run.stdout, run.stdout
    assert "store verify exit 0, index verify exit 0" in run.stdout, run.stdout
