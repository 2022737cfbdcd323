//! Comparing rows on [`SortKey`]s: by value or by a weight column, ascending or descending,
//! and how keys read in EXPLAIN.

use super::spec::{SortBy, SortKey};
use super::HIDDEN_BASE;
use crate::exec::row::{compare, Value};
use std::cmp::Ordering;

static NULL: Value = Value::Null;

/// Column `i` of `row`; NULL past the end (the plan checks widths, so this is a safety net).
pub(crate) fn cell(row: &[Value], i: usize) -> &Value {
    row.get(i).unwrap_or(&NULL)
}

/// The value a key compares: the column itself or its weight.
pub(crate) fn key_value<'r>(row: &'r [Value], key: &SortKey) -> &'r Value {
    cell(row, key.compared_column())
}

/// Order of two rows on one key (direction applied: NULLs first ascending, last descending).
pub(crate) fn compare_key(a: &[Value], b: &[Value], key: &SortKey) -> Ordering {
    let o = compare(key_value(a, key), key_value(b, key));
    if key.descending {
        o.reverse()
    } else {
        o
    }
}

/// Order of two rows on all keys, the first difference deciding.
pub(crate) fn compare_rows(a: &[Value], b: &[Value], keys: &[SortKey]) -> Ordering {
    keys.iter()
        .map(|k| compare_key(a, b, k))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// True when the rows are equal on every key.
pub(crate) fn equal_on(a: &[Value], b: &[Value], keys: &[SortKey]) -> bool {
    keys.iter().all(|k| compare(key_value(a, k), key_value(b, k)).is_eq())
}

/// A column as EXPLAIN ROUTE names it: numbered from 1 as in SQL's ORDER BY 1; one Tessera
/// appends to the shards' select list (a plan's index from [`HIDDEN_BASE`] on, before the
/// shards describe theirs) `hN`, the N-th appended. Only column references are named so:
/// numbers that are no columns (byte limits, LIMIT, literals) are shown as they are.
pub(crate) fn column_label(column: usize) -> String {
    match column.checked_sub(HIDDEN_BASE) {
        Some(hidden) => format!("h{}", hidden + 1),
        None => (column + 1).to_string(),
    }
}

/// `(1 desc, weight of 2)`: columns named by [`column_label`].
pub(crate) fn describe_keys(keys: &[SortKey]) -> String {
    let parts: Vec<String> = keys.iter().map(describe_key).collect();
    format!("({})", parts.join(", "))
}

/// `2`, `2 desc`, `weight of 2`.
pub(crate) fn describe_key(k: &SortKey) -> String {
    let target = match k.by {
        SortBy::Value => column_label(k.column),
        SortBy::Weight(_) => format!("weight of {}", column_label(k.column)),
    };
    if k.descending {
        format!("{target} desc")
    } else {
        target
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn keys_compare_by_value_or_weight_with_direction() {
        let a = vec![
            Value::Int(1),
            Value::Bytes(Bytes::from_static(b"A")),
            Value::Bytes(Bytes::from_static(b"\x00\x41")),
        ];
        let b = vec![
            Value::Int(1),
            Value::Bytes(Bytes::from_static(b"a")),
            Value::Bytes(Bytes::from_static(b"\x00\x41")),
        ];
        let n = vec![Value::Null, Value::Null, Value::Null];
        assert!(compare_key(&a, &b, &SortKey::asc(1)).is_lt());
        assert!(compare_key(&a, &b, &SortKey::asc(1).by_weight(2)).is_eq());
        assert!(equal_on(&a, &b, &[SortKey::asc(0), SortKey::desc(1).by_weight(2)]));
        assert!(compare_rows(&n, &a, &[SortKey::asc(0)]).is_lt());
        assert!(compare_rows(&n, &a, &[SortKey::desc(0)]).is_gt());
        assert!(cell(&a, 9).is_null());
        assert_eq!(
            describe_keys(&[SortKey::desc(0), SortKey::asc(1).by_weight(5)]),
            "(1 desc, weight of 2)"
        );
    }
}
