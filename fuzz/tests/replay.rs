//! Runs every fuzz target over its committed corpus (`corpus/<target>/`): the seeds, and any
//! reproducer saved there after a crash was fixed, must pass in a plain `cargo test`.

#[test]
fn every_target_passes_its_corpus() {
    for (target, run) in ctx_fuzz::TARGETS {
        let dir = ctx_fuzz::corpus_dir(target);
        let mut inputs: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("entry").path())
            .collect();
        inputs.sort();
        assert!(
            !inputs.is_empty(),
            "{target}: no corpus in {}",
            dir.display()
        );
        for input in inputs {
            let data = std::fs::read(&input).expect("read input");
            let outcome = std::panic::catch_unwind(|| run(&data));
            assert!(outcome.is_ok(), "{target} fails on {}", input.display());
        }
    }
}
