//! The demo's sharded sample schema `shop`: tables and rows, placed on shard databases by the hash formula.
//!
//! `customers` is sharded by `id` and `orders` by `customer_id`, both with `hash`
//! (`CRC32(decimal text of the key) % shards`, as MariaDB's `CRC32(k) % 4`), so a customer's
//! orders live on the customer's shard and joins on `customer_id` stay on one shard.
//! `products` is a broadcast table: every shard holds all of it.

use std::fmt::Write as _;

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

/// CRC-32 (IEEE 802.3, the one MariaDB's `CRC32()` computes) of `bytes`.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// The logical shard of an integer key under `hash`: `CRC32(k) % shards` (k as decimal text).
pub fn hash_shard(key: i64, shards: usize) -> usize {
    let shards = u32::try_from(shards.max(1)).unwrap_or(u32::MAX);
    (crc32(key.to_string().as_bytes()) % shards) as usize
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

fn customer_rows(shard: usize) -> Vec<String> {
    (1..=NAMES.len() as i64)
        .filter(|&id| hash_shard(id, SHARDS.len()) == shard)
        .map(|id| {
            let i = (id - 1) as usize;
            format!("({id}, '{}', '{}')", NAMES[i], CITIES[i % CITIES.len()])
        })
        .collect()
}

fn order_rows(shard: usize) -> Vec<String> {
    (1..=ORDERS)
        .map(order)
        .filter(|&(_, customer, _, _)| hash_shard(customer, SHARDS.len()) == shard)
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
pub fn shard_sql(shard: usize) -> String {
    let database = SHARDS.get(shard).map_or("shop_x", |(_, db)| *db);
    let mut sql = format!("USE {database};{CREATE_TABLES}");
    insert(&mut sql, "customers", &customer_rows(shard));
    insert(&mut sql, "orders", &order_rows(shard));
    insert(&mut sql, "products", &product_rows());
    sql
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
    fn crc32_is_mariadbs() {
        // Check values: the IEEE standard's, and SELECT CRC32('7') / CRC32(123456789) on MariaDB.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b"7"), 1_790_921_346);
        assert_eq!(crc32(b""), 0);
        assert_eq!(hash_shard(7, 4), 2);
        assert_eq!(hash_shard(1, 4), 3);
        assert_eq!(hash_shard(2, 4), 1);
    }

    #[test]
    fn every_customer_is_on_one_shard_with_all_its_orders() {
        let mut customers = HashMap::new();
        let mut orders = 0;
        for shard in 0..SHARDS.len() {
            for row in customer_rows(shard) {
                assert!(customers.insert(row, shard).is_none(), "a customer on two shards");
            }
            for (_, customer, _, _) in (1..=ORDERS).map(order) {
                if hash_shard(customer, SHARDS.len()) == shard {
                    orders += 1;
                    let prefix = format!("({customer}, ");
                    assert!(customer_rows(shard).iter().any(|c| c.starts_with(&prefix)));
                }
            }
            assert!(!customer_rows(shard).is_empty(), "shard {shard} has no customers");
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
            let sql = shard_sql(shard);
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
