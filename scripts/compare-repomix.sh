#!/usr/bin/env bash
# Packs one directory with repomix and with `ctx pack` (the same files, markdown style) and
# counts both payloads with ctx's o200k_base tokenizer.
#
#   scripts/compare-repomix.sh DIR [WORK]
#
# Needs `repomix` (npm install repomix; set REPOMIX to its path) and a `ctx` binary (set CTX).
# The files are the ones repomix packed (its `## File:` headers), handed to `ctx pack --stdin`,
# so both outputs cover the same files. Example on Django 5.1's sources:
#   pip download django==5.1 --no-deps --no-binary :all: -d /tmp/dj && tar xzf /tmp/dj/Django-5.1.tar.gz -C /tmp/dj
#   scripts/compare-repomix.sh /tmp/dj/Django-5.1
set -euo pipefail

dir=$(cd "${1:?usage: compare-repomix.sh DIR [WORK]}" && pwd)
work=${2:-$(mktemp -d)}
repomix=${REPOMIX:-repomix}
ctx=${CTX:-ctx}
mkdir -p "$work"

(cd "$dir" && "$repomix" --style markdown --quiet -o "$work/repomix.md" .)
sed -n 's/^## File: //p' "$work/repomix.md" > "$work/files.txt"

# No budget cut and repomix's size limit (50 MB), so nothing is left out for size alone.
(cd "$dir" && CTX_MAX_FILE_BYTES=52428800 "$ctx" -q pack --stdin --style markdown \
    --budget 1000000000 -o "$work/ctx.md" < "$work/files.txt")

tokens() { "$ctx" --json tokens "$1" | sed -n 's/.*"tokens": *\([0-9]*\).*/\1/p' | head -n 1; }
repomix_tokens=$(tokens "$work/repomix.md")
ctx_tokens=$(tokens "$work/ctx.md")
files=$(wc -l < "$work/files.txt")
ctx_files=$(grep -c '^## .* (\(empty\|[0-9]* lines\?\))$' "$work/ctx.md" || true)

echo "files: repomix $files, ctx $ctx_files"
echo "bytes: repomix $(wc -c < "$work/repomix.md"), ctx $(wc -c < "$work/ctx.md")"
echo "o200k_base tokens: repomix $repomix_tokens, ctx $ctx_tokens"
if [ "$ctx_tokens" -le "$repomix_tokens" ]; then
    echo "ok: ctx's payload is not larger ($((repomix_tokens - ctx_tokens)) tokens smaller)"
else
    echo "ctx's payload is larger by $((ctx_tokens - repomix_tokens)) tokens" >&2
    exit 1
fi
