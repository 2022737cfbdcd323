//! Column references in subqueries and joins are bound as MariaDB binds them, against the
//! tables' real columns (Tessera's table metadata, read from the shards and read again after a
//! DDL): a statement whose sharded tables are not linked by their keys is refused, never run
//! shard by shard as if they were (issue 43, point 8: one row where MariaDB answers 15). Every
//! accepted statement is compared with the same statement on one plain MariaDB database, through
//! the `mariadb` CLI, PyMySQL and Tessera's test client.

use super::drivers::{cli, pymysql, Login, Refused};
use crate::common::shards::ShardedEnv;
use crate::common::Client;

const CUSTOMERS_RULE: &str = r#"
[[schemas.tables]]
name = "customers"
shard_key = "id"
"#;

/// The same tables and rows, for the logical schema and for the plain reference database.
fn setup() -> String {
    let customers: Vec<String> = (1..=30).map(|i| format!("({i}, 'c{i}')")).collect();
    let orders: Vec<String> = (1..=30).map(|i| format!("({}, {i}, {})", 100 + i, i % 3)).collect();
    format!(
        "CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(20));\
         CREATE TABLE orders (oid INT PRIMARY KEY, customer_id INT, amount INT);\
         INSERT INTO customers VALUES {};\
         INSERT INTO orders VALUES {};",
        customers.join(","),
        orders.join(",")
    )
}

/// Runs on both sides before the second half: orders gets a column named like customers' key.
const ADD_ID: &str = "ALTER TABLE orders ADD COLUMN id INT";
const FILL_ID: &str = "UPDATE orders SET id = oid - 95";

/// Correlated, unqualified `id`: customers.id while orders has no `id`, orders.id after.
const EXISTS_UNQUALIFIED: &str =
    "SELECT id FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = id AND amount = 0) ORDER BY id";
/// The issue's statement: the subquery's `id` is orders.id, not a shard key.
const IN_ORDERS_ID: &str = "SELECT id FROM customers WHERE id IN (SELECT id FROM orders WHERE amount = 0) ORDER BY id";
/// Linked by keys: answered exactly, before and after the DDL.
const IN_CUSTOMER_ID: &str =
    "SELECT id FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE amount = 0) ORDER BY id";

fn through(env: &ShardedEnv) -> Login<'static> {
    Login {
        port: env.proxy.addr.port(),
        user: "app",
        password: "app",
        db: Some("shop"),
    }
}

fn direct(env: &ShardedEnv) -> Login<'static> {
    Login {
        port: env.sandbox.server(0).port(),
        user: "tessera",
        password: "tessera",
        db: Some("plain"),
    }
}

/// Every client gets the answer one server gives.
async fn answered_alike(env: &ShardedEnv, client: &mut Client, sql: &str) {
    let want = cli(&direct(env), sql).expect("direct");
    assert!(!want.is_empty(), "the reference answers rows: {sql}");
    assert_eq!(
        cli(&through(env), sql).expect("mariadb CLI through Tessera"),
        want,
        "{sql}"
    );
    assert_eq!(
        pymysql(&through(env), sql).expect("PyMySQL through Tessera"),
        want,
        "{sql}"
    );
    let rows: Vec<String> = client
        .query(sql)
        .await
        .expect("test client")
        .into_iter()
        .map(|r| {
            r.into_iter()
                .map(|v| v.unwrap_or("NULL".into()))
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect();
    assert_eq!(rows, want, "{sql}");
}

/// Every client gets Tessera's refusal (1235), where one server answers other rows.
async fn refused_by_all(env: &ShardedEnv, client: &mut Client, sql: &str) {
    let reference = cli(&direct(env), sql).expect("direct");
    let check = |r: Result<Vec<String>, Refused>, who: &str| match r {
        Err(e) => assert!(
            e.code == 1235 && e.message.contains("shard keys"),
            "{who}: {sql}: {e:?}"
        ),
        Ok(rows) => panic!("{who} answered {rows:?} (one server: {reference:?}): {sql}"),
    };
    check(cli(&through(env), sql), "mariadb CLI");
    check(pymysql(&through(env), sql), "PyMySQL");
    let e = client.query(sql).await.expect_err("refused");
    assert_eq!(e.code, 1235, "{sql}: {e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn column_references_bind_to_real_columns_and_unlinked_subqueries_are_refused() {
    let env = ShardedEnv::start_with_tables("", CUSTOMERS_RULE).await;
    env.sandbox
        .server(0)
        .sql(&format!("CREATE DATABASE plain; USE plain; {}", setup()))
        .expect("reference database");
    let mut outside = Client::connect(env.proxy.addr.port(), "app", "app", None)
        .await
        .expect("login");
    outside.query("CREATE DATABASE shop").await.expect("logical schema");
    let mut client = env.client().await;
    for statement in setup().split(';').filter(|s| !s.trim().is_empty()) {
        client.query(statement).await.expect(statement);
    }

    answered_alike(&env, &mut client, EXISTS_UNQUALIFIED).await;
    answered_alike(&env, &mut client, IN_CUSTOMER_ID).await;

    env.sandbox
        .server(0)
        .sql(&format!("USE plain; {ADD_ID}; {FILL_ID}"))
        .expect("reference DDL");
    client.query(ADD_ID).await.expect("DDL through Tessera");
    client.query(FILL_ID).await.expect("UPDATE through Tessera");

    refused_by_all(&env, &mut client, IN_ORDERS_ID).await;
    refused_by_all(&env, &mut client, EXISTS_UNQUALIFIED).await;
    answered_alike(&env, &mut client, IN_CUSTOMER_ID).await;
    answered_alike(
        &env,
        &mut client,
        "SELECT c.id, o.id FROM customers c JOIN orders o ON o.customer_id = c.id WHERE o.amount = 0 ORDER BY c.id",
    )
    .await;
    refused_by_all(
        &env,
        &mut client,
        "SELECT c.id FROM customers c JOIN orders o ON o.customer_id = c.id OR o.amount = 1 ORDER BY c.id",
    )
    .await;
}
