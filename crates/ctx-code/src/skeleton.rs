//! Skeletons: a file's code with function bodies elided and everything else kept, so the
//! result still reads (and parses) as the same language.
//!
//! Bodies of functions, methods and constructors become `{ /* ... */ }` in brace languages
//! and `...` in Python (after the docstring, which stays). Class, impl, module and namespace
//! bodies stay, with their own methods elided the same way.

use tree_sitter::{Node, Tree};

use crate::lang::Language;
use std::cell::RefCell;

use crate::symbols::{SymbolKind, classify, parse, traverse};

/// The marker a brace-language body becomes.
pub const ELIDED_BODY: &str = "{ /* ... */ }";

/// The skeleton of `source`, or `None` if it cannot be parsed at all.
pub fn skeleton(lang: Language, source: &[u8]) -> Option<String> {
    let tree = parse(lang, source)?;
    Some(skeleton_from_tree(lang, source, &tree))
}

/// The skeleton of an already parsed tree.
pub fn skeleton_from_tree(lang: Language, source: &[u8], tree: &Tree) -> String {
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    collect(lang, tree.root_node(), source, &mut edits);
    edits.sort_by_key(|e| e.0);
    let mut out = Vec::with_capacity(source.len() / 2);
    let mut at = 0;
    for (start, end, replacement) in edits {
        if start < at {
            continue; // inside a body already elided
        }
        out.extend_from_slice(&source[at..start]);
        out.extend_from_slice(replacement.as_bytes());
        at = end;
    }
    out.extend_from_slice(&source[at..]);
    String::from_utf8_lossy(&out).into_owned()
}

fn collect(lang: Language, root: Node<'_>, src: &[u8], edits: &mut Vec<(usize, usize, String)>) {
    let scopes: RefCell<Vec<SymbolKind>> = RefCell::new(Vec::new());
    traverse(
        root,
        |node| {
            let scope = scopes.borrow().last().copied();
            let Some(def) = classify(lang, node, src, scope) else {
                return (false, true);
            };
            if def.kind.is_callable()
                && let Some(body) = def.body
                && let Some(edit) = elide(lang, body, src)
            {
                edits.push(edit);
                return (false, false);
            }
            if def.kind.is_container() || def.kind.is_callable() {
                scopes.borrow_mut().push(def.kind);
                return (true, true);
            }
            (false, true)
        },
        |pushed| {
            if pushed {
                scopes.borrow_mut().pop();
            }
        },
    );
}

/// The edit that elides `body`, if it is a block worth eliding.
fn elide(lang: Language, body: Node<'_>, src: &[u8]) -> Option<(usize, usize, String)> {
    if lang == Language::Python {
        if body.kind() != "block" {
            return None;
        }
        let first = body.named_child(0)?;
        let is_docstring = first.kind() == "expression_statement"
            && first.named_child(0).is_some_and(|s| s.kind() == "string");
        if is_docstring {
            if body.named_child_count() == 1 {
                return None;
            }
            let indent = " ".repeat(first.start_position().column);
            return Some((first.end_byte(), body.end_byte(), format!("\n{indent}...")));
        }
        if body.named_child_count() == 1 && node_is_ellipsis(first, src) {
            return None;
        }
        return Some((body.start_byte(), body.end_byte(), "...".to_owned()));
    }
    let braced = matches!(
        body.kind(),
        "block" | "statement_block" | "compound_statement" | "constructor_body"
    );
    if !braced {
        return None;
    }
    let text = &src[body.byte_range()];
    if text.iter().filter(|b| !b.is_ascii_whitespace()).count() <= 2 {
        return None; // already empty: `{}`
    }
    Some((body.start_byte(), body.end_byte(), ELIDED_BODY.to_owned()))
}

fn node_is_ellipsis(node: Node<'_>, src: &[u8]) -> bool {
    &src[node.byte_range()] == b"..." || &src[node.byte_range()] == b"pass"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_bodies_are_elided_and_structure_kept() {
        let src = "/// Doc.\npub fn a(x: u32) -> u32 {\n    x + 1\n}\nimpl S {\n    fn m(&self) {\n        todo!()\n    }\n}\n";
        let got = skeleton(Language::Rust, src.as_bytes()).expect("parse");
        assert_eq!(
            got,
            "/// Doc.\npub fn a(x: u32) -> u32 { /* ... */ }\nimpl S {\n    fn m(&self) { /* ... */ }\n}\n"
        );
        let tree = parse(Language::Rust, got.as_bytes()).expect("reparse");
        assert!(!tree.root_node().has_error());
    }

    #[test]
    fn python_keeps_docstrings_and_elides_the_rest() {
        let src = "class A:\n    def m(self):\n        \"\"\"Doc.\"\"\"\n        return 1\n\ndef f(x):\n    y = x\n    return y\n";
        let got = skeleton(Language::Python, src.as_bytes()).expect("parse");
        assert_eq!(
            got,
            "class A:\n    def m(self):\n        \"\"\"Doc.\"\"\"\n        ...\n\ndef f(x):\n    ...\n"
        );
        let tree = parse(Language::Python, got.as_bytes()).expect("reparse");
        assert!(!tree.root_node().has_error());
    }

    #[test]
    fn arrow_function_blocks_are_elided() {
        let src = "export const f = (a) => {\n  return a;\n};\nconst g = (b) => b * 2;\n";
        let got = skeleton(Language::TypeScript, src.as_bytes()).expect("parse");
        assert_eq!(
            got,
            "export const f = (a) => { /* ... */ };\nconst g = (b) => b * 2;\n"
        );
    }
}
