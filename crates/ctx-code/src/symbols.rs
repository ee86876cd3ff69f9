//! Symbols, imports and call sites read from tree-sitter syntax trees.
//!
//! One pass over the tree per file: definitions are recognised by node kind per language
//! (the grammars' `tags.scm` patterns, extended with what they miss: methods inside
//! impl/class bodies with their parent, nested modules and namespaces, arrow functions
//! assigned to constants, TypeScript interfaces and type aliases, Go methods with their
//! receiver type, C++ classes, namespaces and out-of-class `Foo::bar` definitions). A
//! hand-written walk instead of the tag queries gives the parent scope, the visibility and the
//! body (for signatures and skeletons) in the same pass.

use std::cell::RefCell;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use tree_sitter::{Node, Parser, Tree};

use crate::lang::{LANGUAGES, Language};

/// What a symbol is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SymbolKind {
    Function,
    Method,
    Constructor,
    Class,
    Struct,
    Union,
    Enum,
    Trait,
    Interface,
    Impl,
    Module,
    Namespace,
    Type,
    Const,
    Static,
    Macro,
    /// A module- or class-level assignment (`current_app = …`, class attributes), as
    /// universal-ctags reports them for Python.
    Variable,
}

impl SymbolKind {
    /// The lowercase name used in output.
    pub fn name(self) -> &'static str {
        match self {
            Self::Function => "function",
            Self::Method => "method",
            Self::Constructor => "constructor",
            Self::Class => "class",
            Self::Struct => "struct",
            Self::Union => "union",
            Self::Enum => "enum",
            Self::Trait => "trait",
            Self::Interface => "interface",
            Self::Impl => "impl",
            Self::Module => "module",
            Self::Namespace => "namespace",
            Self::Type => "type",
            Self::Const => "const",
            Self::Static => "static",
            Self::Macro => "macro",
            Self::Variable => "variable",
        }
    }

    /// A short tag for one-line listings (`fn`, `class`, …).
    pub fn tag(self) -> &'static str {
        match self {
            Self::Function => "fn",
            Self::Method => "method",
            Self::Constructor => "ctor",
            Self::Namespace => "ns",
            Self::Module => "mod",
            Self::Variable => "var",
            other => other.name(),
        }
    }

    /// Whether the symbol has a body of code (functions, methods, constructors).
    pub fn is_callable(self) -> bool {
        matches!(self, Self::Function | Self::Method | Self::Constructor)
    }

    /// Whether the symbol can hold other symbols.
    pub fn is_container(self) -> bool {
        matches!(
            self,
            Self::Class
                | Self::Struct
                | Self::Union
                | Self::Enum
                | Self::Trait
                | Self::Interface
                | Self::Impl
                | Self::Module
                | Self::Namespace
        )
    }
}

/// One definition found in a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Symbol {
    /// The defined name (for a Rust `impl`, the implemented type).
    pub name: String,
    /// What it is.
    pub kind: SymbolKind,
    /// First line of the definition, 1-based (decorators and doc comments excluded).
    pub line: usize,
    /// Last line of the definition, 1-based.
    pub end_line: usize,
    /// The definition's header on one line, without its body.
    pub signature: String,
    /// The doc comment or docstring, markers stripped.
    pub doc_comment: Option<String>,
    /// The enclosing scope (`Foo`, `outer::Foo`), if any.
    pub parent: Option<String>,
    /// Visibility where the language has it: `pub`, `pub(crate)`, `private`, `public`,
    /// `protected`, `export`, `exported`, `unexported`, `package`.
    pub visibility: Option<String>,
}

/// Symbols, imports and parse health of one file's source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extracted {
    pub symbols: Vec<Symbol>,
    /// Import statements as written, whitespace collapsed, in source order.
    pub imports: Vec<String>,
    /// Whether the parser had to recover from syntax errors (symbols may be partial).
    pub has_errors: bool,
}

/// A call site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The called name (last path segment: `bar` in `foo.bar()` or `Foo::bar()`).
    pub name: String,
    /// The callee as written (`foo.bar`, `Foo::bar`).
    pub callee: String,
    /// 1-based line and column (byte) of the callee.
    pub line: usize,
    pub column: usize,
    /// The innermost enclosing function or method, qualified with its parent.
    pub caller: Option<String>,
}

thread_local! {
    static PARSER: RefCell<Parser> = RefCell::new(new_parser());
}

/// Makes tree-sitter allocate from mimalloc, for the whole process. Parsing a tree allocates
/// and frees a node per token; with the C library's malloc that was an eighth of the time of
/// a cold whole-tree summary.
///
/// Process-wide state belongs to the program, not to a library: binaries call this first
/// thing in `main` (or a Python module in its initializer), before any parser exists. Later
/// calls do nothing. Parsers made before the first call keep working (tree-sitter's default
/// allocator is the C library's), but memory they allocated must not be freed after it, so
/// call it before parsing anything.
pub fn use_mimalloc_for_tree_sitter() {
    static ALLOCATOR: std::sync::Once = std::sync::Once::new();
    ALLOCATOR.call_once(|| {
        #[allow(unsafe_code)]
        // SAFETY: the four functions are one allocator family (mimalloc), return null only
        // when out of memory, and align like malloc. `Once` runs this once; the caller's
        // contract (before any parser exists) keeps memory from crossing allocators.
        unsafe {
            tree_sitter::set_allocator(Some(tree_sitter::Allocator {
                malloc: libmimalloc_sys::mi_malloc,
                calloc: libmimalloc_sys::mi_calloc,
                realloc: libmimalloc_sys::mi_realloc,
                free: libmimalloc_sys::mi_free,
            }));
        }
        // Trees are freed a file at a time: give their pages back at once, not 10 ms later
        // (by then a worker has parsed the next files into fresh pages). A cold map of the
        // cargo registry's sources peaks 15 MB lower.
        #[allow(unsafe_code)]
        // SAFETY: an option setter, called once, before any parser allocates.
        unsafe {
            libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0);
        }
    });
}

/// `mi_option_purge_delay` in `mimalloc.h` (v2 and v3 alike): the crate exports no constant
/// for it.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Caps the C library's malloc arenas at one per core, for the whole process (glibc only;
/// elsewhere nothing). glibc's default, eight per core, lets each short-lived worker thread
/// strand freed memory in an arena of its own: a cold map of the cargo registry's sources
/// peaks 30 MB lower with the cap, and no slower. Like [`use_mimalloc_for_tree_sitter`],
/// binaries call it first thing, before other threads exist.
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        let arenas = libc::c_int::try_from(cores.max(2)).unwrap_or(libc::c_int::MAX);
        #[allow(unsafe_code)]
        // SAFETY: `mallopt` only sets a tuning parameter; it is called before other threads
        // allocate.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

/// A tree-sitter parser (every parser in ctx comes from here).
pub fn new_parser() -> Parser {
    Parser::new()
}

/// Parses `source` with `lang`'s grammar (a parser per thread, reused).
pub fn parse(lang: Language, source: &[u8]) -> Option<Tree> {
    PARSER.with(|cell| {
        let mut parser = cell.borrow_mut();
        parser.set_language(&lang.grammar()).ok()?;
        parser.parse(source, None)
    })
}

/// Parses only `ranges` of `source` (a shallow parse, see [`crate::shallow`]).
pub(crate) fn parse_ranges(
    lang: Language,
    source: &[u8],
    ranges: &[tree_sitter::Range],
) -> Option<Tree> {
    PARSER.with(|cell| {
        let mut parser = cell.borrow_mut();
        parser.set_language(&lang.grammar()).ok()?;
        parser.set_included_ranges(ranges).ok()?;
        let tree = parser.parse(source, None);
        parser
            .set_included_ranges(&[])
            .expect("the whole document is a valid range");
        tree
    })
}

