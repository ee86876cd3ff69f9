//! Telling the client about long work: `notifications/progress` when a request carried a
//! progress token, and `notifications/message` log lines at the level the client chose with
//! `logging/setLevel`.
//!
//! Tools run on the blocking pool and report through [`ctx::core::Progress`]; a
//! [`Reporter`] turns those calls into notes on a channel, and [`forward`] sends them from the
//! async side, so every note goes out before the call's answer.

#![allow(deprecated)] // LoggingLevel: MCP logging is deprecated by SEP-2577 but still in 2025-11-25.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::{Peer, RoleServer};
use serde_json::json;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// The least time between two progress notes inside one phase.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// A level's rank: higher is more severe.
pub fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// One thing to tell the client.
#[derive(Debug)]
pub enum Note {
    Progress {
        progress: u64,
        total: Option<u64>,
        message: String,
    },
    Log(String),
}

#[derive(Debug, Default)]
struct State {
    /// Steps done in all phases so far.
    done: u64,
    /// Steps done before the current phase.
    base: u64,
    total: Option<u64>,
    label: String,
    last: Option<Instant>,
}

/// A [`ctx::core::Progress`] that sends notes: progress when the client asked for it (a
/// progress token), log lines at info level when the client's level lets them through.
pub struct Reporter {
    sender: UnboundedSender<Note>,
    progress: bool,
    log: bool,
    state: Mutex<State>,
}

impl Reporter {
    /// A reporter and the receiving end of its notes.
    pub fn new(progress: bool, log: bool) -> (Self, UnboundedReceiver<Note>) {
        let (sender, receiver) = unbounded_channel();
        (
            Self {
                sender,
                progress,
                log,
                state: Mutex::new(State::default()),
            },
            receiver,
        )
    }

    /// Whether anything would be sent at all.
    pub fn is_active(&self) -> bool {
        self.progress || self.log
    }

    /// A log line (at info level), if the client's level lets it through.
    pub fn log(&self, message: String) {
        if self.log {
            let _ = self.sender.send(Note::Log(message));
        }
    }

    fn send_progress(&self, state: &mut State) {
        if !self.progress {
            return;
        }
        state.last = Some(Instant::now());
        let _ = self.sender.send(Note::Progress {
            progress: state.done,
            total: state.total.map(|t| state.base + t),
            message: state.label.clone(),
        });
    }
}

impl ctx::core::Progress for Reporter {
    fn phase(&self, label: &str, total: Option<u64>) {
        let mut state = self.state.lock().expect("progress state");
        state.base = state.done;
        state.total = total;
        label.clone_into(&mut state.label);
        self.send_progress(&mut state);
        drop(state);
        self.log(match total {
            Some(n) => format!("{label} ({n})"),
            None => label.to_owned(),
        });
    }

    fn advance(&self, steps: u64) {
        let mut state = self.state.lock().expect("progress state");
        state.done += steps;
        let phase_done = state.total.is_some_and(|t| state.done >= state.base + t);
        let due = state
            .last
            .is_none_or(|at| at.elapsed() >= PROGRESS_INTERVAL);
        if phase_done || due {
            self.send_progress(&mut state);
        }
    }

    fn finish(&self) {}
}

/// Sends the notes of one call to the client until the reporter is dropped.
pub async fn forward(
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    mut notes: UnboundedReceiver<Note>,
) {
    while let Some(note) = notes.recv().await {
        // A client that went away stops nothing: the answer is still computed.
        let _ = match note {
            Note::Progress {
                progress,
                total,
                message,
            } => {
                let Some(token) = token.clone() else { continue };
                #[allow(clippy::cast_precision_loss)] // counts of files, far below 2^52
                let mut param =
                    ProgressNotificationParam::new(token, progress as f64).with_message(message);
                if let Some(total) = total {
                    #[allow(clippy::cast_precision_loss)]
                    {
                        param = param.with_total(total as f64);
                    }
                }
                peer.notify_progress(param).await
            }
            Note::Log(message) => {
                peer.notify_logging_message(
                    LoggingMessageNotificationParam::new(
                        LoggingLevel::Info,
                        json!({ "message": message }),
                    )
                    .with_logger("ctx"),
                )
                .await
            }
        };
    }
}
