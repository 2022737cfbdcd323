//! The demo's sharded sample schema `shop`: tables and rows, placed on shard databases by Tessera's `hash`.
//!
//! `customers` is sharded by `id` and `orders` by `customer_id`, both with `hash`
//! (`CRC32(decimal text of the key) % shards`, as MariaDB's `CRC32(k) % 4`), so a customer's
//! orders live on the customer's shard and joins on `customer_id` stay on one shard.
//! `products` is a broadcast table: every shard holds all of it.

use std::fmt::Write as _;

use crate::route::shard_fn::{KeyType, KeyValue, ShardError, ShardFunction};

/// The logical schema clients see.
pub const SCHEMA: &str = "shop";

/// Logical shards of `shop`: shard `i` is database `shop_i` on the group named here.
pub const SHARDS: [(&str, &str); 4] = [("g0", "shop_0"), ("g0", "shop_1"), ("g1", "shop_2"), ("g1", "shop_3")];

const CREATE_TABLES: &str = "
CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(64) NOT NULL, city VARCHAR(64));
CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, product_id INT NOT NULL,
  quantity INT NOT NULL, amount DECIMAL(10,2) NOT NULL, created_at DATETIME NOT NULL, KEY (customer_id));
CREATE TABLE products (id INT PRIMARY KEY, name VARCHAR(64) NOT NULL, price DECIMAL(10,2) NOT NULL);
";

const NAMES: [&str; 24] = [
    "Ada",
    "Grace",
    "Linus",
    "Margaret",
    "Dennis",
    "Barbara",
    "Ken",
    "Frances",
    "Edsger",
    "Radia",
    "Donald",
    "Sophie",
    "Alan",
    "Hedy",
    "John",
    "Katherine",
    "Tim",
    "Shafi",
    "Niklaus",
    "Adele",
    "Bjarne",
    "Joan",
    "Guido",
    "Lynn",
];

const CITIES: [&str; 6] = ["London", "New York", "Helsinki", "Zurich", "Tokyo", "Lisbon"];

/// `(name, price in cents)`; product ids are the position + 1.
const PRODUCTS: [(&str, i64); 8] = [
    ("keyboard", 4_999),
    ("mouse", 1_950),
    ("monitor", 18_900),
    ("laptop stand", 3_475),
    ("usb cable", 799),
    ("headset", 7_900),
    ("webcam", 5_425),
    ("desk lamp", 2_650),
];

/// How many sample orders there are (ids 1..=ORDERS).
const ORDERS: i64 = 60;

/// The logical shard of an integer key under Tessera's `hash` function: `CRC32(k) % shards`
/// (of the decimal text, as MariaDB's `CRC32(k)`).
pub fn hash_shard(key: i64, shards: usize) -> Result<usize, ShardError> {
    ShardFunction::Hash { key_type: KeyType::Int }.shard_of(&KeyValue::Int(i128::from(key)), shards)
}

/// The shard of every customer, by `id - 1`.
fn customer_shards() -> Result<Vec<usize>, ShardError> {
    (1..=NAMES.len() as i64)
        .map(|id| hash_shard(id, SHARDS.len()))
        .collect()
}

/// One sample order: `(id, customer_id, product_id, quantity)`. Orders 1..=48 give every
/// customer two (13 and 24 are coprime); the last twelve make a clear top three: customer 5
/// with 8 orders, 11 with 6 and 18 with 4.
fn order(n: i64) -> (i64, i64, i64, i64) {
    let customer = match n {
        ..=48 => 1 + (n * 13) % NAMES.len() as i64,
        49..=54 => 5,
        55..=58 => 11,
        _ => 18,
    };
    let product = 1 + (n * 5) % PRODUCTS.len() as i64;
    (n, customer, product, 1 + n % 3)
}

/// `12.5` euros from `1250` cents, as a DECIMAL literal.
fn money(cents: i64) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

/// Whether customer `id` lives on `shard` (`placement` from [`customer_shards`]).
fn on_shard(placement: &[usize], id: i64, shard: usize) -> bool {
    usize::try_from(id - 1).is_ok_and(|i| placement.get(i) == Some(&shard))
}

fn customer_rows(placement: &[usize], shard: usize) -> Vec<String> {
    (1..=NAMES.len() as i64)
        .filter(|&id| on_shard(placement, id, shard))
        .map(|id| {
            let i = (id - 1) as usize;
            format!("({id}, '{}', '{}')", NAMES[i], CITIES[i % CITIES.len()])
        })
        .collect()
}

fn order_rows(placement: &[usize], shard: usize) -> Vec<String> {
    (1..=ORDERS)
        .map(order)
        .filter(|&(_, customer, _, _)| on_shard(placement, customer, shard))
        .map(|(id, customer, product, quantity)| {
            let price = PRODUCTS[(product - 1) as usize].1;
            let day = 1 + id % 28;
            let hour = id % 24;
            format!(
                "({id}, {customer}, {product}, {quantity}, {}, '2026-01-{day:02} {hour:02}:00:00')",
                money(price * quantity)
            )
        })
        .collect()
}

fn product_rows() -> Vec<String> {
    PRODUCTS
        .iter()
        .enumerate()
        .map(|(i, (name, price))| format!("({}, '{name}', {})", i + 1, money(*price)))
        .collect()
}

