//! Deterministic test data for the `shop` schema (seeded), its SQL, and the loader: the reference
//! gets every row; shard `shop_i` gets every row, then loses those its shard function places
//! elsewhere (broadcast tables keep all). Values are chosen so that every answer is exact:
//! doubles are multiples of 1/8 (sums are order-independent), ties, NULLs, case and accent
//! variants and extreme keys are plentiful.

use super::rng::Rng;
use super::schema::{Table, CUSTOMERS, EVENTS, EVENT_BOUNDS, ORDERS, PRODUCTS, SETTINGS, TABLES, TAGS};

/// Seed of the data set (fixed: the curated corpus relies on its keys).
pub const DATA_SEED: u64 = 0x7e55_e7a0_da7a_0001;
/// Rows per INSERT statement of the loader.
const BATCH: usize = 200;

/// One value of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    /// Decimal text, e.g. "-12.50".
    Dec(String),
    Dbl(f64),
    Str(String),
    /// 'YYYY-MM-DD' or 'YYYY-MM-DD hh:mm:ss'.
    Temporal(String),
}

impl Value {
    /// The value as an SQL literal.
    pub fn sql(&self) -> String {
        match self {
            Value::Null => "NULL".into(),
            Value::Int(v) => v.to_string(),
            Value::Dec(s) => s.clone(),
            Value::Dbl(v) => format!("{v:?}"),
            Value::Str(s) | Value::Temporal(s) => quote(s),
        }
    }
}

/// `s` as a single-quoted SQL string (backslashes and quotes escaped).
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// Non-key strings: case, accent and trailing-space variants, unicode, quotes, backslashes.
pub const NAMES: &[&str] = &[
    "abc",
    "ABC",
    "Abc ",
    "abc  ",
    "Ärger",
    "ärger",
    "ÄRGER",
    "arger",
    "日本",
    "日本語",
    "Zoë",
    "zoe",
    "ZOE",
    "Émile",
    "emile",
    "O'Brien",
    "o'brien",
    "back\\slash",
    "Müller",
    "MÜLLER",
    "muller",
    "",
    " ",
    "a",
    "A",
    "b",
    "B ",
    "Zed",
    "zed",
    "naïve",
    "NAIVE",
    "Łódź",
    "łódź",
    " leading",
    "Smith",
    "smith",
    "SMITH",
    "Jones",
];

/// Shard-key strings of `tags` (column collation [`super::schema::KEY_COLLATION`]): case and
/// trailing-space variants (one key, one shard) and accent variants (distinct keys, as the
/// accent-sensitive collation compares them).
pub const TAG_NAMES: &[&str] = &[
    "abc",
    "ABC",
    "Abc ",
    "abc  ",
    "Ärger",
    "ärger",
    "arger",
    "日本",
    "日本語",
    "red",
    "Red",
    "RED ",
    "blue",
    "Blue",
    "green",
    "o'brien",
    "O'Brien",
    "back\\slash",
    "",
    " ",
    "x",
    "X",
    "long tag name",
    "Long Tag Name",
    "vip",
    "VIP",
    "sale",
    "Sale ",
    "new",
    "NEW",
    "Zoë",
    "zoe",
];

const CITIES: &[&str] = &[
    "Berlin", "berlin", "BERLIN", "Paris", "Zürich", "zurich", "東京", "Oslo", "oslo ", "Rome", "Lima",
];
const STATUSES: &[&str] = &[
    "new",
    "NEW",
    "paid",
    "Paid",
    "shipped",
    "cancelled",
    "returned ",
    "returned",
];
const KINDS: &[&str] = &["click", "Click", "CLICK", "view", "View", "buy", "refund", "signup "];
const LABELS: &[&str] = &["hot", "Hot", "cold", "warm", "Wärm", "none"];
const CATEGORIES: &[&str] = &["tools", "Tools", "toys", "garden", "Garden ", "food", "Food"];
const PRODUCT_WORDS: &[&str] = &["Widget", "widget", "Gadget", "GADGET", "Gizmo", "Ding", "ding"];

/// Customer ids besides 1..: extremes of BIGINT and INT, zero, negatives.
const SPECIAL_IDS: &[i64] = &[
    i64::MIN,
    i64::MAX,
    0,
    -1,
    -2,
    -100,
    2_147_483_647,
    -2_147_483_648,
    4_294_967_296,
    1_000_000_000_000,
];
/// Number of ordinary customers (ids 1..=N).
pub const CUSTOMER_COUNT: i64 = 590;
pub const ORDER_COUNT: i64 = 2400;
pub const TAG_COUNT: i64 = 400;
pub const PRODUCT_COUNT: i64 = 120;

/// The rows of one table.
#[derive(Debug, Clone)]
pub struct TableData {
    pub table: &'static Table,
    pub rows: Vec<Vec<Value>>,
}

/// Every table's rows.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub tables: Vec<TableData>,
}

