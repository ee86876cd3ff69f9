//! Token counting with the store's cache.

use ctx_core::{ContentHash, TokenizerKind};
use ctx_store::{Metadata, StoreError};

/// Counts the tokens of each text, using and filling the cache in `db` when given.
///
/// Texts whose content hash is cached are not tokenized (so the tokenizer is not even built
/// when everything hits); the rest are counted and cached in one transaction.
pub fn count_cached(
    db: Option<&dyn Metadata>,
    tokenizer: TokenizerKind,
    texts: &[&str],
) -> Result<Vec<u64>, StoreError> {
    let mut counts = Vec::with_capacity(texts.len());
    let mut fresh = Vec::new();
    for text in texts {
        let hash = ContentHash::of(text.as_bytes());
        let cached = match db {
            Some(db) if tokenizer.is_exact() => db.cached_token_count(&hash, tokenizer)?,
            _ => None,
        };
        let count = if let Some(count) = cached {
            count
        } else {
            let count = tokenizer.count(text) as u64;
            if tokenizer.is_exact() {
                fresh.push((hash, count));
            }
            count
        };
        counts.push(count);
    }
    if let Some(db) = db
        && !fresh.is_empty()
    {
        db.cache_token_counts(tokenizer, &fresh)?;
    }
    Ok(counts)
}
