//! Golden `--json` outputs of the code-intelligence commands on one small project per
//! language, built here in a temp dir. Set `CTX_UPDATE_GOLDEN=1` to rewrite the golden files
//! after an intended change, then review the diff.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::Env;

struct Case {
    name: &'static str,
    files: &'static [(&'static str, &'static str)],
    summarize: &'static str,
    symbol: &'static str,
    caller: &'static str,
    related: &'static str,
}

const RUST: Case = Case {
    name: "rust",
    files: &[
        (
            "Cargo.toml",
            "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n",
        ),
        (
            "src/main.rs",
            "mod parser;\n\nuse crate::parser::{helper, Parser};\n\n/// Entry point.\nfn main() {\n    let p = Parser::new();\n    p.parse_file(\"x\");\n    helper();\n}\n",
        ),
        (
            "src/parser.rs",
            "//! Parsing.\n\nuse std::fmt;\n\n/// A parser.\n#[derive(Debug)]\npub struct Parser {\n    depth: usize,\n}\n\nimpl Parser {\n    /// Makes one.\n    pub fn new() -> Self {\n        Parser { depth: 0 }\n    }\n\n    /// Parses a file.\n    pub fn parse_file(&self, path: &str) -> usize {\n        helper();\n        path.len() + self.depth\n    }\n}\n\nimpl fmt::Display for Parser {\n    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {\n        write!(f, \"parser\")\n    }\n}\n\npub(crate) fn helper() {}\n\npub trait Visit {\n    fn visit(&self);\n}\n\npub enum Kind {\n    A,\n    B,\n}\n\nmod nested {\n    pub mod inner {\n        pub const LIMIT: usize = 3;\n    }\n}\n\nmacro_rules! twice {\n    ($e:expr) => {\n        $e; $e\n    };\n}\n",
        ),
        (
            "tests/parser.rs",
            "#[test]\nfn parses() {\n    assert_eq!(1, 1);\n}\n",
        ),
    ],
    summarize: "src/parser.rs",
    symbol: "parse_file",
    caller: "helper",
    related: "src/parser.rs",
};

const PYTHON: Case = Case {
    name: "python",
    files: &[
        ("pkg/__init__.py", ""),
        (
            "pkg/parser.py",
            "\"\"\"Parsing.\"\"\"\nimport os\nfrom typing import List\n\n\nclass Parser:\n    \"\"\"A parser.\n\n    It parses.\n    \"\"\"\n\n    def __init__(self):\n        self.depth = 0\n\n    @property\n    def name(self) -> str:\n        return \"p\"\n\n    def parse_file(self, path: str) -> int:\n        \"\"\"Parses a file.\"\"\"\n        helper()\n        return len(path)\n\n\ndef helper():\n    def inner():\n        pass\n    return inner\n\n\nasync def fetch(url):\n    return await os.fspath(url)\n",
        ),
        (
            "pkg/main.py",
            "from .parser import Parser, helper\nimport pkg.parser as p\n\n\ndef main():\n    Parser().parse_file(\"x\")\n    helper()\n    # helper() in a comment is not a call\n    p.helper()\n",
        ),
        (
            "tests/test_parser.py",
            "from pkg.parser import Parser\n\n\ndef test_parse():\n    assert Parser().parse_file(\"ab\") == 2\n",
        ),
    ],
    summarize: "pkg/parser.py",
    symbol: "parse_file",
    caller: "helper",
    related: "pkg/parser.py",
};

