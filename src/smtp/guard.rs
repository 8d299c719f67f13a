//! Limits across connections: how many at once (in all and per client address), and
//! addresses that failed AUTH too often. The lockout reads the injected clock, so that
//! tests can move past it without waiting.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use herald_queue::{SharedClock, Timestamp};

use crate::config::SmtpLimits;

/// Shared by every listener.
#[derive(Debug)]
pub struct Guard {
    limits: SmtpLimits,
    clock: SharedClock,
    connections: Mutex<Connections>,
    failures: Mutex<HashMap<IpAddr, Failures>>,
}

#[derive(Debug, Default)]
struct Connections {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    since: Timestamp,
}

/// A connection slot; released when dropped.
#[derive(Debug)]
pub struct Slot {
    guard: Arc<Guard>,
    address: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut connections = self.guard.connections.lock().unwrap_or_else(PoisonError::into_inner);
        connections.total = connections.total.saturating_sub(1);
        if let Some(count) = connections.by_address.get_mut(&self.address) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                connections.by_address.remove(&self.address);
            }
        }
    }
}

impl Guard {
    /// A guard enforcing `limits`, reading time from `clock`.
    pub fn new(limits: SmtpLimits, clock: SharedClock) -> Arc<Guard> {
        Arc::new(Guard {
            limits,
            clock,
            connections: Mutex::new(Connections::default()),
            failures: Mutex::new(HashMap::new()),
        })
    }

    /// A slot for a connection from `address`, or the reason there is none.
    pub fn admit(self: &Arc<Self>, address: IpAddr) -> Result<Slot, &'static str> {
        let mut connections = self.connections.lock().unwrap_or_else(PoisonError::into_inner);
        if connections.total >= self.limits.connections_max {
            return Err("Too many connections, try again later");
        }
        let from_address = connections.by_address.entry(address).or_default();
        if *from_address >= self.limits.connections_per_address_max {
            return Err("Too many connections from your address, try again later");
        }
        *from_address += 1;
        connections.total += 1;
        Ok(Slot {
            guard: Arc::clone(self),
            address,
        })
    }

    /// Whether `address` is locked out after too many AUTH failures.
    pub fn locked_out(&self, address: IpAddr) -> bool {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        match failures.get(&address) {
            Some(f) if self.clock.now().saturating_since(f.since) >= self.limits.auth_lockout => {
                failures.remove(&address);
                false
            }
            Some(f) => f.count >= self.limits.auth_failures_max,
            None => false,
        }
    }

    /// Records an AUTH outcome; returns how long to delay the answer to a failure, which
    /// grows with each one so that guessing keys is slow even before the lockout.
    pub fn record_auth(&self, address: IpAddr, ok: bool) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        if ok {
            failures.remove(&address);
            return Duration::ZERO;
        }
        let now = self.clock.now();
        let entry = failures.entry(address).or_insert(Failures { count: 0, since: now });
        entry.count += 1;
        Duration::from_millis(200 * u64::from(entry.count.min(10)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> SmtpLimits {
        let mut limits = crate::config::Config::defaults().smtp.limits;
        limits.connections_max = 3;
        limits.connections_per_address_max = 2;
        limits.auth_failures_max = 2;
        limits
    }

    #[test]
    fn connections_are_limited_in_all_and_per_address() {
        let guard = Guard::new(limits(), Arc::new(herald_queue::SystemClock));
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.1".parse().expect("ip"), "127.0.0.2".parse().expect("ip"));
        let first = guard.admit(a).expect("first");
        let _second = guard.admit(a).expect("second");
        assert!(guard.admit(a).is_err(), "per address");
        let _third = guard.admit(b).expect("other address");
        assert!(guard.admit(b).is_err(), "in all");
        drop(first);
        assert!(guard.admit(a).is_ok(), "a slot is released on drop");
    }

    #[test]
    fn repeated_auth_failures_lock_an_address_out_until_the_lockout_passes() {
        let clock = Arc::new(herald_queue::ManualClock::new(Timestamp::from_millis(1_000)));
        let guard = Guard::new(limits(), clock.clone());
        let a: IpAddr = "127.0.0.1".parse().expect("ip");
        assert!(!guard.locked_out(a));
        assert!(guard.record_auth(a, false) > Duration::ZERO);
        assert!(!guard.locked_out(a));
        guard.record_auth(a, false);
        assert!(guard.locked_out(a));
        clock.advance(limits().auth_lockout);
        assert!(!guard.locked_out(a), "the lockout ends on the injected clock");
        guard.record_auth(a, false);
        guard.record_auth(a, false);
        assert!(guard.locked_out(a));
        guard.record_auth(a, true);
        assert!(!guard.locked_out(a), "success clears the count");
    }
}
