//! `EXPLAIN ROUTE <statement>`: what Tessera would do with a statement, as rows: the plan and
//! why, the SQL each shard gets (group and database named), and the merge steps.

use super::values::Values;
use super::{ShardPlan, DATABASE_MARKER};
use crate::topology::ShardedSchema;
use tessera_sql::Fingerprint;

/// One row of EXPLAIN ROUTE: step, shard, group, database, detail.
pub type Row = [Option<String>; 5];

pub const COLUMNS: [&str; 5] = ["step", "shard", "group", "database", "detail"];

/// `EXPLAIN ROUTE ...` -> the statement after it.
pub fn explained_statement(sql: &str) -> Option<&str> {
    let trimmed = sql.trim_start();
    let mut words = trimmed.splitn(3, char::is_whitespace);
    let (a, b) = (words.next()?, words.next()?);
    if !(a.eq_ignore_ascii_case("EXPLAIN") && b.eq_ignore_ascii_case("ROUTE")) {
        return None;
    }
    Some(words.next().unwrap_or("").trim())
}

/// The rows for `plan` of `sql`, whose strings read with `backslash_escapes` or not.
pub fn rows(
    plan: &ShardPlan,
    schema: &ShardedSchema,
    group_names: &[String],
    sql: &str,
    fp: &Fingerprint,
    backslash_escapes: bool,
) -> Vec<Row> {
    let values = Values {
        sql,
        literals: &fp.literals,
        params: &[],
        backslash_escapes,
    };
    let mut out: Vec<Row> = Vec::new();
    let step = |s: &str, detail: String| -> Row { [Some(s.into()), None, None, None, Some(detail)] };
    let shard_row = |shard: usize, text: &str| -> Row {
        let s = &schema.shards[shard];
        let group = group_names
            .get(s.group)
            .cloned()
            .unwrap_or_else(|| format!("#{}", s.group));
        let quoted = crate::state::quote_ident(&s.database);
        [
            Some("query".into()),
            Some(shard.to_string()),
            Some(group),
            Some(s.database.clone()),
            Some(
                text.replace(DATABASE_MARKER, &quoted)
                    .replace(super::union::ONCE_MARKER, "<once>"),
            ),
        ]
    };
    match plan {
        ShardPlan::Reject(m) => out.push(step("refuse", format!("Tessera: {m} is not supported"))),
        ShardPlan::Read {
            shards,
            one,
            many,
            reason,
        } => match ShardPlan::resolve(shards, schema, &values) {
            Err(e) => out.push(step("error", e.detail())),
            Ok(list) if list.len() == 1 => {
                out.push(step(
                    "route",
                    format!("one shard ({reason}); the response passes through"),
                ));
                out.push(shard_row(list[0], &one.render(sql, &fp.literals)));
            }
            Ok(list) => match many {
                Err(m) => out.push(step(
                    "refuse",
                    format!(
                        "{} shards ({reason}): Tessera: {} is not supported",
                        list.len(),
                        m.detail()
                    ),
                )),
                Ok(s) => {
                    out.push(step("route", format!("scatter to {} shards ({reason})", list.len())));
                    let text = s.sql.render(sql, &fp.literals);
                    out.extend(list.iter().map(|&i| shard_row(i, &text)));
                    out.extend(
                        s.merge
                            .describe_shards(list.len())
                            .into_iter()
                            .map(|d| step("merge", d)),
                    );
                }
            },
        },
        ShardPlan::Write {
            shards,
            sql: t,
            reason,
            one_shard_only,
            ..
        } => match ShardPlan::resolve(shards, schema, &values) {
            Err(e) => out.push(step("error", e.detail())),
            Ok(list) => {
                if list.len() > 1 {
                    if let Some(m) = one_shard_only {
                        out.push(step("refuse", format!("Tessera: {m} is not supported")));
                        return out;
                    }
                }
                let how = if list.len() > 1 {
                    "atomically on every shard listed; affected rows summed"
                } else {
                    "one shard"
                };
                out.push(step("route", format!("write ({reason}): {how}")));
                let text = t.render(sql, &fp.literals);
                out.extend(list.iter().map(|&i| shard_row(i, &text)));
            }
        },
        ShardPlan::Insert(p) => {
            out.push(step(
                "route",
                format!("{}: rows grouped by shard, atomically", p.reason),
            ));
            let n = schema.shard_count();
            let mut by_shard: std::collections::BTreeMap<usize, Vec<String>> = Default::default();
            if p.generated_key.is_some() {
                let rows: Vec<String> = (0..p.rows.len())
                    .map(|i| p.render_row(i, sql, &fp.literals, Some(0)))
                    .collect();
                out.push(step(
                    "sequence",
                    format!(
                        "{} keys from the sequence {}; each row goes where its key places it",
                        rows.len(),
                        p.sequence
                    ),
                ));
                return out;
            }
            for (i, (_, source)) in p.rows.iter().enumerate() {
                let shard = source
                    .as_ref()
                    .ok_or_else(|| super::PlanError::MissingValue("a generated key".into()))
                    .and_then(|s| values.get(s))
                    .and_then(|v| Ok(p.function.shard_of(&v, n)?));
                match shard {
                    Ok(s) => by_shard
                        .entry(s)
                        .or_default()
                        .push(p.render_row(i, sql, &fp.literals, None)),
                    Err(e) => {
                        out.push(step("error", e.detail()));
                        return out;
                    }
                }
            }
            let (head, tail) = (p.head.render(sql, &fp.literals), p.tail.render(sql, &fp.literals));
            for (s, rows) in by_shard {
                out.push(shard_row(s, &format!("{head}{}{tail}", rows.join(", "))));
            }
        }
        ShardPlan::Ddl { shards, sql: t, reason } => {
            out.push(step("route", reason.clone()));
            let text = t.render(sql, &fp.literals);
            out.extend(shards.iter().map(|&i| shard_row(i, &text)));
        }
        ShardPlan::CreateDatabase { .. } => {
            out.push(step("route", plan.reason().to_string()));
            for i in 0..schema.shard_count() {
                let db = crate::state::quote_ident(&schema.shards[i].database);
                out.push(shard_row(i, &format!("CREATE DATABASE {db}")));
            }
        }
    }
    out
}
