//! The plan cache: plans by (schema, fingerprint), so a statement that differs from an earlier
//! one only in literal values is not parsed again. A plan that depends on some literal values
//! (LIMIT counts, ORDER BY positions, HAVING constants) is kept per those values. Bounded: when
//! full, it is cleared (plans are cheap to rebuild; a hot set refills at once).

use super::{plan, Planned, ShardPlan};
use crate::topology::ShardedSchema;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tessera_sql::Fingerprint;

/// Entries kept before the cache starts over.
const CAPACITY: usize = 10_000;

struct Entry {
    baked: Vec<usize>,
    /// The baked literals' text -> plan.
    plans: Vec<(Vec<String>, Arc<ShardPlan>)>,
}

/// Shared by every session (a topology change builds a new cache with the new snapshot).
#[derive(Default)]
pub struct PlanCache {
    entries: Mutex<HashMap<(String, String), Entry>>,
}

impl PlanCache {
    /// The plan for `sql` on `schema`, planned on a miss.
    pub fn get(&self, sql: &str, fp: &Fingerprint, schema: &ShardedSchema) -> Arc<ShardPlan> {
        let key = (schema.name.clone(), fp.key.clone());
        if let Ok(entries) = self.entries.lock() {
            if let Some(e) = entries.get(&key) {
                let values = baked_values(sql, fp, &e.baked);
                if let Some((_, p)) = e.plans.iter().find(|(v, _)| *v == values) {
                    return p.clone();
                }
            }
        }
        let Planned { plan: planned, baked } = plan(sql, fp, schema);
        let planned = Arc::new(planned);
        if let Ok(mut entries) = self.entries.lock() {
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
        self.entries.lock().map_or(0, |e| e.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
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
