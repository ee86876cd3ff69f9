#!/usr/bin/env python3
"""A file-localization dev set from real git histories: commits that fix a linked issue.

For each repository, the newest non-merge commits whose message says it fixes, closes or
resolves `#N` and that change 1 to 3 existing non-test, non-doc source files become issues
(commits whose cleaned message has fewer than 3 words, or that touch no source file, are
skipped): the query is the commit message (issue references and trailers removed), the gold
is those files, and the tree is the repository at the commit's parent (exported with `git
archive` and committed once, like localize.py's trees, so no history leaks into the ranking).

`build` also writes WORK/gold-lines.json, in the format of the devset's django-gold-lines.json
(`{id: [{"path", "hunks": [{"lines", "texts"}]}]}`), from `git diff -U0 parent commit` of the
gold files: per hunk, the lines the fix removes (blank ones left out) with their line numbers in
the tree, or, for a hunk that only adds, the nearest non-blank line at or before the insertion
point (after it, at the top of a file). A hunk with no such line is left out; an issue with no
hunk left gets `[]` (it still counts for localization, not for coverage).

  history-devset.py build WORK GIT_DIR[:N] ...   # writes WORK/issues.json, gold-lines.json, trees
  history-devset.py run WORK CTX [-- EXTRA SELECT ARGS]   # rankings on stdout, metrics on stderr
  history-devset.py coverage WORK CTX [--budgets 2000,8000,32000] [-- EXTRA SELECT ARGS]

`run` reports recall@1/5/10 (every gold file within the top k of `--budget 2000000`) and MRR
(rank of the last gold file), overall and per repository. `coverage` asks, as the devset's
coverage.py does, whether `ctx select QUERY --budget B --json` shows the code the fix changes:
`code` is the mean over issues of the share of hunks whose texts all appear verbatim (whole
lines, trailing whitespace ignored) in the `content` shown for that file, `code_all` the share
of issues with every hunk shown, `file` the share with every gold file among the shown
documents, and `top_shown` the share whose top-ranked document (the first of `--budget
2000000`; vacuously true when that ranking is empty) is among those shown at B; also the
median select time. Per-issue rows on stdout.

Git directories come from `fetch github:owner/name` (e.g. /work/.mirror/sharkdp+hyperfine/repo).
The fetched data and the trees are not committed; this script is how to rebuild them."""
import json, os, re, subprocess, sys, time

FIX = re.compile(r"\b(fix(es|ed)?|close[sd]?|resolve[sd]?)\s*:?\s+(\S+/\S+)?#\d+", re.I)
TRAILER = re.compile(r"^(signed-off-by|co-authored-by|reviewed-by|pr-url|closes|fixes|fixed|resolves|refs?|see)\b.*$", re.I | re.M)
REF = re.compile(r"\(?\b(fix(es|ed)?|close[sd]?|resolve[sd]?)\s*:?\s+(\S+/\S+)?#\d+\)?,?|[ \t]*\(#\d+\)", re.I)
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
SOURCE_EXT = {".rs", ".go", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".py", ".c", ".h", ".cc", ".cpp", ".java"}


def is_context(path):
    """Tests, docs, examples, benches, changelogs: not what a fix is about."""
    parts = path.lower().split("/")
    name = parts[-1]
    dirs = parts[:-1]
    if any(d in ("test", "tests", "testdata", "spec", "specs", "examples", "example", "benches", "bench", "docs", "doc", "fixtures", "__tests__") for d in dirs):
        return True
    stem = name.split(".")[0]
    if stem in ("test", "tests", "spec", "bench", "benchmark", "benchmarks"):
        return True
    if stem.startswith("test_") or stem.endswith("_test") or ".test." in name or ".spec." in name or ".test-d." in name:
        return True
    return os.path.splitext(name)[1] not in SOURCE_EXT


def git(gitdir, *args):
    return subprocess.run(["git", "--git-dir", gitdir, *args], check=True, capture_output=True,
                          text=True, errors="replace").stdout


