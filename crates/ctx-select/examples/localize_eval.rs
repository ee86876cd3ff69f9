//! Evaluates (and tunes) the default scorer's weights in process on a localization dev set:
//! a JSON list of `{id, tree, query, gold}` (`/work/shared/devset/django-issues.json`, or one
//! written by `scripts/history-devset.py`) over trees whose indexes already exist in an
//! indexes directory (run `ctx select` once in each tree first, as `localize.py run` does).
//!
//! ```sh
//! cargo run --profile profiling -p ctx-select --example localize_eval -- \
//!     ISSUES.json WORK/home/indexes [--set NAME=V]... [--ablate] [--tune NAME=V1,V2,...]...
//! ```
//!
//! `--ablate` prints one row per signal with that signal's weight set to 0 (and BM25 alone);
//! `--tune` runs two rounds of coordinate search over the given values, maximizing
//! recall@1 + recall@5 + recall@10 + MRR averaged over repositories (an issue's repository is
//! its id up to `@`; each repository counts the same), and prints the best settings; with
//! `--loo`, once per repository left out, scoring each on the one left out. With several
//! repositories, per-repository rows follow the default row.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::many_single_char_names,
    clippy::too_many_lines
)]

use std::collections::HashMap;
use std::path::Path;

use ctx_select::{OpenIndex, Query, ScorerKind, Weights};

#[derive(Clone)]
struct Issue {
    id: String,
    tree: String,
    query: String,
    gold: Vec<String>,
}

#[derive(Clone, Copy, Default)]
struct Metrics {
    r1: f64,
    r5: f64,
    r10: f64,
    mrr: f64,
}

impl Metrics {
    fn objective(self) -> f64 {
        self.r1 + self.r5 + self.r10 + self.mrr
    }
}

fn evaluate(
    issues: &[Issue],
    indexes: &HashMap<String, OpenIndex>,
    kind: ScorerKind,
    w: &Weights,
) -> Metrics {
    let mut m = Metrics::default();
    for issue in issues {
        let Some(index) = indexes.get(&issue.tree) else {
            continue;
        };
        let query = Query::new(&issue.query);
        let ranked = index.rank(&query, kind, w).unwrap_or_default();
        let ids: Vec<&str> = ranked.iter().map(|r| r.id.as_str()).collect();
        let rank = issue
            .gold
            .iter()
            .map(|g| ids.iter().position(|i| i == g).map(|p| p + 1))
            .collect::<Option<Vec<_>>>()
            .and_then(|r| r.into_iter().max());
        if let Some(r) = rank {
            m.r1 += f64::from(u8::from(r <= 1));
            m.r5 += f64::from(u8::from(r <= 5));
            m.r10 += f64::from(u8::from(r <= 10));
            m.mrr += 1.0 / r as f64;
        }
    }
    let n = issues.len().max(1) as f64;
    Metrics {
        r1: m.r1 / n,
        r5: m.r5 / n,
        r10: m.r10 / n,
        mrr: m.mrr / n,
    }
}

/// The repository an issue belongs to: its id up to `@` (`django@…`, `fzf@…`).
fn repo_of(issue: &Issue) -> &str {
    issue.id.split_once('@').map_or("all", |(r, _)| r)
}

fn repos(issues: &[Issue]) -> Vec<String> {
    let mut out: Vec<String> = issues.iter().map(|i| repo_of(i).to_owned()).collect();
    out.sort();
    out.dedup();
    out
}

/// The tuning objective over several repositories: each counts the same, so a weight that
/// helps one and hurts the others does not win.
fn objective(issues: &[Issue], indexes: &HashMap<String, OpenIndex>, w: &Weights) -> f64 {
    let repos = repos(issues);
    let total: f64 = repos
        .iter()
        .map(|r| {
            let part: Vec<Issue> = issues.iter().filter(|i| repo_of(i) == r).cloned().collect();
            evaluate(&part, indexes, ScorerKind::Default, w).objective()
        })
        .sum();
    total / repos.len().max(1) as f64
}

