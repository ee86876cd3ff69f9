#!/usr/bin/env bash
# Start-up time of commands that count nothing (no tokenizer is built) against one that counts,
# and the release binary's size. Needs hyperfine (apt-get install hyperfine).
# Usage: scripts/bench-startup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --release -p ctx-cli
ctx="$(pwd)/target/release/ctx"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
HOME="$tmp" "$ctx" -C "$tmp" init >/dev/null
export HOME="$tmp"
hyperfine -N --warmup 10 --runs 100 \
  "$ctx --version" \
  "$ctx -C $tmp config list" \
  "$ctx -C $tmp store verify" \
  "$ctx -C $tmp tokens --tokenizer approx $(pwd)/README.md" \
  "$ctx -C $tmp tokens $(pwd)/README.md"
echo "release binary: $(du -h "$ctx" | cut -f1) ($ctx)"
