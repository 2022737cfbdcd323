//! The whole route of one statement on a logical schema: the text the shards read (the logical
//! schema's qualifiers dropped), its fingerprint, the cached [`ShardPlan`] and the [`Step`] the
//! executor runs, with the shards the statement's key values pick. The plan cache is looked up
//! here, keyed by schema and fingerprint inside the configuration generation that owns the
//! cache (a reload builds a new one), so a plan never outlives the topology it names.

use super::cache::PlanCache;
use super::values::Values;
use super::write::InsertPlan;
use super::{Scatter, ShardPlan};
use crate::catalog::SchemaTables;
use crate::error::ProxyError;
use crate::topology::ShardedSchema;
use std::borrow::Cow;
use std::sync::Arc;
use tessera_sql::Fingerprint;

/// One statement's route: what it is and what runs where.
pub struct Routed<'a> {
    /// The statement as the shards read it (the logical schema's `db.` qualifiers dropped).
    pub sql: Cow<'a, str>,
    pub fp: Fingerprint,
    pub plan: Arc<ShardPlan>,
    pub step: Step,
}

/// What the executor does with a routed statement.
#[derive(Debug, PartialEq)]
pub enum Step {
    /// Refused by the planner; the message says what is not supported (the executor first
    /// asks the default shard whether one server would refuse it too).
    Refuse(String),
    /// One shard runs `sql` and its answer passes through. `write`: the shard's primary
    /// (else the read/write split decides).
    One { shard: usize, sql: String, write: bool },
    /// A read on several shards, merged (the plan's `many`); `sql`: the shards' statement
    /// (database and once markers still in).
    Scatter { shards: Vec<usize>, sql: String },
    /// A write on several shards, all or none; `replicated`: a broadcast table's copies, whose
    /// counts are reported once.
    Write {
        per_shard: Vec<(usize, String)>,
        replicated: bool,
    },
    /// An INSERT whose AUTO_INCREMENT shard key Tessera generates first; the rows are split by
    /// [`split_insert`] once the keys are known.
    InsertGenerated,
    /// DDL on every listed shard, one after the other.
    Ddl { shards: Vec<usize>, sql: String },
    /// `CREATE DATABASE <logical>`: the shard databases.
    CreateDatabase { if_not_exists: bool },
}

/// How the session reads the statement.
#[derive(Clone, Copy)]
pub struct Reading {
    /// Strings read with backslash escapes (false under `NO_BACKSLASH_ESCAPES`).
    pub backslash_escapes: bool,
    /// A prepared statement's execution (its rows go out binary, through the merge even from
    /// one shard, described as its PREPARE described them).
    pub binary: bool,
}

/// Routes `sql` on `schema`: the plan from `cache` (planned with `tables` on a miss), then the
/// step with its shards.
pub fn route<'a>(
    sql: &'a str,
    schema: &ShardedSchema,
    tables: &SchemaTables,
    cache: &PlanCache,
    reading: Reading,
) -> Result<Routed<'a>, ProxyError> {
    let escapes = reading.backslash_escapes;
    let sql = match tessera_sql::drop_database_qualifier(sql, &schema.name, escapes) {
        Some(unqualified) => Cow::Owned(unqualified),
        None => Cow::Borrowed(sql),
    };
    let (fp, plan) = planned(&sql, schema, tables, cache, escapes);
    let step = step(&sql, &fp, &plan, schema, reading)?;
    Ok(Routed { sql, fp, plan, step })
}

/// The fingerprint and plan of `sql` as written (a prepared statement's text, an EXPLAIN
/// ROUTE's statement): from `cache`, planned with `tables` on a miss.
pub fn planned(
    sql: &str,
    schema: &ShardedSchema,
    tables: &SchemaTables,
    cache: &PlanCache,
    backslash_escapes: bool,
) -> (Fingerprint, Arc<ShardPlan>) {
    let fp = tessera_sql::fingerprint(sql);
    let plan = cache.get(sql, &fp, schema, backslash_escapes, tables);
    (fp, plan)
}

