"""Load driver for scripts/scale-test: many concurrent clients against several `ctx serve`
processes over one shared store, round robin on the client side.

Each request is one of: an fs_read (Line / Directory / Search), a pack render (`ctx_packs_render`,
live and from the stored snapshot `v1`), a run read (`ctx_runs_show`), or a run import (a
`ctx run import` process writing a new run into the shared store from one of the hosts'
workspaces). Every read answer is kept by request and server: the same request must get the
same bytes from every server. After the load, every acknowledged import is looked up on every
server. Prints a JSON report; exits 1 on any error or mismatch.

Writes through the servers: every WRITE_EVERY-th request renders the pack with a budget of its
own (`ctx_packs_render` records a snapshot, a new one per budget). With --kill-pid, the server
that process runs is killed with SIGKILL once KILL_AFTER requests were taken: the clients go on
with the others, calls that were in flight to it are counted as unacknowledged (not errors),
and after the load every acknowledged write (snapshots, from any server, the killed one
included, and imports) must read the same on every surviving server.

Usage: python scale_load.py --servers 127.0.0.1:P1,127.0.0.1:P2 --workspace repo
         --clients 200 --requests 20000 --ctx BIN --hosts DIR1,DIR2 --fixture FILE
         --seed-run RUN_ID [--import-every 20] [--import-parallel 4] [--write-every 10]
         [--kill-pid PID --kill-server ADDR [--kill-after N]]
"""

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import httpx

FIXTURE_PROMPT = "Find the bug in src/range.rs and fix it."
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


def read_requests(workspace, seed_run):
    """The read-only requests, cycled through."""

    def tool(name, params):
        # fs_read goes to /tool; the other tools are MCP tools, called at /mcp.
        return {"workspace": workspace, "tool": name, "params": params}

    line = lambda a, b: tool(  # noqa: E731
        "fs_read", {"mode": "Line", "path": "small.txt", "start_line": a, "end_line": b}
    )
    return [
        line(1, 10),
        line(5, 20),
        line(-10, -1),
        tool("fs_read", {"mode": "Directory", "path": "src", "depth": 1}),
        tool("fs_read", {"mode": "Search", "path": "src", "pattern": "fn ", "context_lines": 1}),
        tool("ctx_packs_render", {"packs": ["docs"]}),
        tool("ctx_packs_render", {"snapshot_id": "v1"}),
        line(1, -1),
        tool("ctx_runs_show", {"run": seed_run, "include_content": True}),
        tool("ctx_packs_render", {"packs": ["docs"], "style": "xml"}),
    ]