impl Dataset {
    /// The data set of `seed` (same seed, same rows).
    pub fn generate(seed: u64) -> Dataset {
        let mut rng = Rng::new(seed);
        let customer_ids: Vec<i64> = SPECIAL_IDS.iter().copied().chain(1..=CUSTOMER_COUNT).collect();
        let tables = vec![
            TableData {
                table: &TABLES[0],
                rows: customers(&mut rng.fork(), &customer_ids),
            },
            TableData {
                table: &TABLES[1],
                rows: orders(&mut rng.fork(), &customer_ids),
            },
            TableData {
                table: &TABLES[2],
                rows: tags(&mut rng.fork(), &customer_ids),
            },
            TableData {
                table: &TABLES[3],
                rows: events(&mut rng.fork(), &customer_ids),
            },
            TableData {
                table: &TABLES[4],
                rows: products(&mut rng.fork()),
            },
            TableData {
                table: &TABLES[5],
                rows: settings(&mut rng.fork()),
            },
        ];
        debug_assert_eq!(CUSTOMERS.name, tables[0].table.name);
        debug_assert_eq!(ORDERS.name, tables[1].table.name);
        debug_assert_eq!(TAGS.name, tables[2].table.name);
        debug_assert_eq!(EVENTS.name, tables[3].table.name);
        debug_assert_eq!(PRODUCTS.name, tables[4].table.name);
        debug_assert_eq!(SETTINGS.name, tables[5].table.name);
        Dataset { tables }
    }

    /// The rows of table `name`.
    pub fn table(&self, name: &str) -> &TableData {
        self.tables
            .iter()
            .find(|t| t.table.name == name)
            .unwrap_or_else(|| panic!("no table {name} in the data set"))
    }

    /// Distinct non-NULL values of a column, as SQL literals, in first-seen order.
    pub fn literals(&self, table: &str, column: &str) -> Vec<String> {
        let data = self.table(table);
        let i = data
            .table
            .columns
            .iter()
            .position(|c| c.name == column)
            .unwrap_or_else(|| panic!("no column {table}.{column}"));
        let mut seen = std::collections::HashSet::new();
        data.rows
            .iter()
            .map(|r| &r[i])
            .filter(|v| **v != Value::Null)
            .map(Value::sql)
            .filter(|s| seen.insert(s.clone()))
            .collect()
    }
}

impl TableData {
    /// INSERT statements (batches) putting every row into `qualified`.
    pub fn inserts(&self, qualified: &str) -> Vec<String> {
        self.rows
            .chunks(BATCH)
            .map(|chunk| {
                let values: Vec<String> = chunk
                    .iter()
                    .map(|r| format!("({})", r.iter().map(Value::sql).collect::<Vec<_>>().join(",")))
                    .collect();
                format!("INSERT INTO {qualified} VALUES {}", values.join(",\n"))
            })
            .collect()
    }
}

/// Cents in `lo..=hi` as DECIMAL(12,2) text.
fn decimal(rng: &mut Rng, lo: i64, hi: i64) -> Value {
    Value::Dec(cents_text(rng.range(lo, hi)))
}

/// 1234 -> "12.34", -5 -> "-0.05".
pub fn cents_text(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let c = cents.unsigned_abs();
    format!("{sign}{}.{:02}", c / 100, c % 100)
}

/// A double that is a multiple of 1/8 with |v| <= 5000: sums of thousands stay exact.
fn double(rng: &mut Rng) -> Value {
    Value::Dbl(rng.range(-40_000, 40_000) as f64 / 8.0)
}

fn date(rng: &mut Rng) -> String {
    format!(
        "{:04}-{:02}-{:02}",
        rng.range(1950, 2030),
        rng.range(1, 12),
        rng.range(1, 28)
    )
}

fn datetime(rng: &mut Rng) -> Value {
    let d = date(rng);
    Value::Temporal(format!(
        "{d} {:02}:{:02}:{:02}",
        rng.range(0, 23),
        rng.range(0, 59),
        rng.range(0, 59)
    ))
}

/// NULL with probability `null_pct`, else a value made by `make`.
fn nullable(rng: &mut Rng, null_pct: u32, make: impl FnOnce(&mut Rng) -> Value) -> Value {
    if rng.chance(null_pct) {
        Value::Null
    } else {
        make(rng)
    }
}

fn string(rng: &mut Rng, pool: &[&str]) -> Value {
    Value::Str((*rng.pick(pool)).to_string())
}

fn customers(rng: &mut Rng, ids: &[i64]) -> Vec<Vec<Value>> {
    ids.iter()
        .enumerate()
        .map(|(i, &id)| {
            let name = if rng.chance(60) {
                string(rng, NAMES)
            } else {
                Value::Str(format!("{} {}", rng.pick(NAMES), i % 37))
            };
            let balance = match i {
                0 => Value::Dec("9999999999.99".into()),
                1 => Value::Dec("-9999999999.99".into()),
                _ => nullable(rng, 12, |rng| decimal(rng, -5_000_000, 20_000_000)),
            };
            let born = match i {
                2 => Value::Temporal("1000-01-01".into()),
                3 => Value::Temporal("9999-12-31".into()),
                _ => nullable(rng, 10, |rng| Value::Temporal(date(rng))),
            };
            vec![
                Value::Int(id),
                name,
                nullable(rng, 15, |rng| string(rng, CITIES)),
                nullable(rng, 10, |rng| Value::Int(rng.range(0, 5))),
                balance,
                nullable(rng, 10, double),
                born,
                datetime(rng),
            ]
        })
        .collect()
}

