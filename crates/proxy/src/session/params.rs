//! Bound parameters of COM_STMT_EXECUTE, decoded: as shard-key values (to route) and as SQL
//! literals (to inline when a sharded execution runs as text on several shards).

use crate::route::shard_fn::KeyValue;
use std::collections::BTreeMap;
use tessera_protocol::codec::Reader;

/// One decoded parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub key: KeyValue,
    /// The value as a SQL literal.
    pub literal: String,
}

impl Param {
    /// The literal as a server with or without backslash escapes reads it (a string's
    /// backslashes are doubled in `literal`, which is for the default mode).
    fn literal_for(&self, backslash_escapes: bool) -> std::borrow::Cow<'_, str> {
        match &self.key {
            KeyValue::Str(s) if !backslash_escapes && self.literal.contains('\\') => {
                std::borrow::Cow::Owned(crate::state::quote_string_as(s, false))
            }
            _ => std::borrow::Cow::Borrowed(&self.literal),
        }
    }
}

/// Decodes every parameter; None when the packet does not hold them as announced.
pub fn decode(
    null_bitmap: &[u8],
    types: &[u8],
    values: &[u8],
    long_data: &BTreeMap<u16, Vec<bytes::Bytes>>,
) -> Option<Vec<Param>> {
    let n = types.len() / 2;
    let mut r = Reader::new(values);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if null_bitmap.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0) {
            out.push(Param {
                key: KeyValue::Null,
                literal: "NULL".into(),
            });
            continue;
        }
        if let Some(chunks) = long_data.get(&(i as u16)) {
            let bytes: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
            out.push(bytes_param(&bytes));
            continue;
        }
        let unsigned = types[2 * i + 1] & 0x80 != 0;
        out.push(one(&mut r, types[2 * i], unsigned)?);
    }
    Some(out)
}

fn int_param(v: i128) -> Param {
    Param {
        key: KeyValue::Int(v),
        literal: v.to_string(),
    }
}

fn int(r: &mut Reader, n: usize, unsigned: bool) -> Option<Param> {
    let bytes = r.take(n).ok()?;
    let mut buf = [0u8; 8];
    buf[..n].copy_from_slice(bytes);
    let raw = u64::from_le_bytes(buf);
    let shift = 64 - 8 * n as u32;
    let v = if unsigned {
        raw as i128
    } else {
        (((raw << shift) as i64) >> shift) as i128
    };
    Some(int_param(v))
}

fn one(r: &mut Reader, kind: u8, unsigned: bool) -> Option<Param> {
    match kind {
        0x06 => Some(Param {
            key: KeyValue::Null,
            literal: "NULL".into(),
        }),
        0x01 => int(r, 1, unsigned),
        0x02 | 0x0d => int(r, 2, unsigned),
        0x03 | 0x09 => int(r, 4, unsigned),
        0x08 => int(r, 8, unsigned),
        0x04 => {
            let f = f32::from_le_bytes(r.take(4).ok()?.try_into().ok()?);
            Some(float_param(f64::from(f), format!("{f:e}")))
        }
        0x05 => {
            let f = f64::from_le_bytes(r.take(8).ok()?.try_into().ok()?);
            Some(float_param(f, format!("{f:e}")))
        }
        0x0a | 0x07 | 0x0c => temporal(r, false),
        0x0b => temporal(r, true),
        // DECIMAL / NEWDECIMAL: an exact number, inlined as one (not as a string).
        0x00 | 0xf6 => {
            let text = std::str::from_utf8(r.lenenc_bytes().ok()?).ok()?.trim().to_string();
            let numeric = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
            Some(match (numeric, text.parse::<i128>()) {
                (true, Ok(i)) => Param {
                    key: KeyValue::Int(i),
                    literal: text,
                },
                (true, Err(_)) => Param {
                    key: KeyValue::Decimal(text.clone()),
                    literal: text,
                },
                (false, _) => bytes_param(text.as_bytes()),
            })
        }
        _ => Some(bytes_param(r.lenenc_bytes().ok()?)),
    }
}

fn float_param(f: f64, literal: String) -> Param {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        return Param {
            key: KeyValue::Int(f as i128),
            literal,
        };
    }
    Param {
        key: KeyValue::Float(f),
        literal,
    }
}

fn bytes_param(b: &[u8]) -> Param {
    match std::str::from_utf8(b) {
        Ok(s) => Param {
            key: KeyValue::Str(s.to_string()),
            literal: crate::state::quote_string(s),
        },
        Err(_) => {
            let hex: String = b.iter().map(|x| format!("{x:02X}")).collect();
            Param {
                key: KeyValue::Bytes(b.to_vec()),
                literal: format!("X'{hex}'"),
            }
        }
    }
}