def first_difference(a, b, path="$"):
    """Where two JSON values first differ, with both sides cut short."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                return first_difference(a.get(key), b.get(key), f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
    return f"{path}: {json.dumps(a)[:160]} / {json.dumps(b)[:160]}"


class Load:
    def __init__(self, args):
        self.args = args
        self.servers = args.servers.split(",")
        self.hosts = args.hosts.split(",")
        self.requests = read_requests(args.workspace, args.seed_run)
        self.next = 0
        self.latencies = []
        self.errors = []
        self.answers = {}  # (request index) -> {digest: [servers]}
        self.samples = {}  # digest -> one answer with that digest (to show what differs)
        self.imports = []  # (run id, import latency)
        self.import_errors = []
        self.import_slots = asyncio.Semaphore(args.import_parallel)
        self.sessions = {}  # (client, server) -> MCP session id
        self.session_restarts = 0
        self.fixture = open(args.fixture, encoding="utf-8").read()
        self.tmp = tempfile.mkdtemp(prefix="ctx-scale-")
        self.dead = set()  # servers killed on purpose
        self.unacknowledged = 0  # calls in flight to a server when it was killed
        self.writes = []  # (snapshot id, budget, server) of acknowledged renders
        self.kill_after = args.kill_after if args.kill_after is not None else args.requests // 2

    def live(self):
        return [s for s in self.servers if s not in self.dead]

    def maybe_kill(self, n):
        if self.args.kill_pid and not self.dead and n >= self.kill_after:
            os.kill(self.args.kill_pid, signal.SIGKILL)
            self.dead.add(self.args.kill_server)

    def take(self):
        if self.next >= self.args.requests:
            return None
        n = self.next
        self.next += 1
        return n

    async def run_import(self, n):
        """Imports a new run (its prompt names n) through the CLI on one of the hosts."""
        path = os.path.join(self.tmp, f"run-{n}.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.fixture.replace(FIXTURE_PROMPT, f"{FIXTURE_PROMPT} (load {n})"))
        host = self.hosts[n % len(self.hosts)]
        async with self.import_slots:
            started = time.perf_counter()
            proc = await asyncio.create_subprocess_exec(
                self.args.ctx, "--json", "run", "import", path, "--from", "claude-code",
                cwd=host, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )
            out, err = await proc.communicate()
            elapsed = time.perf_counter() - started
        os.unlink(path)
        if proc.returncode != 0:
            self.import_errors.append(err.decode(errors="replace").strip()[:300])
            return
        self.imports.append((json.loads(out)["run"], elapsed))
        self.latencies.append(elapsed)

    async def client(self, index, http):
        turn = index
        while (n := self.take()) is not None:
            self.maybe_kill(n)
            if self.args.import_every and n % self.args.import_every == self.args.import_every - 1:
                await self.run_import(n)
                continue
            live = self.live()
            server = live[n % len(live)]
            write = self.args.write_every and n % self.args.write_every == 0
            if write:
                which = None
                budget = 4000 + n
                body = {"workspace": self.args.workspace, "tool": "ctx_packs_render",
                        "params": {"packs": ["docs"], "budget": budget, "max_tokens": 1000}}
            else:
                which = turn % len(self.requests)
                turn += 1
                body = self.requests[which]
            started = time.perf_counter()
            try:
                ok, result, error = await self.call(http, index, server, body)
                elapsed = time.perf_counter() - started
            except httpx.HTTPError as e:
                if server in self.dead:
                    self.unacknowledged += 1
                else:
                    self.errors.append(f"{server}: {type(e).__name__}: {e}")
                continue
            if not ok and server in self.dead:
                self.unacknowledged += 1
                continue
            self.latencies.append(elapsed)
            if not ok:
                self.errors.append(f"{server}: {body['tool']}: {error}")
                continue
            if write:
                self.writes.append((result["snapshot_id"], budget, server))
                continue
            answer = {"result": result}
            digest = hashlib.sha256(
                json.dumps(answer.get("result"), sort_keys=True).encode()
            ).hexdigest()
            self.answers.setdefault(which, {}).setdefault(digest, set()).add(server)
            self.samples.setdefault(digest, result)

    async def call(self, http, client, server, body):
        """One tool call: (ok, result, error)."""
        if body["tool"] == "fs_read":
            response = await http.post(f"http://{server}/tool", json=body)
            if response.status_code != 200:
                return False, None, f"HTTP {response.status_code}: {response.text[:200]}"
            answer = response.json()
            return bool(answer.get("success")), answer.get("result"), answer.get("error")
        session = self.sessions.get((client, server))
        url = f"http://{server}/mcp?workspace={body['workspace']}"
        if session is None:
            session = await self.initialize(http, url)
            self.sessions[(client, server)] = session
        call = {
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": body["tool"], "arguments": body["params"]},
        }
        message = await self.rpc(http, url, session, call)
        if message.get("session_gone"):
            # The MCP transport's rule: on a 404 for a session, start a new one.
            self.session_restarts += 1
            session = await self.initialize(http, url)
            self.sessions[(client, server)] = session
            message = await self.rpc(http, url, session, call)
        if "error" in message:
            return False, None, message["error"]
        result = message["result"]
        if result.get("isError"):
            return False, None, result.get("content")
        return True, result.get("structuredContent", result.get("content")), None

    async def initialize(self, http, url):
        response = await http.post(url, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "scale-test", "version": "1"}},
        }, headers=MCP_HEADERS)
        response.raise_for_status()
        session = response.headers["mcp-session-id"]
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                        headers={**MCP_HEADERS, "mcp-session-id": session,
                                 "mcp-protocol-version": "2025-11-25"})
        return session

    async def rpc(self, http, url, session, message):
        response = await http.post(url, json=message, headers={
            **MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"})
        if response.status_code == 404 and "Session not found" in response.text:
            return {"session_gone": True}
        if response.status_code != 200:
            return {"error": f"HTTP {response.status_code}: {response.text[:200]}"}
        text = response.text.lstrip()
        if text.startswith("{"):
            return json.loads(text)
        for line in text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                data = json.loads(line[5:])
                if "id" in data:
                    return data
        return {"error": f"no answer in {text[:200]}"}

    async def check_writes(self, http):
        """Every acknowledged snapshot (from any server, the killed one included) reads the
        same on every surviving server."""
        lost = []
        for snapshot, budget, acked_by in self.writes:
            seen = {}
            for server in self.live():
                body = {"workspace": self.args.workspace, "tool": "ctx_packs_render",
                        "params": {"snapshot_id": snapshot, "max_tokens": 1000}}
                ok, result, error = await self.call(http, -1, server, body)
                if not ok:
                    lost.append(f"{server}: snapshot {snapshot} (budget {budget}, acknowledged by {acked_by}) not readable: {error}")
                    continue
                digest = hashlib.sha256(json.dumps(result, sort_keys=True).encode()).hexdigest()
                seen.setdefault(digest, []).append(server)
            if len(seen) > 1:
                lost.append(f"snapshot {snapshot}: servers disagree: {list(seen.values())}")
        return lost

    async def check_imports(self, http):
        """Every acknowledged import reads the same on every surviving server."""
        mismatches = []
        for run, _ in self.imports:
            seen = {}
            for server in self.live():
                body = {"workspace": self.args.workspace, "tool": "ctx_runs_show",
                        "params": {"run": run, "include_content": True}}
                ok, result, error = await self.call(http, -1, server, body)
                if not ok:
                    mismatches.append(f"{server}: run {run} acknowledged but not readable: {error}")
                    continue
                digest = hashlib.sha256(json.dumps(result, sort_keys=True).encode()).hexdigest()
                seen.setdefault(digest, []).append(server)
            if len(seen) > 1:
                mismatches.append(f"run {run}: servers disagree: {list(seen.values())}")
        return mismatches

    async def main(self):
        limits = httpx.Limits(max_connections=self.args.clients, max_keepalive_connections=self.args.clients)
        async with httpx.AsyncClient(limits=limits, timeout=60.0) as http:
            # `latest` names the newest run, and `ctx_runs_show` lists the refs naming a run:
            # the seed run's answer would change (from `latest` to none) when the load's first
            # import lands. An import on each host before the load moves `latest` off the seed
            # run for good.
            for i in range(len(self.hosts)):
                await self.run_import(self.args.requests + i)
            started = time.perf_counter()
            await asyncio.gather(*(self.client(i, http) for i in range(self.args.clients)))
            elapsed = time.perf_counter() - started
            mismatches = [
                f"request {self.requests[i]}: {len(d)} different answers from "
                f"{[sorted(s) for s in d.values()]}; first difference: "
                f"{first_difference(*(self.samples[k] for k in list(d)[:2]))}"
                for i, d in sorted(self.answers.items())
                if len(d) > 1
            ]
            mismatches += await self.check_imports(http)
            lost_writes = await self.check_writes(http)
        lat = sorted(self.latencies)
        pct = lambda p: round(lat[min(len(lat) - 1, round((len(lat) - 1) * p))] * 1000, 2) if lat else 0  # noqa: E731
        compared = {i: sorted(s for v in d.values() for s in v) for i, d in self.answers.items()}
        live = set(self.live())
        report = {
            "servers": len(self.servers),
            "clients": self.args.clients,
            "requests": self.args.requests,
            "seconds": round(elapsed, 3),
            "throughput_rps": round(self.args.requests / elapsed, 1),
            "latency_ms": {"p50": pct(0.50), "p90": pct(0.90), "p99": pct(0.99), "max": pct(1.0)},
            "imports": len(self.imports),
            "import_p99_ms": round(sorted(t for _, t in self.imports)[int(0.99 * (len(self.imports) - 1))] * 1000, 1) if self.imports else 0,
            "errors": len(self.errors) + len(self.import_errors),
            "mcp_session_restarts": self.session_restarts,
            "error_samples": (self.errors + self.import_errors)[:5],
            "distinct_requests_compared": len(compared),
            "every_request_answered_by_every_server": all(live <= set(v) for v in compared.values()),
            "mismatches": mismatches[:10],
            "mismatch_count": len(mismatches),
            "writes_acknowledged": len(self.writes),
            "distinct_snapshots_written": len({snapshot for snapshot, _, _ in self.writes}),
            "writes_acknowledged_by_killed_server": sum(1 for _, _, s in self.writes if s in self.dead),
            "writes_lost": len(lost_writes),
            "lost_samples": lost_writes[:5],
            "killed_server": sorted(self.dead),
            "unacknowledged_in_flight_at_kill": self.unacknowledged,
        }
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0 if report["errors"] == 0 and not mismatches and not lost_writes else 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--servers", required=True)
    parser.add_argument("--workspace", default="repo")
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--ctx", required=True)
    parser.add_argument("--hosts", required=True)
    parser.add_argument("--fixture", required=True)
    parser.add_argument("--seed-run", required=True)
    parser.add_argument("--import-every", type=int, default=20)
    parser.add_argument("--import-parallel", type=int, default=4)
    parser.add_argument("--write-every", type=int, default=10)
    parser.add_argument("--kill-pid", type=int, default=0)
    parser.add_argument("--kill-server", default="")
    parser.add_argument("--kill-after", type=int, default=None)
    args = parser.parse_args()
    load = Load(args)
    try:
        code = asyncio.run(load.main())
    finally:
        # The imports' transcripts are removed one by one; the directory goes last.
        shutil.rmtree(load.tmp, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
