//! Shutdown as a module: one trigger, many listeners, and a drain that tells when every
//! task holding a handle has finished.
//!
//! Every long-lived task (listener, connection, delivery worker) holds a [`Shutdown`].
//! [`Controller::shutdown`] fires the signal, then waits, at most the grace period, until
//! every handle is dropped: tasks reach a safe point (an SMTP session answers `421`, an
//! HTTP connection finishes its response), drop the handle and end.

use std::time::Duration;

use tokio::sync::{mpsc, watch};

/// A task's view of shutdown. Hold it for as long as the task runs.
#[derive(Debug, Clone)]
pub struct Shutdown {
    signal: watch::Receiver<bool>,
    _drain: mpsc::Sender<()>,
}

impl Shutdown {
    /// Whether shutdown has begun.
    pub fn is_triggered(&self) -> bool {
        *self.signal.borrow()
    }

    /// Completes once shutdown begins (at once if it already has).
    pub async fn triggered(&mut self) {
        // An error means the controller is gone, which only happens once shutdown is
        // over; either way it is time to stop.
        let _ = self.signal.wait_for(|triggered| *triggered).await;
    }
}

/// Owns the trigger and the drain.
#[derive(Debug)]
pub struct Controller {
    trigger: watch::Sender<bool>,
    drain_sender: mpsc::Sender<()>,
    drain: mpsc::Receiver<()>,
}

impl Default for Controller {
    fn default() -> Self {
        let (trigger, _) = watch::channel(false);
        let (drain_sender, drain) = mpsc::channel(1);
        Controller {
            trigger,
            drain_sender,
            drain,
        }
    }
}

impl Controller {
    /// A new handle for a task.
    pub fn handle(&self) -> Shutdown {
        Shutdown {
            signal: self.trigger.subscribe(),
            _drain: self.drain_sender.clone(),
        }
    }

    /// Signals every task, then waits up to `grace` for all handles to drop. Returns
    /// whether everything drained in time.
    pub async fn shutdown(self, grace: Duration) -> bool {
        let Controller {
            trigger,
            drain_sender,
            mut drain,
        } = self;
        trigger.send_replace(true);
        drop(drain_sender);
        // `recv` returns `None` once every sender (handle) is gone; nothing is ever sent.
        tokio::time::timeout(grace, drain.recv()).await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn shutdown_waits_for_handles_to_drop() {
        let controller = Controller::default();
        let mut handle = controller.handle();
        let task = tokio::spawn(async move {
            handle.triggered().await;
            assert!(handle.is_triggered());
        });
        assert!(controller.shutdown(Duration::from_secs(10)).await);
        task.await.expect("task ends");
    }

    #[tokio::test]
    async fn shutdown_gives_up_after_the_grace_period() {
        let controller = Controller::default();
        let stuck = controller.handle();
        assert!(!controller.shutdown(Duration::from_millis(20)).await);
        drop(stuck);
    }
}
