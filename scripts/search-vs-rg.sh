#!/usr/bin/env bash
# `ctx search` against ripgrep on a real tree: the matches must be equal (path, line, column,
# text) for a literal and a regex, and the wall times are compared (best of 5, same run).
#
# Usage: scripts/search-vs-rg.sh [DIR] [CTX_BINARY]
#   DIR defaults to the cargo registry sources; CTX_BINARY to target/release/ctx. LITERAL and
#   REGEX replace the patterns (`unsafe fn`, `fn [a-z_]+_mut\(`).
# ripgrep gets ctx's default ignores as globs (dependency/build dirs, minified bundles) and
# --no-require-git (ctx applies .gitignore files outside repositories too).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$(ls -d "$HOME"/.cargo/registry/src/*/ | head -1)}"
ctx="${2:-$here/target/release/ctx}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CTX_HOME="$work/ctx-home"
cd "$dir"

globs=()
for d in .git .hg .svn .ctx node_modules target dist build .venv venv __pycache__ .mypy_cache .pytest_cache .tox .next .gradle; do
  globs+=(-g "!$d/")
done
for s in .min.js .min.mjs .min.cjs .min.css .bundle.js .js.map .css.map; do
  globs+=(-g "!*$s")
done
rg_base=(rg --no-require-git -n --column --no-heading --with-filename --color never "${globs[@]}")

compare() { # name, ctx args..., -- rg args...
  local name="$1"; shift
  local ctx_args=() rg_args=()
  while [[ "$1" != "--" ]]; do ctx_args+=("$1"); shift; done; shift
  rg_args=("$@")
  "$ctx" "${ctx_args[@]}" >"$work/ctx.txt" || true
  "${rg_base[@]}" "${rg_args[@]}" . </dev/null >"$work/rg.txt" 2>/dev/null || true
  python3 - "$work/ctx.txt" "$work/rg.txt" "$name" <<'PY'
import sys
def load(path, sep):
    out = set()
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            parts = line.split(":", 3)
            if len(parts) < 4:
                continue
            p, l, c, t = parts
            if sep and t.startswith(" "):
                t = t[1:]
            out.add((p.removeprefix("./"), int(l), int(c), t.rstrip("\r")))
    return out
ctx = load(sys.argv[1], True)
rg = load(sys.argv[2], False)
name = sys.argv[3]
only_ctx, only_rg = ctx - rg, rg - ctx
status = "EQUAL" if not only_ctx and not only_rg else "DIFFERENT"
print(f"{name}: ctx {len(ctx)} matches, rg {len(rg)} matches: {status}")
for label, items in (("only ctx", only_ctx), ("only rg", only_rg)):
    for item in sorted(items)[:5]:
        print(f"  {label}: {item[0]}:{item[1]}:{item[2]}")
PY
}

literal="${LITERAL:-unsafe fn}"
regex="${REGEX:-fn [a-z_]+_mut\(}"
compare "literal '$literal'" search "$literal" -- -F "$literal"
compare "regex '$regex'" search --regex "$regex" -- "$regex"

timeit() { python3 - "$@" <<'PY'
import subprocess, sys, time
best = None
for _ in range(5):
    s = time.perf_counter()
    subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    e = time.perf_counter() - s
    best = e if best is None else min(best, e)
print(f"{best:.4f}")
PY
}
for pat in "$literal" "$regex"; do
  if [[ "$pat" == "$literal" ]]; then cargs=(search "$pat"); rargs=(-F "$pat"); else cargs=(search --regex "$pat"); rargs=("$pat"); fi
  r=$(timeit "${rg_base[@]}" "${rargs[@]}" .)
  c=$(timeit "$ctx" "${cargs[@]}")
  python3 -c 'import sys; p, r, c = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]); print(f"time {p!r}: rg {r:.3f}s, ctx {c:.3f}s, ratio {c / r:.2f}x")' "$pat" "$r" "$c"
done
