//! Trusted networks (`[[smtp.trusted]]`, as Postfix's `mynetworks`): applications on the
//! mail host or a private network submit without AUTH, as the API key the entry names.
//! The key's team is found once at start (a key that does not exist fails the start,
//! naming the entry); each connection then reads the key as it is (a deleted key trusts
//! no one, and its permission and domain apply as they are now). On a listener with
//! `mx = true`, which the internet's MXs reach, only loopback networks are trusted.

use std::net::IpAddr;

use anyhow::Context as _;
use herald_queue::Id;

use crate::accounts::Caller;
use crate::config::TrustedNetwork;
use crate::services::Services;

/// The configured trusted networks, their keys' teams found.
#[derive(Debug, Default)]
pub struct Trusted {
    entries: Vec<(TrustedNetwork, Id)>,
}

impl Trusted {
    /// Finds each entry's key; an error names the entry whose key does not exist.
    pub fn resolve(services: &Services, networks: &[TrustedNetwork]) -> anyhow::Result<Trusted> {
        let mut entries = Vec::with_capacity(networks.len());
        for (i, entry) in networks.iter().enumerate() {
            let team = services
                .team_of_key(entry.api_key_id)
                .context("cannot read the API keys")?
                .with_context(|| {
                    format!(
                        "smtp.trusted[{i}].api_key_id: no API key {} exists (create one with POST /api-keys and name its id)",
                        entry.api_key_id
                    )
                })?;
            if !entry.is_loopback() {
                tracing::info!(network = %entry.network, "trusted for submission without AUTH, except on mx listeners");
            }
            entries.push((*entry, team));
        }
        Ok(Trusted { entries })
    }

    /// Whether any network is trusted at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The caller a client at `ip` submits as without AUTH on a listener (`mx` or not), if
    /// its network is trusted there and its key still exists.
    pub fn caller(&self, services: &Services, ip: IpAddr, mx: bool) -> Option<Caller> {
        let ip = ip.to_canonical();
        let (entry, team) = self
            .entries
            .iter()
            .find(|(entry, _)| entry.network.contains(&ip) && (!mx || entry.is_loopback()))?;
        match services.caller_for_key(*team, entry.api_key_id) {
            Ok(Some(caller)) => Some(caller),
            Ok(None) => {
                tracing::warn!(network = %entry.network, key = %entry.api_key_id, "the trusted network's API key is gone: its clients must AUTH");
                None
            }
            Err(error) => {
                tracing::error!(%error, "cannot read a trusted network's API key: its clients must AUTH");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn network(text: &str) -> TrustedNetwork {
        TrustedNetwork {
            network: text.parse().expect("cidr"),
            api_key_id: Id::from_bytes([0; 16]),
        }
    }

    #[test]
    fn only_loopback_networks_count_on_mx_listeners() {
        assert!(network("127.0.0.1/32").is_loopback());
        assert!(network("127.0.0.0/8").is_loopback());
        assert!(network("::1/128").is_loopback());
        assert!(!network("10.0.0.0/8").is_loopback());
        assert!(!network("0.0.0.0/8").is_loopback());
        assert!(!network("::/16").is_loopback());
    }
}
