//! Where a destination's mail goes: its MX hosts in preference order (random among
//! equals), the domain itself when it has no MX, nowhere for a null MX (RFC 7505), or the
//! configured smarthost.

use std::net::{IpAddr, SocketAddr};

use rand::seq::SliceRandom;

use super::reply::Reply;
use crate::config::Relay;
use crate::dns::{Dns, Lookup};

/// The hosts to try, in order, and the port to connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Host names, most preferred first.
    pub hosts: Vec<String>,
    /// The port.
    pub port: u16,
}

/// Why there is no route: permanent (bounce) or temporary (retry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoRoute {
    /// The domain accepts no mail, or does not exist.
    Permanent(Reply),
    /// DNS could not answer now.
    Temporary(Reply),
}

/// The route to `domain`: the smarthost `relay` when there is one, else its MX hosts on
/// `mx_port`.
pub async fn resolve(dns: &Dns, relay: Option<&Relay>, mx_port: u16, domain: &str) -> Result<Route, NoRoute> {
    if let Some(relay) = relay {
        return Ok(Route {
            hosts: vec![relay.host.clone()],
            port: relay.port,
        });
    }
    let hosts = match dns.mx(domain).await {
        Lookup::Found(records) => {
            if records
                .iter()
                .any(|(_, exchange)| exchange.is_empty() || exchange == ".")
            {
                return Err(NoRoute::Permanent(Reply::local(
                    556,
                    "5.1.10",
                    &format!("{domain} publishes a null MX: it accepts no mail"),
                )));
            }
            order(records)
        }
        Lookup::NotFound => vec![domain.to_owned()],
        Lookup::TemporaryFailure(why) => {
            return Err(NoRoute::Temporary(Reply::local(
                451,
                "4.4.3",
                &format!("MX lookup for {domain} failed: {why}"),
            )));
        }
    };
    Ok(Route { hosts, port: mx_port })
}

/// The addresses of `host`, or why there are none.
pub async fn addresses(dns: &Dns, host: &str, port: u16) -> Result<Vec<SocketAddr>, NoRoute> {
    if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    match dns.ips(host).await {
        Lookup::Found(ips) => Ok(ips.into_iter().map(|ip| SocketAddr::new(ip, port)).collect()),
        Lookup::NotFound => Err(NoRoute::Permanent(Reply::local(
            550,
            "5.1.2",
            &format!("{host} has no address records"),
        ))),
        Lookup::TemporaryFailure(why) => Err(NoRoute::Temporary(Reply::local(
            451,
            "4.4.3",
            &format!("address lookup for {host} failed: {why}"),
        ))),
    }
}

/// MX exchanges by preference, shuffled among equal preferences.
fn order(mut records: Vec<(u16, String)>) -> Vec<String> {
    let mut rng = rand::rng();
    records.shuffle(&mut rng);
    records.sort_by_key(|(preference, _)| *preference);
    let mut hosts: Vec<String> = Vec::with_capacity(records.len());
    for (_, host) in records {
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preference_orders_and_equals_are_all_kept() {
        for _ in 0..20 {
            let hosts = order(vec![
                (20, "c".into()),
                (10, "a".into()),
                (10, "b".into()),
                (30, "a".into()),
            ]);
            assert_eq!(hosts.len(), 3);
            assert_eq!(hosts[2], "c");
            assert!(hosts[..2].contains(&"a".to_owned()) && hosts[..2].contains(&"b".to_owned()));
        }
    }
}
