//! User variables are replayable state: after a statement assigns them, Tessera reads their
//! exact value, type and collation on the same connection and keeps a literal that recreates
//! them on any other connection (no pinning, unlike peers that stop sharing for good).

use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::state::quote_ident;
use tessera_protocol::resultset::*;

/// Reads the named user variables on `conn`; returns (name, SQL literal) pairs.
pub async fn capture(conn: &mut BackendConn, names: &[String]) -> Result<Vec<(String, String)>, ProxyError> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let select: Vec<String> = names
        .iter()
        .map(|n| {
            let v = format!("@{}", quote_ident(n));
            format!("{v}, HEX({v}), COLLATION({v})")
        })
        .collect();
    let (columns, rows) = conn.query_rows(&format!("SELECT {}", select.join(", "))).await?;
    let row = rows.into_iter().next().unwrap_or_default();
    let mut out = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let at = i * 3;
        let (Some(col), Some(value)) = (columns.get(at), row.get(at)) else {
            break;
        };
        let hex = row.get(at + 1).cloned().flatten();
        let collation = row.get(at + 2).cloned().flatten();
        out.push((
            name.clone(),
            literal(col.column_type, value.as_deref(), hex.as_deref(), collation.as_deref()),
        ));
    }
    Ok(out)
}

/// The SQL literal that recreates a user variable with this type and value.
pub fn literal(column_type: u8, value: Option<&[u8]>, hex: Option<&[u8]>, collation: Option<&[u8]>) -> String {
    let Some(value) = value else {
        return "NULL".into();
    };
    let text = String::from_utf8_lossy(value);
    match column_type {
        TYPE_TINY | TYPE_SHORT | TYPE_LONG | TYPE_LONGLONG | TYPE_INT24 | TYPE_DECIMAL | TYPE_NEWDECIMAL => {
            text.into_owned()
        }
        TYPE_FLOAT | TYPE_DOUBLE if text.contains(['e', 'E']) => text.into_owned(),
        TYPE_FLOAT | TYPE_DOUBLE => format!("{text}e0"),
        _ => string_literal(hex.unwrap_or_default(), collation.unwrap_or(b"binary")),
    }
}

fn string_literal(hex: &[u8], collation: &[u8]) -> String {
    let hex = String::from_utf8_lossy(hex);
    let collation = String::from_utf8_lossy(collation);
    if collation == "binary" {
        return format!("_binary X'{hex}'");
    }
    let charset = collation.split('_').next().unwrap_or("binary");
    format!("_{charset} X'{hex}' COLLATE {collation}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_keep_type_and_collation() {
        assert_eq!(literal(TYPE_LONGLONG, Some(b"-5"), Some(b"-5"), Some(b"binary")), "-5");
        assert_eq!(literal(TYPE_NEWDECIMAL, Some(b"1.50"), None, None), "1.50");
        assert_eq!(literal(TYPE_DOUBLE, Some(b"1.5"), None, None), "1.5e0");
        assert_eq!(literal(TYPE_DOUBLE, Some(b"1e20"), None, None), "1e20");
        assert_eq!(literal(TYPE_NULL, None, None, None), "NULL");
        assert_eq!(
            literal(
                TYPE_VAR_STRING,
                Some(b"h\xc3\xa9"),
                Some(b"68C3A9"),
                Some(b"utf8mb4_general_ci")
            ),
            "_utf8mb4 X'68C3A9' COLLATE utf8mb4_general_ci"
        );
        assert_eq!(
            literal(TYPE_LONG_BLOB, Some(b"\0"), Some(b"00"), Some(b"binary")),
            "_binary X'00'"
        );
    }
}
