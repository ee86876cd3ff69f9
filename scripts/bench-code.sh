#!/usr/bin/env bash
# ctx against the reference tools, same run, same corpora, as ratios (absolute times on a
# shared machine are noise):
#   - symbols: `ctx --json summarize DIR --depth 64`, cold (empty cache) and warm, against
#     `ctags -R` (universal-ctags, one thread; ctx uses every core); `ctx --json map`;
#   - search: `ctx search` against ripgrep, a literal and a regex (the matches themselves are
#     compared by scripts/search-vs-rg.sh);
#   - packs: `ctx pack render -o FILE` of `glob:**/*` cold (fresh store: every block is
#     tokenized) and warm (token cache), against code2prompt, repomix and yek, and against
#     the read floor (`cat` of every file the walk lists);
#   - `ctx related FILE` (warm) and `ctx index build` (fresh store).
# Every tool writes its output to a file (ripgrep stops at the first match when its output is
# /dev/null). Each time is the median of RUNS runs (default 3), timed to the microsecond,
# under GNU time, which gives the peak memory (the largest of the runs). The load (`uptime`) is printed: other work
# on the cores skews the figures. The short pairs (search against ripgrep, the warm pack
# against `cat`: tens of milliseconds on a small tree, where a median of three moves by a
# tenth) run alternately, one of each in turn, at least SHORT_RUNS times (default 15): a
# burst of other work then weighs on both sides alike.
#
# Usage: scripts/bench-code.sh [CORPUS...]
#   Corpora default to the sdists (from PyPI, committed into git repos under $BENCH, default
#   target/bench) of sympy 1.13.3 (~2,000 files) and Django 5.1.4 (~6,800), and the cargo
#   registry sources (~/.cargo/registry/src/*).
#   CTX: the binary (default target/profiling/ctx, from `cargo build --profile profiling -p
#   ctx-cli`: release code, thin LTO, symbols kept). C2P, REPOMIX, YEK: the other tools
#   (`cargo install --locked code2prompt yek`, `npm install repomix`); a missing one is
#   skipped with a note. SKIP: a space-separated list of sections to leave out
#   (symbols search packs index). PEER_RUNS: runs of code2prompt, repomix and yek (default
#   RUNS; repomix takes minutes and gigabytes on the registry).
set -euo pipefail
export LC_ALL=C  # EPOCHREALTIME with a decimal point
here="$(cd "$(dirname "$0")/.." && pwd)"
bench="${BENCH:-${CARGO_TARGET_DIR:-$here/target}/bench}"
ctx="${CTX:-${CARGO_TARGET_DIR:-$here/target}/profiling/ctx}"
runs="${RUNS:-3}"
short_runs="${SHORT_RUNS:-15}"
(( short_runs < runs )) && short_runs=$runs
peer_runs="${PEER_RUNS:-$runs}"
skip=" ${SKIP:-} "
for tool in ctags rg python3 git /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "bench-code: $tool is not installed (apt-get install universal-ctags ripgrep python3 git time)" >&2; exit 2; }
done
ctags --version | grep -q 'Universal Ctags' || { echo "bench-code: ctags is not universal-ctags" >&2; exit 2; }
[[ -x "$ctx" ]] || { echo "bench-code: no ctx binary at $ctx (cargo build --profile profiling -p ctx-cli)" >&2; exit 2; }
C2P="${C2P:-$(command -v code2prompt || true)}"
YEK="${YEK:-$(command -v yek || true)}"
REPOMIX="${REPOMIX:-$(command -v repomix || true)}"