const JAVASCRIPT: Case = Case {
    name: "javascript",
    files: &[
        (
            "src/parser.js",
            "import fs from 'fs';\n\n/** A parser. */\nexport class Parser {\n  #depth = 0;\n  /** Parses a file. */\n  parseFile(path) {\n    return helper(path);\n  }\n  static create() {\n    return new Parser();\n  }\n}\n\nexport function helper(x) {\n  return fs.existsSync(x);\n}\n\nexport const format = (x) => {\n  return `${x}`;\n};\n\nfunction* ids() {\n  yield 1;\n}\n\nmodule.exports.legacy = function () {\n  return helper(0);\n};\n",
        ),
        (
            "src/index.js",
            "import { Parser, helper } from './parser';\nconst util = require('./util');\n\nfunction main() {\n  new Parser().parseFile('x');\n  helper(1);\n  util.helper();\n}\n",
        ),
        ("src/util/index.js", "export function helper() {}\n"),
        (
            "src/parser.test.js",
            "import { Parser } from './parser.js';\ntest('parses', () => new Parser());\n",
        ),
    ],
    summarize: "src/parser.js",
    symbol: "helper",
    caller: "helper",
    related: "src/parser.js",
};

const TYPESCRIPT: Case = Case {
    name: "typescript",
    files: &[
        (
            "src/parser.ts",
            "import type { Kind } from './kinds';\n\n/** Options for the parser. */\nexport interface Options {\n  depth: number;\n  visit(node: string): void;\n}\n\nexport type Mode = 'fast' | 'slow';\n\nexport enum Level {\n  Low,\n  High,\n}\n\nexport abstract class Base {\n  abstract run(): void;\n}\n\nexport class Parser extends Base {\n  private depth = 0;\n  constructor(private readonly opts: Options) {\n    super();\n  }\n  /** Parses a file. */\n  public parseFile(path: string): number {\n    return helper(path.length);\n  }\n  protected run(): void {}\n  handler = (e: Kind): void => {\n    helper(1);\n  };\n}\n\nexport function helper(n: number): number {\n  return n;\n}\n\nnamespace Util {\n  export function inner(): void {}\n}\n",
        ),
        ("src/kinds.ts", "export type Kind = 'a' | 'b';\n"),
        (
            "src/App.tsx",
            "import React from 'react';\nimport { helper } from './parser';\n\ninterface Props {\n  label: string;\n}\n\nexport const App = ({ label }: Props) => {\n  return <div title={label}>{helper(2)}</div>;\n};\n\nfunction Button(props: Props): JSX.Element {\n  return <button>{props.label}</button>;\n}\n",
        ),
        ("src/parser.spec.ts", "import { Parser } from './parser';\n"),
    ],
    summarize: "src/parser.ts",
    symbol: "Parser.parseFile",
    caller: "helper",
    related: "src/parser.ts",
};

const GO: Case = Case {
    name: "go",
    files: &[
        ("go.mod", "module example.com/demo\n\ngo 1.22\n"),
        (
            "parser/parser.go",
            "// Package parser parses.\npackage parser\n\nimport (\n\t\"fmt\"\n\tstr \"strings\"\n)\n\n// Parser parses files.\ntype Parser struct {\n\tdepth int\n}\n\n// Visitor visits.\ntype Visitor interface {\n\tVisit(n string)\n}\n\ntype ID = int\n\n// ParseFile parses a file.\nfunc (p *Parser) ParseFile(path string) int {\n\tHelper()\n\treturn len(str.TrimSpace(path)) + p.depth\n}\n\nfunc (p Parser) String() string { return fmt.Sprint(p.depth) }\n\n// Helper helps.\nfunc Helper() {}\n\nfunc generic[T any](x T) T { return x }\n",
        ),
        (
            "main.go",
            "package main\n\nimport \"example.com/demo/parser\"\n\nfunc main() {\n\tp := &parser.Parser{}\n\tp.ParseFile(\"x\")\n\tparser.Helper()\n}\n",
        ),
        (
            "parser/parser_test.go",
            "package parser\n\nimport \"testing\"\n\nfunc TestParse(t *testing.T) { Helper() }\n",
        ),
    ],
    summarize: "parser/parser.go",
    symbol: "ParseFile",
    caller: "Helper",
    related: "parser/parser.go",
};

