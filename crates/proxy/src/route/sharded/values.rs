//! Shard-key values at execution: the current statement's literals (read from its text at the
//! places its fingerprint found them) and the bound parameters of a prepared statement.

use super::keys::ValueSource;
use super::PlanError;
use crate::route::shard_fn::KeyValue;
use std::ops::Range;

/// The values one execution supplies.
pub struct Values<'a> {
    pub sql: &'a str,
    pub literals: &'a [Range<usize>],
    pub params: &'a [KeyValue],
    /// How the session reads `sql`'s strings (false: `NO_BACKSLASH_ESCAPES`).
    pub backslash_escapes: bool,
}

impl Values<'_> {
    pub fn get(&self, source: &ValueSource) -> Result<KeyValue, PlanError> {
        match source {
            ValueSource::Null => Ok(KeyValue::Null),
            ValueSource::Param(i) => self
                .params
                .get(*i)
                .cloned()
                .ok_or_else(|| PlanError::MissingValue(format!("parameter {} is not bound", i + 1))),
            ValueSource::Literal { index, negative } => {
                let text = self
                    .literals
                    .get(*index)
                    .and_then(|r| self.sql.get(r.clone()))
                    .ok_or_else(|| PlanError::MissingValue("a shard-key literal is missing".into()))?;
                Ok(literal_value(text, *negative, self.backslash_escapes))
            }
        }
    }
}

/// The key value of a literal as written: integers as integers, strings unquoted (with
/// backslash escapes or not, as the session reads them), other numbers as their text (the
/// shard function converts or refuses them).
pub fn literal_value(text: &str, negative: bool, backslash_escapes: bool) -> KeyValue {
    let first = text.as_bytes().first().copied().unwrap_or(b'0');
    if first == b'\'' || first == b'"' {
        return KeyValue::Str(tessera_sql::unquote_as(text, backslash_escapes).into_owned());
    }
    let signed = if negative { format!("-{text}") } else { text.to_string() };
    match signed.parse::<i128>() {
        Ok(i) => KeyValue::Int(i),
        Err(_) => KeyValue::Str(signed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_become_key_values() {
        assert_eq!(literal_value("42", false, true), KeyValue::Int(42));
        assert_eq!(literal_value("42", true, true), KeyValue::Int(-42));
        assert_eq!(literal_value("'42'", false, true), KeyValue::Str("42".into()));
        assert_eq!(literal_value("'it''s'", false, true), KeyValue::Str("it's".into()));
        assert_eq!(literal_value("4.5", false, true), KeyValue::Str("4.5".into()));
        assert_eq!(literal_value(r"'a\tb'", false, true), KeyValue::Str("a\tb".into()));
        assert_eq!(literal_value(r"'a\tb'", false, false), KeyValue::Str(r"a\tb".into()));
    }
}
