//! Collation ids sent in handshakes, mapped to the character set and collation names that
//! `SET NAMES` needs when a client's connection charset must be replayed on a backend.

/// (character set, collation) for a handshake collation id, from MariaDB's own list. Ids it
/// does not know (e.g. MySQL 8's 255, utf8mb4_0900_ai_ci) and character sets a client cannot
/// use (ucs2, utf16, utf16le, utf32) map to utf8mb4.
pub fn collation_by_id(id: u8) -> (&'static str, &'static str) {
    const NOT_FOR_CLIENTS: [&str; 4] = ["ucs2", "utf16", "utf16le", "utf32"];
    match crate::collations::COLLATIONS.binary_search_by_key(&id, |&(i, _, _)| i) {
        Ok(at) if !NOT_FOR_CLIENTS.contains(&crate::collations::COLLATIONS[at].1) => {
            let (_, charset, collation) = crate::collations::COLLATIONS[at];
            (charset, collation)
        }
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
        assert_eq!(collation_by_id(224), ("utf8mb4", "utf8mb4_unicode_ci"));
        assert_eq!(collation_by_id(9), ("latin2", "latin2_general_ci"));
        assert_eq!(
            collation_by_id(35),
            ("utf8mb4", "utf8mb4_general_ci"),
            "ucs2 is not for clients"
        );
        assert!(
            crate::collations::COLLATIONS.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted"
        );
        assert_eq!(handshake_variables(8)[3], ("collation_connection", "latin1_swedish_ci"));
    }
}
