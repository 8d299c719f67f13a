//! Which teams an inbound message to a return-path host is for: the hosts of verified
//! domains, read from the domain store and kept for a while.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use herald_queue::Id;

use crate::domains::{DomainStatus, DomainStore};
use crate::storage::Error;

/// How long the map of return-path hosts is used before it is rebuilt.
const HOSTS_FRESH: Duration = Duration::from_secs(30);

/// The soonest the map is rebuilt for a host it does not know: a sender trying names
/// does not make herald read every domain on each `RCPT`.
const HOSTS_MISS_REBUILD: Duration = Duration::from_secs(2);

/// Return-path hosts (lower case) and the teams whose verified domain each is.
type Hosts = HashMap<String, Vec<Id>>;

/// The return-path hosts of verified domains, each with the teams whose domain it is.
#[derive(Debug, Default)]
pub struct ReturnPaths {
    map: Mutex<Option<(Instant, Hosts)>>,
}

impl ReturnPaths {
    /// The teams whose verified domain has the return-path host `host` (lower case).
    pub(super) fn teams(&self, domains: &dyn DomainStore, host: &str) -> Result<Vec<Id>, Error> {
        let mut map = self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let age = map.as_ref().map(|(built, _)| built.elapsed());
        let found = map.as_ref().and_then(|(_, hosts)| hosts.get(host).cloned());
        let stale = match (&found, age) {
            (_, None) => true,
            (Some(_), Some(age)) => age > HOSTS_FRESH,
            (None, Some(age)) => age > HOSTS_MISS_REBUILD,
        };
        if !stale {
            return Ok(found.unwrap_or_default());
        }
        let mut hosts = Hosts::new();
        for domain in domains.all()? {
            if domain.status == DomainStatus::Verified {
                hosts
                    .entry(domain.return_path_host().to_ascii_lowercase())
                    .or_default()
                    .push(domain.team_id);
            }
        }
        let teams = hosts.get(host).cloned().unwrap_or_default();
        *map = Some((Instant::now(), hosts));
        Ok(teams)
    }
}
