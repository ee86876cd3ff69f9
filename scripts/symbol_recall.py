#!/usr/bin/env python3
"""Symbol recall of `ctx summarize` against universal-ctags, per language.

Usage: symbol_recall.py CTX_JSON CTAGS_JSON

CTX_JSON is `ctx --compact summarize DIR` output; CTAGS_JSON is
`ctags --output-format=json --fields=+nKle -L FILES -f -` output over the same files.
A ctags definition of kind function/class/method/struct (per language, see KINDS) counts as
found when ctx reports a symbol with the same name in the same file whose line range contains
the ctags line. Prints a table and the first misses per language (for fixing real misses).
"""
import collections
import json
import sys

# ctags language -> (ctx language, ctags kinds counted)
KINDS = {
    "Rust": ("rust", {"function", "method", "struct"}),
    "Python": ("python", {"class", "function", "member", "variable"}),
    "JavaScript": ("javascript", {"function", "class", "method", "generator"}),
    "TypeScript": ("typescript", {"function", "class", "method"}),
    "Go": ("go", {"func", "struct"}),
    "Java": ("java", {"class", "method"}),
    "C": ("c", {"function", "struct"}),
    "C++": ("cpp", {"function", "class", "struct"}),
}


def main():
    ctx = json.load(open(sys.argv[1]))
    files = ctx["files"] if "files" in ctx else [ctx]
    by_file = {}
    for f in files:
        by_file[f["path"]] = f
    totals = collections.Counter()
    found = collections.Counter()
    misses = collections.defaultdict(list)
    with open(sys.argv[2]) as handle:
        for raw in handle:
            try:
                tag = json.loads(raw)
            except json.JSONDecodeError:
                continue
            if tag.get("_type") != "tag":
                continue
            spec = KINDS.get(tag.get("language"))
            if not spec or tag.get("kind") not in spec[1]:
                continue
            name = tag["name"]
            if name.startswith("__anon") or name.startswith("AnonymousFunction"):
                continue
            path = tag["path"].removeprefix("./")
            summary = by_file.get(path)
            lang = spec[0]
            if summary and summary["language"] in ("tsx",) and lang == "typescript":
                lang = "typescript"
            totals[lang] += 1
            line = tag["line"]
            ok = False
            if summary:
                for s in summary["symbols"]:
                    if s["name"] == name and s["line"] <= line <= s["end_line"]:
                        ok = True
                        break
            if ok:
                found[lang] += 1
            else:
                misses[lang].append(f"{path}:{line} {tag['kind']} {name}")
    print(f"{'language':<12} {'ctags defs':>10} {'ctx found':>10} {'recall':>8}")
    all_t = all_f = 0
    for lang in sorted(totals):
        t, f = totals[lang], found[lang]
        all_t += t
        all_f += f
        print(f"{lang:<12} {t:>10} {f:>10} {100.0 * f / t:>7.2f}%")
    if all_t:
        print(f"{'all':<12} {all_t:>10} {all_f:>10} {100.0 * all_f / all_t:>7.2f}%")
    for lang in sorted(misses):
        print(f"\nfirst misses ({lang}):")
        for miss in misses[lang][:8]:
            print("  " + miss)


if __name__ == "__main__":
    main()
