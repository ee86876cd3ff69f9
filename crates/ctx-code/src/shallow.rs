//! Shallow parses for symbol summaries.
//!
//! A summary needs a file's definitions and imports, not the statements inside its
//! functions or the numbers in its data tables, yet those are most of what tree-sitter parses
//! (in a real tree of crates: function bodies and large array initializers are about half
//! the bytes and most of the parse time). Before parsing, a small lexer per language finds
//! what cannot hold a definition and is not read from the tree (signatures and imports are
//! read from the source text), and tree-sitter parses the file with those parts left out of
//! its included ranges (positions stay those of the whole file):
//! - function bodies, large array and initializer tables, struct fields and enum variants;
//! - in Rust also macro token trees and attribute arguments, parameter lists, `use` lists,
//!   and the `= value` of a `const` or `static` (the grammar reads `const N: T;`).
//!
//! Two rules keep the result equal to a full parse's:
//! - a part is only left out when its tokens hold nothing the extractor could report
//!   (no item keyword in a Rust body; no preprocessor line, `typedef` or tagged type body in
//!   a C body). A Rust body that holds an item is read on like the file, so the item's own
//!   body is still left out;
//! - after the parse, every left-out part must sit exactly where the scan expected it:
//!   between the brackets of one node of the expected kind (a function's body block, an
//!   array, a parameter list), or for a value before the `;` of an error-free `const` or
//!   `static`. When the lexer's guess and the grammar disagree (macros, preprocessor tricks,
//!   odd code), the file is parsed again in full.
//!
//! Python is scanned by logical lines. In every function body, each run of statements
//! between the first (which may be the docstring) and the last that defines and imports
//! nothing (no `def`, `class`, `import`, `from` or decorator line in it, nor an import after a
//! `:` or `;`) is left out, unless one of its physical lines begins with such a word (a string
//! the scanner misread could hide a definition there); the comments right after the statement
//! before the run are parsed, as a full parse may hold them in that statement's block. A
//! first statement (not the only one) that begins with a name, not a keyword or a string, is
//! read as that name alone (`response = f(…)` as `response`): the block still begins where a
//! full parse begins it (a signature is read up to there), and a name makes no docstring. In
//! every line still parsed, the interiors of the outermost bracketed groups are left out
//! (`f(…)` is read as `f()`, `[…]` as `[]`, `def f(…):` as `def f():`), but not a subscript's,
//! not one left of the statement's last `=` (an assignment's targets are read from the tree),
//! and not in imports or in `for`, `async`, `del`, `with`, `case`, `match`, `global` or
//! `nonlocal` statements. The tree must be without errors, hold every left-out run between
//! two statements of a function's block, and every left-out group between the brackets of
//! an argument list, parameter list, list, dictionary or tuple.
//!
//! Rust, C and Python are scanned; other languages are always parsed in full.

use std::cell::RefCell;

use tree_sitter::{Point, Range, Tree};

use crate::lang::Language;
use crate::symbols::{parse_ranges, traverse};

/// What a left-out interior was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hole {
    /// A function body.
    Body,
    /// An array or initializer list.
    Table,
    /// A Rust macro's token tree (invocation arguments, `macro_rules!` rules, attribute
    /// arguments): tree-sitter never parses definitions inside one.
    Tree,
    /// The fields of a struct or union, or the variants of an enum.
    Fields,
    /// A function's parameter list (a signature is read from the source text).
    Params,
    /// A Rust `use` list (`use a::{b, c}`; an import is read from the source text).
    UseList,
    /// The `= value` of a Rust `const` or `static`, from the `=` to the closing `;` (not a
    /// bracketed interior: the grammar reads what is left as a declaration without a value).
    Value,
    /// A whole Rust attribute, `#[…]` or `#![…]` (the extractor never reads attributes).
    Attribute,
    /// The interior of a bracketed group in a Python statement the parse still reads: call
    /// arguments, parameters, class bases, decorator arguments, a list, dictionary, set or
    /// tuple (`f(…)` is read as `f()`, `[…]` as `[]`).
    Group,
    /// A comment, or a run of whitespace but its first byte (so the tokens around it stay
    /// apart). Comments and indentation are a third of what is left to parse, and doc
    /// comments are read from the source text.
    Trivia,
}

impl Hole {
    /// Whether the parse must show this part where the scan expected it. A whole attribute
    /// or trivia leaves no node behind to check; the lexer finds both exactly.
    fn checked(self) -> bool {
        !matches!(self, Self::Attribute | Self::Trivia)
    }
}

/// A part left out of the parse, the bytes `start..end`: for most holes the interior of a
/// bracketed group (an opening bracket at `start - 1` and its closing bracket at `end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    pub start: usize,
    pub end: usize,
    pub hole: Hole,
}

/// Bodies shorter than this are parsed (leaving them out saves nothing).
const MIN_BODY: usize = 16;
/// Values shorter than this (from the `=`) are parsed.
const MIN_VALUE: usize = 4;
/// Python groups shorter than this (from bracket to bracket) are parsed.
const MIN_GROUP: usize = 8;
/// Initializers shorter than this are parsed.
const MIN_TABLE: usize = 256;

/// Rust words that start an item or import, which a body must not hold to be left out.
const RUST_ITEM_WORDS: &[&[u8]] = &[
    b"fn",
    b"struct",
    b"enum",
    b"union",
    b"trait",
    b"impl",
    b"mod",
    b"use",
    b"static",
    b"const",
    b"type",
    b"macro_rules",
    b"extern",
];

/// Rust keywords an expression can follow, so `!` after them is a negation, not a macro
/// call.
const RUST_EXPR_KEYWORDS: &[&[u8]] = &[
    b"if", b"while", b"match", b"return", b"in", b"break", b"yield", b"else", b"let", b"move",
    b"for", b"impl", b"as", b"where", b"dyn", b"mut", b"unsafe", b"const", b"static",
];

/// Rust's primitive types, which tree-sitter does not take as macro names (`u16!(…)`).
const RUST_PRIMITIVES: &[&[u8]] = &[
    b"u8", b"u16", b"u32", b"u64", b"u128", b"usize", b"i8", b"i16", b"i32", b"i64", b"i128",
    b"isize", b"f32", b"f64", b"bool", b"char", b"str",
];

/// Parses `src` with its gaps left out; `None` when the language is not scanned, nothing is
/// worth leaving out, or the tree disagrees with the scan (the caller then parses in full).
pub fn parse(lang: Language, src: &[u8]) -> Option<Tree> {
    let (tree, unmatched) = attempt(lang, src)?;
    unmatched.is_empty().then_some(tree)
}

/// The gaps of `src` that its shallow parse does not place where the scan expected (why a
/// file falls back to a full parse; for diagnostics).
pub fn refused(lang: Language, src: &[u8]) -> Vec<Gap> {
    attempt(lang, src)
        .map(|(_, unmatched)| unmatched)
        .unwrap_or_default()
}

/// The shallow parse of `src` and the gaps it does not confirm; `None` when there is nothing
/// to leave out or the parser gives up.
fn attempt(lang: Language, src: &[u8]) -> Option<(Tree, Vec<Gap>)> {
    let gaps = gaps(lang, src);
    if gaps.is_empty() {
        return None;
    }
    let ranges = included_ranges(src, &gaps);
    let tree = parse_ranges(lang, src, &ranges)?;
    let unmatched = if lang == Language::Python {
        python_unmatched(&tree, src, &gaps)
    } else {
        unmatched(lang, &tree, &gaps)
    };
    Some((tree, unmatched))
}

/// The gaps the tree must confirm.
fn checked(gaps: &[Gap]) -> Vec<Gap> {
    gaps.iter().copied().filter(|g| g.hole.checked()).collect()
}

/// The parts of `src` a summary does not need parsed, in order.
pub fn gaps(lang: Language, src: &[u8]) -> Vec<Gap> {
    match lang {
        Language::Rust => rust_gaps(src),
        Language::C => c_gaps(src),
        Language::Python => python_gaps(src),
        _ => Vec::new(),
    }
}

/// The complement of `gaps` in `src`, with points (rows and byte columns) as tree-sitter
/// wants them.
fn included_ranges(src: &[u8], gaps: &[Gap]) -> Vec<Range> {
    let newlines: Vec<usize> = memchr::memchr_iter(b'\n', src).collect();
    let point = |at: usize| {
        let row = newlines.partition_point(|&i| i < at);
        let column = if row == 0 {
            at
        } else {
            at - newlines[row - 1] - 1
        };
        Point { row, column }
    };
    let mut ranges = Vec::with_capacity(gaps.len() + 1);
    let mut from = 0;
    for gap in gaps {
        ranges.push((from, gap.start));
        from = gap.end;
    }
    ranges.push((from, src.len()));
    ranges
        .into_iter()
        .map(|(start, end)| Range {
            start_byte: start,
            end_byte: end,
            start_point: point(start),
            end_point: point(end),
        })
        .collect()
}

