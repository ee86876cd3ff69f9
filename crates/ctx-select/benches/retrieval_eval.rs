//! Retrieval evaluation: queries with known answers from a git history.
//!
//! Each commit's subject is a query; the files it changed (that existed before it) are the
//! answers. For every commit the repository is checked out at the commit's parent, the index
//! is updated incrementally (recent git activity counted at that parent, so nothing leaks
//! from the answer), and the ranking of each scorer is compared with the answers: recall@1,
//! recall@5 and MRR for seed 003's term frequency, BM25 alone, and the default scorer.
//!
//! ```sh
//! cargo bench -p ctx-select --bench retrieval_eval               # a repository built by script
//! cargo bench -p ctx-select --bench retrieval_eval -- /path/repo 200   # the last 200 commits of a repo (cloned to a temp dir)
//! python3 scripts/debian-patch-history.py target/eval/debian            # a real history: Debian's patches to 8 C projects
//! cargo bench -p ctx-select --bench retrieval_eval -- "$PWD/target/eval/debian" 1000
//! ```
//!
//! (The repository path is read from the bench's directory, crates/ctx-select: give it
//! absolute.) `CTX_EVAL_ABLATIONS=1` adds the default scorer without each signal in turn;
//! `CTX_EVAL_NO_TF=1` skips term frequency, the slow one on large repositories.
//!
//! The scripted repository is a Rust crate of 48 modules in 8 areas, with imports between
//! them and tests, and a history of 120 commits made in working sessions (a session stays in
//! one area for a few commits, as people do). A commit changes one function and often a
//! caller and a test; its subject names the function by its identifier or in words.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::too_many_lines)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use ctx_select::git::{ACTIVITY_WINDOW, RepoAt};
use ctx_select::{
    BuildOptions, CanonicalizeOptions, ErrorPolicy, FilesystemSource, OpenIndex, Query, ScorerKind,
    Weights, build_index,
};

const AREAS: &[(&str, &[&str])] = &[
    (
        "billing",
        &["invoice", "tax", "discount", "currency", "refund", "ledger"],
    ),
    (
        "auth",
        &[
            "token",
            "session",
            "password",
            "login",
            "permission",
            "role",
        ],
    ),
    (
        "storage",
        &["bucket", "blob", "checksum", "upload", "quota", "snapshot"],
    ),
    (
        "search",
        &[
            "query",
            "ranking",
            "tokenizer",
            "synonym",
            "facet",
            "highlight",
        ],
    ),
    (
        "network",
        &["socket", "retry", "timeout", "proxy", "handshake", "packet"],
    ),
    (
        "report",
        &[
            "chart", "export", "summary", "schedule", "template", "column",
        ],
    ),
    (
        "inventory",
        &[
            "stock",
            "warehouse",
            "shipment",
            "barcode",
            "supplier",
            "reorder",
        ],
    ),
    (
        "messaging",
        &["email", "queue", "digest", "webhook", "template", "bounce"],
    ),
];
const VERBS: &[&str] = &[
    "compute", "validate", "parse", "render", "apply", "merge", "load", "store",
];
const MODIFIERS: &[&str] = &[
    "empty",
    "negative",
    "unicode",
    "duplicate",
    "expired",
    "large",
    "missing",
    "concurrent",
];
const SUBJECTS: &[&str] = &[
    "Fix {h} when the input is {m}",
    "Handle {m} values in {f}",
    "{F}: reject {m} input",
    "Speed up {h}",
    "Fix {m} {n} handling in {a}",
    "Make {f} return an error for {m} {n}",
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).expect("small")
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

struct Module {
    area: &'static str,
    noun: &'static str,
    path: String,
    functions: Vec<String>,
    imports: Vec<usize>,
    body: Vec<String>,
}

fn git(dir: &Path, args: &[&str], date: &str) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Eval")
        .env("GIT_AUTHOR_EMAIL", "eval@example.com")
        .env("GIT_COMMITTER_NAME", "Eval")
        .env("GIT_COMMITTER_EMAIL", "eval@example.com")
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

fn git_out(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8(out.stdout).expect("utf8")
}

