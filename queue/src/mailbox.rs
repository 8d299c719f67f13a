//! The commit thread's queue: a bounded FIFO under a mutex, with a condition variable the
//! thread sleeps on when there is nothing to write.
//!
//! A channel would do the same job, but crossbeam's (and std's) blocking receive spins and
//! then calls `sched_yield` several times before it sleeps. The commit thread empties its
//! queue at every sync, so it waits that way a few times per group: on two cores under
//! load each yield hands the CPU to another thread and back, several context switches per
//! committed message. Here the thread sleeps at once, senders wake it only when it is
//! asleep, and it takes a whole group in one lock.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use crate::error::Refusal;

/// A bounded multi-producer queue with one consumer that takes items in groups.
pub(crate) struct Mailbox<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
    capacity: usize,
}

struct State<T> {
    items: VecDeque<T>,
    closed: bool,
    /// Whether the consumer sleeps on `ready`: only then does a sender signal it.
    sleeping: bool,
}

impl<T> Mailbox<T> {
    /// A queue that refuses items beyond `capacity` waiting ones.
    pub(crate) fn new(capacity: usize) -> Self {
        Mailbox {
            state: Mutex::new(State {
                items: VecDeque::new(),
                closed: false,
                sleeping: false,
            }),
            ready: Condvar::new(),
            capacity,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // The state stays consistent under a panic (every change is one push or drain).
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `item`: [`Refusal::Busy`] when `capacity` items wait already,
    /// [`Refusal::Closed`] once the queue is closed.
    pub(crate) fn push(&self, item: T) -> Result<(), Refusal> {
        let mut state = self.lock();
        if state.closed {
            return Err(Refusal::Closed);
        }
        if state.items.len() >= self.capacity {
            return Err(Refusal::Busy);
        }
        state.items.push_back(item);
        // One wake-up per sleep: later senders see the consumer as awake already.
        let wake = std::mem::replace(&mut state.sleeping, false);
        drop(state);
        if wake {
            self.ready.notify_one();
        }
        Ok(())
    }

    /// Waits for at least one item and moves the oldest into `group` while `more` allows
    /// (it sees each next item and the group so far; the first item is always taken).
    /// Returns false, leaving `group` empty, once the queue is closed and empty.
    pub(crate) fn take(&self, group: &mut Vec<T>, mut more: impl FnMut(&T, &[T]) -> bool) -> bool {
        let mut state = self.lock();
        while state.items.is_empty() {
            if state.closed {
                return false;
            }
            state.sleeping = true;
            state = self.ready.wait(state).unwrap_or_else(PoisonError::into_inner);
            // A spurious wake-up leaves `sleeping` set; the loop sets it again anyway.
            state.sleeping = false;
        }
        while let Some(next) = state.items.front() {
            if !group.is_empty() && !more(next, group) {
                break;
            }
            group.extend(state.items.pop_front());
        }
        true
    }

    /// Refuses new items from now on; the consumer still gets those queued.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }

    /// Closes the queue and drops what waits in it (the consumer is gone).
    pub(crate) fn abandon(&self) {
        let dropped = {
            let mut state = self.lock();
            state.closed = true;
            std::mem::take(&mut state.items)
        };
        drop(dropped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn groups_are_taken_in_order_within_the_limit() {
        let mailbox = Mailbox::new(10);
        for i in 0..5 {
            mailbox.push(i).expect("room");
        }
        let mut group = Vec::new();
        assert!(mailbox.take(&mut group, |_, so_far| so_far.len() < 3));
        assert_eq!(group, [0, 1, 2]);
        group.clear();
        assert!(mailbox.take(&mut group, |_, _| false), "the first item is always taken");
        assert_eq!(group, [3]);
    }

    #[test]
    fn a_full_queue_is_busy_and_a_closed_one_drains_then_ends() {
        let mailbox = Mailbox::new(2);
        mailbox.push(1).expect("room");
        mailbox.push(2).expect("room");
        assert!(matches!(mailbox.push(3), Err(Refusal::Busy)));
        mailbox.close();
        assert!(matches!(mailbox.push(4), Err(Refusal::Closed)));
        let mut group = Vec::new();
        assert!(mailbox.take(&mut group, |_, _| true));
        assert_eq!(group, [1, 2]);
        group.clear();
        assert!(!mailbox.take(&mut group, |_, _| true));
        assert!(group.is_empty());
    }

    #[test]
    fn a_sleeping_consumer_is_woken_by_a_push_from_another_thread() {
        let mailbox = Arc::new(Mailbox::new(100));
        let consumer = {
            let mailbox = Arc::clone(&mailbox);
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                let mut group = Vec::new();
                while mailbox.take(&mut group, |_, _| true) {
                    seen.append(&mut group);
                }
                seen
            })
        };
        for i in 0..1000 {
            while mailbox.push(i).is_err() {
                std::thread::yield_now();
            }
        }
        mailbox.close();
        assert_eq!(consumer.join().expect("consumer"), (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn abandoning_drops_what_waits() {
        let mailbox = Mailbox::new(4);
        let item = Arc::new(());
        mailbox.push(Arc::clone(&item)).expect("room");
        mailbox.abandon();
        assert_eq!(Arc::strong_count(&item), 1);
        assert!(matches!(mailbox.push(Arc::clone(&item)), Err(Refusal::Closed)));
    }
}
