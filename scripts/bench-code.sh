#!/usr/bin/env bash
# Code-intelligence figures on a real tree, each against its reference tool in the same run:
#   - whole-tree symbols: `ctx --json summarize DIR --depth 64` cold (empty cache) and warm
#     (cache hit) against `ctags -R` (single-threaded; ctx uses every core);
#   - `ctx --json map` cold and warm;
#   - `ctx search` against ripgrep for a literal and a regex (ratio of best wall times; the
#     matches themselves are compared by scripts/search-vs-rg.sh, run at the end);
#   - `ctx related FILE` (warm).
# The machine load (`uptime`) is printed with the figures: other work on the cores skews them.
#
# Usage: scripts/bench-code.sh [DIR] [CTX_BINARY]
#   DIR defaults to the cargo registry sources; CTX_BINARY to target/release/ctx
#   (`cargo build --release -p ctx-cli`). RUNS (default 3) sets the repetitions; each figure
#   is the best of them. Needs universal-ctags, ripgrep and python3.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$(ls -d "$HOME"/.cargo/registry/src/*/ | head -1)}"
ctx="${2:-$here/target/release/ctx}"
runs="${RUNS:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CTX_HOME="$work/ctx-home"
for tool in ctags rg python3; do
  command -v "$tool" >/dev/null || { echo "bench-code: $tool is not installed (apt-get install universal-ctags ripgrep python3)" >&2; exit 2; }
done
[[ -x "$ctx" ]] || { echo "bench-code: no ctx binary at $ctx (cargo build --release -p ctx-cli)" >&2; exit 2; }
cd "$dir"

# Seconds of wall time of one run of a command, output discarded.
once() { python3 - "$@" <<'PY'
import subprocess, sys, time
s = time.perf_counter()
subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(f"{time.perf_counter() - s:.4f}")
PY
}
best() { python3 -c 'import sys; print(min(float(x) for x in sys.argv[1:]))' "$@"; }
ratio() { python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f"{a / b:.2f}x")' "$1" "$2"; }

echo "tree: $dir ($(nproc) cores)"
echo "load before: $(uptime)"

ctags_t=(); cold=(); warm=(); map_cold=(); map_warm=()
for _ in $(seq "$runs"); do
  ctags_t+=("$(once ctags -R -f "$work/tags" .)")
  rm -rf "$CTX_HOME"
  cold+=("$(once "$ctx" --json summarize . --depth 64)")
  warm+=("$(once "$ctx" --json summarize . --depth 64)")
  rm -rf "$CTX_HOME"
  map_cold+=("$(once "$ctx" --json map .)")
  map_warm+=("$(once "$ctx" --json map .)")
done
files=$("$ctx" --compact summarize . --depth 64 2>/dev/null | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["files"]))')
echo "source files ctx summarizes: $files"
c=$(best "${ctags_t[@]}"); k=$(best "${cold[@]}"); w=$(best "${warm[@]}")
echo "ctags -R:                  ${c}s"
echo "summarize --depth, cold:   ${k}s  ($(ratio "$k" "$c") ctags)"
# Each cold run against the ctags run just before it (the machine's load drifts between runs).
pairs=()
for i in "${!cold[@]}"; do pairs+=("$(ratio "${cold[$i]}" "${ctags_t[$i]}")"); done
echo "  cold / ctags, run by run: ${pairs[*]}"
echo "summarize --depth, warm:   ${w}s  ($(ratio "$w" "$c") ctags)"
echo "map, cold:                 $(best "${map_cold[@]}")s"
echo "map, warm:                 $(best "${map_warm[@]}")s"

# ripgrep with ctx's default ignores (as scripts/search-vs-rg.sh).
globs=()
for d in .git .hg .svn .ctx node_modules target dist build .venv venv __pycache__ .mypy_cache .pytest_cache .tox .next .gradle; do
  globs+=(-g "!$d/")
done
for s in .min.js .min.mjs .min.cjs .min.css .bundle.js .js.map .css.map; do
  globs+=(-g "!*$s")
done
rg_base=(rg --no-require-git -n --column --no-heading --with-filename --color never "${globs[@]}")
for mode in literal regex; do
  if [[ $mode == literal ]]; then pat="unsafe fn"; cargs=(search "$pat"); rargs=(-F "$pat")
  else pat='fn [a-z_]+_mut\('; cargs=(search --regex "$pat"); rargs=("$pat"); fi
  rt=(); ct=()
  for _ in $(seq $((runs + 2))); do
    rt+=("$(once "${rg_base[@]}" "${rargs[@]}" .)")
    ct+=("$(once "$ctx" "${cargs[@]}" .)")
  done
  r=$(best "${rt[@]}"); x=$(best "${ct[@]}")
  echo "search $mode '$pat': rg ${r}s, ctx ${x}s ($(ratio "$x" "$r") rg)"
done

# related: the first Rust or Python file with imports, on the warm cache.
target=$("$ctx" --compact summarize . --depth 64 2>/dev/null | python3 -c '
import json, sys
for f in json.load(sys.stdin)["files"]:
    if f["imports"]:
        print(f["path"]); break')
if [[ -n "$target" ]]; then
  rel=(); for _ in $(seq "$runs"); do rel+=("$(once "$ctx" --json related "$target")"); done
  echo "related $target (warm): $(best "${rel[@]}")s"
fi
echo "load after: $(uptime)"
echo
"$here/scripts/search-vs-rg.sh" "$dir" "$ctx" | grep -E 'EQUAL|DIFFERENT|only'