fn render_module(modules: &[Module], i: usize) -> String {
    let m = &modules[i];
    let mut text = format!("//! The {} {} module.\n\n", m.area, m.noun);
    for &j in &m.imports {
        let other = &modules[j];
        let _ = writeln!(
            text,
            "use crate::{}::{}::{};",
            other.area, other.noun, other.functions[0]
        );
    }
    text.push('\n');
    for (k, f) in m.functions.iter().enumerate() {
        let words = f.replace('_', " ");
        let _ = writeln!(text, "/// {words} for a {} record.", m.noun);
        let _ = writeln!(text, "pub fn {f}(input: &str) -> usize {{");
        let _ = writeln!(text, "    let mut total = input.len();");
        if k == 0 {
            for &j in &m.imports {
                let _ = writeln!(text, "    total += {}(input);", modules[j].functions[0]);
            }
        }
        for line in m.body.iter().filter(|l| l.starts_with(&format!("{f}:"))) {
            let _ = writeln!(text, "    {}", line.split_once(':').map_or("", |x| x.1));
        }
        let _ = writeln!(text, "    total\n}}\n");
    }
    text
}

fn render_test(m: &Module, extra: usize) -> String {
    let mut text = format!("use demo::{}::{}::{};\n\n", m.area, m.noun, m.functions[0]);
    let _ = writeln!(
        text,
        "#[test]\nfn {}_works() {{\n    assert!({}(\"x\") > 0);\n}}",
        m.functions[0], m.functions[0]
    );
    for k in 0..extra {
        let _ = writeln!(
            text,
            "\n#[test]\nfn case_{k}() {{\n    assert!({}(\"case {k}\") > {k});\n}}",
            m.functions[0]
        );
    }
    text
}

/// Builds the scripted repository; returns its path.
fn scripted_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("demo");
    fs::create_dir_all(repo.join("src")).expect("mkdir");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut modules: Vec<Module> = Vec::new();
    for (area, nouns) in AREAS {
        for noun in *nouns {
            let mut functions = Vec::new();
            for _ in 0..3 {
                let verb = VERBS[rng.below(VERBS.len())];
                let f = format!("{verb}_{noun}");
                if !functions.contains(&f) {
                    functions.push(f);
                }
            }
            modules.push(Module {
                area,
                noun,
                path: format!("src/{area}/{noun}.rs"),
                functions,
                imports: Vec::new(),
                body: Vec::new(),
            });
        }
    }
    // Imports: mostly within the area, sometimes across.
    let n = modules.len();
    for i in 0..n {
        for _ in 0..2 {
            let j = if rng.chance(70) {
                (i / 6) * 6 + rng.below(6)
            } else {
                rng.below(n)
            };
            if j != i && !modules[i].imports.contains(&j) && !modules[j].imports.contains(&i) {
                modules[i].imports.push(j);
            }
        }
    }
    let mut lib = String::new();
    for (area, nouns) in AREAS {
        let _ = writeln!(lib, "pub mod {area};");
        let mut m = String::new();
        for noun in *nouns {
            let _ = writeln!(m, "pub mod {noun};");
        }
        fs::create_dir_all(repo.join("src").join(area)).expect("mkdir");
        fs::write(repo.join("src").join(area).join("mod.rs"), m).expect("write");
    }
    fs::write(repo.join("src/lib.rs"), lib).expect("write");
    fs::write(
        repo.join("Cargo.toml"),
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n",
    )
    .expect("write");
    fs::write(
        repo.join("README.md"),
        "# demo\n\nBilling, auth, storage, search, network, reports, inventory and messaging.\n",
    )
    .expect("write");
    fs::create_dir_all(repo.join("tests")).expect("mkdir");
    let mut test_extra: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, m) in modules.iter().enumerate() {
        fs::write(repo.join(&m.path), render_module(&modules, i)).expect("write");
        if i % 2 == 0 {
            fs::write(
                repo.join(format!("tests/{}_{}.rs", m.area, m.noun)),
                render_test(m, 0),
            )
            .expect("write");
            test_extra.insert(i, 0);
        }
    }
    git(&repo, &["init", "-q", "-b", "main"], "2026-01-01T00:00:00Z");
    git(&repo, &["add", "."], "2026-01-01T00:00:00Z");
    git(
        &repo,
        &["commit", "-q", "-m", "Initial import"],
        "2026-01-01T00:00:00Z",
    );

    let mut area = 0;
    for c in 0..120 {
        if c % 4 == 0 || rng.chance(15) {
            area = rng.below(AREAS.len());
        }
        let target = area * 6 + rng.below(6);
        let f = modules[target].functions[rng.below(modules[target].functions.len())].clone();
        let modifier = MODIFIERS[rng.below(MODIFIERS.len())];
        modules[target]
            .body
            .push(format!("{f}:if input.is_empty() {{ total += {c}; }}"));
        let mut changed = vec![target];
        let callers: Vec<usize> = (0..n)
            .filter(|&k| modules[k].imports.contains(&target))
            .collect();
        if !callers.is_empty() && rng.chance(50) {
            let k = callers[rng.below(callers.len())];
            let g = modules[k].functions[0].clone();
            modules[k].body.push(format!("{g}:total += {c};"));
            changed.push(k);
        }
        for &k in &changed {
            fs::write(repo.join(&modules[k].path), render_module(&modules, k)).expect("write");
        }
        if let Some(extra) = test_extra.get_mut(&target)
            && rng.chance(50)
        {
            *extra += 1;
            let m = &modules[target];
            fs::write(
                repo.join(format!("tests/{}_{}.rs", m.area, m.noun)),
                render_test(m, *extra),
            )
            .expect("write");
        }
        let template = SUBJECTS[rng.below(SUBJECTS.len())];
        let human = f.replace('_', " ");
        let mut cap = human.clone();
        if let Some(first) = cap.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        let subject = template
            .replace("{h}", &human)
            .replace("{F}", &cap)
            .replace("{f}", &f)
            .replace("{m}", modifier)
            .replace("{n}", modules[target].noun)
            .replace("{a}", modules[target].area);
        let date = format!("2026-01-{:02}T{:02}:00:00Z", 2 + c / 10, c % 10 + 8);
        git(&repo, &["add", "."], &date);
        git(&repo, &["commit", "-q", "-m", &subject], &date);
    }
    repo
}