/// Parses `source` for its symbols and imports: shallow where the language allows (function
/// bodies and data tables without definitions left out, see [`crate::shallow`]), in full
/// otherwise. Statements inside the left-out bodies are not in the tree, and neither are
/// their syntax errors.
pub fn parse_for_symbols(lang: Language, source: &[u8]) -> Option<Tree> {
    crate::shallow::parse(lang, source).or_else(|| parse(lang, source))
}

/// Extracts symbols and imports from `source`.
pub fn extract(lang: Language, source: &[u8]) -> Extracted {
    let Some(tree) = parse_for_symbols(lang, source) else {
        return Extracted {
            has_errors: true,
            ..Extracted::default()
        };
    };
    extract_from_tree(lang, source, &tree)
}

/// Extracts symbols and imports from an already parsed tree.
pub fn extract_from_tree(lang: Language, source: &[u8], tree: &Tree) -> Extracted {
    let walker = Walker {
        lang,
        src: source,
        out: Extracted {
            has_errors: tree.root_node().has_error(),
            ..Extracted::default()
        },
        scopes: Vec::new(),
        ancestors: Vec::new(),
    };
    let walker = RefCell::new(walker);
    traverse(
        tree.root_node(),
        |node| {
            let mut w = walker.borrow_mut();
            let pushed = w.enter(node);
            let root = w.ancestors.is_empty();
            w.ancestors.push(node);
            let descend = !is_closed(w.lang, node) && (root || may_hold_items(w.lang, node, w.src));
            (pushed, descend)
        },
        |pushed| {
            let mut w = walker.borrow_mut();
            w.ancestors.pop();
            if pushed {
                w.scopes.pop();
            }
        },
    );
    walker.into_inner().out
}

/// A definition recognised at a node.
pub(crate) struct Def<'t> {
    pub kind: SymbolKind,
    pub name: String,
    /// The node whose text starts the signature.
    pub node: Node<'t>,
    /// The body (elided in signatures and skeletons).
    pub body: Option<Node<'t>>,
    /// A parent scope given by the definition itself (Go receivers, C++ `Foo::bar`).
    pub own_parent: Option<String>,
}

struct Scope {
    qualified: String,
    kind: SymbolKind,
    /// C++ access inside a class body.
    access: Option<&'static str>,
}

struct Walker<'s, 't> {
    lang: Language,
    src: &'s [u8],
    out: Extracted,
    scopes: Vec<Scope>,
    /// The nodes above the current one, root first (`Node::parent` is slow on wide trees).
    ancestors: Vec<Node<'t>>,
}

impl<'t> Walker<'_, 't> {
    /// Handles a node on the way down; returns whether it opened a scope.
    fn enter(&mut self, node: Node<'t>) -> bool {
        if !is_watched(self.lang, node) {
            return false;
        }
        if let Some(import) = import_text(self.lang, node, self.src) {
            self.out.imports.push(import);
        }
        let def = classify(
            self.lang,
            node,
            self.src,
            self.scopes.last().map(|s| s.kind),
        );
        let mut pushed = false;
        if let Some(def) = def {
            let parent = match (&def.own_parent, self.scopes.last()) {
                (Some(own), Some(scope)) => Some(format!(
                    "{}{}{own}",
                    scope.qualified,
                    self.lang.scope_separator()
                )),
                (Some(own), None) => Some(own.clone()),
                (None, Some(scope)) => Some(scope.qualified.clone()),
                (None, None) => None,
            };
            let ancestors = &self.ancestors;
            let visibility = visibility(self.lang, &def, self.src, self.scopes.last(), ancestors);
            let symbol = Symbol {
                name: def.name.clone(),
                kind: def.kind,
                line: def.node.start_position().row + 1,
                end_line: end_line(def.node),
                signature: signature(self.lang, &def, self.src, ancestors),
                doc_comment: doc_comment(self.lang, &def, self.src, ancestors),
                parent: parent.clone(),
                visibility,
            };
            self.out.symbols.push(symbol);
            if def.kind.is_container() || def.kind.is_callable() {
                let qualified = match parent {
                    Some(p) => format!("{p}{}{}", self.lang.scope_separator(), def.name),
                    None => def.name.clone(),
                };
                let access = match (self.lang, node.kind()) {
                    (Language::Cpp, "class_specifier") => Some("private"),
                    (Language::Cpp, "struct_specifier" | "union_specifier") => Some("public"),
                    _ => None,
                };
                self.scopes.push(Scope {
                    qualified,
                    kind: def.kind,
                    access,
                });
                pushed = true;
            }
        }
        if self.lang == Language::Cpp
            && node.kind() == "access_specifier"
            && let Some(scope) = self.scopes.last_mut()
        {
            let text = node_text(node, self.src);
            scope.access = Some(match text.trim_end_matches(':').trim() {
                "public" => "public",
                "protected" => "protected",
                _ => "private",
            });
        }
        pushed
    }
}

/// The last line of a node, 1-based; a node ending with its newline (`#define`) ends on the
/// line before.
pub(crate) fn end_line(node: Node<'_>) -> usize {
    let end = node.end_position();
    if end.column == 0 && end.row > node.start_position().row {
        end.row
    } else {
        end.row + 1
    }
}

/// Visits every node under `root` depth-first without recursion (syntax trees of generated
/// code can be deeper than a thread's stack). `enter` returns (a value handed back to
/// `leave` when the node's subtree is done, whether to descend into the node).
pub(crate) fn traverse<'t, T>(
    root: Node<'t>,
    mut enter: impl FnMut(Node<'t>) -> (T, bool),
    mut leave: impl FnMut(T),
) {
    let mut cursor = root.walk();
    let mut open: Vec<T> = Vec::new();
    loop {
        let (state, descend) = enter(cursor.node());
        if descend && cursor.goto_first_child() {
            open.push(state);
            continue;
        }
        leave(state);
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
            if let Some(state) = open.pop() {
                leave(state);
            }
        }
    }
}

/// The name an assignment binds: an identifier, the first identifier of `a, b = …`, the
/// name of `type Alias[T] = …`; `None` for attributes and subscripts (`self.x`, `d[k]`).
fn python_target_name(left: Node<'_>, src: &[u8]) -> Option<String> {
    match left.kind() {
        "identifier" => Some(node_text(left, src).into_owned()),
        "type" | "generic_type" | "pattern_list" | "tuple_pattern" | "list_pattern" => {
            let mut cursor = left.walk();
            left.named_children(&mut cursor)
                .find_map(|c| python_target_name(c, src))
        }
        _ => None,
    }
}

/// The text of a node, lossily decoded.
pub(crate) fn node_text<'s>(node: Node<'_>, src: &'s [u8]) -> std::borrow::Cow<'s, str> {
    String::from_utf8_lossy(&src[node.byte_range()])
}

fn field_text(node: Node<'_>, field: &str, src: &[u8]) -> Option<String> {
    node.child_by_field_name(field)
        .map(|n| node_text(n, src).into_owned())
}

