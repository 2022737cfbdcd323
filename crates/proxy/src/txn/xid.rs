//! XA transaction identifiers of Tessera's branches: which process and transaction a branch
//! belongs to, and which group holds its decision.
//!
//! gtrid: `tsr:<instance, 8 hex>:<sequence>@<coordinator group>`; bqual: the branch's shard
//! database (two branches of one transaction on one server differ by database); formatID
//! [`FORMAT_ID`]. `XA RECOVER` rows whose formatID and gtrid prefix match are Tessera's.

/// formatID of Tessera's XIDs ("ts").
pub const FORMAT_ID: u32 = 0x7473;
/// Every Tessera gtrid starts with this.
pub const PREFIX: &str = "tsr:";
/// MariaDB's limit on gtrid and bqual (bytes each).
pub const MAX_PART: usize = 64;

/// One branch's XID.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Xid {
    pub gtrid: String,
    pub bqual: String,
}

impl Xid {
    /// The XID as XA statements take it: `'gtrid','bqual',formatID`.
    pub fn sql(&self) -> String {
        format!("{},{},{FORMAT_ID}", literal(&self.gtrid), literal(&self.bqual))
    }

    /// Tessera's XID from one `XA RECOVER` row; None for anybody else's branch.
    pub fn from_recovered(format_id: u64, gtrid_len: usize, bqual_len: usize, data: &[u8]) -> Option<Xid> {
        if format_id != u64::from(FORMAT_ID) || data.len() < gtrid_len + bqual_len {
            return None;
        }
        let gtrid = std::str::from_utf8(&data[..gtrid_len]).ok()?;
        let bqual = std::str::from_utf8(&data[gtrid_len..gtrid_len + bqual_len]).ok()?;
        gtrid.starts_with(PREFIX).then(|| Xid {
            gtrid: gtrid.to_string(),
            bqual: bqual.to_string(),
        })
    }
}

/// A new transaction's gtrid; None when the group name makes it longer than MariaDB allows.
pub fn gtrid(instance: u32, sequence: u64, coordinator_group: &str) -> Option<String> {
    let g = format!("{PREFIX}{instance:08x}:{sequence}@{coordinator_group}");
    (g.len() <= MAX_PART).then_some(g)
}

/// The group whose decision log decides this gtrid.
pub fn coordinator_group(gtrid: &str) -> Option<&str> {
    gtrid.strip_prefix(PREFIX)?.split_once('@').map(|(_, g)| g)
}

/// The Tessera process (instance id) that started this gtrid.
pub fn instance_of(gtrid: &str) -> Option<u32> {
    let rest = gtrid.strip_prefix(PREFIX)?;
    u32::from_str_radix(rest.split(':').next()?, 16).ok()
}

/// A string literal for SQL (quotes and backslashes escaped).
pub fn literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gtrid_names_its_process_and_coordinator() {
        let g = gtrid(0xdead_beef, 42, "g1").expect("short enough");
        assert_eq!(g, "tsr:deadbeef:42@g1");
        assert_eq!(coordinator_group(&g), Some("g1"));
        assert_eq!(instance_of(&g), Some(0xdead_beef));
        assert!(gtrid(1, 1, &"x".repeat(60)).is_none());
    }

    #[test]
    fn recovered_rows_are_split_by_their_lengths() {
        let data = b"tsr:00000001:7@g0shop_1";
        let xid = Xid::from_recovered(29811, 17, 6, data).expect("ours");
        assert_eq!(xid.gtrid, "tsr:00000001:7@g0");
        assert_eq!(xid.bqual, "shop_1");
        assert_eq!(xid.sql(), "'tsr:00000001:7@g0','shop_1',29811");
        assert!(Xid::from_recovered(1, 17, 6, data).is_none(), "another formatID");
        assert!(Xid::from_recovered(29811, 3, 1, b"abcd").is_none(), "another prefix");
        assert!(
            Xid::from_recovered(29811, 30, 6, data).is_none(),
            "lengths beyond the data"
        );
    }

    #[test]
    fn literals_escape_quotes() {
        assert_eq!(literal("a'b\\c"), "'a''b\\\\c'");
    }
}