/// The rankings compared: term frequency, BM25 alone and the default scorer; with
/// `CTX_EVAL_ABLATIONS=1`, also the default scorer without each of its signals (to see what
/// each one is worth); `CTX_EVAL_NO_TF=1` leaves out term frequency, which reads every
/// document for every query and dominates the time on large repositories.
fn rows() -> Vec<(String, ScorerKind, Weights)> {
    let env = |name: &str| std::env::var(name).is_ok_and(|v| v == "1");
    let mut rows = Vec::new();
    if !env("CTX_EVAL_NO_TF") {
        rows.push(("tf".to_owned(), ScorerKind::Tf, Weights::default()));
    }
    rows.push(("bm25".to_owned(), ScorerKind::Bm25, Weights::default()));
    rows.push((
        "default".to_owned(),
        ScorerKind::Default,
        Weights::default(),
    ));
    if env("CTX_EVAL_ABLATIONS") {
        let base = Weights::default();
        let ablations: [(&str, Weights); 5] = [
            (
                "mentions",
                Weights {
                    path_mentioned: 0.0,
                    filename_mentioned: 0.0,
                    ..base
                },
            ),
            (
                "path field",
                Weights {
                    fields: [
                        base.fields[0],
                        0.0,
                        base.fields[2],
                        base.fields[3],
                        base.fields[4],
                        0.0,
                    ],
                    ..base
                },
            ),
            (
                "git_activity",
                Weights {
                    per_commit: 0.0,
                    max_git: 0.0,
                    ..base
                },
            ),
            (
                "file_type",
                Weights {
                    file_type: 0.0,
                    ..base
                },
            ),
            ("graph", Weights { graph: 0.0, ..base }),
        ];
        for (name, weights) in ablations {
            rows.push((
                format!("default without {name}"),
                ScorerKind::Default,
                weights,
            ));
        }
    }
    rows
}