/// The node kinds [`classify`], [`import_text`] and the C++ access tracking look at: every
/// other node is only walked through. Most nodes of a tree are expressions and tokens, and a
/// look-up by kind id costs far less than matching the kind's name against every pattern.
fn watched_kind_names(lang: Language) -> &'static [&'static str] {
    match lang {
        Language::Rust => &[
            "function_item",
            "function_signature_item",
            "struct_item",
            "enum_item",
            "union_item",
            "trait_item",
            "mod_item",
            "const_item",
            "static_item",
            "type_item",
            "macro_definition",
            "impl_item",
            "use_declaration",
            "extern_crate_declaration",
        ],
        Language::Python => &[
            "function_definition",
            "class_definition",
            "assignment",
            "type_alias_statement",
            "import_statement",
            "import_from_statement",
            "future_import_statement",
        ],
        Language::JavaScript | Language::TypeScript | Language::Tsx => &[
            "function_declaration",
            "generator_function_declaration",
            "function_signature",
            "class_declaration",
            "abstract_class_declaration",
            "class",
            "method_definition",
            "method_signature",
            "abstract_method_signature",
            "construct_signature",
            "interface_declaration",
            "type_alias_declaration",
            "enum_declaration",
            "internal_module",
            "module",
            "variable_declarator",
            "public_field_definition",
            "field_definition",
            "assignment_expression",
            "import_statement",
            "export_statement",
            "call_expression",
        ],
        Language::Go => &[
            "function_declaration",
            "method_declaration",
            "type_spec",
            "type_alias",
            "method_elem",
            "method_spec",
            "import_spec",
        ],
        Language::Java => &[
            "class_declaration",
            "record_declaration",
            "interface_declaration",
            "annotation_type_declaration",
            "enum_declaration",
            "method_declaration",
            "annotation_type_element_declaration",
            "constructor_declaration",
            "compact_constructor_declaration",
            "import_declaration",
        ],
        Language::C | Language::Cpp => &[
            "function_definition",
            "field_declaration",
            "declaration",
            "struct_specifier",
            "union_specifier",
            "enum_specifier",
            "class_specifier",
            "namespace_definition",
            "type_definition",
            "alias_declaration",
            "preproc_def",
            "preproc_function_def",
            "preproc_include",
            "access_specifier",
        ],
    }
}

/// Node kinds whose subtrees hold none of the [`watched_kind_names`] (strings, comments,
/// imports, macro token trees, parameter, field and variant lists): the symbol walk does not
/// go into them. (Attributes and type arguments can hold blocks with items in them.)
fn closed_kind_names(lang: Language) -> &'static [&'static str] {
    match lang {
        Language::Rust => &[
            "token_tree",
            "use_declaration",
            "extern_crate_declaration",
            "macro_definition",
            "string_literal",
            "raw_string_literal",
            "line_comment",
            "block_comment",
            "parameters",
            "field_declaration_list",
            "ordered_field_declaration_list",
            "enum_variant_list",
        ],
        Language::Python => &[
            "string",
            "comment",
            "import_statement",
            "import_from_statement",
            "future_import_statement",
        ],
        Language::JavaScript | Language::TypeScript | Language::Tsx => &[
            "string",
            "template_string",
            "comment",
            "regex",
            "import_statement",
        ],
        Language::Go => &[
            "interpreted_string_literal",
            "raw_string_literal",
            "comment",
            "import_spec",
        ],
        Language::Java => &[
            "string_literal",
            "line_comment",
            "block_comment",
            "import_declaration",
        ],
        Language::C => &[
            "string_literal",
            "comment",
            "preproc_include",
            "preproc_def",
            "preproc_function_def",
            "parameter_list",
            "enumerator_list",
            "initializer_list",
        ],
        Language::Cpp => &[
            "string_literal",
            "raw_string_literal",
            "comment",
            "preproc_include",
            "preproc_def",
            "preproc_function_def",
            "enumerator_list",
        ],
    }
}

/// Whether `node`'s kind is one of [`watched_kind_names`] (a table by kind id, built once
/// per language).
fn is_watched(lang: Language, node: Node<'_>) -> bool {
    static TABLES: [OnceLock<Box<[bool]>>; LANGUAGES.len()] =
        [const { OnceLock::new() }; LANGUAGES.len()];
    kind_in(&TABLES, lang, node, watched_kind_names)
}

/// Whether the descendants of a node below the root may include a definition. In Rust every
/// item below another item sits in a block or a declaration list, both of which open with
/// `{`, so a node whose text has no `{` holds none (most of a signature's types and paths,
/// and most statements). The check reads at most a few hundred bytes: a longer node is
/// walked.
fn may_hold_items(lang: Language, node: Node<'_>, src: &[u8]) -> bool {
    const MAX_CHECKED: usize = 512;
    if lang != Language::Rust {
        return true;
    }
    let (start, end) = (node.start_byte(), node.end_byte());
    end - start > MAX_CHECKED || memchr::memchr(b'{', &src[start..end]).is_some()
}

/// Whether `node`'s kind is one of [`closed_kind_names`].
fn is_closed(lang: Language, node: Node<'_>) -> bool {
    static TABLES: [OnceLock<Box<[bool]>>; LANGUAGES.len()] =
        [const { OnceLock::new() }; LANGUAGES.len()];
    kind_in(&TABLES, lang, node, closed_kind_names)
}

/// Looks `node`'s kind id up in a per-language table of the kinds `names` lists.
fn kind_in(
    tables: &[OnceLock<Box<[bool]>>; LANGUAGES.len()],
    lang: Language,
    node: Node<'_>,
    names: fn(Language) -> &'static [&'static str],
) -> bool {
    let table = tables[lang as usize].get_or_init(|| {
        let grammar = lang.grammar();
        let names = names(lang);
        (0..grammar.node_kind_count())
            .map(|id| {
                u16::try_from(id)
                    .ok()
                    .and_then(|id| grammar.node_kind_for_id(id))
                    .is_some_and(|name| names.contains(&name))
            })
            .collect()
    });
    table
        .get(usize::from(node.kind_id()))
        .copied()
        .unwrap_or(false)
}

