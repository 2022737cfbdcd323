//! The tables a statement touches and where they live: each reference resolved against the
//! logical schema (sharded by a key, broadcast, on one shard, or not ours), and the edits that
//! turn `logical.table` into the shard's database.

use super::DATABASE_MARKER;
use crate::route::shard_fn::ShardFunction;
use crate::topology::{ShardedSchema, TablePlacement};
use std::ops::ControlFlow;
use tessera_sql::analyze::Offsets;
use tessera_sql::sqlparser::ast::{visit_relations, ObjectName, ObjectNamePart, Statement};
use tessera_sql::Edit;

/// Where one referenced table lives.
#[derive(Debug, Clone, PartialEq)]
pub enum Place {
    Sharded {
        key: String,
        function: ShardFunction,
        /// The key is AUTO_INCREMENT with values from Tessera's sequence.
        auto_increment: bool,
    },
    Broadcast,
    Single(usize),
    /// A table of another database (information_schema, mysql, ...): runs where the
    /// statement runs.
    Foreign,
}

/// One table reference.
#[derive(Debug, Clone)]
pub struct TableRef {
    /// The table's name (without database).
    pub table: String,
    pub place: Place,
}

/// Resolves a table name (`t` or `db.t`) in `schema`; `qualifier_edit` receives the edit that
/// renames a logical database qualifier.
pub fn resolve(name: &ObjectName, schema: &ShardedSchema, offsets: &Offsets, edits: &mut Vec<Edit>) -> TableRef {
    let parts: Vec<_> = name
        .0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => Some(i),
            _ => None,
        })
        .collect();
    let (db, table) = match parts.as_slice() {
        [Some(t)] => (None, *t),
        [Some(d), Some(t)] => (Some(*d), *t),
        _ => {
            return TableRef {
                table: name.to_string(),
                place: Place::Foreign,
            }
        }
    };
    if let Some(d) = db {
        if d.value != schema.name {
            return TableRef {
                table: table.value.clone(),
                place: Place::Foreign,
            };
        }
        if let Some(r) = offsets.range(d.span) {
            edits.push(Edit::replace(r, DATABASE_MARKER));
        }
    }
    let place = match schema.table(&table.value) {
        TablePlacement::Sharded(t) => Place::Sharded {
            key: t.key.clone(),
            function: t.function.clone(),
            auto_increment: t.auto_increment,
        },
        TablePlacement::Broadcast => Place::Broadcast,
        TablePlacement::Single(s) => Place::Single(s),
    };
    TableRef {
        table: table.value.clone(),
        place,
    }
}

/// Every table the statement references (FROM, joins, subqueries, DML targets), with the
/// qualifier edits.
pub fn all_tables(stmt: &Statement, schema: &ShardedSchema, offsets: &Offsets, edits: &mut Vec<Edit>) -> Vec<TableRef> {
    let mut out = Vec::new();
    let _ = visit_relations(stmt, |name| {
        out.push(resolve(name, schema, offsets, edits));
        ControlFlow::<()>::Continue(())
    });
    out
}

/// What a set of tables means for routing.
pub enum Spread {
    /// No sharded table: the shard where single tables live (broadcast and foreign ones live
    /// everywhere), or the default shard.
    OneShard(usize),
    /// Sharded tables (co-location still to be checked by the caller).
    Sharded,
    /// Single tables on different shards, or single tables next to sharded ones.
    Conflict(String),
}

pub fn spread(tables: &[TableRef], default_shard: usize) -> Spread {
    let sharded = tables.iter().any(|t| matches!(t.place, Place::Sharded { .. }));
    let mut single: Option<(usize, &str)> = None;
    for t in tables {
        if let Place::Single(s) = t.place {
            match single {
                Some((other, name)) if other != s => {
                    return Spread::Conflict(format!(
                        "tables {name} and {} live on different shards ({other} and {s})",
                        t.table
                    ))
                }
                _ => single = Some((s, &t.table)),
            }
        }
    }
    match (sharded, single) {
        (true, Some((_, name))) => Spread::Conflict(format!(
            "a statement over sharded tables and table {name}, which lives on one shard"
        )),
        (true, None) => Spread::Sharded,
        (false, Some((s, _))) => Spread::OneShard(s),
        (false, None) => Spread::OneShard(default_shard),
    }
}
