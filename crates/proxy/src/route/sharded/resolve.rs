//! A scatter's merge resolved against the columns the shards described: hidden columns after
//! the visible ones, collation weights for non-binary strings, AVG's scale and type.

use super::{Col, Scatter};
use crate::error::ProxyError;
use crate::exec::merge::HIDDEN_BASE;
use crate::exec::merge::{MergeSpec, Output, SortBy, SortKey};
use tessera_protocol::resultset::ColumnDefinition;

/// The plan's merge with its column references resolved now that the shards described their
/// columns: hidden columns after the visible ones, collation weights for non-binary strings,
/// AVG's scale and type from its column.
pub fn resolve_merge(
    s: &Scatter,
    columns: &[ColumnDefinition],
    group_concat_max_len: usize,
) -> Result<MergeSpec, ProxyError> {
    let visible = columns
        .len()
        .checked_sub(s.hidden)
        .ok_or_else(|| ProxyError::Unsupported("Tessera: shards answered fewer columns than planned".into()))?;
    let fix = |i: usize| {
        if i >= HIDDEN_BASE {
            visible + (i - HIDDEN_BASE)
        } else {
            i
        }
    };
    let col = |c: Col| match c {
        Col::Visible(i) => i,
        Col::Hidden(i) => visible + i,
    };
    let weights: Vec<(usize, usize)> = s
        .weighted
        .iter()
        .map(|w| (col(w.value), col(w.weight)))
        .filter(|(v, _)| columns.get(*v).is_some_and(is_collated_string))
        .collect();
    let key = |k: &SortKey| -> SortKey {
        let column = fix(k.column);
        let by = match weights.iter().find(|(v, _)| *v == column) {
            Some((_, w)) if matches!(k.by, SortBy::Value) => SortBy::Weight(*w),
            _ => k.by,
        };
        SortKey {
            column,
            descending: k.descending,
            by,
        }
    };
    let mut spec = s.merge.clone();
    spec.visible = visible;
    spec.order = spec.order.iter().map(key).collect();
    if let Some(a) = spec.aggregate.as_mut() {
        a.group_by = a.group_by.iter().map(key).collect();
        for (i, o) in a.outputs.iter_mut().enumerate() {
            *o = match o.clone() {
                Output::First(c) => Output::First(fix(c)),
                Output::Expr(o) => Output::Expr(o),
                Output::Count(c) => Output::Count(fix(c)),
                Output::Sum(c) => Output::Sum(fix(c)),
                Output::Min(k) => Output::Min(key(&k)),
                Output::Max(k) => Output::Max(key(&k)),
                Output::Avg { sum, count, .. } => {
                    let def = columns.get(i);
                    Output::Avg {
                        sum: fix(sum),
                        count: fix(count),
                        scale: def.map_or(4, |d| d.decimals as u32),
                        double: def.is_some_and(|d| is_floating(d.column_type)),
                    }
                }
                Output::CountDistinct { column } => Output::CountDistinct { column: key(&column) },
                Output::SumDistinct { column, .. } => {
                    let k = key(&column);
                    let value = k.column;
                    Output::SumDistinct { column: k, value }
                }
                Output::AvgDistinct { column, .. } => {
                    let k = key(&column);
                    let def = columns.get(i);
                    Output::AvgDistinct {
                        value: k.column,
                        column: k,
                        scale: def.map_or(4, |d| d.decimals as u32),
                        double: def.is_some_and(|d| is_floating(d.column_type)),
                    }
                }
                Output::GroupConcat {
                    value,
                    separator,
                    order,
                    distinct,
                    repeat,
                    ..
                } => {
                    let def = columns.get(i);
                    let value = fix(value);
                    Output::GroupConcat {
                        value,
                        separator,
                        max_len: group_concat_max_len,
                        order: order.iter().map(key).collect(),
                        // DISTINCT compares the collation weight of a string value.
                        distinct: distinct.map(|_| match weights.iter().find(|(v, _)| *v == value) {
                            Some((_, w)) => SortBy::Weight(*w),
                            None => SortBy::Value,
                        }),
                        utf8: def.is_some_and(|d| d.charset != 63),
                        repeat: repeat.map(fix),
                    }
                }
            };
        }
    }
    weigh_final_order(&mut spec, &weights);
    Ok(spec)
}

/// A final ORDER BY on a grouped string column compares its collation weight: the weight
/// column joins the outputs (hidden) and the key compares it.
fn weigh_final_order(spec: &mut MergeSpec, weights: &[(usize, usize)]) {
    let Some(agg) = spec.aggregate.as_mut() else {
        return;
    };
    for k in spec.final_order.iter_mut() {
        // The output that holds the key's collation weight: the group column's weight, or
        // MIN/MAX over the weights (the weight of the MIN/MAX value).
        let weight_output = match agg.outputs.get(k.column) {
            Some(Output::First(c)) => weights.iter().find(|(v, _)| v == c).map(|(_, w)| Output::First(*w)),
            Some(Output::Min(m)) => weight_of(m, weights).map(|w| Output::Min(SortKey::asc(w))),
            Some(Output::Max(m)) => weight_of(m, weights).map(|w| Output::Max(SortKey::asc(w))),
            _ => None,
        };
        let Some(wanted) = weight_output else {
            continue;
        };
        let out = match agg.outputs.iter().position(|o| *o == wanted) {
            Some(i) => i,
            None => {
                agg.outputs.push(wanted);
                agg.outputs.len() - 1
            }
        };
        k.by = SortBy::Weight(out);
    }
}

/// The weight column of a MIN/MAX key over a collated string.
fn weight_of(k: &SortKey, weights: &[(usize, usize)]) -> Option<usize> {
    weights.iter().find(|(v, _)| *v == k.column).map(|(_, w)| *w)
}

fn is_floating(t: u8) -> bool {
    matches!(t, 4 | 5)
}

/// A string column whose collation is not binary (63): ordered by weight.
fn is_collated_string(c: &ColumnDefinition) -> bool {
    matches!(c.column_type, 15 | 253 | 254 | 249 | 250 | 251 | 252) && c.charset != 63
}