/// Recognises a definition at `node`. `scope` is the kind of the enclosing symbol.
pub(crate) fn classify<'t>(
    lang: Language,
    node: Node<'t>,
    src: &[u8],
    scope: Option<SymbolKind>,
) -> Option<Def<'t>> {
    if !is_watched(lang, node) {
        return None;
    }
    let in_type = scope
        .is_some_and(|k| k.is_container() && k != SymbolKind::Module && k != SymbolKind::Namespace);
    let def = |kind, name: String, body: Option<Node<'t>>| Def {
        kind,
        name,
        node,
        body,
        own_parent: None,
    };
    let body = node.child_by_field_name("body");
    match lang {
        Language::Rust => {
            let kind = match node.kind() {
                "function_item" | "function_signature_item" => {
                    if in_type {
                        SymbolKind::Method
                    } else {
                        SymbolKind::Function
                    }
                }
                "struct_item" => SymbolKind::Struct,
                "enum_item" => SymbolKind::Enum,
                "union_item" => SymbolKind::Union,
                "trait_item" => SymbolKind::Trait,
                "mod_item" if body.is_some() => SymbolKind::Module,
                "const_item" => SymbolKind::Const,
                "static_item" => SymbolKind::Static,
                "type_item" => SymbolKind::Type,
                "macro_definition" => SymbolKind::Macro,
                "impl_item" => {
                    let ty = node.child_by_field_name("type")?;
                    return Some(def(SymbolKind::Impl, type_base_name(ty, src), body));
                }
                _ => return None,
            };
            Some(def(kind, field_text(node, "name", src)?, body))
        }
        Language::Python => {
            let kind = match node.kind() {
                "function_definition" => {
                    if scope == Some(SymbolKind::Class) {
                        SymbolKind::Method
                    } else {
                        SymbolKind::Function
                    }
                }
                "class_definition" => SymbolKind::Class,
                // Module- and class-level assignments and type aliases; not locals.
                "assignment" | "type_alias_statement"
                    if matches!(scope, None | Some(SymbolKind::Class | SymbolKind::Module)) =>
                {
                    let left = node.child_by_field_name("left")?;
                    let name = python_target_name(left, src)?;
                    let kind = if node.kind() == "type_alias_statement" {
                        SymbolKind::Type
                    } else {
                        SymbolKind::Variable
                    };
                    return Some(def(kind, name, None));
                }
                _ => return None,
            };
            Some(def(kind, field_text(node, "name", src)?, body))
        }
        Language::JavaScript | Language::TypeScript | Language::Tsx => {
            classify_js(node, src, scope, in_type)
        }
        Language::Go => match node.kind() {
            "function_declaration" => Some(def(
                SymbolKind::Function,
                field_text(node, "name", src)?,
                body,
            )),
            "method_declaration" => {
                let receiver = node
                    .child_by_field_name("receiver")
                    .map(|r| go_receiver_type(r, src));
                Some(Def {
                    own_parent: receiver.filter(|r| !r.is_empty()),
                    ..def(SymbolKind::Method, field_text(node, "name", src)?, body)
                })
            }
            "type_spec" | "type_alias" => {
                let name = field_text(node, "name", src)?;
                let ty = node.child_by_field_name("type");
                let kind = match ty.map(|t| t.kind()) {
                    Some("struct_type") if node.kind() == "type_spec" => SymbolKind::Struct,
                    Some("interface_type") if node.kind() == "type_spec" => SymbolKind::Interface,
                    _ => SymbolKind::Type,
                };
                let body = ty.and_then(|t| first_child_of_kind(t, &["field_declaration_list"]));
                Some(def(kind, name, body))
            }
            "method_elem" | "method_spec" => Some(def(
                SymbolKind::Method,
                field_text(node, "name", src)?,
                None,
            )),
            _ => None,
        },
        Language::Java => {
            let kind = match node.kind() {
                "class_declaration" | "record_declaration" => SymbolKind::Class,
                "interface_declaration" | "annotation_type_declaration" => SymbolKind::Interface,
                "enum_declaration" => SymbolKind::Enum,
                // Annotation elements (`String since() default "";`) are methods too.
                "method_declaration" | "annotation_type_element_declaration" => SymbolKind::Method,
                "constructor_declaration" | "compact_constructor_declaration" => {
                    SymbolKind::Constructor
                }
                _ => return None,
            };
            Some(def(kind, field_text(node, "name", src)?, body))
        }
        Language::C | Language::Cpp => classify_c(lang, node, src, in_type),
    }
}

fn classify_js<'t>(
    node: Node<'t>,
    src: &[u8],
    scope: Option<SymbolKind>,
    in_type: bool,
) -> Option<Def<'t>> {
    let body = node.child_by_field_name("body");
    let def = |kind, name: String, body: Option<Node<'t>>| Def {
        kind,
        name,
        node,
        body,
        own_parent: None,
    };
    let is_function_value = |v: Node<'_>| {
        matches!(
            v.kind(),
            "arrow_function" | "function_expression" | "function" | "generator_function"
        )
    };
    match node.kind() {
        "function_declaration" | "generator_function_declaration" | "function_signature" => {
            let kind = if in_type {
                SymbolKind::Method
            } else {
                SymbolKind::Function
            };
            Some(def(kind, field_text(node, "name", src)?, body))
        }
        "class_declaration" | "abstract_class_declaration" => {
            Some(def(SymbolKind::Class, field_text(node, "name", src)?, body))
        }
        "class" => Some(def(SymbolKind::Class, field_text(node, "name", src)?, body)),
        "method_definition" | "method_signature" | "abstract_method_signature" => {
            let name = field_text(node, "name", src)?;
            let kind = if name == "constructor" {
                SymbolKind::Constructor
            } else {
                SymbolKind::Method
            };
            Some(def(kind, name, body))
        }
        // `new (x: T): U` in an interface or type literal: a construct signature.
        "construct_signature" if in_type => Some(def(SymbolKind::Method, "new".to_owned(), None)),
        "interface_declaration" => Some(def(
            SymbolKind::Interface,
            field_text(node, "name", src)?,
            body,
        )),
        "type_alias_declaration" => {
            Some(def(SymbolKind::Type, field_text(node, "name", src)?, None))
        }
        "enum_declaration" => Some(def(SymbolKind::Enum, field_text(node, "name", src)?, body)),
        "internal_module" | "module" => {
            let name = field_text(node, "name", src)?;
            Some(def(
                SymbolKind::Namespace,
                name.trim_matches(['"', '\'']).to_owned(),
                body,
            ))
        }
        "variable_declarator" => {
            let value = node.child_by_field_name("value")?;
            let name_node = node.child_by_field_name("name")?;
            if name_node.kind() != "identifier" {
                return None;
            }
            let name = node_text(name_node, src).into_owned();
            if is_function_value(value) {
                Some(Def {
                    kind: SymbolKind::Function,
                    name,
                    node,
                    body: value.child_by_field_name("body"),
                    own_parent: None,
                })
            } else if value.kind() == "class" {
                Some(Def {
                    kind: SymbolKind::Class,
                    name,
                    node,
                    body: value.child_by_field_name("body"),
                    own_parent: None,
                })
            } else {
                None
            }
        }
        "public_field_definition" | "field_definition" => {
            let value = node.child_by_field_name("value")?;
            if !is_function_value(value) {
                return None;
            }
            let name = node
                .child_by_field_name("name")
                .or_else(|| node.child_by_field_name("property"))?;
            Some(Def {
                kind: SymbolKind::Method,
                name: node_text(name, src).into_owned(),
                node,
                body: value.child_by_field_name("body"),
                own_parent: None,
            })
        }
        "assignment_expression" => {
            // `exports.foo = function …`, `Foo.prototype.bar = () => …`
            let right = node.child_by_field_name("right")?;
            if !is_function_value(right) || scope.is_some_and(SymbolKind::is_callable) {
                return None;
            }
            let left = node.child_by_field_name("left")?;
            if left.kind() != "member_expression" {
                return None;
            }
            let object = left.child_by_field_name("object")?;
            let property = left.child_by_field_name("property")?;
            let object_text = node_text(object, src);
            let (kind, parent) = match object_text.strip_suffix(".prototype") {
                Some(class) => (SymbolKind::Method, Some(class.to_owned())),
                None => (SymbolKind::Function, None),
            };
            Some(Def {
                kind,
                name: node_text(property, src).into_owned(),
                node,
                body: right.child_by_field_name("body"),
                own_parent: parent,
            })
        }
        _ => None,
    }
}

fn classify_c<'t>(lang: Language, node: Node<'t>, src: &[u8], in_type: bool) -> Option<Def<'t>> {
    let body = node.child_by_field_name("body");
    let def = |kind, name: String, body: Option<Node<'t>>| Def {
        kind,
        name,
        node,
        body,
        own_parent: None,
    };
    match node.kind() {
        "function_definition" => {
            let declarator = node.child_by_field_name("declarator")?;
            let (name, qualifier) = c_declarator_name(declarator, src)?;
            let is_constructor = qualifier
                .as_deref()
                .and_then(|q| q.rsplit("::").next())
                .is_some_and(|q| q == name || format!("~{q}") == name);
            let kind = if is_constructor {
                SymbolKind::Constructor
            } else if in_type || qualifier.is_some() {
                SymbolKind::Method
            } else {
                SymbolKind::Function
            };
            Some(Def {
                kind,
                name,
                node,
                body,
                own_parent: qualifier,
            })
        }
        "field_declaration" | "declaration" if lang == Language::Cpp && in_type => {
            // Method declarations inside a class body.
            let declarator = node.child_by_field_name("declarator")?;
            if !has_function_declarator(declarator) {
                return None;
            }
            let (name, _) = c_declarator_name(declarator, src)?;
            Some(def(SymbolKind::Method, name, None))
        }
        "struct_specifier" | "union_specifier" | "enum_specifier" | "class_specifier" => {
            let body = body?;
            let name = field_text(node, "name", src)?;
            let kind = match node.kind() {
                "struct_specifier" => SymbolKind::Struct,
                "union_specifier" => SymbolKind::Union,
                "enum_specifier" => SymbolKind::Enum,
                _ => SymbolKind::Class,
            };
            Some(def(kind, name, Some(body)))
        }
        "namespace_definition" => {
            let name = field_text(node, "name", src)?;
            Some(def(SymbolKind::Namespace, name, body))
        }
        "type_definition" => {
            let declarator = node.child_by_field_name("declarator")?;
            let (name, _) = c_declarator_name(declarator, src)?;
            Some(def(SymbolKind::Type, name, None))
        }
        "alias_declaration" => Some(def(SymbolKind::Type, field_text(node, "name", src)?, None)),
        "preproc_def" | "preproc_function_def" => {
            Some(def(SymbolKind::Macro, field_text(node, "name", src)?, None))
        }
        _ => None,
    }
}