fn insert(out: &mut String, table: &str, rows: &[String]) {
    if !rows.is_empty() {
        let _ = writeln!(out, "INSERT INTO {table} VALUES {};", rows.join(", "));
    }
}

/// The SQL that fills shard `shard`'s database (created beforehand): the three tables, its
/// customers and their orders, and every product.
pub fn shard_sql(shard: usize) -> Result<String, ShardError> {
    let placement = customer_shards()?;
    let database = SHARDS.get(shard).map_or("shop_x", |(_, db)| *db);
    let mut sql = format!("USE {database};{CREATE_TABLES}");
    insert(&mut sql, "customers", &customer_rows(&placement, shard));
    insert(&mut sql, "orders", &order_rows(&placement, shard));
    insert(&mut sql, "products", &product_rows());
    Ok(sql)
}

/// The shard databases on `group`.
pub fn databases_of(group: &str) -> Vec<String> {
    SHARDS
        .iter()
        .filter(|(g, _)| *g == group)
        .map(|(_, db)| db.to_string())
        .collect()
}

/// The `[[schemas]]` section of Tessera's configuration for `shop`.
pub fn schema_toml() -> String {
    let shards: Vec<String> = SHARDS.iter().map(|(g, db)| format!("\"{g}:{db}\"")).collect();
    format!(
        r#"[[schemas]]
name = "{SCHEMA}"
shards = [{}]
default_shard = 0
[[schemas.tables]]
name = "customers"
shard_key = "id"
function = "hash"
[[schemas.tables]]
name = "orders"
shard_key = "customer_id"
function = "hash"
[[schemas.tables]]
name = "products"
kind = "broadcast"
"#,
        shards.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn hash_places_keys_as_mariadb_does() {
        // SELECT CRC32(k) % 4 on MariaDB: 1 -> 3, 2 -> 1, 3 -> 3, 7 -> 2 (CRC32('7') = 1790921346).
        for (key, shard) in [(1, 3), (2, 1), (3, 3), (7, 2), (123_456_789, 2)] {
            assert_eq!(hash_shard(key, 4).unwrap(), shard, "{key}");
        }
    }

    #[test]
    fn every_customer_is_on_one_shard_with_all_its_orders() {
        let placement = customer_shards().unwrap();
        let mut customers = HashMap::new();
        let mut orders = 0;
        for shard in 0..SHARDS.len() {
            let here = customer_rows(&placement, shard);
            assert!(!here.is_empty(), "shard {shard} has no customers");
            for row in &here {
                assert!(
                    customers.insert(row.clone(), shard).is_none(),
                    "a customer on two shards"
                );
            }
            for (_, customer, _, _) in (1..=ORDERS).map(order) {
                if hash_shard(customer, SHARDS.len()).unwrap() == shard {
                    orders += 1;
                    let prefix = format!("({customer}, ");
                    assert!(here.iter().any(|c| c.starts_with(&prefix)));
                }
            }
            assert_eq!(
                order_rows(&placement, shard).len(),
                (1..=ORDERS)
                    .filter(|&n| on_shard(&placement, order(n).1, shard))
                    .count()
            );
        }
        assert_eq!(customers.len(), NAMES.len());
        assert_eq!(orders, ORDERS);
    }

    #[test]
    fn every_customer_has_orders_and_the_top_three_are_clear() {
        let mut per_customer: HashMap<i64, u32> = HashMap::new();
        for (_, customer, product, quantity) in (1..=ORDERS).map(order) {
            assert!((1..=PRODUCTS.len() as i64).contains(&product));
            assert!((1..=3).contains(&quantity));
            *per_customer.entry(customer).or_default() += 1;
        }
        assert_eq!(per_customer.len(), NAMES.len(), "{per_customer:?}");
        let mut top: Vec<(u32, i64)> = per_customer.iter().map(|(c, n)| (*n, *c)).collect();
        top.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(&top[..4], [(8, 5), (6, 11), (4, 18), (2, 24)]);
    }

    #[test]
    fn shard_sql_uses_its_database_and_every_shard_has_all_products() {
        for (shard, (_, db)) in SHARDS.iter().enumerate() {
            let sql = shard_sql(shard).unwrap();
            assert!(sql.starts_with(&format!("USE {db};")), "{sql}");
            assert!(sql.contains("(8, 'desk lamp', 26.50)"), "{sql}");
            assert!(!sql.contains("VALUES ;"));
        }
        assert_eq!(databases_of("g0"), ["shop_0", "shop_1"]);
        assert_eq!(databases_of("g1"), ["shop_2", "shop_3"]);
        assert_eq!(money(799), "7.99");
    }

    #[test]
    fn schema_section_maps_shards_to_group_databases() {
        let toml = schema_toml();
        assert!(
            toml.contains(r#"shards = ["g0:shop_0", "g0:shop_1", "g1:shop_2", "g1:shop_3"]"#),
            "{toml}"
        );
        assert!(toml.contains("name = \"orders\"\nshard_key = \"customer_id\"\nfunction = \"hash\""));
        assert!(toml.contains("name = \"products\"\nkind = \"broadcast\""));
    }
}