#[derive(Default, Clone, Copy)]
struct Score {
    r1: f64,
    r5: f64,
    mrr: f64,
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let tmp = tempfile::tempdir().expect("tempdir");
    let (repo, limit, label) = if let Some(path) = args.first() {
        let clone = tmp.path().join("repo");
        let status = Command::new("git")
            .args(["clone", "-q", path, &clone.to_string_lossy()])
            .status()
            .expect("git clone");
        assert!(status.success(), "cannot clone {path}");
        let limit = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(200);
        (clone, limit, path.clone())
    } else {
        (
            scripted_repo(tmp.path()),
            usize::MAX,
            "scripted repository (48 modules, 120 commits)".to_owned(),
        )
    };
    let head = git_out(&repo, &["rev-parse", "HEAD"]).trim().to_owned();
    let log = git_out(
        &repo,
        &["log", "--format=%H %P%x09%s", "--no-merges", &head],
    );
    let mut commits: Vec<(String, String, String)> = log
        .lines()
        .filter_map(|l| {
            let (ids, subject) = l.split_once('\t')?;
            let mut ids = ids.split(' ');
            let id = ids.next()?.to_owned();
            let parent = ids.next().filter(|p| !p.is_empty())?.to_owned();
            Some((id, parent, subject.to_owned()))
        })
        .take(limit)
        .collect();
    commits.reverse();

    let indexes = tmp.path().join("indexes");
    let rows = rows();
    let mut totals = vec![Score::default(); rows.len()];
    let mut queries = 0usize;
    let started = std::time::Instant::now();
    for (id, parent, subject) in &commits {
        let changed = git_out(&repo, &["diff", "--name-only", parent, id]);
        git(
            &repo,
            &["checkout", "-q", "--detach", parent],
            "2026-01-01T00:00:00Z",
        );
        let existing: Vec<String> = changed
            .lines()
            .filter(|p| repo.join(p).is_file())
            .map(str::to_owned)
            .collect();
        if existing.is_empty() || Query::parse(subject).is_err() {
            continue;
        }
        let at = RepoAt::discover(&repo).expect("a repository");
        let source = FilesystemSource::new(&repo, Vec::new(), 1 << 20);
        let opts = BuildOptions {
            name: "eval".to_owned(),
            force: false,
            canonicalize: CanonicalizeOptions::default(),
            policy: ErrorPolicy::SkipAndWarn,
            created_at: "2026-01-01T00:00:00Z".to_owned(),
            root: None,
            git_head: at.head(),
        };
        build_index(&indexes, &source, &opts, &|| at.activity(ACTIVITY_WINDOW)).expect("build");
        let index = OpenIndex::open(&indexes, "eval").expect("open");
        let query = Query::parse(subject).expect("checked");
        queries += 1;
        for (k, (_, kind, weights)) in rows.iter().enumerate() {
            let ranked = index.rank(&query, *kind, weights).expect("rank");
            let ids: Vec<&str> = ranked.iter().map(|r| r.id.as_str()).collect();
            let hits = |n: usize| {
                ids.iter()
                    .take(n)
                    .filter(|i| existing.iter().any(|e| e == *i))
                    .count()
            };
            let relevant = existing.len() as f64;
            totals[k].r1 += hits(1) as f64 / relevant.min(1.0);
            totals[k].r5 += hits(5) as f64 / relevant.min(5.0);
            if let Some(pos) = ids.iter().position(|i| existing.iter().any(|e| e == i)) {
                totals[k].mrr += 1.0 / (pos + 1) as f64;
            }
        }
    }
    git(
        &repo,
        &["checkout", "-q", "--detach", &head],
        "2026-01-01T00:00:00Z",
    );
    println!("retrieval evaluation: {label}");
    println!(
        "{queries} queries (commit subject -> files the commit changed), {:.1} s",
        started.elapsed().as_secs_f64()
    );
    println!("recall@1 = share of queries whose first result is changed by the commit;");
    println!(
        "recall@5 = changed files in the top 5 / min(5, changed files); MRR of the first changed file"
    );
    println!();
    println!("| scorer | recall@1 | recall@5 | MRR |");
    println!("| --- | --- | --- | --- |");
    let q = queries.max(1) as f64;
    for (k, (label, _, _)) in rows.iter().enumerate() {
        println!(
            "| {label} | {:.3} | {:.3} | {:.3} |",
            totals[k].r1 / q,
            totals[k].r5 / q,
            totals[k].mrr / q
        );
    }
}