def gold_lines(gitdir, parent, sha, files):
    """Per gold file, per `-U0` hunk: the removed non-blank lines, or for a pure addition the
    nearest non-blank line of the parent around the insertion point (see the docstring)."""
    diff = git(gitdir, "-c", "core.quotePath=false", "diff", "-U0", "--no-color", "--no-ext-diff",
               "--no-renames", parent, sha, "--", *files)
    hunks, path, old_left, new_left, lineno = {}, None, 0, 0, 0
    for line in diff.split("\n"):
        if line.startswith("\\"):
            continue
        if old_left or new_left:
            if line.startswith("-"):
                if line[1:].strip():
                    hunks[path][-1]["lines"].append(lineno)
                    hunks[path][-1]["texts"].append(line[1:].rstrip())
                lineno += 1
                old_left -= 1
            elif line.startswith("+"):
                new_left -= 1
            continue
        if line.startswith("diff --git "):
            path = None
        elif line.startswith("--- "):
            path = line[6:] if line.startswith("--- a/") and line[6:] in files else None
        elif path and HUNK.match(line):
            m = HUNK.match(line)
            start, old_left = int(m[1]), int(m[2] if m[2] is not None else 1)
            new_left = int(m[4] if m[4] is not None else 1)
            lineno = start
            hunks.setdefault(path, []).append(dict(lines=[], texts=[], add_after=None if old_left else start))
    out = []
    for path in sorted(hunks):
        parent_lines = None
        kept = []
        for h in hunks[path]:
            if h["add_after"] is not None:
                if parent_lines is None:
                    parent_lines = git(gitdir, "show", f"{parent}:{path}").split("\n")
                after = h["add_after"]
                order = list(range(after, 0, -1)) + list(range(after + 1, len(parent_lines) + 1))
                n = next((i for i in order if parent_lines[i - 1].strip()), None)
                if n is not None:
                    h["lines"], h["texts"] = [n], [parent_lines[n - 1].rstrip()]
            if h["texts"]:
                kept.append(dict(lines=h["lines"], texts=h["texts"]))
        if kept:
            out.append(dict(path=path, hunks=kept))
    return out


def clean_message(msg):
    msg = TRAILER.sub("", msg)
    msg = REF.sub("", msg)
    return "\n".join(l.rstrip() for l in msg.strip().splitlines()).strip()


def build(work, specs):
    os.makedirs(work, exist_ok=True)
    issues, lines = [], {}
    for spec in specs:
        gitdir, _, limit = spec.partition(":")
        limit = int(limit or 20)
        path = gitdir.rstrip("/")
        repo = os.path.basename(os.path.dirname(path) if path.endswith("/repo") else path).split("+")[-1]
        log = git(gitdir, "log", "--no-merges", "--format=%H%x00%P%x00%B%x1e", "HEAD")
        taken = 0
        for record in log.split("\x1e"):
            if taken >= limit:
                break
            fields = record.strip("\n").split("\x00")
            if len(fields) != 3:
                continue
            sha, parents, message = fields
            parents = parents.split()
            if len(parents) != 1 or not FIX.search(message):
                continue
            changed = git(gitdir, "diff-tree", "--no-commit-id", "-r", "--name-status", parents[0], sha).splitlines()
            modified = [l.split("\t", 1)[1] for l in changed if l.startswith("M\t")]
            gold = [p for p in modified if not is_context(p)]
            if not 1 <= len(gold) <= 3:
                continue
            query = clean_message(message)
            if len(query.split()) < 3:
                continue
            tree = f"{repo}-{sha[:10]}"
            dest = os.path.join(work, tree)
            if not os.path.isdir(dest):
                os.makedirs(dest)
                archive = subprocess.run(["git", "--git-dir", gitdir, "archive", parents[0]], check=True, capture_output=True).stdout
                subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
                for cmd in (["init", "-q"], ["add", "-A"],
                            ["-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-qm", tree]):
                    subprocess.run(["git", "-C", dest] + cmd, check=True, capture_output=True)
            issues.append(dict(id=f"{repo}@{sha[:10]}", tree=tree, query=query, gold=sorted(gold)))
            lines[issues[-1]["id"]] = gold_lines(gitdir, parents[0], sha, gold)
            taken += 1
        print(repo, taken, "issues", file=sys.stderr)
    with open(os.path.join(work, "issues.json"), "w") as f:
        json.dump(issues, f, indent=1)
    with open(os.path.join(work, "gold-lines.json"), "w") as f:
        json.dump(lines, f, indent=1, sort_keys=True)
    print(sum(1 for v in lines.values() if v), "issues with gold lines", file=sys.stderr)


def metrics(rows):
    def rank(gold, ranked):
        pos = [ranked.index(g) + 1 if g in ranked else None for g in gold]
        return None if None in pos else max(pos)
    ranks = [rank(g, r) for _, g, r in rows]
    n = len(ranks)
    out = {f"recall_at_{k}": round(sum(1 for x in ranks if x and x <= k) / n, 3) for k in (1, 5, 10)}
    out["mrr"] = round(sum(1 / x for x in ranks if x) / n, 3)
    out["n"] = n
    return out