/// DATE/DATETIME/TIMESTAMP (`time` false) or TIME values in their binary form.
fn temporal(r: &mut Reader, time: bool) -> Option<Param> {
    let len = r.u8().ok()? as usize;
    let b = r.take(len).ok()?;
    let text = if time {
        let (neg, days, h, m, s) = match len {
            0 => (false, 0u32, 0u8, 0u8, 0u8),
            _ => (
                b[0] == 1,
                u32::from_le_bytes(b.get(1..5)?.try_into().ok()?),
                b[5],
                b[6],
                b[7],
            ),
        };
        let us = if len >= 12 {
            u32::from_le_bytes(b.get(8..12)?.try_into().ok()?)
        } else {
            0
        };
        let hours = days * 24 + u32::from(h);
        format!("{}{hours:02}:{m:02}:{s:02}.{us:06}", if neg { "-" } else { "" })
    } else {
        let year = if len >= 2 { u16::from_le_bytes([b[0], b[1]]) } else { 0 };
        let (mo, d) = if len >= 4 { (b[2], b[3]) } else { (0, 0) };
        let (h, mi, s) = if len >= 7 { (b[4], b[5], b[6]) } else { (0, 0, 0) };
        let us = if len >= 11 {
            u32::from_le_bytes(b.get(7..11)?.try_into().ok()?)
        } else {
            0
        };
        if len <= 4 {
            format!("{year:04}-{mo:02}-{d:02}")
        } else {
            format!("{year:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{us:06}")
        }
    };
    Some(Param {
        literal: format!("'{text}'"),
        key: KeyValue::Str(text),
    })
}

/// `sql` with its `?` placeholders replaced by the parameters' literals.
pub fn inline(sql: &str, params: &[Param], backslash_escapes: bool) -> String {
    let mut out = String::with_capacity(sql.len() + 16 * params.len());
    let mut pos = 0;
    let mut next = params.iter();
    for t in tessera_sql::Lexer::with_backslash_escapes(sql, backslash_escapes) {
        if t.kind == tessera_sql::TokenKind::Placeholder {
            out.push_str(&sql[pos..t.offset]);
            match next.next() {
                Some(p) => out.push_str(&p.literal_for(backslash_escapes)),
                None => out.push_str("NULL"),
            }
            pos = t.end();
        }
    }
    out.push_str(&sql[pos..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_decode_to_keys_and_literals() {
        // LONGLONG 42, VAR_STRING 'a''b', NULL, DOUBLE 2.0
        let types = [0x08, 0, 0xfd, 0, 0x08, 0, 0x05, 0];
        let mut values = 42i64.to_le_bytes().to_vec();
        values.extend_from_slice(&[3, b'a', b'\'', b'b']);
        values.extend_from_slice(&2.0f64.to_le_bytes());
        let p = decode(&[0b0100], &types, &values, &BTreeMap::new()).unwrap();
        assert_eq!(p[0].key, KeyValue::Int(42));
        assert_eq!(p[1].key, KeyValue::Str("a'b".into()));
        assert_eq!(p[2].literal, "NULL");
        assert_eq!(p[3].key, KeyValue::Int(2));
        assert_eq!(
            inline("SELECT ?, ?, ?, ? FROM t", &p[..3], true),
            format!("SELECT 42, {}, NULL, NULL FROM t", p[1].literal)
        );
    }

    #[test]
    fn string_literals_follow_backslash_escapes() {
        // VAR_STRING a\b: doubled where backslashes escape, as it is under NO_BACKSLASH_ESCAPES.
        let p = decode(&[0], &[0xfd, 0], &[3, b'a', b'\\', b'b'], &BTreeMap::new()).unwrap();
        assert_eq!(inline("SELECT ?", &p, true), r"SELECT 'a\\b'");
        assert_eq!(inline("SELECT ?", &p, false), r"SELECT 'a\b'");
    }

    #[test]
    fn placeholders_after_a_string_ending_in_a_backslash_are_inlined_by_the_mode() {
        let p = decode(&[0], &[0x08, 0], &7i64.to_le_bytes(), &BTreeMap::new()).unwrap();
        // Under NO_BACKSLASH_ESCAPES 'a\' ends at its second quote, so the ? after it is a placeholder.
        assert_eq!(inline(r"SELECT 'a\', ?", &p, false), r"SELECT 'a\', 7");
        // With escapes the quote is escaped and the ? is inside the string.
        assert_eq!(inline(r"SELECT 'a\', ?", &p, true), r"SELECT 'a\', ?");
    }
}
