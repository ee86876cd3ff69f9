#!/usr/bin/env python3
"""Concurrent writers on one store: PROCS processes x OPS mixed operations, ROUNDS rounds.

Each process runs `ctx` commands that write the same state.db and object store at once
(pack create/add/render/snapshot/delete, token counts, summaries, run imports, index builds
and selections). Any failed command is an error; after every round `store verify` and
`index verify` must be clean. Prints one line per round and a total; exits 1 on any error.

  scripts/stress-store.py [CTX_BINARY] [--procs 8] [--ops 100] [--rounds 5]

The default binary is target/debug/ctx. `scripts/test` runs a short form (8 x 20 x 1, in
tests/python/test_stress_store.py); the issue's figure is the long one (8 x 100 x 5).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(ctx, repo, *args, stdin=None):
    p = subprocess.run([ctx, "-q", *args], cwd=repo, input=stdin, capture_output=True,
                       text=True, env=dict(os.environ, NO_COLOR="1"))
    return p.returncode, p.stderr.strip().splitlines()[-1:] if p.stderr.strip() else []




def worker(args):
    ctx, repo, proc, ops, export = args
    errors = []
    for j in range(ops):
        name = f"w{proc}-{j % 7}"
        kind = j % 10
        if kind == 0:
            cmd = ["pack", "create", name, "--budget", "4000"]
            ok = {0, 2}  # 2: the pack already exists (an earlier op of this worker made it)
        elif kind == 1:
            cmd = ["pack", "add", name, f"glob:src/**/*.py"]
            ok = {0, 2}
        elif kind == 2:
            cmd = ["pack", "render", name, "-o", os.devnull]
            ok = {0, 2}
        elif kind == 3:
            cmd = ["pack", "snapshot", name]
            ok = {0, 2}
        elif kind == 4:
            cmd = ["pack", "list"]
            ok = {0}
        elif kind == 5:
            cmd = ["tokens", f"src/pkg/mod{j % 40}.py", f"src/pkg/mod{(j + 1) % 40}.py"]
            ok = {0}
        elif kind == 6:
            cmd = ["summarize", "src"]
            ok = {0}
        elif kind == 7:
            cmd = ["run", "import", export]
            ok = {0}
        elif kind == 8:
            cmd = ["select", f"parse module {proc}", "--budget", "2000"]
            ok = {0, 1}
        else:
            cmd = ["pack", "delete", name]
            ok = {0, 2}
        code, tail = run(ctx, repo, *cmd)
        # Exit 2 is fine only for a conflict a single process would also see (a pack that
        # exists already or not yet); a lock error is never fine.
        locked = any("locked" in line or "busy" in line.lower() for line in tail)
        if code not in ok or locked or (code == 2 and not any(
                w in " ".join(tail) for w in ("already exists", "already has", "no pack", "not found", "unknown pack",
                                              "does not exist"))):
            errors.append((" ".join(cmd), code, tail))
    return errors


def make_repo(ctx, base):
    repo = os.path.join(base, "repo")
    os.makedirs(os.path.join(repo, "src", "pkg"))
    for i in range(40):
        with open(os.path.join(repo, "src", "pkg", f"mod{i}.py"), "w") as f:
            f.write(f'"""Module {i}: parse and render things."""\n\n'
                    f"def parse_{i}(text):\n    return text.split()\n\n\n"
                    f"class Render{i}:\n    def render(self, items):\n"
                    f"        return ', '.join(parse_{i}(x)[0] for x in items)\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run([ctx, "-q", "init"], cwd=repo, check=True, capture_output=True)
    # A run to import: a recorded session exported in ctx's own format.
    session = os.path.join(base, "session.jsonl")
    with open(session, "w") as f:
        f.write(json.dumps({"type": "user", "message": {"role": "user", "content": "hello"},
                            "timestamp": "2026-01-01T00:00:00Z", "sessionId": "s"}) + "\n")
        f.write(json.dumps({"type": "assistant", "message": {"role": "assistant", "model": "m",
                            "content": [{"type": "text", "text": "hi"}]},
                            "timestamp": "2026-01-01T00:00:01Z", "sessionId": "s"}) + "\n")
    return repo, session


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ctx", nargs="?", default=os.path.join(ROOT, "target", "debug", "ctx"))
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--ops", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    ctx = os.path.abspath(a.ctx)
    total_errors = 0
    with tempfile.TemporaryDirectory() as base:
        repo, session = make_repo(ctx, base)
        code, tail = run(ctx, repo, "run", "import", session, "--from", "claude-code")
        if code != 0:
            sys.exit(f"cannot import the sample run: {tail}")
        for r in range(a.rounds):
            started = time.time()
            with ProcessPoolExecutor(a.procs) as pool:
                results = list(pool.map(worker, [(ctx, repo, p, a.ops, session)
                                                 for p in range(a.procs)]))
            errors = [e for errs in results for e in errs]
            verify = run(ctx, repo, "store", "verify")
            index = run(ctx, repo, "index", "verify")
            total_errors += len(errors) + (verify[0] != 0) + (index[0] not in (0,))
            print(f"round {r + 1}: {a.procs} x {a.ops} ops in {time.time() - started:.1f} s, "
                  f"{len(errors)} errors; store verify exit {verify[0]}, index verify exit {index[0]}")
            for cmd, code, tail in errors[:5]:
                print(f"  {cmd}: exit {code}: {' '.join(tail)}")
            if verify[0] != 0:
                print(f"  store verify: {verify[1]}")
            if index[0] != 0:
                print(f"  index verify: {index[1]}")
    print(f"total: {total_errors} errors in {a.rounds * a.procs * a.ops} operations")
    sys.exit(1 if total_errors else 0)


if __name__ == "__main__":
    main()
