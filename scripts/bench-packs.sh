#!/usr/bin/env bash
# Whole-repo pack with exact token counts: ctx against code2prompt and repomix, same repo, same run.
#
# Usage: scripts/bench-packs.sh [REPO]
#   REPO defaults to Django 5.1.4's source (from PyPI), committed into a git repo under
#   target/bench/. Tools come from the registries: `cargo install code2prompt` and
#   `npm install repomix` into target/bench/tools (set C2P / REPOMIX to use others).
# Prints wall time and peak memory of each run (GNU time), cold and warm.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
bench="$top/target/bench"
tools="$bench/tools"
mkdir -p "$bench" "$tools"

repo=${1:-}
if [ -z "$repo" ]; then
  repo="$bench/django"
  if [ ! -d "$repo/.git" ]; then
    rm -rf "$repo" "$bench/dl" && mkdir -p "$bench/dl"
    pip download --quiet --no-deps --no-binary :all: django==5.1.4 -d "$bench/dl"
    tar --no-same-owner -xzf "$bench"/dl/Django-5.1.4.tar.gz -C "$bench"
    mv "$bench/Django-5.1.4" "$repo"
    git -C "$repo" init -q
    git -C "$repo" add -A
    git -C "$repo" -c user.name=bench -c user.email=bench@example.com commit -qm import
  fi
fi
repo=$(cd "$repo" && pwd)

C2P=${C2P:-$(command -v code2prompt || echo "$tools/bin/code2prompt")}
if [ ! -x "$C2P" ]; then cargo install --quiet code2prompt --root "$tools"; C2P="$tools/bin/code2prompt"; fi
REPOMIX=${REPOMIX:-$tools/node_modules/.bin/repomix}
if [ ! -x "$REPOMIX" ]; then npm install --silent --prefix "$tools" repomix >/dev/null; fi

cargo build --quiet --release -p ctx-cli
ctx="$top/target/release/ctx"

files=$(git -C "$repo" ls-files | wc -l)
size=$(du -sh --exclude=.git "$repo" | cut -f1)
echo "repo: $repo ($files files, $size)"

out=$(mktemp -d)
measure() { # label, command...
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$out/time" "$@" >/dev/null 2>"$out/stderr" || { echo "$label failed:"; cat "$out/stderr"; return 1; }
  read -r secs kb < "$out/time"
  printf '%-28s %7.2f s  %6d MB peak\n' "$label" "$secs" $((kb / 1024))
}

# A fresh project store inside the repo (the walker skips .ctx): the token cache starts empty.
rm -rf "$repo/.ctx"
"$ctx" -C "$repo" init >/dev/null
# cl100k_base, the encoding code2prompt counts with; both count exactly.
"$ctx" -C "$repo" pack create all --budget 1000000000 --tokenizer cl100k_base >/dev/null
"$ctx" -C "$repo" pack add all 'glob:**/*' >/dev/null 2>&1

measure "ctx cold (empty cache)" "$ctx" -C "$repo" --json pack preview all --tokens
measure "ctx warm (token cache)" "$ctx" -C "$repo" --json pack preview all --tokens
measure "ctx warm, payload to file" "$ctx" -C "$repo" pack render all -o "$out/ctx.md"
measure "code2prompt (cl100k)" "$C2P" "$repo" --output-file "$out/c2p.md" --encoding cl100k --token-format raw --quiet
measure "code2prompt again" "$C2P" "$repo" --output-file "$out/c2p.md" --encoding cl100k --token-format raw --quiet
measure "repomix cold" "$REPOMIX" "$repo" --output "$out/repomix.xml" --quiet
measure "repomix warm" "$REPOMIX" "$repo" --output "$out/repomix.xml" --quiet
measure "cat of every file" sh -c "cd '$repo' && git ls-files -z | xargs -0 cat"
rm -rf "$repo/.ctx" "$out"
