//! Collation ids sent in handshakes, mapped to the character set and collation names that
//! `SET NAMES` needs when a client's connection charset must be replayed on a backend.

/// (character set, collation) for a handshake collation id; unknown ids map to utf8mb4, as
/// MariaDB does for ids it does not know (e.g. MySQL 8's 255).
pub fn collation_by_id(id: u8) -> (&'static str, &'static str) {
    match id {
        8 => ("latin1", "latin1_swedish_ci"),
        11 => ("ascii", "ascii_general_ci"),
        28 => ("gbk", "gbk_chinese_ci"),
        33 => ("utf8mb3", "utf8mb3_general_ci"),
        45 => ("utf8mb4", "utf8mb4_general_ci"),
        46 => ("utf8mb4", "utf8mb4_bin"),
        47 => ("latin1", "latin1_bin"),
        48 => ("latin1", "latin1_general_ci"),
        63 => ("binary", "binary"),
        83 => ("utf8mb3", "utf8mb3_bin"),
        192 => ("utf8mb3", "utf8mb3_unicode_ci"),
        224 => ("utf8mb4", "utf8mb4_unicode_ci"),
        _ => ("utf8mb4", "utf8mb4_general_ci"),
    }
}

/// The collation id Tessera uses on its backend connections (utf8mb4_general_ci).
pub const BACKEND_COLLATION_ID: u8 = 45;

/// Variables a handshake charset sets, with the values for `id`.
pub fn handshake_variables(id: u8) -> [(&'static str, &'static str); 4] {
    let (cs, coll) = collation_by_id(id);
    [
        ("character_set_client", cs),
        ("character_set_connection", cs),
        ("character_set_results", cs),
        ("collation_connection", coll),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_unknown_ids() {
        assert_eq!(collation_by_id(33).0, "utf8mb3");
        assert_eq!(collation_by_id(255), ("utf8mb4", "utf8mb4_general_ci"));
        assert_eq!(handshake_variables(8)[3], ("collation_connection", "latin1_swedish_ci"));
    }
}