/// A customer id for an order: mostly skewed towards low ids, some NULL, some without a customer.
fn order_customer(rng: &mut Rng, ids: &[i64]) -> Value {
    match rng.below(100) {
        0..=7 => Value::Null,
        8..=12 => Value::Int(*rng.pick(&[5000, 5001, 5050, -9_223_372_036_854_775_807, 77_777_777_777])),
        13..=40 => Value::Int(*rng.pick(&ids[..40])),
        _ => Value::Int(*rng.pick(ids)),
    }
}

fn orders(rng: &mut Rng, ids: &[i64]) -> Vec<Vec<Value>> {
    (1..=ORDER_COUNT)
        .map(|id| {
            let product = match rng.below(100) {
                0..=4 => Value::Null,
                5..=6 => Value::Int(999),
                _ => Value::Int(rng.range(1, PRODUCT_COUNT)),
            };
            vec![
                Value::Int(id),
                order_customer(rng, ids),
                product,
                Value::Int(rng.range(-2, 20)),
                nullable(rng, 8, |rng| decimal(rng, -10_000, 500_000)),
                nullable(rng, 20, |rng| Value::Dbl(rng.range(0, 400) as f64 / 8.0)),
                string(rng, STATUSES),
                nullable(rng, 50, |rng| string(rng, NAMES)),
                nullable(rng, 5, datetime),
                nullable(rng, 30, |rng| Value::Temporal(date(rng))),
            ]
        })
        .collect()
}

fn tags(rng: &mut Rng, ids: &[i64]) -> Vec<Vec<Value>> {
    (1..=TAG_COUNT)
        .map(|id| {
            vec![
                Value::Int(id),
                nullable(rng, 6, |rng| string(rng, TAG_NAMES)),
                nullable(rng, 10, |rng| Value::Int(*rng.pick(ids))),
                nullable(rng, 10, |rng| Value::Int(rng.range(-10, 100))),
                nullable(rng, 20, |rng| string(rng, LABELS)),
            ]
        })
        .collect()
}

/// Event ids: -20..=420 with gaps, every range bound and its neighbours, and BIGINT extremes.
fn event_ids(rng: &mut Rng) -> Vec<i64> {
    let bounds: Vec<i64> = EVENT_BOUNDS.iter().flat_map(|b| [b - 1, *b, b + 1]).collect();
    let mut ids: Vec<i64> = (-20..=420)
        .filter(|id| bounds.contains(id) || !rng.chance(15))
        .collect();
    ids.extend([i64::MIN, i64::MAX, -1000, 1_000_000]);
    ids.sort_unstable();
    ids
}

fn events(rng: &mut Rng, ids: &[i64]) -> Vec<Vec<Value>> {
    event_ids(rng)
        .into_iter()
        .map(|id| {
            vec![
                Value::Int(id),
                string(rng, KINDS),
                nullable(rng, 15, |rng| Value::Int(*rng.pick(&ids[..80]))),
                nullable(rng, 10, double),
                nullable(rng, 10, |rng| decimal(rng, -100_000, 100_000)),
                nullable(rng, 5, datetime),
                nullable(rng, 10, |rng| Value::Temporal(date(rng))),
            ]
        })
        .collect()
}

fn products(rng: &mut Rng) -> Vec<Vec<Value>> {
    (1..=PRODUCT_COUNT)
        .map(|id| {
            vec![
                Value::Int(id),
                Value::Str(format!("{} {}", rng.pick(PRODUCT_WORDS), id % 40)),
                nullable(rng, 10, |rng| string(rng, CATEGORIES)),
                decimal(rng, 1, 100_000),
                nullable(rng, 10, |rng| Value::Dbl(rng.range(1, 800) as f64 / 8.0)),
                nullable(rng, 10, |rng| Value::Temporal(date(rng))),
            ]
        })
        .collect()
}

fn settings(rng: &mut Rng) -> Vec<Vec<Value>> {
    const KEYS: &[&str] = &[
        "theme",
        "Language",
        "currency",
        "tax_rate",
        "max_items",
        "Timezone",
        "région",
        "日本",
        "a",
        "B",
        "empty",
        "zero",
    ];
    KEYS.iter()
        .map(|k| {
            vec![
                Value::Str((*k).to_string()),
                nullable(rng, 20, |rng| string(rng, LABELS)),
                nullable(rng, 20, |rng| Value::Int(rng.range(-5, 50))),
            ]
        })
        .collect()
}