/// `Foo<T>::Bar<U>` without template arguments: `Foo::Bar`.
fn strip_template_args(text: &str) -> String {
    let mut depth = 0usize;
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

fn has_function_declarator(mut node: Node<'_>) -> bool {
    loop {
        if node.kind() == "function_declarator" {
            return true;
        }
        match node.child_by_field_name("declarator") {
            Some(inner) => node = inner,
            None => return false,
        }
    }
}

/// The declared name of a C/C++ declarator, and its `Foo::` qualifier if any.
fn c_declarator_name(mut node: Node<'_>, src: &[u8]) -> Option<(String, Option<String>)> {
    loop {
        match node.kind() {
            "identifier" | "field_identifier" | "type_identifier" | "destructor_name"
            | "operator_name" | "primitive_type" => {
                return Some((node_text(node, src).into_owned(), None));
            }
            "qualified_identifier" => {
                let full = collapse_whitespace(&node_text(node, src));
                let (qualifier, name) = full.rsplit_once("::")?;
                let qualifier = strip_template_args(qualifier.trim());
                let qualifier = (!qualifier.is_empty()).then_some(qualifier);
                return Some((name.trim().to_owned(), qualifier));
            }
            "template_function" | "template_type" => {
                node = node.child_by_field_name("name")?;
            }
            _ => {
                node = node.child_by_field_name("declarator")?;
            }
        }
    }
}

/// The type name an `impl` is for: `Foo` for `impl<T> Trait for Foo<T>`.
fn type_base_name(ty: Node<'_>, src: &[u8]) -> String {
    match ty.kind() {
        "generic_type" => ty.child_by_field_name("type").map_or_else(
            || node_text(ty, src).into_owned(),
            |t| type_base_name(t, src),
        ),
        "scoped_type_identifier" => ty.child_by_field_name("name").map_or_else(
            || node_text(ty, src).into_owned(),
            |t| node_text(t, src).into_owned(),
        ),
        "reference_type" | "pointer_type" => ty.child_by_field_name("type").map_or_else(
            || node_text(ty, src).into_owned(),
            |t| type_base_name(t, src),
        ),
        _ => node_text(ty, src).into_owned(),
    }
}

/// The receiver type of a Go method: `Server` for `(s *Server[T])`.
fn go_receiver_type(receiver: Node<'_>, src: &[u8]) -> String {
    let mut cursor = receiver.walk();
    for param in receiver.named_children(&mut cursor) {
        if let Some(ty) = param.child_by_field_name("type") {
            let text = node_text(ty, src);
            let base = text.trim_start_matches('*');
            return base.split('[').next().unwrap_or(base).trim().to_owned();
        }
    }
    String::new()
}

fn first_child_of_kind<'t>(node: Node<'t>, kinds: &[&str]) -> Option<Node<'t>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .find(|c| kinds.contains(&c.kind()))
}

/// Signatures longer than this many bytes are cut (with `…`).
const MAX_SIGNATURE: usize = 240;

/// The definition's header on one line: its text up to the body, whitespace collapsed.
fn signature(lang: Language, def: &Def<'_>, src: &[u8], ancestors: &[Node<'_>]) -> String {
    match (lang, def.node.kind()) {
        (Language::Rust, "macro_definition") => return format!("macro_rules! {}", def.name),
        (Language::Go, "type_spec" | "type_alias") => {
            let text = node_text(def.node, src);
            let head = text.split('{').next().unwrap_or(&text);
            return format!("type {}", collapse_whitespace(head));
        }
        _ => {}
    }
    let start = def.node.start_byte();
    let end = def
        .body
        .map_or(def.node.end_byte(), |b| b.start_byte().max(start));
    // Only the first MAX_SIGNATURE characters are kept: a body-less definition can span
    // megabytes (a generated table), so the text is not collapsed beyond what is needed.
    let mut text = collapse_whitespace_bytes(&src[start..end], MAX_SIGNATURE + 64);
    // Arrow functions and function values keep their binding keyword: `const f = (x) =>`.
    if def.node.kind() == "variable_declarator"
        && let Some(decl) = ancestors.last()
        && let Some(keyword) = decl.child(0)
        && matches!(keyword.kind(), "const" | "let" | "var")
    {
        text = format!("{} {text}", keyword.kind());
    }
    let trimmed = text
        .trim_end_matches(|c: char| {
            c == '{' || c == ':' && lang == Language::Python || c.is_whitespace()
        })
        .trim_end_matches([';'])
        .trim_end();
    let mut out = trimmed.to_owned();
    if out.len() > MAX_SIGNATURE {
        let mut cut = MAX_SIGNATURE;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push('…');
    }
    out
}

/// [`collapse_whitespace`] of `bytes` decoded lossily, stopping once the result is longer
/// than `limit` bytes (it is then a prefix of the whole result).
fn collapse_whitespace_bytes(bytes: &[u8], limit: usize) -> String {
    let chars = bytes.utf8_chunks().flat_map(|chunk| {
        let invalid = (!chunk.invalid().is_empty()).then_some(char::REPLACEMENT_CHARACTER);
        chunk.valid().chars().chain(invalid)
    });
    collapse_chars(chars, 0, limit)
}

/// Collapses runs of whitespace (newlines included) into single spaces.
pub(crate) fn collapse_whitespace(text: &str) -> String {
    collapse_chars(text.chars(), text.len(), usize::MAX)
}

/// `chars` with leading and trailing whitespace dropped and inner runs made one space,
/// stopping once the result is longer than `limit` bytes.
fn collapse_chars(chars: impl Iterator<Item = char>, capacity: usize, limit: usize) -> String {
    let mut out = String::with_capacity(capacity);
    let mut space = false;
    for c in chars {
        if c.is_whitespace() {
            space = true;
        } else {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push(c);
            if out.len() > limit {
                break;
            }
        }
    }
    out
}

/// Whether the outermost node of a definition (through declarations of arrow functions and
/// expression statements) is an `export`. `ancestors` are the definition's ancestors.
fn is_exported(lang: Language, node: Node<'_>, ancestors: &[Node<'_>]) -> bool {
    let mut kind = node.kind().to_owned();
    let mut above = ancestors.iter().rev();
    if kind == "variable_declarator"
        && let Some(decl) = above.next()
    {
        decl.kind().clone_into(&mut kind);
    }
    for parent in above {
        let wraps = match lang {
            Language::JavaScript | Language::TypeScript | Language::Tsx => {
                matches!(parent.kind(), "export_statement" | "expression_statement")
            }
            _ => false,
        };
        if !wraps {
            break;
        }
        parent.kind().clone_into(&mut kind);
    }
    kind == "export_statement"
}

