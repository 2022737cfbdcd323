//! Tessera's commit counters from its admin `/metrics` (Prometheus text): how many transactions
//! on sharded schemas committed in one phase and how many needed XA two-phase commit.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The counter Tessera exposes, labelled `protocol="one_phase"` or `protocol="two_phase"`.
pub const COMMITS_METRIC: &str = "tessera_commits_total";
const TIMEOUT: Duration = Duration::from_secs(5);

/// Commits counted by one scrape.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CommitCounts {
    pub one_phase: f64,
    pub two_phase: f64,
}

/// What a run's two scrapes say: commits in between and the XA share.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct XaShare {
    pub one_phase: f64,
    pub two_phase: f64,
}

impl XaShare {
    /// Δtwo_phase / (Δone_phase + Δtwo_phase); None without commits.
    pub fn fraction(&self) -> Option<f64> {
        let total = self.one_phase + self.two_phase;
        (total > 0.0).then(|| self.two_phase / total)
    }
}

/// The commit counters of a `/metrics` text; None when either is absent (a Tessera without
/// them: "not reported").
pub fn parse_commits(text: &str) -> Option<CommitCounts> {
    let (mut one, mut two) = (None, None);
    for line in text.lines().map(str::trim) {
        let Some(rest) = line.strip_prefix(COMMITS_METRIC) else {
            continue;
        };
        let Some((labels, value)) = rest.strip_prefix('{').and_then(|r| r.split_once('}')) else {
            continue;
        };
        let Some(value) = value.split_whitespace().next().and_then(|v| v.parse::<f64>().ok()) else {
            continue;
        };
        match label(labels, "protocol") {
            Some("one_phase") => one = Some(value),
            Some("two_phase") => two = Some(value),
            _ => {}
        }
    }
    Some(CommitCounts {
        one_phase: one?,
        two_phase: two?,
    })
}

/// The value of `name` in `a="x",b="y"`.
fn label<'a>(labels: &'a str, name: &str) -> Option<&'a str> {
    labels.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k.trim() == name).then(|| v.trim().trim_matches('"'))
    })
}

/// The commits between two scrapes; None when either lacks the counters.
pub fn xa_share(before: Option<CommitCounts>, after: Option<CommitCounts>) -> Option<XaShare> {
    let (b, a) = (before?, after?);
    Some(XaShare {
        one_phase: (a.one_phase - b.one_phase).max(0.0),
        two_phase: (a.two_phase - b.two_phase).max(0.0),
    })
}

/// GET `http://<admin>/metrics`; None when Tessera does not answer (treated as "not reported").
pub fn scrape(admin: &str) -> Option<String> {
    let addr = admin.parse().ok()?;
    let mut tcp = TcpStream::connect_timeout(&addr, TIMEOUT).ok()?;
    tcp.set_read_timeout(Some(TIMEOUT)).ok()?;
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {admin}\r\nConnection: close\r\n\r\n");
    tcp.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    tcp.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

/// The commit counters Tessera at `admin` reports now.
pub fn scrape_commits(admin: &str) -> Option<CommitCounts> {
    parse_commits(&scrape(admin)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# HELP tessera_connections_active Client connections open now.
# TYPE tessera_connections_active gauge
tessera_connections_active 17
# HELP tessera_commits_total Transactions on sharded schemas committed, by protocol.
# TYPE tessera_commits_total counter
tessera_commits_total{protocol=\"one_phase\"} 9120
tessera_commits_total{protocol=\"two_phase\"} 880
tessera_commits_total_other{protocol=\"two_phase\"} 5
";

    #[test]
    fn parses_both_commit_counters() {
        let c = parse_commits(SAMPLE).unwrap();
        assert_eq!((c.one_phase, c.two_phase), (9120.0, 880.0));
    }

    #[test]
    fn absent_counters_are_not_reported() {
        assert_eq!(parse_commits("tessera_connections_active 17\n"), None);
        let only_one = SAMPLE.replace("tessera_commits_total{protocol=\"two_phase\"} 880", "");
        assert_eq!(parse_commits(&only_one), None);
        assert_eq!(xa_share(None, parse_commits(SAMPLE)), None);
        assert_eq!(scrape("not an address"), None);
    }

    #[test]
    fn share_is_the_two_phase_delta_over_all_commits() {
        let before = parse_commits(SAMPLE);
        let after = parse_commits(&SAMPLE.replace("} 9120", "} 18120").replace("} 880", "} 1880"));
        let share = xa_share(before, after).unwrap();
        assert_eq!((share.one_phase, share.two_phase), (9000.0, 1000.0));
        assert_eq!(share.fraction(), Some(0.1));
        let idle = xa_share(before, before).unwrap();
        assert_eq!(idle.fraction(), None);
    }
}