const JAVA: Case = Case {
    name: "java",
    files: &[
        (
            "src/main/java/com/acme/Parser.java",
            "package com.acme;\n\nimport java.util.List;\n\n/** A parser. */\npublic class Parser {\n    private int depth;\n\n    /** Makes one. */\n    public Parser() {\n        this.depth = 0;\n    }\n\n    /** Parses a file. */\n    public int parseFile(String path) {\n        return helper() + path.length();\n    }\n\n    static int helper() {\n        return 1;\n    }\n\n    interface Visitor {\n        void visit(String node);\n    }\n\n    enum Kind { A, B }\n\n    record Point(int x, int y) {}\n}\n",
        ),
        (
            "src/main/java/com/acme/Main.java",
            "package com.acme;\n\nimport com.acme.Parser;\n\npublic class Main {\n    public static void main(String[] args) {\n        new Parser().parseFile(\"x\");\n        Parser.helper();\n    }\n}\n",
        ),
        (
            "src/test/java/com/acme/ParserTest.java",
            "package com.acme;\n\nclass ParserTest {\n    void parses() { new Parser(); }\n}\n",
        ),
    ],
    summarize: "src/main/java/com/acme/Parser.java",
    symbol: "parseFile",
    caller: "helper",
    related: "src/main/java/com/acme/Parser.java",
};

const C: Case = Case {
    name: "c",
    files: &[
        (
            "parser.h",
            "#ifndef PARSER_H\n#define PARSER_H\n\n/* A parser. */\nstruct parser {\n    int depth;\n};\n\ntypedef struct parser parser_t;\n\nint parse_file(const char *path);\n\n#endif\n",
        ),
        (
            "parser.c",
            "#include <string.h>\n#include \"parser.h\"\n\n#define MAX_DEPTH 8\n\nstatic int helper(void);\n\n/* Parses a file. */\nint parse_file(const char *path) {\n    return helper() + (int)strlen(path);\n}\n\nstatic int helper(void) {\n    return 1;\n}\n\nenum kind { KIND_A, KIND_B };\n\nunion value { int i; float f; };\n\nstatic char *(*lookup)(int);\n",
        ),
        (
            "main.c",
            "#include \"parser.h\"\n\nint main(void) {\n    return parse_file(\"x\");\n}\n",
        ),
        (
            "tests/test_parser.c",
            "#include \"../parser.h\"\nint main(void) { return parse_file(\"\"); }\n",
        ),
    ],
    summarize: "parser.c",
    symbol: "parse_file",
    caller: "helper",
    related: "parser.h",
};

const CPP: Case = Case {
    name: "cpp",
    files: &[
        (
            "include/parser.hpp",
            "#pragma once\n#include <string>\n\nnamespace demo {\n\n/// A parser.\nclass Parser {\npublic:\n    Parser();\n    ~Parser();\n    /// Parses a file.\n    int parseFile(const std::string &path);\n    int inlined() const { return depth_; }\n\nprivate:\n    int depth_ = 0;\n};\n\nstruct Point {\n    int x, y;\n};\n\ntemplate <typename T>\nT identity(T x) { return x; }\n\nusing Id = int;\n\n}  // namespace demo\n",
        ),
        (
            "src/parser.cpp",
            "#include \"parser.hpp\"\n\nnamespace demo {\n\nstatic int helper() { return 1; }\n\nParser::Parser() {}\n\nParser::~Parser() {}\n\nint Parser::parseFile(const std::string &path) {\n    return helper() + static_cast<int>(path.size());\n}\n\nnamespace detail {\nint twice(int x) { return helper() * x; }\n}  // namespace detail\n\n}  // namespace demo\n",
        ),
        (
            "src/main.cpp",
            "#include \"parser.hpp\"\n\nint main() {\n    demo::Parser p;\n    return p.parseFile(\"x\");\n}\n",
        ),
        (
            "tests/parser_test.cpp",
            "#include \"parser.hpp\"\nint main() { return 0; }\n",
        ),
    ],
    summarize: "src/parser.cpp",
    symbol: "parseFile",
    caller: "helper",
    related: "include/parser.hpp",
};

fn golden_dir(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/code")
        .join(case)
}

fn build(case: &Case) -> Env {
    let env = Env::new();
    for (rel, body) in case.files {
        let path = env.work().join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, body).expect("write");
    }
    // A project store keeps the summary cache inside the fixture.
    env.run(&["init"]).ok();
    env
}

