#!/usr/bin/env python3
"""A file-localization dev set from real git histories: commits that fix a linked issue.

For each repository, the newest non-merge commits whose message says it fixes, closes or
resolves `#N` and that change 1 to 3 existing non-test, non-doc source files become issues:
the query is the commit message (issue references and trailers removed), the gold is those
files, and the tree is the repository at the commit's parent (exported with `git archive`
and committed once, like localize.py's trees, so no history leaks into the ranking).

  history-devset.py build WORK GIT_DIR[:N] ...   # writes WORK/issues.json and the trees
  history-devset.py run WORK CTX [-- EXTRA SELECT ARGS]   # metrics on stderr, as localize.py

Git directories come from `fetch github:owner/name` (e.g. /work/.mirror/BurntSushi+ripgrep/repo).
The fetched data and the trees are not committed; this script is how to rebuild them."""
import json, os, re, subprocess, sys, time

FIX = re.compile(r"\b(fix(es|ed)?|close[sd]?|resolve[sd]?)\s*:?\s+(\S+/\S+)?#\d+", re.I)
TRAILER = re.compile(r"^(signed-off-by|co-authored-by|reviewed-by|pr-url|closes|fixes|fixed|resolves|refs?|see)\b.*$", re.I | re.M)
REF = re.compile(r"\(?\b(fix(es|ed)?|close[sd]?|resolve[sd]?)\s*:?\s+(\S+/\S+)?#\d+\)?,?", re.I)
SOURCE_EXT = {".rs", ".go", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".py", ".c", ".h", ".cc", ".cpp", ".java"}


def is_context(path):
    """Tests, docs, examples, benches, changelogs: not what a fix is about."""
    parts = path.lower().split("/")
    name = parts[-1]
    dirs = parts[:-1]
    if any(d in ("test", "tests", "testdata", "spec", "specs", "examples", "example", "benches", "bench", "docs", "doc", "fixtures", "__tests__") for d in dirs):
        return True
    stem = name.split(".")[0]
    if stem.startswith("test_") or stem.endswith("_test") or ".test." in name or ".spec." in name:
        return True
    return os.path.splitext(name)[1] not in SOURCE_EXT


def git(gitdir, *args):
    return subprocess.run(["git", "--git-dir", gitdir, *args], check=True, capture_output=True, text=True).stdout


def clean_message(msg):
    msg = TRAILER.sub("", msg)
    msg = REF.sub("", msg)
    return "\n".join(l.rstrip() for l in msg.strip().splitlines()).strip()


def build(work, specs):
    os.makedirs(work, exist_ok=True)
    issues = []
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
            taken += 1
        print(repo, taken, "issues", file=sys.stderr)
    with open(os.path.join(work, "issues.json"), "w") as f:
        json.dump(issues, f, indent=1)


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


def run(work, ctx, extra):
    issues = json.load(open(os.path.join(work, "issues.json")))
    env = dict(os.environ, NO_COLOR="1", CTX_HOME=os.path.join(work, "home"))
    rows, times, per_repo = [], [], {}
    for inst in issues:
        t = time.time()
        p = subprocess.run([ctx, "select", "--budget", "2000000", "--json"] + extra + ["--", inst["query"]],
                           cwd=os.path.join(work, inst["tree"]), env=env, capture_output=True, text=True)
        times.append(time.time() - t)
        try:
            ranked = [d["id"] for d in json.loads(p.stdout).get("documents", [])]
        except ValueError:
            ranked = []
            print(inst["id"], "failed:", p.stderr.strip()[-200:], file=sys.stderr)
        row = (inst["id"], inst["gold"], ranked)
        rows.append(row)
        per_repo.setdefault(inst["id"].split("@")[0], []).append(row)
    m = metrics(rows)
    m["median_select_s"] = round(sorted(times)[len(times) // 2], 3)
    m["per_repo"] = {repo: metrics(r) for repo, r in sorted(per_repo.items())}
    print(json.dumps(m), file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1:2] == ["build"] and len(sys.argv) > 3:
        build(sys.argv[2], sys.argv[3:])
    elif sys.argv[1:2] == ["run"] and len(sys.argv) > 3:
        args = sys.argv[4:]
        run(sys.argv[2], os.path.abspath(sys.argv[3]), args[args.index("--") + 1:] if "--" in args else [])
    else:
        sys.exit(__doc__)