/// Two rounds of coordinate search from `start` over `tune`, maximizing [`objective`].
fn coordinate_search(
    issues: &[Issue],
    indexes: &HashMap<String, OpenIndex>,
    start: Weights,
    tune: &[(String, Vec<f64>)],
) -> Weights {
    let mut w = start;
    let mut best = objective(issues, indexes, &w);
    for round in 0..2 {
        for (name, values) in tune {
            for &v in values {
                let mut x = w;
                x.set(name, v);
                let o = objective(issues, indexes, &x);
                if o > best + 1e-9 {
                    best = o;
                    w = x;
                    eprintln!("round {round}: {name}={v} -> {o:.4}");
                }
            }
        }
    }
    w
}

fn row(name: &str, m: Metrics) {
    println!(
        "| {name} | {:.3} | {:.3} | {:.3} | {:.3} |",
        m.r1, m.r5, m.r10, m.mrr
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(issues_path), Some(indexes_dir)) = (args.first(), args.get(1)) else {
        eprintln!(
            "usage: localize_eval ISSUES.json INDEXES_DIR [--set N=V]... [--ablate] [--tune N=V1,V2]..."
        );
        std::process::exit(2);
    };
    let raw: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(issues_path)?)?;
    let issues: Vec<Issue> = raw
        .iter()
        .map(|v| Issue {
            id: v["id"].as_str().unwrap_or_default().to_owned(),
            tree: v["tree"].as_str().unwrap_or_default().to_owned(),
            query: v["query"].as_str().unwrap_or_default().to_owned(),
            gold: v["gold"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|g| g.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect();
    // Index by tree: each index records the root it was built from.
    let dir = Path::new(indexes_dir);
    let mut indexes: HashMap<String, OpenIndex> = HashMap::new();
    for entry in std::fs::read_dir(dir)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !entry.path().is_dir() {
            continue;
        }
        let db = ctx_select::index::SearchDb::open(&entry.path().join("search.db"), &name)?;
        let Some(root) = db.root().map(str::to_owned) else {
            continue;
        };
        let tree = root.rsplit('/').next().unwrap_or(&root).to_owned();
        if issues.iter().any(|i| i.tree == tree) {
            indexes.insert(tree, OpenIndex::open(dir, &name)?);
        }
    }
    eprintln!("{} issues, {} trees indexed", issues.len(), indexes.len());

    let mut w = Weights::default();
    let mut tune: Vec<(String, Vec<f64>)> = Vec::new();
    let mut ablate = false;
    let mut explain: Vec<String> = Vec::new();
    let mut compare: Vec<(String, f64)> = Vec::new();
    let mut misses = false;
    let mut loo = false;
    let mut i = 2;
    while i < args.len() {
        match args[i].as_str() {
            "--set" | "--tune" => {
                let spec = args.get(i + 1).ok_or("--set/--tune need NAME=VALUE")?;
                let (name, values) = spec.split_once('=').ok_or("NAME=VALUE")?;
                let values: Vec<f64> = values
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()?;
                if args[i] == "--set" {
                    if !w.set(name, values[0]) {
                        return Err(format!("unknown weight {name}").into());
                    }
                } else {
                    tune.push((name.to_owned(), values));
                }
                i += 2;
            }
            "--compare" => {
                let spec = args.get(i + 1).ok_or("--compare needs NAME=VALUE")?;
                let (name, value) = spec.split_once('=').ok_or("NAME=VALUE")?;
                compare.push((name.to_owned(), value.parse()?));
                i += 2;
            }
            "--explain" => {
                let id = args.get(i + 1).ok_or("--explain needs an issue id")?;
                explain.push(id.clone());
                i += 2;
            }
            "--misses" => {
                misses = true;
                i += 1;
            }
            "--ablate" => {
                ablate = true;
                i += 1;
            }
            "--loo" => {
                loo = true;
                i += 1;
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }

    for id in &explain {
        let Some(issue) = issues.iter().find(|i| &i.id == id) else {
            continue;
        };
        let Some(index) = indexes.get(&issue.tree) else {
            continue;
        };
        let ranked = index.rank(&Query::new(&issue.query), ScorerKind::Default, &w)?;
        println!("## {id} gold {:?}", issue.gold);
        for (k, r) in ranked.iter().enumerate() {
            if k < 5 || issue.gold.contains(&r.id) {
                println!("{:>4} {:8.3} {}", k + 1, r.score, r.id);
                for s in &r.why.signals {
                    println!("         {:>8.3} {} {}", s.contribution, s.name, s.detail);
                }
            }
        }
    }
    if !explain.is_empty() {
        return Ok(());
    }
    if misses {
        compare.push(("text".to_owned(), w.text));
    }
    if !compare.is_empty() {
        let mut x = w;
        for (name, value) in &compare {
            x.set(name, *value);
        }
        for issue in &issues {
            let Some(index) = indexes.get(&issue.tree) else {
                continue;
            };
            let query = Query::new(&issue.query);
            let rank_of = |w: &Weights| {
                index
                    .rank(&query, ScorerKind::Default, w)
                    .unwrap_or_default()
                    .iter()
                    .position(|r| issue.gold.contains(&r.id))
                    .map_or(0, |p| p + 1)
            };
            let (a, b) = (rank_of(&w), rank_of(&x));
            if a != b || (misses && a != 1) {
                println!("{} {a} -> {b}", issue.id);
            }
        }
        return Ok(());
    }
    println!("| ranking | recall@1 | recall@5 | recall@10 | MRR |");
    println!("| --- | --- | --- | --- | --- |");
    row(
        "default",
        evaluate(&issues, &indexes, ScorerKind::Default, &w),
    );
    let all_repos = repos(&issues);
    if all_repos.len() > 1 {
        for r in &all_repos {
            let part: Vec<Issue> = issues.iter().filter(|i| repo_of(i) == r).cloned().collect();
            row(
                &format!("default: {r} ({})", part.len()),
                evaluate(&part, &indexes, ScorerKind::Default, &w),
            );
        }
    }
    if loo && !tune.is_empty() {
        // Leave one repository out: tune on the others, score the one left out.
        let mut pooled = Metrics::default();
        for r in &all_repos {
            let train: Vec<Issue> = issues.iter().filter(|i| repo_of(i) != r).cloned().collect();
            let test: Vec<Issue> = issues.iter().filter(|i| repo_of(i) == r).cloned().collect();
            let tuned = coordinate_search(&train, &indexes, w, &tune);
            let m = evaluate(&test, &indexes, ScorerKind::Default, &tuned);
            row(&format!("held out: {r} ({})", test.len()), m);
            let n = test.len() as f64;
            pooled.r1 += m.r1 * n;
            pooled.r5 += m.r5 * n;
            pooled.r10 += m.r10 * n;
            pooled.mrr += m.mrr * n;
        }
        let n = issues.len().max(1) as f64;
        row(
            "leave-one-repository-out",
            Metrics {
                r1: pooled.r1 / n,
                r5: pooled.r5 / n,
                r10: pooled.r10 / n,
                mrr: pooled.mrr / n,
            },
        );
        return Ok(());
    }
    if ablate {
        row(
            "BM25 alone",
            evaluate(&issues, &indexes, ScorerKind::Bm25, &w),
        );
        let signals: &[(&str, &[&str])] = &[
            ("string-literal field", &["fields.3"]),
            ("comment field", &["fields.4"]),
            ("title terms", &["title"]),
            ("message and flag terms", &["literal"]),
            ("definitions", &["definition"]),
            ("qualified definitions", &["qualified"]),
            ("module paths", &["module_path"]),
            ("quoted messages verbatim", &["message"]),
            ("mentioned paths", &["path_mentioned", "filename_mentioned"]),
            ("graph", &["graph"]),
            ("git activity", &["per_commit"]),
            ("context demotion", &["context"]),
            ("relevance floor", &["floor"]),
        ];
        for (label, names) in signals {
            let mut x = w;
            for name in *names {
                // Demotion off is a factor of 1, not 0.
                let off = if *name == "context" { 1.0 } else { 0.0 };
                x.set(name, off);
            }
            row(
                &format!("without {label}"),
                evaluate(&issues, &indexes, ScorerKind::Default, &x),
            );
        }
    }
    if !tune.is_empty() {
        w = coordinate_search(&issues, &indexes, w, &tune);
        row(
            "tuned",
            evaluate(&issues, &indexes, ScorerKind::Default, &w),
        );
        println!("{w:?}");
    }
    Ok(())
}