def select(work, ctx, inst, budget, extra):
    """The documents of `ctx select QUERY --budget BUDGET --json` in the issue's tree, and the seconds."""
    env = dict(os.environ, NO_COLOR="1", CTX_HOME=os.path.join(work, "home"))
    t = time.time()
    p = subprocess.run([ctx, "select", "--budget", str(budget), "--json"] + extra + ["--", inst["query"]],
                       cwd=os.path.join(work, inst["tree"]), env=env, capture_output=True, text=True)
    secs = time.time() - t
    try:
        return json.loads(p.stdout).get("documents", []), secs
    except ValueError:
        print(inst["id"], budget, "failed:", p.stderr.strip()[-200:], file=sys.stderr)
        return [], secs


def run(work, ctx, extra):
    issues = json.load(open(os.path.join(work, "issues.json")))
    rows, times, per_repo, results = [], [], {}, []
    for inst in issues:
        docs, secs = select(work, ctx, inst, 2000000, extra)
        times.append(secs)
        ranked = [d["id"] for d in docs]
        row = (inst["id"], inst["gold"], ranked)
        rows.append(row)
        per_repo.setdefault(inst["id"].split("@")[0], []).append(row)
        results.append(dict(id=inst["id"], gold=inst["gold"], ranked=ranked[:20]))
    json.dump(results, sys.stdout, indent=1)
    m = metrics(rows)
    m["median_select_s"] = round(sorted(times)[len(times) // 2], 3)
    m["per_repo"] = {repo: metrics(r) for repo, r in sorted(per_repo.items())}
    print(json.dumps(m), file=sys.stderr)


def shown_score(gold, gold_files, docs, top):
    """coverage.py's score (code, code_all, file) plus top_shown, and which hunks were shown."""
    by_path = {d.get("id"): {l.rstrip() for l in (d.get("content") or "").splitlines()} for d in docs}
    hit = [all(t.rstrip() in by_path.get(f["path"], ()) for t in h["texts"]) for f in gold_files for h in f["hunks"]]
    return dict(code=sum(hit) / len(hit), code_all=all(hit), file=all(g in by_path for g in gold),
                top_shown=top is None or top in by_path, hunks_shown=hit)


def coverage_metrics(rows, budgets):
    n = len(rows)
    out = {}
    for b in budgets:
        got = [r[str(b)] for r in rows]
        out[str(b)] = {k: round(sum(g[k] for g in got) / n, 3) for k in ("code", "code_all", "file", "top_shown")}
        out[str(b)]["median_select_s"] = round(sorted(g["secs"] for g in got)[n // 2], 3)
    out["n"] = n
    return out


def coverage(work, ctx, budgets, extra):
    issues = json.load(open(os.path.join(work, "issues.json")))
    lines = json.load(open(os.path.join(work, "gold-lines.json")))
    rows = []
    for inst in issues:
        if not lines.get(inst["id"]):
            continue
        full, _ = select(work, ctx, inst, 2000000, extra)
        top = full[0]["id"] if full else None
        row = dict(id=inst["id"], gold=inst["gold"], top=top)
        for b in budgets:
            docs, secs = select(work, ctx, inst, b, extra)
            row[str(b)] = dict(shown_score(inst["gold"], lines[inst["id"]], docs, top), secs=round(secs, 3),
                               shown=[d.get("id") for d in docs], views=[d.get("view") for d in docs])
        rows.append(row)
    json.dump(rows, sys.stdout, indent=1)
    m = coverage_metrics(rows, budgets)
    per_repo = {}
    for r in rows:
        per_repo.setdefault(r["id"].split("@")[0], []).append(r)
    m["per_repo"] = {repo: coverage_metrics(r, budgets) for repo, r in sorted(per_repo.items())}
    print(json.dumps(m), file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1:2] == ["build"] and len(sys.argv) > 3:
        build(sys.argv[2], sys.argv[3:])
    elif sys.argv[1:2] == ["run"] and len(sys.argv) > 3:
        args = sys.argv[4:]
        run(sys.argv[2], os.path.abspath(sys.argv[3]), args[args.index("--") + 1:] if "--" in args else [])
    elif sys.argv[1:2] == ["coverage"] and len(sys.argv) > 3:
        args = sys.argv[4:]
        extra = args[args.index("--") + 1:] if "--" in args else []
        args = args[:args.index("--")] if "--" in args else args
        budgets = [int(x) for x in (args[args.index("--budgets") + 1].split(",")
                                    if "--budgets" in args else ["2000", "8000", "32000"])]
        coverage(sys.argv[2], os.path.abspath(sys.argv[3]), budgets, extra)
    else:
        sys.exit(__doc__)
