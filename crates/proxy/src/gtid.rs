//! MariaDB GTIDs (`domain-server-sequence`) and positions (one GTID per domain, comma separated),
//! for read-your-writes: has a replica applied the session's last write?

/// One MariaDB GTID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gtid {
    pub domain: u32,
    pub server: u32,
    pub sequence: u64,
}

impl Gtid {
    /// Parses `0-1-42`; None for anything else (including an empty string).
    pub fn parse(text: &str) -> Option<Gtid> {
        let mut parts = text.trim().splitn(3, '-');
        let domain = parts.next()?.parse().ok()?;
        let server = parts.next()?.parse().ok()?;
        let sequence = parts.next()?.parse().ok()?;
        Some(Gtid {
            domain,
            server,
            sequence,
        })
    }
}

impl std::fmt::Display for Gtid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}-{}", self.domain, self.server, self.sequence)
    }
}

/// The GTID of a write, as MariaDB reports it through session tracking (`last_gtid`).
pub fn written_gtid(changes: &[tessera_protocol::response::SessionChange]) -> Option<Gtid> {
    use tessera_protocol::response::SessionChange;
    changes.iter().rev().find_map(|c| match c {
        SessionChange::SystemVariable { name, value } if name.eq_ignore_ascii_case("last_gtid") => Gtid::parse(value),
        _ => None,
    })
}

/// The newest GTID a group's primary reported for a write Tessera acknowledged to a client
/// (any client of this process): what a `global` read must find applied. Recorded before the
/// client can see its OK packet. One domain: a newer domain's GTID replaces an older one's.
#[derive(Debug, Default)]
pub struct NewestGtid(std::sync::Mutex<Option<Gtid>>);

impl NewestGtid {
    /// Records `gtid` if it is newer than what is known (same domain: higher sequence).
    pub fn note(&self, gtid: Gtid) {
        if let Ok(mut newest) = self.0.lock() {
            let newer = newest.is_none_or(|n| n.domain != gtid.domain || n.sequence < gtid.sequence);
            if newer {
                *newest = Some(gtid);
            }
        }
    }

    pub fn get(&self) -> Option<Gtid> {
        self.0.lock().ok().and_then(|n| *n)
    }
}

/// A replication position: the last GTID applied in each domain.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GtidPosition {
    last: Vec<Gtid>,
}

impl GtidPosition {
    /// Parses `0-1-42,1-2-7` (as `@@gtid_slave_pos` / `@@gtid_current_pos` show it). Entries
    /// that do not parse are skipped; an empty string is the empty position.
    pub fn parse(text: &str) -> GtidPosition {
        GtidPosition {
            last: text.split(',').filter_map(Gtid::parse).collect(),
        }
    }

    /// Whether this position includes `gtid`: same domain, sequence at least as high.
    pub fn includes(&self, gtid: &Gtid) -> bool {
        self.last
            .iter()
            .any(|g| g.domain == gtid.domain && g.sequence >= gtid.sequence)
    }

    pub fn is_empty(&self) -> bool {
        self.last.is_empty()
    }

    /// Records that `gtid` is applied (a replica confirmed it): its domain moves forward to it.
    pub fn advance(&mut self, gtid: Gtid) {
        match self.last.iter_mut().find(|g| g.domain == gtid.domain) {
            Some(g) if g.sequence < gtid.sequence => *g = gtid,
            Some(_) => {}
            None => self.last.push(gtid),
        }
    }
}

impl std::fmt::Display for GtidPosition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, g) in self.last.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{g}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gtids_parse() {
        assert_eq!(
            Gtid::parse("0-1-42"),
            Some(Gtid {
                domain: 0,
                server: 1,
                sequence: 42
            })
        );
        for bad in ["", "0-1", "a-b-c", "0-1-x", "-1-1-1"] {
            assert_eq!(Gtid::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn positions_include_gtids_of_their_domains_up_to_their_sequence() {
        let pos = GtidPosition::parse("0-1-42,5-2-7");
        assert!(pos.includes(&Gtid::parse("0-1-42").unwrap()));
        assert!(
            pos.includes(&Gtid::parse("0-3-41").unwrap()),
            "server id does not matter"
        );
        assert!(!pos.includes(&Gtid::parse("0-1-43").unwrap()));
        assert!(pos.includes(&Gtid::parse("5-2-1").unwrap()));
        assert!(!pos.includes(&Gtid::parse("9-1-1").unwrap()), "unknown domain");
        assert!(GtidPosition::parse("").is_empty());
        assert_eq!(pos.to_string(), "0-1-42,5-2-7");
    }

    #[test]
    fn positions_advance_and_newest_gtids_only_move_forward() {
        let mut pos = GtidPosition::parse("0-1-42");
        pos.advance(Gtid::parse("0-1-50").unwrap());
        pos.advance(Gtid::parse("0-1-45").unwrap());
        pos.advance(Gtid::parse("3-1-1").unwrap());
        assert_eq!(pos.to_string(), "0-1-50,3-1-1");
        let newest = NewestGtid::default();
        assert_eq!(newest.get(), None);
        newest.note(Gtid::parse("0-1-9").unwrap());
        newest.note(Gtid::parse("0-1-7").unwrap());
        assert_eq!(newest.get(), Gtid::parse("0-1-9"));
    }
}
