//! The logical schema `shop` of the differential test: its tables, their DDL and the documented
//! shard functions written as SQL (so data is placed and checked without Tessera).

/// Number of logical shards.
pub const SHARDS: usize = 4;
/// Index of the sandbox server (= group g0, g1) that holds shard i (database `shop_i`).
pub const SHARD_SERVERS: [usize; SHARDS] = [0, 0, 1, 1];
/// The logical schema (and the reference's database).
pub const SCHEMA: &str = "shop";
/// Bounds of the range-sharded table `events`.
pub const EVENT_BOUNDS: [i64; 3] = [100, 200, 300];
/// Character set and case-insensitive collation of every table.
pub const TABLE_OPTIONS: &str = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci";

/// Shard i's database name.
pub fn shard_db(i: usize) -> String {
    format!("shop_{i}")
}

/// Sandbox server (group) holding shard i.
pub fn shard_server(i: usize) -> usize {
    SHARD_SERVERS[i]
}

/// A column's SQL type family (what values the generators may use).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int,
    BigInt,
    TinyInt,
    Decimal,
    Double,
    Str,
    Date,
    DateTime,
}

impl Kind {
    fn sql_type(self) -> &'static str {
        match self {
            Kind::Int => "INT",
            Kind::BigInt => "BIGINT",
            Kind::TinyInt => "TINYINT",
            Kind::Decimal => "DECIMAL(12,2)",
            Kind::Double => "DOUBLE",
            Kind::Str => "VARCHAR(60)",
            Kind::Date => "DATE",
            Kind::DateTime => "DATETIME",
        }
    }

    /// Integers, decimals and doubles: SUM and AVG apply.
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            Kind::Int | Kind::BigInt | Kind::TinyInt | Kind::Decimal | Kind::Double
        )
    }
}

/// One column.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    pub kind: Kind,
    pub nullable: bool,
    /// A collation of its own (else the table's utf8mb4_general_ci).
    pub collation: Option<&'static str>,
}

const fn col(name: &'static str, kind: Kind, nullable: bool) -> Column {
    Column {
        name,
        kind,
        nullable,
        collation: None,
    }
}

/// Case-insensitive but accent-sensitive (PAD SPACE): the collation the README asks of a string
/// shard key, so that equal keys are exactly those the documented hash places together.
pub const KEY_COLLATION: &str = "utf8mb4_uca1400_as_ci";

/// How a table is spread over the shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// `CRC32(key) % 4` on an integer key.
    HashInt,
    /// `CRC32(LOWER(TRIM(TRAILING ' ' FROM key))) % 4` on a string key.
    HashString,
    /// Shard i holds `[bounds[i-1], bounds[i])`.
    Range,
    /// Every shard holds every row.
    Broadcast,
    /// Not in the configuration: the table lives on the default shard (0) only.
    Unsharded,
}

/// One table of the schema.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [Column],
    /// Primary key column (every table has a one-column key: the total-order tiebreaker).
    pub pk: &'static str,
    /// Shard key column (None for broadcast tables).
    pub key: Option<&'static str>,
    pub rule: Rule,
    /// Secondary indexes (column lists).
    pub indexes: &'static [&'static str],
}

use Kind::*;

pub const CUSTOMERS: Table = Table {
    name: "customers",
    columns: &[
        col("id", BigInt, false),
        col("name", Str, false),
        col("city", Str, true),
        col("tier", TinyInt, true),
        col("balance", Decimal, true),
        col("score", Double, true),
        col("born", Date, true),
        col("created", DateTime, false),
    ],
    pk: "id",
    key: Some("id"),
    rule: Rule::HashInt,
    indexes: &["name", "city", "tier, balance"],
};

pub const ORDERS: Table = Table {
    name: "orders",
    columns: &[
        col("id", BigInt, false),
        col("customer_id", BigInt, true),
        col("product_id", Int, true),
        col("qty", Int, false),
        col("amount", Decimal, true),
        col("discount", Double, true),
        col("status", Str, false),
        col("note", Str, true),
        col("ordered_at", DateTime, true),
        col("ship_date", Date, true),
    ],
    pk: "id",
    key: Some("customer_id"),
    rule: Rule::HashInt,
    indexes: &["customer_id", "product_id", "status", "ordered_at"],
};