corpora=("$@")
if [[ ${#corpora[@]} -eq 0 ]]; then
  # An sdist from PyPI, committed into a git repo under $BENCH.
  sdist() { # NAME VERSION DIR
    local dir="$bench/$3"
    if [[ ! -d "$dir/.git" ]]; then
      rm -rf "$dir" "$bench/dl-$3" && mkdir -p "$bench/dl-$3"
      pip download --quiet --no-deps --no-binary :all: "$1==$2" -d "$bench/dl-$3"
      tar --no-same-owner -xzf "$bench/dl-$3"/*.tar.gz -C "$bench/dl-$3"
      local extracted=("$bench/dl-$3"/*/)
      mv "${extracted[0]}" "$dir"
      git -C "$dir" init -q
      git -C "$dir" add -A
      git -C "$dir" -c user.name=bench -c user.email=bench@example.com commit -qm import
    fi
    echo "$dir"
  }
  # A ~2,000-file Python repo (sympy 1.13.3: 1,982 files, 31 MB), a larger one with many
  # small files (Django 5.1.4: 6,790 files in 3,200 directories, 1,261 of them compiled
  # translations), and the cargo registry sources.
  corpora=("$(sdist sympy 1.13.3 sympy)" "$(sdist django 5.1.4 django)" "$(ls -d "$HOME"/.cargo/registry/src/*/ | head -1)")
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CTX_HOME="$work/ctx-home"

# ripgrep with ctx's default ignores (as scripts/search-vs-rg.sh).
rg_globs=()
for d in .git .hg .svn .ctx node_modules target dist build .venv venv __pycache__ .mypy_cache .pytest_cache .tox .next .gradle; do
  rg_globs+=(-g "!$d/")
done
for s in .min.js .min.mjs .min.cjs .min.css .bundle.js .js.map .css.map; do
  rg_globs+=(-g "!*$s")
done
rg_base=(rg --no-require-git -n --column --no-heading --with-filename --color never "${rg_globs[@]}")

results="$work/results.tsv"
# measure LABEL OUTFILE PREPARE -- COMMAND...: RUNS (PEER_RUNS for the other packers) timed runs, each after PREPARE (a shell
# snippet, untimed); appends "label seconds... peak_kb..." to the results.
measure() {
  local label=$1 outfile=$2 prepare=$3; shift 4
  local times=() peaks=()
  local n=${MEASURE_RUNS:-$runs}
  case "$label" in code2prompt|repomix|yek) n=$peer_runs ;; esac
  for _ in $(seq "$n"); do
    bash -c "$prepare"
    # The wall time to the microsecond (GNU time's %e is rounded to 10 ms, too coarse for
    # runs of a tenth of a second); GNU time gives the peak memory.
    local start=$EPOCHREALTIME
    if ! /usr/bin/time -f "%M" -o "$work/time" "$@" </dev/null >"$outfile" 2>"$work/stderr"; then
      if [[ ! -s "$outfile" ]]; then echo "  $label failed: $(tail -n 3 "$work/stderr")" >&2; return 0; fi
    fi
    local end=$EPOCHREALTIME
    read -r kb < <(tail -n 1 "$work/time")
    times+=("$(python3 -c "print(f'{$end - $start:.4f}')")"); peaks+=("$kb")
  done
  printf '%s\t%s\t%s\n' "$label" "${times[*]}" "${peaks[*]}" >>"$results"
}

report() { # corpus name
  python3 - "$results" "$1" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    # A label measured in turns has a line per turn.
    label, times, peaks = line.rstrip("\n").split("\t")
    seen = runs.setdefault(label, ([], []))
    seen[0].extend(float(t) for t in times.split())
    seen[1].extend(int(k) for k in peaks.split())
rows = {label: (statistics.median(times), max(peaks) // 1024) for label, (times, peaks) in runs.items()}
def ratio(a, b):
    return f"{rows[a][0] / rows[b][0]:.2f}x {b}" if a in rows and b in rows and rows[b][0] > 0 else ""
against = {
    "ctx summarize cold": "ctags", "ctx summarize warm": "ctags",
    "ctx map cold": "ctags", "ctx map warm": "ctags",
    "ctx search literal": "rg literal", "ctx search regex": "rg regex",
    "ctx pack cold": "code2prompt", "ctx pack warm": "cat floor",
}
print(f"{'':28} {'median s':>9} {'peak MB':>8}  ratio")
for label, (secs, mb) in rows.items():
    extra = ratio(label, against[label]) if label in against else ""
    if label == "ctx pack warm":
        extra = ", ".join(x for x in (extra, ratio(label, "repomix"), ratio(label, "yek")) if x)
    if label == "ctx pack cold":
        extra = ", ".join(x for x in (extra, ratio(label, "repomix"), ratio(label, "yek")) if x)
    print(f"{label:28} {secs:9.3f} {mb:8d}  {extra}")
PY
}

for dir in "${corpora[@]}"; do
  dir="$(cd "$dir" && pwd)"
  : >"$results"
  rm -rf "$dir/.ctx"
  # A store above the corpus (such as a default global store ~/.ctx above ~/.cargo) would be
  # found as its project store, and "cold" runs would be warm.
  up="$(dirname "$dir")"
  while [[ "$up" != / ]]; do
    if [[ -d "$up/.ctx" ]]; then
      echo "bench-code: $up/.ctx lies above $dir and would serve as its store; copy the corpus elsewhere" >&2
      exit 2
    fi
    up="$(dirname "$up")"
  done
  files=$(cd "$dir" && "${rg_base[@]}" --files . | wc -l)
  echo "== $dir: $files files (ctx's walk), $(du -sh --exclude=.git --exclude=.ctx "$dir" | cut -f1); $(nproc) cores"
  echo "load before: $(uptime)"
  cd "$dir"
  if [[ $skip != *" symbols "* ]]; then
    measure "ctags" "$work/tags.out" "" -- ctags -R -f "$work/tags" .
    measure "ctx summarize cold" "$work/summary.json" "rm -rf '$CTX_HOME'" -- "$ctx" --json summarize . --depth 64
    measure "ctx summarize warm" "$work/summary.json" "" -- "$ctx" --json summarize . --depth 64
    # related: the first file with imports, on the warm cache.
    target=$(python3 -c '
import json, sys
for f in json.load(open(sys.argv[1]))["files"]:
    if f["imports"]:
        print(f["path"]); break' "$work/summary.json")
    [[ -n "$target" ]] && measure "ctx related (warm)" "$work/related.json" "" -- "$ctx" --json related "$target"
    measure "ctx map cold" "$work/map.json" "rm -rf '$CTX_HOME'" -- "$ctx" --json map .
    measure "ctx map warm" "$work/map.json" "" -- "$ctx" --json map .
  fi
  if [[ $skip != *" search "* ]]; then
    # Patterns for the corpus' main language (LITERAL / REGEX override them).
    if (( $("${rg_base[@]}" --files -t py . | wc -l) > $("${rg_base[@]}" --files -t rust . | wc -l) )); then
      literal="${LITERAL:-def get_}"; regex="${REGEX:-def [a-z_]+_name\(}"
    else
      literal="${LITERAL:-unsafe fn}"; regex="${REGEX:-fn [a-z_]+_mut\(}"
    fi
    echo "search: literal '$literal', regex '$regex' ($short_runs runs each, in turns)"
    for _ in $(seq "$short_runs"); do
      MEASURE_RUNS=1 measure "rg literal" "$work/rg.txt" "" -- "${rg_base[@]}" -F "$literal" .
      MEASURE_RUNS=1 measure "ctx search literal" "$work/ctx-search.txt" "" -- "$ctx" search "$literal" .
    done
    for _ in $(seq "$short_runs"); do
      MEASURE_RUNS=1 measure "rg regex" "$work/rg.txt" "" -- "${rg_base[@]}" "$regex" .
      MEASURE_RUNS=1 measure "ctx search regex" "$work/ctx-search.txt" "" -- "$ctx" search --regex "$regex" .
    done
  fi
  if [[ $skip != *" packs "* ]]; then
    # A fresh project store before each cold render: its token cache starts empty.
    fresh="rm -rf '$dir/.ctx' && '$ctx' -C '$dir' -q init >/dev/null && '$ctx' -C '$dir' -q pack create all --budget 1000000000 --tokenizer cl100k_base >/dev/null && '$ctx' -C '$dir' -q pack add all 'glob:**/*' >/dev/null 2>&1"
    measure "ctx pack cold" "$work/pack.out" "$fresh" -- "$ctx" -C "$dir" pack render all -o "$work/ctx-pack.md"
    # The files ctx's walk lists, read once: the floor of any packer; in turns with the warm
    # render.
    "${rg_base[@]}" --files -0 . >"$work/list"
    for _ in $(seq "$short_runs"); do
      MEASURE_RUNS=1 measure "ctx pack warm" "$work/pack.out" "" -- "$ctx" -C "$dir" pack render all -o "$work/ctx-pack.md"
      MEASURE_RUNS=1 measure "cat floor" "$work/cat.out" "" -- sh -c "xargs -0 cat <'$work/list' >'$work/cat.txt'"
    done
    echo "ctx payload: $(du -h "$work/ctx-pack.md" | cut -f1)"
    rm -f "$work/ctx-pack.md" "$work/cat.txt"
    if [[ -n "$C2P" ]]; then
      measure "code2prompt" "$work/c2p.out" "" -- "$C2P" "$dir" --output-file "$work/c2p.md" --encoding cl100k --token-format raw --quiet
      rm -f "$work/c2p.md"
    else echo "  (code2prompt not installed: skipped)"; fi
    if [[ -n "$REPOMIX" ]]; then
      measure "repomix" "$work/repomix.out" "" -- "$REPOMIX" "$dir" --output "$work/repomix.xml" --quiet
      rm -f "$work/repomix.xml"
    else echo "  (repomix not installed: skipped)"; fi
    if [[ -n "$YEK" ]]; then
      measure "yek" "$work/yek.out" "" -- "$YEK" "$dir" --max-size 100GB --output-dir "$work/yek"
      rm -rf "$work/yek"
    else echo "  (yek not installed: skipped)"; fi
  fi
  if [[ $skip != *" index "* ]]; then
    fresh="rm -rf '$dir/.ctx' && '$ctx' -C '$dir' -q init >/dev/null"
    measure "ctx index build" "$work/index.out" "$fresh" -- "$ctx" -C "$dir" index build
  fi
  rm -rf "$dir/.ctx"
  echo "load after: $(uptime)"
  report "$dir"
  if [[ $skip != *" search "* ]]; then
    LITERAL="$literal" REGEX="$regex" "$here/scripts/search-vs-rg.sh" "$dir" "$ctx" | grep -E 'EQUAL|DIFFERENT|only'
  fi
  echo
done