/// The doc comment above a definition (read from the source lines above it, past
/// attributes, decorators and `template <…>` lines), or a Python docstring.
fn doc_comment(
    lang: Language,
    def: &Def<'_>,
    src: &[u8],
    ancestors: &[Node<'_>],
) -> Option<String> {
    if lang == Language::Python {
        return python_docstring(def.body?, src);
    }
    // Start at the line of the outermost wrapper (an `export`, a declaration, a template).
    let mut start = def.node.start_byte();
    for ancestor in ancestors.iter().rev() {
        let wraps = matches!(
            ancestor.kind(),
            "export_statement"
                | "lexical_declaration"
                | "variable_declaration"
                | "template_declaration"
                | "type_declaration"
        );
        if !wraps {
            break;
        }
        start = ancestor.start_byte();
    }
    let mut line_start = src[..start]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let mut collected: Vec<String> = Vec::new();
    while line_start > 0 {
        let prev_end = line_start - 1;
        let prev_start = src[..prev_end]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let line = String::from_utf8_lossy(&src[prev_start..prev_end]);
        let trimmed = line.trim();
        let skip = match lang {
            Language::Rust => trimmed.starts_with("#[") && trimmed.ends_with(']'),
            Language::Java | Language::TypeScript | Language::Tsx | Language::JavaScript => {
                trimmed.starts_with('@')
            }
            Language::Cpp => trimmed.starts_with("template"),
            _ => false,
        };
        if skip {
            line_start = prev_start;
            continue;
        }
        if trimmed.ends_with("*/") {
            let Some(block_start) = block_comment_start(src, prev_start, prev_end) else {
                break;
            };
            let text = String::from_utf8_lossy(&src[block_start..prev_end]);
            if lang == Language::Rust && !text.trim_start().starts_with("/**") {
                break;
            }
            let mut block = clean_comment(text.trim());
            block.append(&mut collected);
            collected = block;
            line_start = block_start;
            continue;
        }
        let is_line_comment = match lang {
            Language::Rust => trimmed.starts_with("///") && !trimmed.starts_with("////"),
            _ => trimmed.starts_with("//"),
        };
        if !is_line_comment {
            break;
        }
        let mut block = clean_comment(trimmed);
        block.append(&mut collected);
        collected = block;
        line_start = prev_start;
    }
    let doc = collected.join("\n").trim().to_owned();
    if doc.is_empty() { None } else { Some(doc) }
}

/// The start of the line opening the block comment that closes on the line
/// `src[line_start..line_end]`, when the comment opens at the start of a line (after
/// indentation); `None` when it trails code or opens nowhere. The walk back stops at the
/// opening line, so it costs the comment's length.
fn block_comment_start(src: &[u8], mut line_start: usize, line_end: usize) -> Option<usize> {
    let mut line = &src[line_start..line_end];
    let opens_line = |line: &[u8]| line.trim_ascii_start().starts_with(b"/*");
    if memchr::memmem::find(line, b"/*").is_some() {
        return opens_line(line).then_some(line_start);
    }
    while line_start > 0 {
        let end = line_start - 1;
        line_start = src[..end]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        line = &src[line_start..end];
        if memchr::memmem::find(line, b"*/").is_some() {
            return None;
        }
        if memchr::memmem::find(line, b"/*").is_some() {
            return opens_line(line).then_some(line_start);
        }
    }
    None
}

fn clean_comment(text: &str) -> Vec<String> {
    let text = text.trim_end();
    if let Some(body) = text.strip_prefix("/*") {
        let body = body.strip_suffix("*/").unwrap_or(body);
        let body = body.trim_start_matches(['*', '!']);
        return body
            .lines()
            .map(|line| {
                let line = line.trim();
                let line = line.strip_prefix('*').unwrap_or(line);
                line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned()
            })
            .collect::<Vec<_>>()
            .into_iter()
            .skip_while(String::is_empty)
            .collect();
    }
    text.lines()
        .map(|line| {
            let line = line.trim_start();
            let line = line.trim_start_matches('/').trim_start_matches('!');
            line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned()
        })
        .collect()
}

fn python_docstring(body: Node<'_>, src: &[u8]) -> Option<String> {
    let first = body.named_child(0)?;
    if first.kind() != "expression_statement" {
        return None;
    }
    let string = first.named_child(0)?;
    if string.kind() != "string" {
        return None;
    }
    let text = node_text(string, src);
    let text = text.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let inner = ["\"\"\"", "'''", "\"", "'"]
        .iter()
        .find_map(|q| text.strip_prefix(q).and_then(|t| t.strip_suffix(q)))?;
    let lines: Vec<&str> = inner.lines().collect();
    let indent = lines
        .iter()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let doc = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                l.trim()
            } else {
                l.get(indent..).unwrap_or("").trim_end()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let doc = doc.trim().to_owned();
    if doc.is_empty() { None } else { Some(doc) }
}

fn visibility(
    lang: Language,
    def: &Def<'_>,
    src: &[u8],
    scope: Option<&Scope>,
    ancestors: &[Node<'_>],
) -> Option<String> {
    let node = def.node;
    match lang {
        Language::Rust => {
            if scope.is_some_and(|s| s.kind == SymbolKind::Trait) || def.kind == SymbolKind::Impl {
                return None;
            }
            if scope.is_some_and(|s| s.kind == SymbolKind::Impl) && is_trait_impl(ancestors) {
                return None;
            }
            let mut cursor = node.walk();
            let vis = node
                .children(&mut cursor)
                .find(|c| c.kind() == "visibility_modifier")
                .map(|c| collapse_whitespace(&node_text(c, src)));
            Some(vis.unwrap_or_else(|| "private".to_owned()))
        }
        Language::Go => {
            let first = def.name.chars().next()?;
            Some(
                if first.is_uppercase() {
                    "exported"
                } else {
                    "unexported"
                }
                .to_owned(),
            )
        }
        Language::Java => {
            let mut cursor = node.walk();
            let modifiers = node.children(&mut cursor).find(|c| c.kind() == "modifiers");
            let text = modifiers
                .map(|m| node_text(m, src).into_owned())
                .unwrap_or_default();
            let words: Vec<&str> = text.split_whitespace().collect();
            let vis = ["public", "protected", "private"]
                .into_iter()
                .find(|v| words.contains(v));
            if scope.is_some_and(|s| s.kind == SymbolKind::Interface) && vis.is_none() {
                return Some("public".to_owned());
            }
            Some(vis.unwrap_or("package").to_owned())
        }
        Language::JavaScript | Language::TypeScript | Language::Tsx => {
            if def.kind == SymbolKind::Method {
                let mut cursor = node.walk();
                if let Some(modifier) = node
                    .children(&mut cursor)
                    .find(|c| c.kind() == "accessibility_modifier")
                {
                    return Some(node_text(modifier, src).into_owned());
                }
                if def.name.starts_with('#') {
                    return Some("private".to_owned());
                }
                return None;
            }
            is_exported(lang, node, ancestors).then(|| "export".to_owned())
        }
        Language::Cpp => scope.and_then(|s| s.access).map(str::to_owned),
        Language::Python | Language::C => None,
    }
}

fn is_trait_impl(ancestors: &[Node<'_>]) -> bool {
    ancestors
        .iter()
        .rev()
        .find(|n| n.kind() == "impl_item")
        .is_some_and(|n| n.child_by_field_name("trait").is_some())
}

/// The import statement at `node`, if it is one.
fn import_text(lang: Language, node: Node<'_>, src: &[u8]) -> Option<String> {
    let kind = node.kind();
    let whole = |n: Node<'_>| Some(collapse_whitespace(&node_text(n, src)));
    match lang {
        Language::Rust => match kind {
            "use_declaration" | "extern_crate_declaration" => whole(node),
            "mod_item" if node.child_by_field_name("body").is_none() => whole(node),
            _ => None,
        },
        Language::Python => match kind {
            "import_statement" | "import_from_statement" | "future_import_statement" => whole(node),
            _ => None,
        },
        Language::JavaScript | Language::TypeScript | Language::Tsx => match kind {
            "import_statement" => whole(node),
            "export_statement" if node.child_by_field_name("source").is_some() => whole(node),
            "call_expression" => {
                let function = node.child_by_field_name("function")?;
                let callee = node_text(function, src);
                if callee != "require" && function.kind() != "import" {
                    return None;
                }
                let args = node.child_by_field_name("arguments")?;
                let first = args.named_child(0)?;
                if first.kind() != "string" {
                    return None;
                }
                whole(node)
            }
            _ => None,
        },
        Language::Go => match kind {
            "import_spec" => Some(format!(
                "import {}",
                collapse_whitespace(&node_text(node, src))
            )),
            _ => None,
        },
        Language::Java => match kind {
            "import_declaration" => whole(node),
            _ => None,
        },
        Language::C | Language::Cpp => match kind {
            "preproc_include" => whole(node),
            _ => None,
        },
    }
}

/// Every call site in `tree`, in source order.
pub fn calls(lang: Language, source: &[u8], tree: &Tree) -> Vec<Call> {
    let mut out = Vec::new();
    let mut scopes: Vec<(String, SymbolKind)> = Vec::new();
    let scopes_cell = RefCell::new(&mut scopes);
    traverse(
        tree.root_node(),
        |node| {
            let pushed =
                enter_call_node(lang, node, source, &mut scopes_cell.borrow_mut(), &mut out);
            (pushed, true)
        },
        |pushed| {
            if pushed {
                scopes_cell.borrow_mut().pop();
            }
        },
    );
    out
}

/// Records a call at `node` and opens a scope for a definition; returns whether it did.
fn enter_call_node(
    lang: Language,
    node: Node<'_>,
    src: &[u8],
    scopes: &mut Vec<(String, SymbolKind)>,
    out: &mut Vec<Call>,
) -> bool {
    let scope_kind = scopes.last().map(|s| s.1);
    let def = classify(lang, node, src, scope_kind);
    let mut pushed = false;
    if let Some(def) = &def
        && (def.kind.is_callable() || def.kind.is_container())
    {
        let sep = lang.scope_separator();
        let base = match (&def.own_parent, scopes.last()) {
            (Some(own), Some((q, _))) => format!("{q}{sep}{own}{sep}"),
            (Some(own), None) => format!("{own}{sep}"),
            (None, Some((q, _))) => format!("{q}{sep}"),
            (None, None) => String::new(),
        };
        scopes.push((format!("{base}{}", def.name), def.kind));
        pushed = true;
    }
    if let Some(callee) = callee_of(lang, node) {
        let callee_text = collapse_whitespace(&node_text(callee, src));
        let name = last_segment(callee, src);
        if !name.is_empty() {
            let position = callee.start_position();
            let caller = scopes
                .iter()
                .rev()
                .find(|(_, kind)| kind.is_callable())
                .map(|(q, _)| q.clone());
            out.push(Call {
                name,
                callee: callee_text,
                line: position.row + 1,
                column: position.column + 1,
                caller,
            });
        }
    }
    pushed
}

/// The callee expression of a call node.
fn callee_of(lang: Language, node: Node<'_>) -> Option<Node<'_>> {
    match (lang, node.kind()) {
        (Language::Python, "call")
        | (
            Language::Rust
            | Language::JavaScript
            | Language::TypeScript
            | Language::Tsx
            | Language::Go
            | Language::C
            | Language::Cpp,
            "call_expression",
        ) => node.child_by_field_name("function"),
        (Language::Rust, "macro_invocation") => node.child_by_field_name("macro"),
        (
            Language::JavaScript | Language::TypeScript | Language::Tsx | Language::Cpp,
            "new_expression",
        ) => node
            .child_by_field_name("constructor")
            .or_else(|| node.child_by_field_name("type")),
        (Language::Java, "method_invocation") => node.child_by_field_name("name"),
        (Language::Java, "object_creation_expression") => node.child_by_field_name("type"),
        _ => None,
    }
}

/// The last name of a callee: `bar` in `a.b.bar`, `Foo::bar`, `bar::<T>`, `(*p)->bar`.
fn last_segment(callee: Node<'_>, src: &[u8]) -> String {
    let mut node = callee;
    loop {
        let next = match node.kind() {
            "field_expression" | "selector_expression" => node.child_by_field_name("field"),
            "member_expression" => node.child_by_field_name("property"),
            "attribute" => node.child_by_field_name("attribute"),
            "scoped_identifier" | "qualified_identifier" | "scoped_type_identifier" => {
                node.child_by_field_name("name")
            }
            "generic_function" => node.child_by_field_name("function"),
            "template_function" | "generic_type" | "template_type" => node
                .child_by_field_name("name")
                .or_else(|| node.child_by_field_name("type")),
            "parenthesized_expression" => node.named_child(0),
            _ => None,
        };
        match next {
            Some(n) => node = n,
            None => break,
        }
    }
    let text = node_text(node, src);
    text.rsplit(['.', ':'])
        .next()
        .unwrap_or(&text)
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(lang: Language, src: &str) -> Vec<String> {
        extract(lang, src.as_bytes())
            .symbols
            .into_iter()
            .map(|s| match s.parent {
                Some(p) => format!("{} {p}/{}", s.kind.name(), s.name),
                None => format!("{} {}", s.kind.name(), s.name),
            })
            .collect()
    }

    #[test]
    fn rust_items_methods_and_nested_modules() {
        let src = "/// Adds.\n#[inline]\npub fn add(a: u32) -> u32 { a }\nstruct S;\nimpl<T> Tr for S<T> { fn m(&self) {} }\nmod outer { pub mod inner { pub(crate) const C: u8 = 1; } }\ntrait Tr { fn m(&self); }\nuse std::fmt;\nmod other;\n";
        let got = extract(Language::Rust, src.as_bytes());
        let add = &got.symbols[0];
        assert_eq!(add.signature, "pub fn add(a: u32) -> u32");
        assert_eq!(add.doc_comment.as_deref(), Some("Adds."));
        assert_eq!(add.visibility.as_deref(), Some("pub"));
        assert_eq!(
            names(Language::Rust, src),
            [
                "function add",
                "struct S",
                "impl S",
                "method S/m",
                "module outer",
                "module outer/inner",
                "const outer::inner/C",
                "trait Tr",
                "method Tr/m"
            ]
        );
        assert_eq!(got.imports, ["use std::fmt;", "mod other;"]);
    }

    #[test]
    fn rust_items_inside_expressions_are_found() {
        // The walk does not go into nodes without a `{`; items always sit in a block, so
        // these are all found: in a closure, in a match arm below a statement longer than
        // the prefix the walk checks, in an async block, and in a file with no `{` at all.
        let padding = "x + ".repeat(200);
        let src = format!(
            "fn outer() {{\n    let f = || {{ fn in_closure() {{}} }};\n    let g = {padding}match 1 {{ _ => {{ struct InArm; 0 }} }};\n    spawn(async move {{ const IN_ASYNC: u8 = 1; }});\n}}\n"
        );
        let found: Vec<String> = extract(Language::Rust, src.as_bytes())
            .symbols
            .into_iter()
            .map(|s| s.name)
            .collect();
        for name in ["outer", "in_closure", "InArm", "IN_ASYNC"] {
            assert!(found.iter().any(|n| n == name), "{name} in {found:?}");
        }
        assert_eq!(
            names(
                Language::Rust,
                "const A: u8 = 1;\nstatic B: u8 = 2;\ntype C = u8;\n"
            ),
            ["const A", "static B", "type C"]
        );
    }

    #[test]
    fn python_module_and_class_assignments_are_symbols() {
        let src = "import os\nX = 1\nY: int = 2\na, b = 1, 2\ncurrent_app = LocalProxy()\nif True:\n    Z = 3\nclass C:\n    secret_key = None\n    def f(self):\n        self.x = 1\n        local = 2\ndef h():\n    inner = 1\ntype Alias = int\n";
        assert_eq!(
            names(Language::Python, src),
            [
                "variable X",
                "variable Y",
                "variable a",
                "variable current_app",
                "variable Z",
                "class C",
                "variable C/secret_key",
                "method C/f",
                "function h",
                "type Alias",
            ]
        );
        let got = extract(Language::Python, src.as_bytes());
        let app = got.symbols.iter().find(|s| s.name == "current_app");
        assert_eq!(
            app.map(|s| s.signature.as_str()),
            Some("current_app = LocalProxy()")
        );
    }

    #[test]
    fn python_classes_methods_and_docstrings() {
        let src = "import os\nfrom . import x\nclass A(B):\n    \"\"\"Doc.\n\n    More.\n    \"\"\"\n    @property\n    def m(self) -> int:\n        return 1\ndef f():\n    def inner(): pass\n";
        let got = extract(Language::Python, src.as_bytes());
        assert_eq!(got.symbols[0].doc_comment.as_deref(), Some("Doc.\n\nMore."));
        assert_eq!(got.symbols[1].signature, "def m(self) -> int");
        assert_eq!(got.symbols[1].line, 9);
        assert_eq!(
            names(Language::Python, src),
            ["class A", "method A/m", "function f", "function f/inner"]
        );
        assert_eq!(got.imports, ["import os", "from . import x"]);
    }

    #[test]
    fn typescript_interfaces_aliases_arrows_and_methods() {
        let src = "import { a } from './a';\nexport interface I { m(): void }\ntype T = string;\n/** Doc. */\nexport const f = (x: number): number => x;\nclass C { private g(): void {} h = () => 1; }\nnamespace N { function k() {} }\n";
        let got = extract(Language::TypeScript, src.as_bytes());
        assert_eq!(
            names(Language::TypeScript, src),
            [
                "interface I",
                "method I/m",
                "type T",
                "function f",
                "class C",
                "method C/g",
                "method C/h",
                "namespace N",
                "function N/k"
            ]
        );
        let f = &got.symbols[3];
        assert_eq!(f.signature, "const f = (x: number): number =>");
        assert_eq!(f.doc_comment.as_deref(), Some("Doc."));
        assert_eq!(f.visibility.as_deref(), Some("export"));
        assert_eq!(got.symbols[5].visibility.as_deref(), Some("private"));
        assert_eq!(got.imports, ["import { a } from './a';"]);
    }

    #[test]
    fn go_methods_carry_their_receiver() {
        let src = "package p\nimport (\n\t\"fmt\"\n\tx \"a/b\"\n)\n// S is.\ntype S struct{ a int }\ntype I interface { M() }\nfunc (s *S) Run() {}\nfunc helper() {}\n";
        let got = extract(Language::Go, src.as_bytes());
        assert_eq!(
            names(Language::Go, src),
            [
                "struct S",
                "interface I",
                "method I/M",
                "method S/Run",
                "function helper"
            ]
        );
        assert_eq!(got.symbols[0].doc_comment.as_deref(), Some("S is."));
        assert_eq!(got.symbols[3].visibility.as_deref(), Some("exported"));
        assert_eq!(got.imports, ["import \"fmt\"", "import x \"a/b\""]);
    }

    #[test]
    fn cpp_classes_namespaces_and_out_of_class_methods() {
        let src = "#include \"a.h\"\nnamespace ns {\nclass K {\npublic:\n  K();\n  void m();\nprivate:\n  int f() { return 1; }\n};\nvoid K::m() {}\n}\nint main() { return 0; }\n";
        let got = extract(Language::Cpp, src.as_bytes());
        assert_eq!(
            names(Language::Cpp, src),
            [
                "namespace ns",
                "class ns/K",
                "method ns::K/K",
                "method ns::K/m",
                "method ns::K/f",
                "method ns::K/m",
                "function main"
            ]
        );
        assert_eq!(got.symbols[3].visibility.as_deref(), Some("public"));
        assert_eq!(got.symbols[4].visibility.as_deref(), Some("private"));
        assert_eq!(got.imports, ["#include \"a.h\""]);
    }

    #[test]
    fn java_and_c_definitions() {
        let java = "import java.util.List;\npublic class A { /** Doc. */ public A() {} void run() {} interface I { void x(); } }\n";
        assert_eq!(
            names(Language::Java, java),
            [
                "class A",
                "constructor A/A",
                "method A/run",
                "interface A/I",
                "method A.I/x"
            ]
        );
        let c = "#include <stdio.h>\n#define N 3\ntypedef struct P { int x; } P;\nstatic int *make(void) { return 0; }\n";
        assert_eq!(
            names(Language::C, c),
            ["macro N", "type P", "struct P", "function make"]
        );
    }

    #[test]
    fn annotation_elements_and_construct_signatures_are_methods() {
        let java =
            "public @interface Since { String value() default \"\"; boolean forRemoval(); }\n";
        assert_eq!(
            names(Language::Java, java),
            [
                "interface Since",
                "method Since/value",
                "method Since/forRemoval"
            ]
        );
        let ts = "export interface ErrorCtor { new (message: string): Error; readonly prototype: Error; }\n";
        assert_eq!(
            names(Language::TypeScript, ts),
            ["interface ErrorCtor", "method ErrorCtor/new"]
        );
    }

    #[test]
    fn deep_trees_do_not_overflow_a_small_stack() {
        // Generated code nests deeper than a worker thread's stack allows for recursion.
        let src = format!(
            "fn deep() -> u32 {{ {} }}\n",
            vec!["(1"; 20_000].join("+") + &")".repeat(20_000)
        );
        let handle = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let tree = parse(Language::Rust, src.as_bytes()).expect("parse");
                let got = extract_from_tree(Language::Rust, src.as_bytes(), &tree);
                let skeleton =
                    crate::skeleton::skeleton_from_tree(Language::Rust, src.as_bytes(), &tree);
                (
                    got.symbols.len(),
                    calls(Language::Rust, src.as_bytes(), &tree).len(),
                    skeleton,
                )
            })
            .expect("spawn");
        let (symbols, calls, skeleton) = handle.join().expect("no stack overflow");
        assert_eq!((symbols, calls), (1, 0));
        assert_eq!(skeleton, "fn deep() -> u32 { /* ... */ }\n");
    }

    #[test]
    fn syntax_errors_give_partial_symbols() {
        let got = extract(Language::Rust, b"fn ok() {}\nfn broken( {\nstruct After;\n");
        assert!(got.has_errors);
        assert!(got.symbols.iter().any(|s| s.name == "ok"));
    }

    #[test]
    fn calls_name_their_caller() {
        let src = b"fn a() { b(); x.c(); Foo::d(); }\n";
        let tree = parse(Language::Rust, src).expect("parse");
        let found: Vec<(String, Option<String>)> = calls(Language::Rust, src, &tree)
            .into_iter()
            .map(|c| (c.name, c.caller))
            .collect();
        assert_eq!(
            found,
            [
                ("b".into(), Some("a".into())),
                ("c".into(), Some("a".into())),
                ("d".into(), Some("a".into()))
            ]
        );
    }
}