/// The gaps that do not lie between the brackets of one node of the kind their scan expected.
/// The walk goes only into nodes that hold a gap, and keeps the kinds above the current node
/// (`Node::parent` walks down from the root, linear in the width of the tree).
fn unmatched(lang: Language, tree: &Tree, gaps: &[Gap]) -> Vec<Gap> {
    let gaps = &checked(gaps)[..];
    let mut matched = vec![false; gaps.len()];
    let above: RefCell<Vec<&str>> = RefCell::new(Vec::new());
    traverse(
        tree.root_node(),
        |node| {
            let (start, end) = (node.start_byte(), node.end_byte());
            // The first gap whose opening bracket is at or after this node's start.
            let i = gaps.partition_point(|g| g.start < start + 1);
            let mut above = above.borrow_mut();
            if let Some(gap) = gaps.get(i) {
                let fits = if gap.hole == Hole::Value {
                    // The declaration, without errors, ends at the value's `;`.
                    gap.end + 1 == end
                        && matches!(node.kind(), "const_item" | "static_item")
                        && !node.has_error()
                } else {
                    gap.start == start + 1
                        && gap.end + 1 == end
                        && expected(lang, node.kind(), above.last().copied(), gap.hole)
                };
                if fits {
                    matched[i] = true;
                }
                if gap.end < end {
                    above.push(node.kind());
                    return (true, true);
                }
            }
            (false, false)
        },
        |pushed| {
            if pushed {
                above.borrow_mut().pop();
            }
        },
    );
    gaps.iter()
        .zip(matched)
        .filter(|&(_, m)| !m)
        .map(|(g, _)| *g)
        .collect()
}

/// Whether a node of `kind` under a node of `parent` kind is what a gap of kind `hole` must
/// be in `lang`.
fn expected(lang: Language, kind: &str, parent: Option<&str>, hole: Hole) -> bool {
    match (lang, hole) {
        (Language::Rust, Hole::Body) => kind == "block" && parent == Some("function_item"),
        (Language::Rust, Hole::Table) => kind == "array_expression",
        (Language::Rust, Hole::Tree) => matches!(kind, "token_tree" | "token_tree_pattern"),
        (Language::Rust, Hole::Fields) => matches!(
            kind,
            "field_declaration_list" | "ordered_field_declaration_list" | "enum_variant_list"
        ),
        (Language::Rust, Hole::Params) => {
            kind == "parameters"
                && matches!(parent, Some("function_item" | "function_signature_item"))
        }
        (Language::Rust, Hole::UseList) => kind == "use_list",
        (Language::C, Hole::Fields) => matches!(kind, "field_declaration_list" | "enumerator_list"),
        (Language::C, Hole::Body) => {
            kind == "compound_statement" && parent == Some("function_definition")
        }
        (Language::C, Hole::Table) => kind == "initializer_list",
        _ => false,
    }
}

/// A token's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Ident,
    Punct(u8),
    /// A string, character or number literal.
    Literal,
    /// A Rust lifetime or label (`'a`).
    Lifetime,
    /// A C preprocessor line.
    Directive,
    Eof,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    tok: Tok,
    start: usize,
    end: usize,
}

/// Just enough of a lexer to match brackets: comments, strings, characters, Rust raw strings
/// and lifetimes, C preprocessor lines.
#[derive(Clone)]
struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
    rust: bool,
    /// Only whitespace since the last newline (a C `#` there starts a directive).
    line_start: bool,
    /// Where comments and whitespace runs are recorded as [`Hole::Trivia`] gaps (shared by
    /// the clones that look ahead; a part already recorded is not recorded again).
    trivia: Option<&'a RefCell<Vec<Gap>>>,
}

impl<'a> Lexer<'a> {
    fn new(src: &'a [u8], lang: Language) -> Self {
        Self {
            src,
            pos: 0,
            rust: lang == Language::Rust,
            line_start: true,
            trivia: None,
        }
    }

    /// Records `start..end` as trivia, joined to the previous record when they touch.
    fn record(&self, start: usize, end: usize) {
        let Some(trivia) = self.trivia else {
            return;
        };
        let mut trivia = trivia.borrow_mut();
        match trivia.last_mut() {
            Some(last) if start < last.end => {}
            Some(last) if start == last.end => last.end = end,
            _ => trivia.push(Gap {
                start,
                end,
                hole: Hole::Trivia,
            }),
        }
    }

    fn at(&self, i: usize) -> Option<u8> {
        self.src.get(i).copied()
    }

    fn text(&self, token: Token) -> &'a [u8] {
        &self.src[token.start..token.end]
    }

    fn peek(&self) -> Token {
        self.clone().next()
    }

    fn next(&mut self) -> Token {
        self.skip_space();
        let start = self.pos;
        let line_start = std::mem::replace(&mut self.line_start, false);
        let Some(b) = self.at(start) else {
            return Token {
                tok: Tok::Eof,
                start,
                end: start,
            };
        };
        let tok = match b {
            b'#' if !self.rust && line_start => {
                self.skip_directive();
                Tok::Directive
            }
            b'"' => {
                self.pos += 1;
                self.skip_quoted(b'"');
                Tok::Literal
            }
            b'\'' if self.rust => self.rust_quote(),
            b'\'' => {
                self.pos += 1;
                self.skip_quoted(b'\'');
                Tok::Literal
            }
            b'0'..=b'9' => {
                self.pos += 1;
                while self.at(self.pos).is_some_and(is_ident_byte) {
                    self.pos += 1;
                }
                Tok::Literal
            }
            _ if is_ident_byte(b) => self.ident(),
            _ => {
                self.pos += 1;
                Tok::Punct(b)
            }
        };
        Token {
            tok,
            start,
            end: self.pos,
        }
    }

    fn skip_space(&mut self) {
        while let Some(b) = self.at(self.pos) {
            match b {
                b'\n' | b' ' | b'\t' | b'\r' | 0x0b | 0x0c => {
                    let start = self.pos;
                    while let Some(b) = self.at(self.pos) {
                        match b {
                            b'\n' => self.line_start = true,
                            b' ' | b'\t' | b'\r' | 0x0b | 0x0c => {}
                            _ => break,
                        }
                        self.pos += 1;
                    }
                    // The first byte stays, keeping the tokens around the run apart.
                    if self.pos - start >= 3 {
                        self.record(start + 1, self.pos);
                    }
                }
                b'/' if self.at(self.pos + 1) == Some(b'/') => {
                    let start = self.pos;
                    self.pos = memchr::memchr(b'\n', &self.src[self.pos..])
                        .map_or(self.src.len(), |i| self.pos + i);
                    self.record(start, self.pos);
                }
                b'/' if self.at(self.pos + 1) == Some(b'*') => {
                    let start = self.pos;
                    self.skip_block_comment();
                    // Only after whitespace, so that the tokens around it stay apart.
                    if start == 0 || self.src[start - 1].is_ascii_whitespace() {
                        self.record(start, self.pos);
                    }
                }
                _ => return,
            }
        }
    }

    /// Skips `/* … */` (nested in Rust).
    fn skip_block_comment(&mut self) {
        self.pos += 2;
        let mut depth = 1usize;
        while let Some(b) = self.at(self.pos) {
            if b == b'*' && self.at(self.pos + 1) == Some(b'/') {
                self.pos += 2;
                depth -= 1;
                if depth == 0 {
                    return;
                }
            } else if self.rust && b == b'/' && self.at(self.pos + 1) == Some(b'*') {
                self.pos += 2;
                depth += 1;
            } else {
                self.pos += 1;
            }
        }
    }

    /// Skips to the closing `quote` (past backslash escapes); a C string or character also
    /// ends at a newline it cannot hold.
    fn skip_quoted(&mut self, quote: u8) {
        while let Some(b) = self.at(self.pos) {
            self.pos += 1;
            if b == b'\\' {
                self.pos += 1;
            } else if b == quote || b == b'\n' && !self.rust {
                return;
            }
        }
        self.pos = self.pos.min(self.src.len());
    }

    /// A preprocessor line, with its backslash continuations and comments.
    fn skip_directive(&mut self) {
        while let Some(b) = self.at(self.pos) {
            match b {
                b'\n' => return,
                b'\\' => self.pos += 2,
                b'/' if self.at(self.pos + 1) == Some(b'*') => self.skip_block_comment(),
                b'/' if self.at(self.pos + 1) == Some(b'/') => {
                    self.pos = memchr::memchr(b'\n', &self.src[self.pos..])
                        .map_or(self.src.len(), |i| self.pos + i);
                }
                _ => self.pos += 1,
            }
        }
        self.pos = self.pos.min(self.src.len());
    }

    /// After a Rust `'`: a character literal (`'a'`, `'\n'`, `'é'`) or a lifetime (`'a`).
    fn rust_quote(&mut self) -> Tok {
        let after = self.pos + 1;
        if self.at(after) == Some(b'\\') {
            self.pos = after + 2;
            self.skip_quoted(b'\'');
            return Tok::Literal;
        }
        let width = self.at(after).map_or(1, utf8_width);
        if self.at(after + width) == Some(b'\'') {
            self.pos = after + width + 1;
            return Tok::Literal;
        }
        self.pos = after;
        while self.at(self.pos).is_some_and(is_ident_byte) {
            self.pos += 1;
        }
        Tok::Lifetime
    }

    /// An identifier; in Rust also a raw identifier (`r#type`) or a raw string (`r#"…"#`,
    /// `br"…"`).
    fn ident(&mut self) -> Tok {
        let start = self.pos;
        while self.at(self.pos).is_some_and(is_ident_byte) {
            self.pos += 1;
        }
        if !self.rust {
            return Tok::Ident;
        }
        let word = &self.src[start..self.pos];
        if !matches!(word, b"r" | b"br" | b"cr") {
            return Tok::Ident;
        }
        let mut hashes = 0;
        while self.at(self.pos + hashes) == Some(b'#') {
            hashes += 1;
        }
        match self.at(self.pos + hashes) {
            Some(b'"') => {
                self.pos += hashes + 1;
                self.skip_raw_string(hashes);
                Tok::Literal
            }
            Some(b) if word == b"r" && hashes == 1 && is_ident_byte(b) => {
                self.pos += 1;
                while self.at(self.pos).is_some_and(is_ident_byte) {
                    self.pos += 1;
                }
                Tok::Ident
            }
            _ => Tok::Ident,
        }
    }

    /// Skips to `"` followed by `hashes` `#`.
    fn skip_raw_string(&mut self, hashes: usize) {
        while let Some(i) = memchr::memchr(b'"', &self.src[self.pos..]) {
            self.pos += i + 1;
            let closing = self.src[self.pos..]
                .iter()
                .take(hashes)
                .take_while(|&&b| b == b'#')
                .count();
            if closing == hashes {
                self.pos += hashes;
                return;
            }
        }
        self.pos = self.src.len();
    }
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// The length of the UTF-8 sequence a leading byte starts.
fn utf8_width(b: u8) -> usize {
    match b {
        0xf0.. => 4,
        0xe0.. => 3,
        0xc0.. => 2,
        _ => 1,
    }
}

