#!/usr/bin/env bash
# Symbol recall of ctx against universal-ctags on a tree, per language, plus the time of
# both on the same file list (ctx cold = empty summary cache, warm = second run).
#
# Usage: scripts/symbol-recall.sh [DIR] [CTX_BINARY]
#   DIR defaults to the cargo registry sources; CTX_BINARY to target/release/ctx.
# Needs: universal-ctags (`apt-get install universal-ctags`), python3.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$(ls -d "$HOME"/.cargo/registry/src/*/ | head -1)}"
ctx="${2:-$here/target/release/ctx}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CTX_HOME="$work/ctx-home"

cd "$dir"
# The files ctx summarizes (its walker: gitignore rules, default ignores), for ctags too.
"$ctx" --compact summarize . >"$work/cold.json" 2>/dev/null
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for f in d["files"]:
    print(f["path"])
' "$work/cold.json" >"$work/files.txt"
echo "files summarized by ctx: $(wc -l <"$work/files.txt") (under $dir)"

ctags --output-format=json --fields=+nKle -L "$work/files.txt" -f "$work/tags.json" 2>/dev/null
python3 "$here/scripts/symbol_recall.py" "$work/cold.json" "$work/tags.json"

# Timing: best of 3 for ctags and warm ctx; cold ctx with a fresh cache each time.
best() { python3 -c 'import sys; print(min(float(x) for x in sys.argv[1:]))' "$@"; }
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); python3 -c "print($e-$s)"; }
ct=(); cold=(); warm=()
for _ in 1 2 3; do
  ct+=("$(t ctags --fields=+nKle -L "$work/files.txt" -f "$work/tags.out")")
  rm -rf "$CTX_HOME"
  cold+=("$(t "$ctx" --compact summarize .)")
  warm+=("$(t "$ctx" --compact summarize .)")
done
c=$(best "${ct[@]}"); k=$(best "${cold[@]}"); w=$(best "${warm[@]}")
python3 -c "
c, k, w = $c, $k, $w
print(f'ctags -L (same files): {c:.3f}s')
print(f'ctx summarize cold:    {k:.3f}s  ({k / c:.2f}x ctags)')
print(f'ctx summarize warm:    {w:.3f}s  ({w / c:.2f}x ctags)')
"
