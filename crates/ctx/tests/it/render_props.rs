//! Properties of the render, over random packs: the budget is never exceeded, the count is
//! exact, priority order holds, greedy filling is honest, and render is a pure function.

use std::time::Duration;

use ctx::core::TokenizerKind;
use ctx::core::redact::Redactor;
use ctx::packs::{self, PackContext, PackSettings, PayloadStyle, RenderRequest};
use ctx::sources::AddOptions;
use ctx::sources::sensitive::SensitivePaths;
use ctx::store::Store;
use proptest::prelude::*;

fn settings() -> PackSettings {
    PackSettings {
        default_budget: 1000,
        default_tokenizer: TokenizerKind::O200kBase,
        max_file_bytes: 1 << 20,
        command_timeout: Duration::from_secs(5),
        redactor: Redactor::with_custom(&[]).expect("built-in rules compile"),
        sensitive: SensitivePaths::with_extra(&[]).expect("built-in patterns compile"),
    }
}

fn content() -> impl Strategy<Value = String> {
    proptest::string::string_regex(
        "([a-zA-Z_]{1,8}|[ \t]{1,3}|\n{1,2}|[{}();,./#`]|[0-9]{1,4}|é|日本|🎉){0,60}",
    )
    .expect("valid regex")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn render_respects_budget_order_and_purity(
        files in proptest::collection::vec((content(), -2i64..3), 1..8),
        budget in 0u64..400,
        style in prop_oneof![Just(PayloadStyle::Markdown), Just(PayloadStyle::Xml), Just(PayloadStyle::Plain), Just(PayloadStyle::Json)],
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let (store, _) = Store::init(&root.join(".ctx")).expect("init");
        let ctx = PackContext { store: &store, root: root.clone(), settings: &settings(), clock: &|| 0 };
        packs::create_pack(&ctx, "p", Some(budget), None, 0).expect("create");
        let mut order = Vec::new();
        for (i, (text, priority)) in files.iter().enumerate() {
            let name = format!("f{i}.txt");
            std::fs::write(root.join(&name), text).expect("write");
            let added = packs::add_source(&ctx, "p", &format!("file:{name}"), &root, &AddOptions::default(), *priority, 0)
                .expect("add");
            order.push((added.artifact.artifact_id, *priority, i));
        }
        let request = RenderRequest { packs: vec!["p".into()], budget: None, tokenizer: None, style };
        let first = packs::render(&ctx, &request).expect("render");
        let report = &first.report;
        prop_assert!(report.tokens_used <= budget);
        prop_assert_eq!(report.tokens_used, TokenizerKind::O200kBase.count(&first.payload) as u64);
        // Priority DESC, then added order.
        let rank = |id: &str| order.iter().find(|(a, _, _)| a == id).map(|(_, p, i)| (-*p, *i)).expect("known");
        let ranks: Vec<_> = report.included.iter().map(|i| rank(&i.artifact_id)).collect();
        let mut sorted = ranks.clone();
        sorted.sort_unstable();
        prop_assert_eq!(ranks, sorted);
        // Greedy: nothing left out would have fit in what remained beside the frame reserve
        // (unless not even the frame fit, and the payload is empty).
        prop_assert!(report.frame_tokens <= report.frame_reserve || first.payload.is_empty());
        let blocks = report.tokens_used - report.frame_tokens;
        for excluded in &report.excluded {
            prop_assert_eq!(excluded.reason.as_str(), "over_budget");
            if !first.payload.is_empty() {
                prop_assert!(excluded.tokens.expect("counted") > budget - report.frame_reserve - blocks);
            }
        }
        // The pieces cut the payload exactly, and their counts add up.
        prop_assert_eq!(first.pieces.iter().map(|p| p.bytes).sum::<usize>(), first.payload.len());
        prop_assert_eq!(first.pieces.iter().map(|p| p.tokens).sum::<u64>(), report.tokens_used);
        prop_assert_eq!(report.included.len() + report.excluded.len(), files.len());
        // Pure: the same inputs give the same bytes (warm cache this time).
        let second = packs::render(&ctx, &request).expect("render again");
        prop_assert_eq!(&first.payload, &second.payload);
        prop_assert_eq!(report.render_hash, second.report.render_hash);
        prop_assert_eq!(report.payload_hash, second.report.payload_hash);
        prop_assert_eq!(second.report.tokens_counted, 0, "warm render tokenizes nothing");
    }
}