/// The step of a plan for these literal values.
fn step(
    sql: &str,
    fp: &Fingerprint,
    plan: &ShardPlan,
    schema: &ShardedSchema,
    reading: Reading,
) -> Result<Step, ProxyError> {
    let values = Values {
        sql,
        literals: &fp.literals,
        params: &[],
        backslash_escapes: reading.backslash_escapes,
    };
    Ok(match plan {
        ShardPlan::Reject(m) => Step::Refuse(m.clone()),
        ShardPlan::Read { shards, one, many, .. } => {
            let shards = ShardPlan::resolve(shards, schema, &values)?;
            match (shards.as_slice(), reading.binary, many) {
                ([shard], false, _) => Step::One {
                    shard: *shard,
                    sql: one.render(sql, &fp.literals),
                    write: false,
                },
                (_, _, Ok(scatter)) => {
                    let sql = scatter.sql.render(sql, &fp.literals);
                    refuse_found_rows_merge(scatter, &sql)?;
                    Step::Scatter { shards, sql }
                }
                (_, _, Err(m)) => Step::Refuse(m.detail()),
            }
        }
        ShardPlan::Write {
            shards,
            sql: template,
            one_shard_only,
            replicated,
            ..
        } => {
            let shards = ShardPlan::resolve(shards, schema, &values)?;
            let text = template.render(sql, &fp.literals);
            if let [shard] = shards.as_slice() {
                return Ok(Step::One {
                    shard: *shard,
                    sql: text,
                    write: true,
                });
            }
            if let Some(m) = one_shard_only {
                return Err(ProxyError::NotSharded(m.clone()));
            }
            Step::Write {
                per_shard: shards.into_iter().map(|s| (s, text.clone())).collect(),
                replicated: *replicated,
            }
        }
        ShardPlan::Insert(p) if p.generated_key.is_some() => Step::InsertGenerated,
        ShardPlan::Insert(p) => {
            let mut per_shard = split_insert(p, schema, sql, fp, &values, &[])?;
            match per_shard.len() {
                1 => {
                    let (shard, sql) = per_shard.remove(0);
                    Step::One {
                        shard,
                        sql,
                        write: true,
                    }
                }
                _ => Step::Write {
                    per_shard,
                    replicated: false,
                },
            }
        }
        ShardPlan::Ddl {
            shards, sql: template, ..
        } => Step::Ddl {
            shards: shards.clone(),
            sql: template.render(sql, &fp.literals),
        },
        ShardPlan::CreateDatabase { if_not_exists } => Step::CreateDatabase {
            if_not_exists: *if_not_exists,
        },
    })
}

/// SQL_CALC_FOUND_ROWS counts rows before grouping, which the shards' counts cannot give.
/// `text`: the scatter's shard statement.
fn refuse_found_rows_merge(scatter: &Scatter, text: &str) -> Result<(), ProxyError> {
    let calc_found_rows = text.to_ascii_uppercase().contains("SQL_CALC_FOUND_ROWS");
    if calc_found_rows && (scatter.merge.aggregate.is_some() || scatter.merge.distinct) {
        return Err(ProxyError::NotSharded(
            "SQL_CALC_FOUND_ROWS with GROUP BY or DISTINCT across shards".into(),
        ));
    }
    Ok(())
}

/// The per-shard INSERT statements of a split INSERT; `generated`: the keys of rows whose
/// AUTO_INCREMENT key Tessera supplies.
pub fn split_insert(
    p: &InsertPlan,
    schema: &ShardedSchema,
    sql: &str,
    fp: &Fingerprint,
    values: &Values,
    generated: &[i128],
) -> Result<Vec<(usize, String)>, ProxyError> {
    use crate::route::shard_fn::KeyValue;
    let n = schema.shard_count();
    let mut by_shard: std::collections::BTreeMap<usize, Vec<String>> = Default::default();
    for (i, (_, source)) in p.rows.iter().enumerate() {
        let (v, id) = match (source, generated.get(i)) {
            (Some(source), _) => (values.get(source)?, None),
            (None, Some(id)) => (KeyValue::Int(*id), Some(*id)),
            (None, None) => return Err(ProxyError::Sharding("a row without a generated key".into())),
        };
        let shard = p.function.shard_of(&v, n)?;
        by_shard
            .entry(shard)
            .or_default()
            .push(p.render_row(i, sql, &fp.literals, id));
    }
    let head = p.head.render(sql, &fp.literals);
    let tail = p.tail.render(sql, &fp.literals);
    Ok(by_shard
        .into_iter()
        .map(|(s, rows)| (s, format!("{head}{}{tail}", rows.join(", "))))
        .collect())
}
