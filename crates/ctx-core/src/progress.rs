//! Progress of long work, reported by the library and drawn (or not) by the caller.
//!
//! Library code never draws anything: it calls a [`Progress`] it was handed. The CLI passes a
//! terminal bar on stderr; servers, tests and pipes pass [`NoProgress`]. Reporting must not
//! change results, so implementations only observe.

/// Receives the phases and steps of a long operation. Calls may come from several threads.
pub trait Progress: Sync {
    /// A new phase begins: `label` says what is being done, `total` how many steps it has
    /// (`None` when unknown in advance).
    fn phase(&self, label: &str, total: Option<u64>);
    /// `steps` more steps of the current phase are done.
    fn advance(&self, steps: u64);
    /// The operation is over; whatever was drawn is cleared.
    fn finish(&self);
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn phase(&self, _label: &str, _total: Option<u64>) {}
    fn advance(&self, _steps: u64) {}
    fn finish(&self) {}
}
