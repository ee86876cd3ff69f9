//! A progress bar on stderr for long work, drawn only on a terminal.
//!
//! The bar stays hidden for the first [`SHOW_AFTER`] so quick commands never flash one, is
//! never drawn when stderr is not a terminal or `-q` is given, and is cleared when the work
//! ends, so it never mixes with results on stdout or notes on stderr.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ctx::core::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Work shorter than this shows no bar at all.
const SHOW_AFTER: Duration = Duration::from_millis(300);

/// A [`Progress`] that draws an indicatif bar on stderr when that is a terminal.
pub struct Bar {
    /// `None` when nothing may be drawn.
    inner: Option<ProgressBar>,
    started: Instant,
    shown: AtomicBool,
}

impl Bar {
    /// A bar that draws when `enabled` and stderr is a terminal.
    pub fn new(enabled: bool) -> Self {
        let inner = (enabled && std::io::stderr().is_terminal())
            .then(|| ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()));
        Self {
            inner,
            started: Instant::now(),
            shown: AtomicBool::new(false),
        }
    }

    fn reveal(&self, bar: &ProgressBar) {
        if self.shown.load(Ordering::Relaxed) || self.started.elapsed() < SHOW_AFTER {
            return;
        }
        if !self.shown.swap(true, Ordering::Relaxed) {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
}

impl Progress for Bar {
    fn phase(&self, label: &str, total: Option<u64>) {
        let Some(bar) = &self.inner else { return };
        let style = match total {
            Some(_) => ProgressStyle::with_template(
                "{spinner} {msg:<16} [{bar:30}] {pos}/{len} ({eta} left)",
            ),
            None => ProgressStyle::with_template("{spinner} {msg:<16} {pos}"),
        }
        .expect("progress templates are valid")
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(label.to_owned());
        bar.set_length(total.unwrap_or(0));
        bar.set_position(0);
        self.reveal(bar);
    }

    fn advance(&self, steps: u64) {
        let Some(bar) = &self.inner else { return };
        bar.inc(steps);
        self.reveal(bar);
    }

    fn finish(&self) {
        if let Some(bar) = &self.inner {
            bar.finish_and_clear();
        }
    }
}