/// Scans the bracketed group whose opening `open` token was just read, to its matching
/// closing bracket; returns the closing bracket's offset (`None` at the end of input) and
/// whether `holds` saw a token the group must keep.
fn group(
    lx: &mut Lexer<'_>,
    open: u8,
    mut holds: impl FnMut(&Lexer<'_>, Token) -> bool,
) -> (Option<usize>, bool) {
    let close = match open {
        b'{' => b'}',
        b'[' => b']',
        _ => b')',
    };
    let mut depth = 1usize;
    let mut keep = false;
    loop {
        let token = lx.next();
        match token.tok {
            Tok::Eof => return (None, keep),
            Tok::Punct(b) if b == open => depth += 1,
            Tok::Punct(b) if b == close => {
                depth -= 1;
                if depth == 0 {
                    return (Some(token.start), keep);
                }
            }
            _ => {}
        }
        if !keep && holds(lx, token) {
            keep = true;
        }
    }
}

/// Records the interior of a group opened at `open_at` and closed at `close`, unless it must
/// be kept or is too short to matter.
fn push_gap(out: &mut Vec<Gap>, open_at: usize, (close, keep): (Option<usize>, bool), hole: Hole) {
    let min = match hole {
        Hole::Body | Hole::Tree | Hole::Fields | Hole::Params | Hole::UseList => MIN_BODY,
        Hole::Group => MIN_GROUP,
        Hole::Table => MIN_TABLE,
        Hole::Value => MIN_VALUE,
        Hole::Attribute | Hole::Trivia => 0,
    };
    if let Some(close) = close
        && !keep
        && close - open_at > min
    {
        out.push(Gap {
            start: open_at + 1,
            end: close,
            hole,
        });
    }
}

fn rust_gaps(src: &[u8]) -> Vec<Gap> {
    let trivia = RefCell::new(Vec::new());
    let mut lx = Lexer::new(src, Language::Rust);
    lx.trivia = Some(&trivia);
    let structure = rust_structure(&mut lx);
    with_trivia(&structure, trivia.into_inner())
}

/// The structural gaps and the trivia outside them, in order.
fn with_trivia(structure: &[Gap], trivia: Vec<Gap>) -> Vec<Gap> {
    let mut out = Vec::with_capacity(structure.len() + trivia.len());
    let mut inside = structure.iter().peekable();
    for t in trivia {
        while let Some(g) = inside.next_if(|g| g.end <= t.start) {
            out.push(*g);
        }
        if inside.peek().is_some_and(|g| g.start <= t.start) {
            // Within a structural gap.
            continue;
        }
        out.push(t);
    }
    out.extend(inside);
    out
}

/// After `fn NAME`: the parameters and the body become gaps. True at the end of the text.
fn rust_signature(lx: &mut Lexer<'_>, out: &mut Vec<Gap>) -> bool {
    let src = lx.src;
    // The signature runs to the body's `{`, or to `;` (no body) or a `}`
    // closing what holds it. A `{` inside generic arguments is a const
    // block (`Foo<{ N + 1 }>`).
    let (mut depth, mut angle, mut params) = (0i32, 0i32, false);
    loop {
        let t = lx.next();
        match t.tok {
            Tok::Eof => return true,
            Tok::Punct(b'(') if !params && depth <= 0 && angle <= 0 => {
                params = true;
                let scanned = group(lx, b'(', |_, _| false);
                push_gap(out, t.start, scanned, Hole::Params);
            }
            Tok::Punct(b'(' | b'[') => depth += 1,
            Tok::Punct(b')' | b']') => depth -= 1,
            Tok::Punct(b'<') => angle += 1,
            // Not the `>` of `->`.
            Tok::Punct(b'>') if t.start == 0 || src[t.start - 1] != b'-' => {
                angle -= 1;
            }
            Tok::Punct(b'{') if angle > 0 => {
                group(lx, b'{', |_, _| false);
            }
            Tok::Punct(b';' | b'}') if depth <= 0 => break,
            Tok::Punct(b'{') if depth <= 0 => {
                // A body that holds items is read on like the file, so
                // the items' own bodies and the macro calls around them
                // are still left out.
                let mut probe = lx.clone();
                let scanned = group(&mut probe, b'{', rust_holds);
                if !scanned.1 {
                    *lx = probe;
                    push_gap(out, t.start, scanned, Hole::Body);
                }
                break;
            }
            _ => {}
        }
    }
    false
}

/// After `const`/`static`: the value becomes a gap. True at the end of the text.
fn rust_const_value(lx: &mut Lexer<'_>, out: &mut Vec<Gap>) -> bool {
    let src = lx.src;
    // The type runs to the `=` or `;` outside brackets (`->` closes none).
    let mut depth = 0i32;
    loop {
        let t = lx.next();
        match t.tok {
            Tok::Eof => return true,
            Tok::Punct(b'(' | b'[' | b'<' | b'{') => depth += 1,
            Tok::Punct(b'>') if t.start > 0 && src[t.start - 1] == b'-' => {}
            Tok::Punct(b')' | b']' | b'>' | b'}') => {
                depth -= 1;
                // A const generic parameter (`impl<const N: usize>`).
                if depth < 0 {
                    break;
                }
            }
            Tok::Punct(b';' | b',') if depth <= 0 => break,
            Tok::Punct(b'=') if depth <= 0 => {
                let mut probe = lx.clone();
                if let Some(end) = rust_value_end(&mut probe)
                    && end - t.start >= MIN_VALUE
                {
                    *lx = probe;
                    out.push(Gap {
                        start: t.start,
                        end,
                        hole: Hole::Value,
                    });
                }
                break;
            }
            _ => {}
        }
    }
    false
}

/// After `struct`/`union`/`enum NAME`: the fields or variants become a gap. True at the end of
/// the text.
fn rust_fields(lx: &mut Lexer<'_>, out: &mut Vec<Gap>) -> bool {
    // The fields or variants, up to the body (`(` is a tuple struct, `;` a
    // unit struct).
    let mut depth = 0i32;
    loop {
        let t = lx.next();
        match t.tok {
            Tok::Eof => return true,
            Tok::Punct(b'<') => depth += 1,
            Tok::Punct(b'>') => depth -= 1,
            Tok::Punct(open @ (b'{' | b'(')) if depth <= 0 => {
                let scanned = group(lx, open, rust_holds);
                push_gap(out, t.start, scanned, Hole::Fields);
                break;
            }
            Tok::Punct(b';' | b'}' | b'=') if depth <= 0 => break,
            _ => {}
        }
    }
    false
}

fn rust_structure(lx: &mut Lexer<'_>) -> Vec<Gap> {
    let src = lx.src;
    let mut out = Vec::new();
    loop {
        let token = lx.next();
        match token.tok {
            Tok::Eof => return out,
            Tok::Ident => match lx.text(token) {
                // A function (a `fn` pointer type has no name).
                b"fn" if lx.peek().tok == Tok::Ident => {
                    if rust_signature(lx, &mut out) {
                        return out;
                    }
                }
                // `const NAME: T = value;`, `static [mut] NAME: T = value;`: the value is left
                // out (the grammar reads `const NAME: T;`) unless it holds an item.
                b"static" | b"const" if rust_holds(lx, token) => {
                    if rust_const_value(lx, &mut out) {
                        return out;
                    }
                }
                b"struct" | b"union" | b"enum" if lx.peek().tok == Tok::Ident => {
                    if rust_fields(lx, &mut out) {
                        return out;
                    }
                }
                // `use a::{b, c};`: the list.
                b"use" => loop {
                    let t = lx.next();
                    match t.tok {
                        Tok::Eof => return out,
                        Tok::Punct(b'{') => {
                            let scanned = group(lx, b'{', |_, _| false);
                            push_gap(&mut out, t.start, scanned, Hole::UseList);
                            break;
                        }
                        Tok::Punct(b';' | b'}') => break,
                        _ => {}
                    }
                },
                // Macro definitions and invocations hold token trees, which tree-sitter does
                // not parse into definitions: leave them out.
                b"macro_rules" if lx.peek().tok == Tok::Punct(b'!') => {
                    lx.next();
                    if lx.peek().tok == Tok::Ident {
                        lx.next();
                    }
                    if let Tok::Punct(open @ (b'(' | b'[' | b'{')) = lx.peek().tok {
                        lx.next();
                        rust_inner_trees(lx, open, &mut out, |_, _| false);
                    }
                }
                // `if !(…)`, `return !(…)`: not macro calls.
                word if RUST_EXPR_KEYWORDS.contains(&word) || RUST_PRIMITIVES.contains(&word) => {}
                _ => {
                    let mut ahead = lx.clone();
                    if ahead.next().tok == Tok::Punct(b'!')
                        && let open_token = ahead.peek()
                        && let Tok::Punct(open @ (b'(' | b'[' | b'{')) = open_token.tok
                    {
                        ahead.next();
                        *lx = ahead;
                        let scanned = group(lx, open, |_, _| false);
                        push_gap(&mut out, open_token.start, scanned, Hole::Tree);
                    }
                }
            },
            // `#[attr(…)]` and `#![attr(…)]`: left out whole, or else the arguments (a
            // token tree) when they hold an item or the attribute touches a word on both
            // sides.
            Tok::Punct(b'#') => {
                if lx.peek().tok == Tok::Punct(b'!') {
                    lx.next();
                }
                if lx.peek().tok == Tok::Punct(b'[') {
                    lx.next();
                    let mut probe = lx.clone();
                    if let (Some(close), false) = group(&mut probe, b'[', rust_holds)
                        && (token.start == 0
                            || !is_ident_byte(src[token.start - 1])
                            || !src.get(close + 1).copied().is_some_and(is_ident_byte))
                    {
                        *lx = probe;
                        out.push(Gap {
                            start: token.start,
                            end: close + 1,
                            hole: Hole::Attribute,
                        });
                    } else {
                        rust_inner_trees(lx, b'[', &mut out, rust_holds);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Reads a Rust `const` or `static` value after its `=`, to the `;` that ends it; returns the
/// `;`'s offset, or `None` when the value holds an item or the input ends first.
fn rust_value_end(lx: &mut Lexer<'_>) -> Option<usize> {
    let mut depth = 0i32;
    loop {
        let t = lx.next();
        match t.tok {
            Tok::Eof => return None,
            Tok::Punct(b'(' | b'[' | b'{') => depth += 1,
            Tok::Punct(b')' | b']' | b'}') => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
            }
            Tok::Punct(b';') if depth == 0 => return Some(t.start),
            _ if rust_holds(lx, t) => return None,
            _ => {}
        }
    }
}

/// Reads a group whose opening bracket was just read, leaving out the interior of each
/// bracketed group directly inside it (the rules of a `macro_rules!`, an attribute's
/// arguments).
fn rust_inner_trees(
    lx: &mut Lexer<'_>,
    open: u8,
    out: &mut Vec<Gap>,
    holds: fn(&Lexer<'_>, Token) -> bool,
) {
    let close = match open {
        b'{' => b'}',
        b'[' => b']',
        _ => b')',
    };
    loop {
        let t = lx.next();
        match t.tok {
            Tok::Eof => return,
            Tok::Punct(b) if b == close => return,
            Tok::Punct(inner @ (b'(' | b'[' | b'{')) => {
                let scanned = group(lx, inner, holds);
                push_gap(out, t.start, scanned, Hole::Tree);
            }
            _ => {}
        }
    }
}

/// Whether a token in a Rust body or array starts an item or import (`const` and `static`
/// only as `const NAME:`, not in `*const T`).
fn rust_holds(lx: &Lexer<'_>, token: Token) -> bool {
    if token.tok != Tok::Ident {
        return false;
    }
    let word = lx.text(token);
    if !RUST_ITEM_WORDS.contains(&word) {
        return false;
    }
    if !matches!(word, b"const" | b"static") {
        return true;
    }
    let mut ahead = lx.clone();
    let mut name = ahead.next();
    if name.tok == Tok::Ident && lx.text(name) == b"mut" {
        name = ahead.next();
    }
    let colon = ahead.next();
    // `NAME:`, not a path (`*const T::Item`).
    name.tok == Tok::Ident && colon.tok == Tok::Punct(b':') && lx.at(colon.end) != Some(b':')
}

/// What a Python logical line begins with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PyHead {
    /// `def` or `async def`.
    Def,
    /// `class`, a decorator, or an `import` / `from` statement: a body holding one is read.
    Defines,
    Other,
}

/// A Python logical line: from its first byte to the newline that ends it (or the end).
#[derive(Debug, Clone, Copy)]
struct PyLine {
    start: usize,
    end: usize,
    /// Leading spaces (a file indented with tabs, or with `\r` or form feeds, is not scanned).
    indent: usize,
    head: PyHead,
    /// Whether its last token is `:` (a compound statement's header).
    opens_block: bool,
    /// Whether it goes on the statement before (`else`, `elif`, `except`, `finally`).
    clause: bool,
}

/// The end of the string literal whose quote is at `at` (one past its closing quote), or
/// `None` when it does not end.
fn py_string_end(src: &[u8], at: usize) -> Option<usize> {
    let quote = src[at];
    let triple = src.get(at..at + 3) == Some(&[quote, quote, quote][..]);
    let mut k = at + if triple { 3 } else { 1 };
    while k < src.len() {
        match src[k] {
            b'\\' => k += 2,
            b'\n' if !triple => return None,
            c if c == quote => {
                if !triple {
                    return Some(k + 1);
                }
                if src.get(k..k + 3) == Some(&[quote, quote, quote][..]) {
                    return Some(k + 3);
                }
                k += 1;
            }
            _ => k += 1,
        }
    }
    None
}

/// The logical lines of `src`; `None` when the scanner cannot be sure of them (tabs, carriage
/// returns or form feeds in indentation, an unterminated string).
fn py_lines(src: &[u8]) -> Option<Vec<PyLine>> {
    if memchr::memchr2(b'\r', 0x0c, src).is_some() {
        return None;
    }
    let word = |at: usize, w: &[u8]| {
        src.get(at..at + w.len()) == Some(w)
            && src
                .get(at + w.len())
                .is_none_or(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))
    };
    let mut lines = Vec::new();
    let mut i = 0;
    while i < src.len() {
        let mut j = i;
        while j < src.len() && src[j] == b' ' {
            j += 1;
        }
        match src.get(j) {
            None => break,
            Some(b'\t') => return None,
            Some(b'\n') => {
                i = j + 1;
                continue;
            }
            Some(b'#') => {
                i = memchr::memchr(b'\n', &src[j..]).map_or(src.len(), |n| j + n + 1);
                continue;
            }
            Some(_) => {}
        }
        let (start, indent) = (j, j - i);
        let mut depth = 0usize;
        let mut last = start;
        // Whether the last token was a `:` or `;` outside brackets, and whether a statement
        // after one imports or defines (`if x: import y`, `a = 1; import b`).
        let (mut after_separator, mut inline_defines) = (false, false);
        let mut k = start;
        while k < src.len() {
            match src[k] {
                b'#' => {
                    k = memchr::memchr(b'\n', &src[k..]).map_or(src.len(), |n| k + n);
                }
                b'\n' if depth == 0 => break,
                b'\\' if src.get(k + 1) == Some(&b'\n') => k += 2,
                b'\'' | b'"' => {
                    k = py_string_end(src, k)?;
                    last = k - 1;
                    after_separator = false;
                }
                c => {
                    match c {
                        b'(' | b'[' | b'{' => depth += 1,
                        b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                        _ => {}
                    }
                    if !c.is_ascii_whitespace() {
                        inline_defines |= after_separator
                            && [&b"import"[..], b"from", b"class", b"def"]
                                .iter()
                                .any(|w| word(k, w));
                        after_separator = depth == 0 && matches!(c, b':' | b';');
                        last = k;
                    }
                    k += 1;
                }
            }
        }
        let head = if word(start, b"def") {
            PyHead::Def
        } else if word(start, b"async") {
            let mut d = start + 5;
            while src.get(d) == Some(&b' ') {
                d += 1;
            }
            if word(d, b"def") {
                PyHead::Def
            } else {
                PyHead::Other
            }
        } else if word(start, b"class")
            || word(start, b"import")
            || word(start, b"from")
            || src[start] == b'@'
            || inline_defines
        {
            PyHead::Defines
        } else {
            PyHead::Other
        };
        let clause = [&b"else"[..], b"elif", b"except", b"finally"]
            .iter()
            .any(|w| word(start, w));
        lines.push(PyLine {
            start,
            end: k,
            indent,
            head,
            opens_block: src[last] == b':',
            clause,
        });
        i = k + 1;
    }
    Some(lines)
}

/// Words a physical line of a left-out body must not begin with (after spaces): should the
/// scanner misread a string, a definition or import it hid would begin a line.
const PY_DEFINING_WORDS: &[&[u8]] = &[b"def", b"async", b"class", b"import", b"from"];

/// Keywords an expression follows, so a `[` after one opens a list, not a subscript.
const PY_EXPR_KEYWORDS: &[&[u8]] = &[
    b"return", b"in", b"yield", b"else", b"and", b"or", b"not", b"is", b"if", b"elif", b"while",
    b"assert", b"await", b"raise", b"from",
];

/// Statements whose brackets are not left out: imports are read from the tree, and the
/// targets of `for` and `del`, context managers and `case` patterns are not expressions.
const PY_KEEP_BRACKETS: &[&[u8]] = &[
    b"import",
    b"from",
    b"for",
    b"async",
    b"del",
    b"with",
    b"case",
    b"match",
    b"global",
    b"nonlocal",
];

/// Whether `word` is at `at` in `src`, not followed by an identifier byte.
fn py_word_at(src: &[u8], at: usize, word: &[u8]) -> bool {
    src.get(at..at + word.len()) == Some(word)
        && src
            .get(at + word.len())
            .is_none_or(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))
}

/// Whether a physical line of `text` past its first begins (after spaces) with a defining
/// word or a decorator.
fn py_defining_line(text: &[u8]) -> bool {
    memchr::memchr_iter(b'\n', text).any(|nl| {
        let mut at = nl + 1;
        while text.get(at) == Some(&b' ') {
            at += 1;
        }
        text.get(at) == Some(&b'@') || PY_DEFINING_WORDS.iter().any(|w| py_word_at(text, at, w))
    })
}

/// Python's gaps: in every function body, each run of statements between the first and the
/// last that defines and imports nothing; and the interiors of the bracketed groups in the
/// lines still parsed.
fn python_gaps(src: &[u8]) -> Vec<Gap> {
    let Some(lines) = py_lines(src) else {
        return Vec::new();
    };
    let mut out = python_body_gaps(src, &lines);
    out.sort_unstable_by_key(|g| g.start);
    let mut groups = Vec::new();
    let mut bodies = out.iter().peekable();
    for line in &lines {
        while bodies.next_if(|g| g.end <= line.start).is_some() {}
        if bodies.peek().is_some_and(|g| g.start < line.end) {
            continue;
        }
        py_groups(src, line, &mut groups);
    }
    out.extend(groups);
    out.sort_unstable_by_key(|g| g.start);
    out
}

/// The runs of statements left out of function bodies (unordered).
fn python_body_gaps(src: &[u8], lines: &[PyLine]) -> Vec<Gap> {
    let mut out = Vec::new();
    for (at, def) in lines.iter().enumerate() {
        if def.head != PyHead::Def || !def.opens_block {
            continue;
        }
        let body = &lines[at + 1..];
        let len = body.iter().take_while(|l| l.indent > def.indent).count();
        let body = &body[..len];
        let Some(first) = body.first() else {
            continue;
        };
        if first.clause || body.iter().any(|l| l.indent < first.indent) {
            continue;
        }
        // The body's statements: a line at the body's indentation (not a clause such as
        // `else:`) and what follows it, deeper or a clause.
        let starts: Vec<usize> = (0..body.len())
            .filter(|&i| body[i].indent == first.indent && !body[i].clause)
            .collect();
        let statement = |k: usize| {
            let end = starts.get(k + 1).copied().unwrap_or(body.len());
            &body[starts[k]..end]
        };
        // The first statement (maybe the docstring) and the last (so the function ends where
        // a full parse ends it) are kept, and so is every statement that defines or imports.
        let kept: Vec<bool> = (0..starts.len())
            .map(|k| {
                k == 0
                    || k + 1 == starts.len()
                    || statement(k).iter().any(|l| l.head != PyHead::Other)
            })
            .collect();
        // A first statement that begins with a name (not a string, a keyword or a compound
        // statement) is read as that name alone: the block still begins where it begins (a
        // signature is read up to there), and no docstring is made.
        let head_end = (starts.len() > 1
            && statement(0).len() == 1
            && first.head == PyHead::Other
            && !first.opens_block)
            .then(|| py_leading_name_end(src, first.start))
            .flatten();
        if let Some(start) = head_end
            && kept[1]
            && first.end - start >= MIN_GROUP
            && !py_defining_line(&src[start..first.end])
        {
            out.push(Gap {
                start,
                end: first.end,
                hole: Hole::Body,
            });
        }
        let mut k = 1;
        while k < starts.len() {
            if kept[k] {
                k += 1;
                continue;
            }
            let run = k;
            while !kept[k] {
                k += 1;
            }
            // From past the comments after the statement before the run (a full parse may
            // hold them in that statement's block), or from the first statement's name, to
            // the newline before the next statement.
            let before = statement(run - 1);
            let next = statement(k)[0].start;
            let gap = Gap {
                start: head_end
                    .filter(|_| run == 1)
                    .unwrap_or_else(|| py_past_comments(src, before[before.len() - 1].end)),
                end: memchr::memrchr(b'\n', &src[..next]).unwrap_or(next),
                hole: Hole::Body,
            };
            if gap.end - gap.start >= MIN_BODY && !py_defining_line(&src[gap.start..gap.end]) {
                out.push(gap);
            }
        }
    }
    out
}

/// Python words a statement of a name alone cannot begin with (keywords, soft keywords and
/// Python 2's statement words).
const PY_KEYWORDS: &[&[u8]] = &[
    b"False",
    b"None",
    b"True",
    b"and",
    b"as",
    b"assert",
    b"async",
    b"await",
    b"break",
    b"class",
    b"continue",
    b"def",
    b"del",
    b"elif",
    b"else",
    b"except",
    b"finally",
    b"for",
    b"from",
    b"global",
    b"if",
    b"import",
    b"in",
    b"is",
    b"lambda",
    b"nonlocal",
    b"not",
    b"or",
    b"pass",
    b"raise",
    b"return",
    b"try",
    b"while",
    b"with",
    b"yield",
    b"match",
    b"case",
    b"type",
    b"print",
    b"exec",
];

/// The end of the name a statement at `at` begins with, when that name alone is a statement:
/// not a keyword, and not a string's prefix (`f"…"`).
fn py_leading_name_end(src: &[u8], at: usize) -> Option<usize> {
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    if !src
        .get(at)
        .is_some_and(|&c| ident(c) && !c.is_ascii_digit())
    {
        return None;
    }
    let mut end = at;
    while src.get(end).is_some_and(|&c| ident(c)) {
        end += 1;
    }
    let quoted = matches!(src.get(end), Some(b'"' | b'\''));
    (!quoted && !PY_KEYWORDS.contains(&&src[at..end])).then_some(end)
}

/// The newline ending the last of the blank or comment lines that follow the newline at
/// `at`, or `at`.
fn py_past_comments(src: &[u8], mut at: usize) -> usize {
    loop {
        let mut k = at + 1;
        while src.get(k) == Some(&b' ') {
            k += 1;
        }
        match src.get(k) {
            Some(b'\n') => at = k,
            Some(b'#') => match memchr::memchr(b'\n', &src[k..]) {
                Some(n) => at = k + n,
                None => return at,
            },
            _ => return at,
        }
    }
}

/// Pushes the interiors of `line`'s outermost bracketed groups that can be left out: not a
/// subscript, not left of the statement's last `=` (an assignment's targets are read), and
/// not in an import or a statement whose brackets may hold no expression.
fn py_groups(src: &[u8], line: &PyLine, out: &mut Vec<Gap>) {
    if PY_KEEP_BRACKETS
        .iter()
        .any(|w| py_word_at(src, line.start, w))
    {
        return;
    }
    let first = out.len();
    let mut depth = 0usize;
    let mut open = 0;
    let mut last_eq = line.start;
    // The last byte of the token before the current one (a string's closing quote).
    let mut prev: Option<usize> = None;
    let mut k = line.start;
    while k < line.end {
        match src[k] {
            b'#' => {
                k = memchr::memchr(b'\n', &src[k..line.end]).map_or(line.end, |n| k + n);
                continue;
            }
            b'\'' | b'"' => {
                // Lines were scanned: the string ends.
                k = py_string_end(src, k).unwrap_or(line.end);
                prev = Some(k - 1);
                continue;
            }
            c @ (b'(' | b'[' | b'{') => {
                if depth == 0 {
                    open = if c == b'[' && prev.is_some_and(|p| py_subscripted(src, p)) {
                        usize::MAX
                    } else {
                        k
                    };
                }
                depth += 1;
            }
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 && open != usize::MAX && k - open > MIN_GROUP {
                    out.push(Gap {
                        start: open + 1,
                        end: k,
                        hole: Hole::Group,
                    });
                }
            }
            b'=' if depth == 0 => last_eq = k,
            _ => {}
        }
        if !src[k].is_ascii_whitespace() && src[k] != b'\\' {
            prev = Some(k);
        }
        k += 1;
    }
    // Groups left of an `=` may be assignment targets.
    let keep_from = out[first..]
        .iter()
        .position(|g| g.start > last_eq)
        .map_or(out.len(), |i| first + i);
    out.drain(first..keep_from);
}

/// Whether a `[` after the byte at `p` subscripts what ends there (a name, a call, a
/// subscript, a string), rather than opening a list after an operator or keyword.
fn py_subscripted(src: &[u8], p: usize) -> bool {
    let c = src[p];
    if matches!(c, b')' | b']' | b'}' | b'\'' | b'"') {
        return true;
    }
    if !(c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80) {
        return false;
    }
    let mut s = p;
    while s > 0 && (src[s - 1].is_ascii_alphanumeric() || src[s - 1] == b'_' || src[s - 1] >= 0x80)
    {
        s -= 1;
    }
    !PY_EXPR_KEYWORDS.contains(&&src[s..=p])
}

/// Python's gaps that the tree does not confirm, all of them when the tree has errors. A
/// left-out run of statements must lie between two statements of a function's block (past
/// only blanks and comments after the first), the second beginning where the gap ends; a
/// left-out group must be the interior of an argument list, a parameter list, or a list,
/// dictionary or tuple. The walk goes only into nodes that hold a gap.
fn python_unmatched(tree: &Tree, src: &[u8], gaps: &[Gap]) -> Vec<Gap> {
    let root = tree.root_node();
    if root.has_error() {
        return gaps.to_vec();
    }
    let mut matched = vec![false; gaps.len()];
    // (end of a statement, start of the next) in the functions' blocks that hold a gap.
    let mut seams = Vec::new();
    let function_depth: RefCell<Vec<bool>> = RefCell::new(Vec::new());
    traverse(
        root,
        |node| {
            let (start, end) = (node.start_byte(), node.end_byte());
            // The first gap past this node's start.
            let i = gaps.partition_point(|g| g.start <= start);
            let Some(gap) = gaps.get(i).filter(|g| g.end < end) else {
                return (false, false);
            };
            let kind = node.kind();
            if gap.hole == Hole::Group
                && gap.start == start + 1
                && gap.end + 1 == end
                && matches!(
                    kind,
                    "argument_list" | "parameters" | "list" | "dictionary" | "tuple"
                )
            {
                matched[i] = true;
            }
            let mut above = function_depth.borrow_mut();
            if kind == "block" && above.last() == Some(&true) {
                let mut cursor = node.walk();
                let statements: Vec<_> = node
                    .named_children(&mut cursor)
                    .filter(|n| n.kind() != "comment")
                    .collect();
                for pair in statements.windows(2) {
                    seams.push((pair[0].end_byte(), pair[1].start_byte()));
                }
            }
            above.push(kind == "function_definition");
            (true, true)
        },
        |pushed| {
            if pushed {
                function_depth.borrow_mut().pop();
            }
        },
    );
    seams.sort_unstable();
    gaps.iter()
        .zip(matched)
        .filter(|&(gap, matched)| {
            if gap.hole == Hole::Group {
                return !matched;
            }
            let i = seams.partition_point(|&(end, _)| end <= gap.start);
            let Some(&(end, next)) = i.checked_sub(1).and_then(|i| seams.get(i)) else {
                return true;
            };
            next < gap.end || !blank_or_comments(&src[end..gap.start])
        })
        .map(|(gap, _)| *gap)
        .collect()
}

/// Whether Python source `text` holds only whitespace and comments.
fn blank_or_comments(text: &[u8]) -> bool {
    let mut rest = text;
    loop {
        let trimmed = rest.trim_ascii_start();
        if trimmed.is_empty() {
            return true;
        }
        if trimmed[0] != b'#' {
            return false;
        }
        rest = memchr::memchr(b'\n', trimmed).map_or(&[][..], |n| &trimmed[n..]);
    }
}

fn c_gaps(src: &[u8]) -> Vec<Gap> {
    let trivia = RefCell::new(Vec::new());
    let mut lx = Lexer::new(src, Language::C);
    lx.trivia = Some(&trivia);
    let structure = c_structure(&mut lx);
    with_trivia(&structure, trivia.into_inner())
}

fn c_structure(lx: &mut Lexer<'_>) -> Vec<Gap> {
    let mut out = Vec::new();
    // The declaration being read at the current level: parentheses open, whether an `=`
    // was seen (an initializer follows), and the previous token.
    let mut paren = 0i32;
    let mut initializer = false;
    let mut previous = Tok::Punct(b';');
    // Whether the last tokens were `struct`, `union` or `enum` and perhaps a name.
    let mut tagged = false;
    loop {
        let token = lx.next();
        match token.tok {
            Tok::Eof => return out,
            Tok::Directive => continue,
            Tok::Punct(b'(') => paren += 1,
            Tok::Punct(b')') => paren -= 1,
            Tok::Punct(b'=') if paren <= 0 => initializer = true,
            Tok::Punct(b'{') if paren > 0 => {
                group(lx, b'{', |_, _| false);
            }
            Tok::Punct(b'{') if initializer => {
                let scanned = group(lx, b'{', |_, t| t.tok == Tok::Directive);
                push_gap(&mut out, token.start, scanned, Hole::Table);
            }
            Tok::Punct(b'{') if previous == Tok::Punct(b')') => {
                let scanned = group(lx, b'{', c_body_holds);
                push_gap(&mut out, token.start, scanned, Hole::Body);
                paren = 0;
                initializer = false;
            }
            Tok::Punct(b'{') if tagged => {
                let scanned = group(lx, b'{', c_body_holds);
                push_gap(&mut out, token.start, scanned, Hole::Fields);
            }
            // The end of a declaration; or an `extern "C"` block, or a body the scan does not
            // know: read on inside.
            Tok::Punct(b';' | b'}' | b'{') => {
                paren = 0;
                initializer = false;
            }
            _ => {}
        }
        tagged = match token.tok {
            Tok::Ident => {
                matches!(lx.text(token), b"struct" | b"union" | b"enum") || {
                    previous == Tok::Ident && tagged
                }
            }
            _ => false,
        };
        previous = token.tok;
    }
}

/// Whether a token in a C function body means the body must be parsed: a preprocessor line
/// (a `#define` is a symbol, and `#if` branches can unbalance braces), a `typedef`, or a
/// tagged type with a body.
fn c_body_holds(lx: &Lexer<'_>, token: Token) -> bool {
    match token.tok {
        Tok::Directive => true,
        Tok::Ident => match lx.text(token) {
            b"typedef" => true,
            b"struct" | b"union" | b"enum" => {
                let mut ahead = lx.clone();
                let mut next = ahead.next();
                if next.tok == Tok::Ident {
                    next = ahead.next();
                }
                next.tok == Tok::Punct(b'{')
            }
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::{Extracted, extract_from_tree};

    fn full(lang: Language, src: &str) -> Extracted {
        let tree = crate::symbols::parse(lang, src.as_bytes()).expect("parses");
        extract_from_tree(lang, src.as_bytes(), &tree)
    }

    /// The shallow parse's symbols, failing when the scan left nothing out or the guard fell
    /// back to a full parse.
    fn shallow(lang: Language, src: &str) -> Extracted {
        let tree = parse(lang, src.as_bytes()).expect("a shallow parse the tree agrees with");
        extract_from_tree(lang, src.as_bytes(), &tree)
    }

    fn same_symbols(lang: Language, src: &str) {
        let (a, b) = (full(lang, src), shallow(lang, src));
        assert_eq!(a.symbols, b.symbols);
        assert_eq!(a.imports, b.imports);
    }

    /// What is left out, but trivia.
    fn interiors(lang: Language, src: &str) -> Vec<String> {
        gaps(lang, src.as_bytes())
            .iter()
            .filter(|g| g.hole != Hole::Trivia)
            .map(|g| src[g.start..g.end].trim().to_owned())
            .collect()
    }

    /// What is left out as holes of kind `hole`.
    fn interiors_of(lang: Language, src: &str, hole: Hole) -> Vec<String> {
        gaps(lang, src.as_bytes())
            .iter()
            .filter(|g| g.hole == hole)
            .map(|g| src[g.start..g.end].trim().to_owned())
            .collect()
    }

    #[test]
    fn rust_comments_and_indentation_are_left_out() {
        let src = "//! Crate.\n\n/// Doc.\n///   more\npub fn a() -> u8 {\n    1\n}\n\
                   struct S { x: u8 }/* tight */impl S {}\n\
                   const C: &str = \"// not a comment /* nor this */\"; // trailing\n\
                   fn b(x: u8) {} /* block\n spanning */ fn c() {}\n";
        same_symbols(Language::Rust, src);
        let trivia: Vec<&str> = gaps(Language::Rust, src.as_bytes())
            .into_iter()
            .filter(|g| g.hole == Hole::Trivia)
            .map(|g| &src[g.start..g.end])
            .collect();
        assert_eq!(
            trivia,
            [
                "//! Crate.",
                "/// Doc.",
                "///   more",
                "    ",
                "// trailing",
                "/* block\n spanning */",
            ],
            "a comment right after a token is kept (`/* tight */`), strings are not comments"
        );
    }

    #[test]
    fn rust_bodies_and_tables_are_left_out_with_the_same_symbols() {
        let src = r##"
/// Doc.
pub fn first(x: &'static str) -> char {
    let c = 'x'; let q = '\''; let l: &'a str = "}{"; let r = r#"}"#; /* } /* nested } */ */
    println!("{c}{q}{l}{r}");
    x.chars().next().unwrap_or('}')
}
static TABLE: [u16; 40] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
    20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42,
    43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65];
impl Foo {
    pub const fn new() -> Self { Self { a: 1, b: 2, c: 3, d: 4 } }
    fn with_item(&self) -> u8 { fn inner() -> u8 { 1 + 2 + 3 + 4 + 5 } inner() }
}
struct Holder { f: fn(u8) -> u8, g: u32 }
macro_rules! make { ($n:ident) => { fn $n() { let _ = 1 + 2 + 3 + 4 + 5; } }; }
trait T { fn required(&self); fn provided(&self) -> u32 { 40 + 2 + 0 + 0 + 0 + 0 } }
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fields<T> where T: Copy { pub alpha: T, beta: u64 }
enum Variants { Alpha = 1, Beta { x: u8 }, Gamma(u16) }
lazy_static! { static ref NAME: String = String::new(); }
"##;
        same_symbols(Language::Rust, src);
        let left_out = interiors(Language::Rust, src);
        assert_eq!(
            left_out[2..],
            [
                "Self { a: 1, b: 2, c: 3, d: 4 }",
                // `with_item` holds `fn inner`, so its body is read on and `inner`'s is left
                // out.
                "1 + 2 + 3 + 4 + 5",
                "fn $n() { let _ = 1 + 2 + 3 + 4 + 5; }",
                "40 + 2 + 0 + 0 + 0 + 0",
                "#[derive(Debug, Clone, Copy, PartialEq)]",
                "pub alpha: T, beta: u64",
                "Alpha = 1, Beta { x: u8 }, Gamma(u16)",
                "static ref NAME: String = String::new();",
            ],
            "{left_out:?}"
        );
        assert!(left_out[0].starts_with("let c = 'x'"));
        assert!(left_out[1].starts_with("= [0, 1, 2"), "{}", left_out[1]);
    }

    #[test]
    fn c_bodies_and_tables_are_left_out_with_the_same_symbols() {
        let src = r#"
#include <stdio.h>
#ifdef __cplusplus
extern "C" {
#endif
static const int table[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
  20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42,
  43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65,
  66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88 };
/* Adds. */
int add(int a, int b) {
    const char *s = "}"; char c = '}';
    return a + b + (s[0] == c);
}
struct point { int x, y; long z; };
typedef struct { struct inner { int a; } i; } outer;
enum color { RED, GREEN, BLUE, BLACK };
void local(void) { struct inner { int z; } v; v.z = 1; (void)v; }
void guarded(void) {
#ifdef X
    if (1) {
#else
    if (0) {
#endif
    }
}
#ifdef __cplusplus
}
#endif
"#;
        same_symbols(Language::C, src);
        let left_out = interiors(Language::C, src);
        assert_eq!(left_out.len(), 4, "{left_out:?}");
        assert!(left_out[0].starts_with("1, 2, 3"));
        assert!(left_out[1].starts_with("const char *s"));
        assert_eq!(
            left_out[2..],
            ["int x, y; long z;", "RED, GREEN, BLUE, BLACK"]
        );
    }

    #[test]
    fn a_scan_the_grammar_disagrees_with_falls_back() {
        // K&R parameters: the scan misses the function body and takes the `if` block for one;
        // the tree has it under an `if`, so the shallow parse refuses (the caller parses in
        // full).
        let src = "int f(a) int a; { if (a) { return 1 + 2 + 3 + 4 + 5 + 6; } return 0; }\n";
        assert_eq!(
            interiors(Language::C, src),
            ["return 1 + 2 + 3 + 4 + 5 + 6;"]
        );
        assert!(parse(Language::C, src.as_bytes()).is_none());
        // `fn(u8)` is a type, not a function: the scan reads on into the `impl`.
        let rust = "impl Display for fn(u8) -> u8 { fn fmt(&self) { let a = 1 + 2 + 3 + 4; } }";
        assert_eq!(interiors(Language::Rust, rust), ["let a = 1 + 2 + 3 + 4;"]);
        same_symbols(Language::Rust, rust);
        // `*const T` in a body is not an item; `const N: T` is.
        assert_eq!(
            interiors(
                Language::Rust,
                "fn a(p: *const u8) { let q = p as *const u16; drop(q); }"
            ),
            ["let q = p as *const u16; drop(q);"]
        );
        assert!(
            interiors(
                Language::Rust,
                "fn a() { const N: usize = 4; let _ = [0u8; N]; }"
            )
            .is_empty()
        );
    }

    #[test]
    fn rust_parameters_use_lists_and_values_are_left_out() {
        let src = r#"
use std::collections::{BTreeMap, HashMap, HashSet};
pub const GUID: windows_sys::core::GUID = windows_sys::core::GUID::from_u128(0xe429faf5);
pub static mut COUNTER: AtomicUsize = AtomicUsize::new(0);
const SHORT: u8 = 1;
const _: () = { impl Marker for u8 { fn marked(&self) -> bool { true || false || true } } };
pub struct Pair(pub u32, pub u64, pub String);
pub fn call(first: &mut Vec<u8>, second: Option<&str>) -> Result<(), Error>;
fn generic<T: Into<u8>, const N: usize>(items: [T; N], extra: &[u8]) -> [u8; N] {
    let p: *const T::Item = core::ptr::null();
    if !(p.is_null() && extra.is_empty()) { return [0; N]; }
    todo!()
}
impl<const N: usize> Deref for Buf<N> { type Target = [u8; N]; fn deref(&self) -> &[u8; N] { &self.0 } }
fn keeps(x: u8) -> u8 {
    const LOCAL: u32 = 40 + 2;
    let f: fn(u8) -> u8 = |v| { v + 1 + 2 + 3 + 4 + 5 + 6 };
    if !(x > 1 && x < 200 && x != 7) { return 0; }
    u16!(x, "a long argument")
}
"#;
        same_symbols(Language::Rust, src);
        assert_eq!(
            interiors(Language::Rust, src),
            [
                "BTreeMap, HashMap, HashSet",
                "= windows_sys::core::GUID::from_u128(0xe429faf5)",
                "= AtomicUsize::new(0)",
                // The `const _` value holds an `impl`: read on, leaving out its method body.
                "true || false || true",
                "pub u32, pub u64, pub String",
                "first: &mut Vec<u8>, second: Option<&str>",
                "items: [T; N], extra: &[u8]",
                "let p: *const T::Item = core::ptr::null();\n    if !(p.is_null() && extra.is_empty()) { return [0; N]; }\n    todo!()",
                // `keeps` holds `const LOCAL`: its body is read on; a `fn` pointer type, a
                // closure and a primitive-named macro are not taken for items or calls.
                "= 40 + 2",
            ]
        );
    }

    #[test]
    fn items_in_attributes_and_const_arguments_are_found() {
        // From thiserror's and zerocopy's tests: items inside an attribute's arguments (a
        // token tree, so not definitions to tree-sitter, but the attribute is kept whole) and
        // inside a const generic argument (a block).
        let src = r#"
#[derive(Error, Debug)]
#[error("{}", {
    struct Msg<'a>(&'a String);
    impl<'a> Display for Msg<'a> {
        fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { write!(f, "{}", self.0) }
    }
    Msg(&self.0)
})]
struct Error(String);
impl Foo for Bar
where
    (): PaddingFree<Self, {
        #[repr(C)]
        pub enum Tag { Bar }
        unsafe impl Immutable for Tag { fn only_derive() {} }
        1
    }>,
{
    fn method(&self) -> u32 { 1 + 2 + 3 + 4 + 5 + 6 + 7 }
}
"#;
        let names: Vec<String> = full(Language::Rust, src)
            .symbols
            .into_iter()
            .map(|s| s.name)
            .collect();
        for name in ["Error", "Tag", "only_derive", "method"] {
            assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
        }
        let (a, b) = (
            full(Language::Rust, src),
            extract_from_tree(
                Language::Rust,
                src.as_bytes(),
                &crate::symbols::parse_for_symbols(Language::Rust, src.as_bytes()).expect("parses"),
            ),
        );
        assert_eq!(a.symbols, b.symbols);
    }

    #[test]
    fn python_bodies_past_their_first_statement_are_left_out_with_the_same_symbols() {
        let src = r#"
import os
from typing import List

CONSTANT = 1

def plain(a, b):
    """Adds.

    More text."""
    total = a + b
    for x in range(3):
        total += x
    return total

async def fetch(url: str) -> bytes:
    data = await get(url)
    if data:
        return data
    return b""

class Thing(Base):
    kind = "thing"

    @property
    def name(self):
        value = self._name
        # a comment
        value = value.strip()
        return value

    def nested(self):
        x = 1
        def inner():
            y = 2
            z = y * 3
            return z
        return inner

def imports_inside():
    x = 1
    import json
    return json.dumps({})

def words_in_strings(s):
    t = s.strip()
    u = t.replace("class ", "")
    return u

def continued(a,
              b):
    result = (a +
              b)
    other = 'x' \
        'y'
    return result

def one_statement():
    return 1 + 2 + 3 + 4 + 5 + 6

def compound_first(x):
    if x:
        return 1
    return 2 + 3 + 4 + 5 + 6

def ends_in_a_clause(cls):
    """Doc."""
    value = cls.value
    try:
        return issubclass(cls, value)
    except TypeError:
        return False

def runs_around_a_class(self):
    class Inner(Base):
        name = field(max_length=10)
        # a comment a full parse holds in the class
    value = compute(Inner)
    other = value + 1
    import json
    more = json.dumps(other)
    return more

def inline_import(pattern):
    x = 1
    if not re: import re
    y = 2 + 3 + 4 + 5
    return x

def a_string_line_that_looks_like_a_definition():
    x = 1
    y = """
class NotAClass:
"""
    return y
"#;
        same_symbols(Language::Python, src);
        assert!(
            parse(Language::Python, src.as_bytes()).is_some(),
            "parsed shallow"
        );
        assert_eq!(
            interiors_of(Language::Python, src, Hole::Body),
            [
                "total = a + b\n    for x in range(3):\n        total += x",
                // A first statement that begins with a name is read as the name alone.
                "= await get(url)\n    if data:\n        return data",
                "= self._name\n        # a comment\n        value = value.strip()",
                "= 2\n            z = y * 3",
                // A word in a string does not keep a body.
                "= s.strip()\n    u = t.replace(\"class \", \"\")",
                "= (a +\n              b)\n    other = 'x' \\\n        'y'",
                "value = cls.value",
                // Between the class and the import, which are parsed.
                "value = compute(Inner)\n    other = value + 1",
                "more = json.dumps(other)",
                "y = 2 + 3 + 4 + 5",
            ]
        );
        // Unsure scans leave the file to a full parse: tabs, an unterminated string.
        assert!(
            gaps(
                Language::Python,
                b"def f():\n\tx = 1\n\ty = 2 + 3 + 4 + 5 + 6\n"
            )
            .is_empty()
        );
        assert!(
            gaps(
                Language::Python,
                b"def f():\n    x = 1\n    y = 'abc + 4 + 5 + 6\n"
            )
            .is_empty()
        );
    }

    #[test]
    fn python_first_statements_are_read_as_their_leading_name() {
        let src = r#"
def name_first(self):
    response = self.client.get("/a/long/url/", follow=True)
    self.assertEqual(response.status_code, 200)
    return response

def name_then_definition(self):
    response = self.client.get("/a/long/url/", follow=True)
    def inner():
        return response
    return inner

def prefixed_string_first(self):
    rb"raw bytes, not a docstring"
    value = compute(self)
    return value

def keyword_first(self):
    assert self.value is not None, "a message long enough"
    value = compute(self)
    return value

def only_statement(self):
    response = self.client.get("/a/long/url/", follow=True)
"#;
        same_symbols(Language::Python, src);
        assert_eq!(
            interiors_of(Language::Python, src, Hole::Body),
            [
                "= self.client.get(\"/a/long/url/\", follow=True)\n    \
                 self.assertEqual(response.status_code, 200)",
                "= self.client.get(\"/a/long/url/\", follow=True)",
                // A string (prefixed or not) and a keyword are kept whole.
                "value = compute(self)",
                "value = compute(self)",
            ]
        );
    }

    #[test]
    fn python_bracket_interiors_are_left_out_with_the_same_symbols() {
        let src = r#"
from package import (alpha, beta, gamma)
import os

CHOICES = [
    ("a", "Apple"),
    ("b", "Banana"),
]
(first, second) = make_pair(1, 2, 3, 4)
table[index_of("key")] = compute("value", 42)
last = mapping["a long key"]
listed = values in [1, 2, 3, 4]

@decorate(option="value", other=True)
class Model(Base, metaclass=Meta):
    """Model."""
    fields = {"name": str, "age": int}

    def method(self, first_argument, second_argument):
        """Doc."""
        return helper(first_argument, second_argument)

def caller():
    result = compute(1, 2, 3, 4)
    for (key, value) in result.items():
        print(key, value)
    return [item for item in result if item]
"#;
        same_symbols(Language::Python, src);
        assert_eq!(
            interiors_of(Language::Python, src, Hole::Group),
            [
                "(\"a\", \"Apple\"),\n    (\"b\", \"Banana\"),",
                "1, 2, 3, 4",
                "\"value\", 42",
                "1, 2, 3, 4",
                "option=\"value\", other=True",
                "Base, metaclass=Meta",
                "\"name\": str, \"age\": int",
                "self, first_argument, second_argument",
                "first_argument, second_argument",
                "item for item in result if item",
            ]
        );
        // Refused: subscripts, imports, assignment targets, `for` targets.
        for kept in [
            "value = mapping[\"a long key here\"]\n",
            "value = call(1)[\"a long key here\"]\n",
            "from package import (alpha, beta, gamma)\n",
            "(first, second) = pair_of_values\n",
            "[first, second] = pair_of_values\n",
            "for (first, second) in pairs_of_values:\n    pass\n",
        ] {
            assert!(
                interiors_of(Language::Python, kept, Hole::Group).is_empty(),
                "{kept}"
            );
        }
        // A tree with errors: the scan's groups are not trusted.
        let broken = "value = compute(1, 2, 3, 4, 5) +\n";
        assert!(!interiors_of(Language::Python, broken, Hole::Group).is_empty());
        assert!(parse(Language::Python, broken.as_bytes()).is_none());
    }

    #[test]
    fn other_languages_are_parsed_in_full() {
        assert!(
            gaps(
                Language::JavaScript,
                b"function f() {\n    return 1 + 2 + 3 + 4 + 5 + 6;\n}\n"
            )
            .is_empty()
        );
        assert!(
            parse(
                Language::Go,
                b"package a\nfunc f() { x := 1 + 2 + 3 + 4 + 5 + 6 }\n"
            )
            .is_none()
        );
    }
}
