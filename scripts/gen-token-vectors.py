#!/usr/bin/env python3
"""Regenerates crates/ctx-core/tests/fixtures/tokens/expected.json with OpenAI's tiktoken.

The counts are tiktoken's encode_ordinary (special-token text counts as ordinary text).
tiktoken downloads its encodings on first use; offline, point TIKTOKEN_CACHE_DIR at a
directory holding them (named by the sha1 of their URL, tiktoken verifies their sha256).

    pip install tiktoken && python3 scripts/gen-token-vectors.py
"""
import json
import pathlib

import tiktoken

root = pathlib.Path(__file__).resolve().parent.parent / "crates/ctx-core/tests/fixtures/tokens"
encodings = {name: tiktoken.get_encoding(name) for name in ("o200k_base", "cl100k_base")}
expected = {}
for path in sorted(root.iterdir()):
    if path.name == "expected.json":
        continue
    text = path.read_bytes().decode("utf-8")
    expected[path.name] = {name: len(enc.encode_ordinary(text)) for name, enc in encodings.items()}
(root / "expected.json").write_text(json.dumps(expected, indent=2, sort_keys=True) + "\n")
print(f"wrote {len(expected)} vectors with tiktoken {tiktoken.__version__}")