pub const TAGS: Table = Table {
    name: "tags",
    columns: &[
        col("id", Int, false),
        Column {
            collation: Some(KEY_COLLATION),
            ..col("name", Str, true)
        },
        col("customer_id", BigInt, true),
        col("weight", Int, true),
        col("label", Str, true),
    ],
    pk: "id",
    key: Some("name"),
    rule: Rule::HashString,
    indexes: &["name", "customer_id"],
};

pub const EVENTS: Table = Table {
    name: "events",
    columns: &[
        col("id", BigInt, false),
        col("kind", Str, false),
        col("customer_id", BigInt, true),
        col("value", Double, true),
        col("amount", Decimal, true),
        col("at", DateTime, true),
        col("day", Date, true),
    ],
    pk: "id",
    key: Some("id"),
    rule: Rule::Range,
    indexes: &["kind", "customer_id", "day"],
};

pub const PRODUCTS: Table = Table {
    name: "products",
    columns: &[
        col("id", Int, false),
        col("name", Str, false),
        col("category", Str, true),
        col("price", Decimal, false),
        col("weight", Double, true),
        col("added", Date, true),
    ],
    pk: "id",
    key: None,
    rule: Rule::Broadcast,
    indexes: &["category", "name"],
};

pub const SETTINGS: Table = Table {
    name: "settings",
    columns: &[col("k", Str, false), col("v", Str, true), col("n", Int, true)],
    pk: "k",
    key: None,
    rule: Rule::Unsharded,
    indexes: &["n"],
};

/// Every table, in load order.
pub static TABLES: [Table; 6] = [CUSTOMERS, ORDERS, TAGS, EVENTS, PRODUCTS, SETTINGS];

/// The table named `name` (case-insensitive).
pub fn table(name: &str) -> Option<&'static Table> {
    TABLES.iter().find(|t| t.name.eq_ignore_ascii_case(name))
}

impl Table {
    /// `CREATE TABLE <qualified>` with or without the secondary indexes.
    pub fn ddl(&self, qualified: &str, with_indexes: bool) -> String {
        let mut parts: Vec<String> = self
            .columns
            .iter()
            .map(|c| {
                let null = if c.nullable { "NULL" } else { "NOT NULL" };
                let collate = c.collation.map_or(String::new(), |name| format!(" COLLATE {name}"));
                format!("`{}` {}{collate} {null}", c.name, c.kind.sql_type())
            })
            .collect();
        parts.push(format!("PRIMARY KEY (`{}`)", self.pk));
        if with_indexes {
            for (i, cols) in self.indexes.iter().enumerate() {
                parts.push(format!("KEY `ix{i}` ({cols})"));
            }
        }
        format!(
            "CREATE TABLE {qualified} (\n  {}\n) {TABLE_OPTIONS}",
            parts.join(",\n  ")
        )
    }

    /// Whether shard `i` has this table at all.
    pub fn on_shard(&self, i: usize) -> bool {
        self.rule != Rule::Unsharded || i == 0
    }

    /// SQL computing the shard (0..4) of a row from its columns; None for broadcast and
    /// unsharded tables. NULL keys go to shard 0.
    pub fn shard_expr(&self) -> Option<String> {
        let key = format!("`{}`", self.key?);
        let n = SHARDS;
        let expr = match self.rule {
            Rule::HashInt => format!("COALESCE(CRC32({key}) % {n}, 0)"),
            Rule::HashString => format!("COALESCE(CRC32(LOWER(TRIM(TRAILING ' ' FROM {key}))) % {n}, 0)"),
            Rule::Range => {
                let [a, b, c] = EVENT_BOUNDS;
                format!("CASE WHEN {key} IS NULL OR {key} < {a} THEN 0 WHEN {key} < {b} THEN 1 WHEN {key} < {c} THEN 2 ELSE 3 END")
            }
            Rule::Broadcast | Rule::Unsharded => return None,
        };
        Some(expr)
    }

    /// `SELECT * FROM <qualified> ORDER BY <pk>`.
    pub fn dump_sql(&self, qualified: &str) -> String {
        format!("SELECT * FROM {qualified} ORDER BY `{}`", self.pk)
    }
}
