//! Table metadata of the logical schemas: every table's columns in order (name, type, key
//! flag), read from the schema's default shard and shared by every session. A snapshot is
//! valid while the process's schema-change count ([`crate::backend::stmt_cache::SchemaChanges`])
//! is the one it was read at, and for [`MAX_AGE`] at most (a DDL run on the shards without
//! Tessera is seen within that time); the next statement after either reads it again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a snapshot is used before it is read again, schema changes through Tessera or not.
pub const MAX_AGE: Duration = Duration::from_secs(5);

/// One column as `information_schema.COLUMNS` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    /// `COLUMN_TYPE`, e.g. `int(11)`, `varchar(20)`.
    pub column_type: String,
    /// `COLUMN_KEY`: `PRI`, `UNI`, `MUL` or empty.
    pub key: String,
}

/// The tables of one logical schema at one schema-change count.
#[derive(Debug)]
pub struct SchemaTables {
    /// The schema-change count the snapshot was read at.
    pub epoch: u64,
    /// Numbers the snapshots the process reads (plans made with an older one are dropped).
    pub generation: u64,
    read_at: Instant,
    /// Logical schema name.
    pub schema: String,
    tables: HashMap<String, Arc<[Column]>>,
}

impl SchemaTables {
    /// Builds a snapshot from `(table, column)` pairs in ordinal order.
    pub fn new(schema: &str, epoch: u64, columns: impl IntoIterator<Item = (String, Column)>) -> Self {
        let mut grouped: HashMap<String, Vec<Column>> = HashMap::new();
        for (table, column) in columns {
            grouped.entry(table).or_default().push(column);
        }
        SchemaTables {
            epoch,
            generation: 0,
            read_at: Instant::now(),
            schema: schema.to_string(),
            tables: grouped.into_iter().map(|(t, c)| (t, c.into())).collect(),
        }
    }

    /// Still usable at schema-change count `epoch`.
    pub fn is_current(&self, epoch: u64) -> bool {
        self.epoch == epoch && self.read_at.elapsed() < MAX_AGE
    }

    /// A table's columns in order; None when the default shard has no such table.
    pub fn columns(&self, table: &str) -> Option<&[Column]> {
        self.tables.get(table).map(|c| &c[..])
    }

    /// Whether `table` has a column `name` (column names compare case-insensitively, as in
    /// MariaDB); None when the table is not known.
    pub fn has_column(&self, table: &str, name: &str) -> Option<bool> {
        self.columns(table)
            .map(|cols| cols.iter().any(|c| c.name.eq_ignore_ascii_case(name)))
    }

    /// The column names of `table`, backquoted and comma-separated (an INSERT's column list).
    pub fn column_list(&self, table: &str) -> Option<String> {
        let cols = self.columns(table)?;
        let names: Vec<String> = cols.iter().map(|c| crate::state::quote_ident(&c.name)).collect();
        Some(names.join(", "))
    }

    /// How many tables the snapshot knows.
    pub fn len(&self) -> usize {
        self.tables.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }
}

/// The latest snapshot of every logical schema, shared by the sessions of the process.
#[derive(Debug, Default)]
pub struct Catalog {
    schemas: Mutex<HashMap<String, Arc<SchemaTables>>>,
    generations: AtomicU64,
}

impl Catalog {
    /// The snapshot of `schema` still current at `epoch`, if one is stored.
    pub fn current(&self, schema: &str, epoch: u64) -> Option<Arc<SchemaTables>> {
        let schemas = self.schemas.lock().ok()?;
        schemas.get(schema).filter(|s| s.is_current(epoch)).cloned()
    }

    /// Numbers a snapshot just read and keeps it, unless one read at a later count is stored
    /// already; returns it.
    pub fn store(&self, mut tables: SchemaTables) -> Arc<SchemaTables> {
        tables.generation = self.generations.fetch_add(1, Ordering::AcqRel) + 1;
        let tables = Arc::new(tables);
        if let Ok(mut schemas) = self.schemas.lock() {
            let newer = schemas.get(&tables.schema).is_some_and(|s| s.epoch > tables.epoch);
            if !newer {
                schemas.insert(tables.schema.clone(), tables.clone());
            }
        }
        tables
    }
}

/// The query that reads a shard database's columns for [`SchemaTables::new`].
pub fn columns_query(database: &str) -> String {
    format!(
        "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, COLUMN_KEY FROM information_schema.COLUMNS \
         WHERE TABLE_SCHEMA = {} ORDER BY TABLE_NAME, ORDINAL_POSITION",
        crate::state::quote_string(database)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str) -> Column {
        Column {
            name: name.into(),
            column_type: "int(11)".into(),
            key: String::new(),
        }
    }

    #[test]
    fn columns_keep_their_order_and_compare_without_case() {
        let t = SchemaTables::new(
            "shop",
            3,
            [
                ("orders".to_string(), col("id")),
                ("orders".to_string(), col("customer_id")),
            ],
        );
        assert_eq!(t.column_list("orders").as_deref(), Some("`id`, `customer_id`"));
        assert_eq!(t.has_column("orders", "ID"), Some(true));
        assert_eq!(t.has_column("orders", "amount"), Some(false));
        assert_eq!(t.has_column("customers", "id"), None);
    }

    #[test]
    fn an_older_snapshot_never_replaces_a_newer_one() {
        let c = Catalog::default();
        let first = c.store(SchemaTables::new("shop", 5, []));
        let second = c.store(SchemaTables::new("shop", 4, []));
        assert!(second.generation > first.generation);
        assert!(c.current("shop", 5).is_some());
        assert!(c.current("shop", 4).is_none());
    }
}
