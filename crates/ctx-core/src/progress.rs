//! Progress of long work, reported by the library and drawn (or not) by the caller.
//!
//! Library code never draws anything: it calls a [`Progress`] it was handed. The CLI passes a
//! terminal bar on stderr; servers, tests and pipes pass [`NoProgress`]. Reporting must not
//! change results, so implementations only observe.
//!
//! The one thing a progress says back is whether the caller gave up ([`Progress::cancelled`]):
//! a server that answered a request with a timeout sets a [`Cancellable`]'s flag, and long work
//! (an index build, a render) stops at its next chunk instead of running on unseen.

use std::sync::atomic::{AtomicBool, Ordering};

/// Receives the phases and steps of a long operation. Calls may come from several threads.
pub trait Progress: Sync {
    /// A new phase begins: `label` says what is being done, `total` how many steps it has
    /// (`None` when unknown in advance).
    fn phase(&self, label: &str, total: Option<u64>);
    /// `steps` more steps of the current phase are done.
    fn advance(&self, steps: u64);
    /// The operation is over; whatever was drawn is cleared.
    fn finish(&self);
    /// Whether the caller gave up on the operation: long work checks between chunks and
    /// stops with an error when it has (its result would be thrown away).
    fn cancelled(&self) -> bool {
        false
    }
}

/// `inner`'s reports, and cancelled once `flag` is set.
pub struct Cancellable<'a> {
    pub inner: &'a dyn Progress,
    pub flag: &'a AtomicBool,
}

impl Progress for Cancellable<'_> {
    fn phase(&self, label: &str, total: Option<u64>) {
        self.inner.phase(label, total);
    }
    fn advance(&self, steps: u64) {
        self.inner.advance(steps);
    }
    fn finish(&self) {
        self.inner.finish();
    }
    fn cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed) || self.inner.cancelled()
    }
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn phase(&self, _label: &str, _total: Option<u64>) {}
    fn advance(&self, _steps: u64) {}
    fn finish(&self) {}
}
