//! The plan cache: plans by (schema, fingerprint), so a statement that differs from an earlier
//! one only in literal values is not parsed again. A plan that depends on some literal values
//! (LIMIT counts, ORDER BY positions, HAVING constants, GROUP_CONCAT separators, expressions
//! the planner prints) is kept per those values. Bounded: when
//! full, it is cleared (plans are cheap to rebuild; a hot set refills at once). A statement
//! whose strings read differently under the session's `NO_BACKSLASH_ESCAPES` is planned apart.

use super::{plan, Planned, ShardPlan};
use crate::catalog::SchemaTables;
use crate::topology::ShardedSchema;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tessera_sql::{EscapeReading, Fingerprint};

/// Entries kept before the cache starts over.
const CAPACITY: usize = 10_000;

struct Entry {
    baked: Vec<usize>,
    /// The baked literals' text -> plan.
    plans: Vec<(Vec<String>, Arc<ShardPlan>)>,
}

/// A string that `NO_BACKSLASH_ESCAPES` ends at a backslash: the planner's parser reads it
/// with backslash escapes, so it would see another statement.
const QUOTE_AFTER_BACKSLASH: &str =
    "a string with a backslash before a quote under sql_mode NO_BACKSLASH_ESCAPES on a sharded schema";

/// A plan that evaluates or rewrites a string holding a backslash: its value was read with
/// backslash escapes, the session reads it without.
const BAKED_BACKSLASH: &str = "a string constant with a backslash that Tessera evaluates or rewrites across shards \
     (SEPARATOR, an expression in ORDER BY, GROUP BY or an aggregate) under sql_mode NO_BACKSLASH_ESCAPES";

/// (schema, fingerprint, whether a string's value needs `NO_BACKSLASH_ESCAPES`).
type Key = (String, String, bool);

/// Shared by every session (a topology change builds a new cache with the new snapshot).
#[derive(Default)]
pub struct PlanCache {
    /// (schema, fingerprint, whether a string's value needs `NO_BACKSLASH_ESCAPES`) -> plans,
    /// planned with the table metadata snapshot whose generation is kept beside them.
    entries: Mutex<(u64, HashMap<Key, Entry>)>,
}

impl PlanCache {
    /// The plan for `sql` on `schema`, planned on a miss with the table metadata `tables`;
    /// `backslash_escapes`: how the session reads strings (false: `NO_BACKSLASH_ESCAPES`).
    /// Plans made with an older metadata snapshot are dropped.
    pub fn get(
        &self,
        sql: &str,
        fp: &Fingerprint,
        schema: &ShardedSchema,
        backslash_escapes: bool,
        tables: &SchemaTables,
    ) -> Arc<ShardPlan> {
        let reading = match backslash_escapes {
            true => EscapeReading::Alike,
            false => tessera_sql::escape_reading(sql),
        };
        if reading == EscapeReading::TokensDiffer {
            return Arc::new(ShardPlan::Reject(QUOTE_AFTER_BACKSLASH.into()));
        }
        let key = (
            schema.name.clone(),
            fp.key.clone(),
            reading == EscapeReading::ValuesDiffer,
        );
        if let Ok(mut guard) = self.entries.lock() {
            let (epoch, entries) = &mut *guard;
            if *epoch < tables.generation {
                *epoch = tables.generation;
                entries.clear();
            }
            if let Some(e) = entries.get(&key).filter(|_| *epoch == tables.generation) {
                let values = baked_values(sql, fp, &e.baked);
                if let Some((_, p)) = e.plans.iter().find(|(v, _)| *v == values) {
                    return p.clone();
                }
            }
        }
        let Planned { plan: planned, baked } = plan(sql, fp, schema, tables);
        let planned = match key.2 && bakes_a_backslash(sql, fp, &baked) {
            true => Arc::new(without_baked_strings(planned)),
            false => Arc::new(planned),
        };
        if let Ok(mut guard) = self.entries.lock() {
            let (epoch, entries) = &mut *guard;
            if *epoch != tables.generation {
                return planned;
            }
            if entries.len() >= CAPACITY {
                entries.clear();
            }
            let values = baked_values(sql, fp, &baked);
            let e = entries.entry(key).or_insert_with(|| Entry {
                baked: baked.clone(),
                plans: Vec::new(),
            });
            if e.baked == baked && e.plans.len() < 64 {
                e.plans.push((values, planned.clone()));
            }
        }
        planned
    }

    pub fn len(&self) -> usize {
        self.entries.lock().map_or(0, |e| e.1.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A plan whose baked strings were read with backslash escapes, for a session that reads them
/// without: a read still runs on one shard (its text passes through), nothing else does.
fn without_baked_strings(plan: ShardPlan) -> ShardPlan {
    match plan {
        ShardPlan::Read {
            shards, one, reason, ..
        } => ShardPlan::Read {
            shards,
            one,
            many: Err(BAKED_BACKSLASH.into()),
            reason,
        },
        _ => ShardPlan::Reject(BAKED_BACKSLASH.into()),
    }
}

/// Whether a literal the plan holds is a string with a backslash in it.
fn bakes_a_backslash(sql: &str, fp: &Fingerprint, baked: &[usize]) -> bool {
    baked_values(sql, fp, baked)
        .iter()
        .any(|v| v.starts_with(['\'', '"']) && v.contains('\\'))
}

fn baked_values(sql: &str, fp: &Fingerprint, baked: &[usize]) -> Vec<String> {
    baked
        .iter()
        .map(|&i| {
            fp.literals
                .get(i)
                .and_then(|r| sql.get(r.clone()))
                .unwrap_or("")
                .to_string()
        })
        .collect()
}