#[track_caller]
fn check_golden(case: &str, name: &str, actual: &str) {
    let path = golden_dir(case).join(format!("{name}.json"));
    if std::env::var_os("CTX_UPDATE_GOLDEN").is_some() {
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected = fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing {}; run with CTX_UPDATE_GOLDEN=1", path.display()));
    assert_eq!(
        actual,
        expected,
        "{case}/{name} differs from {}",
        path.display()
    );
}

fn run_case(case: &Case) {
    let env = build(case);
    let summarize = env.run(&["--json", "summarize", case.summarize]);
    check_golden(case.name, "summarize", &summarize.ok().stdout);
    let symbol = env.run(&["--json", "search", "--symbol", case.symbol]);
    check_golden(case.name, "search_symbol", &symbol.ok().stdout);
    let caller = env.run(&["--json", "search", "--caller", case.caller]);
    check_golden(case.name, "search_caller", &caller.ok().stdout);
    let related = env.run(&["--json", "related", case.related]);
    check_golden(case.name, "related", &related.ok().stdout);

    // The second summarize comes from the cache and is byte-identical.
    let again = env.run(&["--json", "summarize", case.summarize]);
    assert_eq!(again.ok().stdout, summarize.stdout);

    // Every skeleton parses again with the same grammar, without errors.
    let skeletons = env.run(&["--json", "summarize", ".", "--skeleton"]);
    let report = skeletons.ok().json();
    let files = report["files"].as_array().expect("files");
    assert!(!files.is_empty());
    // Inside the project: summarize reads nothing outside it.
    let check_dir = env.work().join("skeleton-check");
    for file in files {
        let path = file["path"].as_str().expect("path");
        assert_eq!(
            file["has_errors"], false,
            "fixture {path} has syntax errors"
        );
        let skeleton = file["skeleton"].as_str().expect("skeleton");
        let target = check_dir.join(path);
        fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        fs::write(&target, skeleton).expect("write skeleton");
        let reparsed = env.run(&["--json", "summarize", target.to_str().expect("utf8")]);
        let reparsed = reparsed.ok().json()["files"][0].clone();
        assert_eq!(
            reparsed["has_errors"], false,
            "skeleton of {path} does not parse:\n{skeleton}"
        );
        // Definitions outside function bodies survive; nested ones are part of a body.
        let symbols = file["symbols"].as_array().expect("symbols");
        let callables: Vec<&str> = symbols
            .iter()
            .filter(|s| {
                matches!(
                    s["kind"].as_str(),
                    Some("function" | "method" | "constructor")
                )
            })
            .map(|s| s["name"].as_str().expect("name"))
            .collect();
        let original: Vec<&str> = symbols
            .iter()
            .filter(|s| {
                s["parent"].as_str().is_none_or(|p| {
                    let last = p.rsplit([':', '.']).next().unwrap_or(p);
                    !callables.contains(&last)
                })
            })
            .map(|s| s["name"].as_str().expect("name"))
            .collect();
        let kept: Vec<&str> = reparsed["symbols"]
            .as_array()
            .expect("symbols")
            .iter()
            .map(|s| s["name"].as_str().expect("name"))
            .collect();
        for name in &original {
            assert!(
                kept.contains(name),
                "skeleton of {path} lost {name}: {skeleton}"
            );
        }
    }
}

#[test]
fn golden_rust() {
    run_case(&RUST);
}

#[test]
fn golden_python() {
    run_case(&PYTHON);
}

#[test]
fn golden_javascript() {
    run_case(&JAVASCRIPT);
}

#[test]
fn golden_typescript_and_tsx() {
    run_case(&TYPESCRIPT);
}

#[test]
fn golden_go() {
    run_case(&GO);
}

#[test]
fn golden_java() {
    run_case(&JAVA);
}

#[test]
fn golden_c() {
    run_case(&C);
}

#[test]
fn golden_cpp() {
    run_case(&CPP);
}
