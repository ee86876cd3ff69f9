"""The sandbox attack fixture of crates/ctx-fs/tests/support/attacks.rs, built in Python.

The cases themselves live in crates/ctx-fs/tests/fixtures/sandbox_attacks.json, shared with the
Rust suites, so every front end is checked against the same list.
"""

from __future__ import annotations

import json
import os
import time
import socket
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CASES_FILE = REPO / "crates" / "ctx-fs" / "tests" / "fixtures" / "sandbox_attacks.json"
SECRET = "TOP SECRET"


@dataclass
class Fixture:
    base: Path
    root: Path
    outside: Path


@dataclass
class Case:
    name: str
    path: str
    expect: list[str]


def build(base: Path) -> Fixture:
    base = base.resolve()
    root = base / "ws"
    outside = base / "outside"
    (root / "sub").mkdir(parents=True)
    (root / "race_real").mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET} outside\n")
    (outside / "only_outside.txt").write_text(f"{SECRET} too\n")
    (root / "ok.txt").write_text("hello inside\n")
    (root / "sub" / "inner.txt").write_text("inner\n")
    (root / "race_real" / "only_inside.txt").write_text("inside\n")
    links = {
        "link_passwd": "/etc/passwd",
        "link_secret": "../outside/secret.txt",
        "link_abs_secret": str(outside / "secret.txt"),
        "linkdir_out": "../outside",
        "linkdir_etc": "/etc",
        "link_dotdot": "..",
        "sub/link_up2": "../../outside/secret.txt",
        "link_loop": "link_loop",
        "link_proc": "/proc/self/root",
        "link_inside": "sub/inner.txt",
    }
    for name, target in links.items():
        os.symlink(target, root / name)
    os.link(outside / "secret.txt", root / "hard_secret")
    os.mkfifo(root / "fifo")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(root / "sock"))
    sock.close()
    return Fixture(base=base, root=root, outside=outside)


def cases(fixture: Fixture) -> list[Case]:
    raw = json.loads(CASES_FILE.read_text())
    fills = {
        "{ROOT}": str(fixture.root),
        "{OUTSIDE}": str(fixture.outside),
        "{LONG_COMPONENT}": "a" * 300,
        "{LONG_PATH}": "d/" * 2100 + "x",
        "{DOTDOT_CHAIN}": "../" * 64 + "etc/passwd",
    }
    out = []
    for case in raw["cases"]:
        path = case["path"]
        for key, value in fills.items():
            path = path.replace(key, value)
        out.append(Case(name=case["name"], path=path, expect=case["expect"]))
    return out


def flip(root: Path, stop, done: list[int] | None = None) -> int:
    """Flips ws/race between a symlink into the workspace and one out of it until stop is set.

    `done`, when given, holds the number of flips so far in its first element, so a reader
    can go on until the race has really happened often enough.
    """
    race = root / "race"
    inside_tmp = root / ".race_in"
    outside_tmp = root / ".race_out"
    flips = 0
    while not stop.is_set():
        for tmp in (inside_tmp, outside_tmp):
            try:
                tmp.unlink()
            except FileNotFoundError:
                pass
        os.symlink("race_real", inside_tmp)
        os.symlink("../outside", outside_tmp)
        # Hold each state briefly so readers see both, even on a loaded machine.
        os.replace(inside_tmp, race)
        time.sleep(0.001)
        os.replace(outside_tmp, race)
        time.sleep(0.001)
        flips += 1
        if done is not None:
            done[0] = flips
    return flips
