//! A logical schema named from anywhere: CREATE / DROP DATABASE of `shop` from a session with
//! no default database or another one makes and removes the shard databases (never a plain
//! `shop` on the first group), and `shop.table` is planned for `shop` whatever the default
//! database; a statement that mixes `shop` with another database is refused.

use crate::common::shards::{crc32_shard, ShardedEnv};
use crate::common::Client;

async fn client_in(env: &ShardedEnv, db: Option<&str>) -> Client {
    Client::connect(env.proxy.addr.port(), "app", "app", db)
        .await
        .expect("login")
}

/// The databases on server `i` whose names start with `shop`.
fn shop_databases(env: &ShardedEnv, i: usize) -> String {
    env.on_server(
        i,
        "SELECT GROUP_CONCAT(SCHEMA_NAME ORDER BY SCHEMA_NAME) FROM information_schema.SCHEMATA \
         WHERE SCHEMA_NAME LIKE 'shop%'",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_and_drop_database_of_a_logical_schema_work_from_anywhere() {
    let env = ShardedEnv::start("").await;
    let mut outside = client_in(&env, None).await;
    outside
        .query("CREATE DATABASE shop")
        .await
        .expect("create from no database");
    assert_eq!(shop_databases(&env, 0), "shop_0,shop_1", "no plain `shop` on g0");
    assert_eq!(shop_databases(&env, 1), "shop_2,shop_3");
    let again = outside.query("CREATE DATABASE shop").await.expect_err("exists");
    assert_eq!(again.code, 1007, "as one server answers: {again:?}");
    assert!(
        again.message.contains("'shop'"),
        "names the logical schema: {}",
        again.message
    );
    outside
        .query("CREATE DATABASE /*!32312 IF NOT EXISTS*/ `shop` /*!40100 DEFAULT CHARACTER SET utf8mb4 */")
        .await
        .expect("mariadb-dump's form");

    let mut in_test = client_in(&env, Some("test")).await;
    in_test.query("DROP DATABASE shop").await.expect("drop from test");
    assert_eq!(shop_databases(&env, 0), "NULL");
    assert_eq!(shop_databases(&env, 1), "NULL");
    let gone = in_test.query("DROP DATABASE shop").await.expect_err("gone");
    assert_eq!(gone.code, 1008, "{gone:?}");
    in_test.query("DROP DATABASE IF EXISTS shop").await.expect("if exists");
    in_test
        .query("CREATE SCHEMA IF NOT EXISTS shop")
        .await
        .expect("create from test");
    assert_eq!(shop_databases(&env, 1), "shop_2,shop_3");

    let mut inside = client_in(&env, Some("shop")).await;
    inside.query("DROP DATABASE shop").await.expect("drop from inside");
    assert_eq!(
        inside.value("SELECT DATABASE()").await,
        None,
        "no default database left"
    );
    assert_eq!(shop_databases(&env, 0), "NULL");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qualified_names_route_to_the_logical_schema_from_any_default_database() {
    let env = ShardedEnv::start("").await;
    let mut outside = client_in(&env, None).await;
    outside.query("CREATE DATABASE shop").await.expect("shard databases");
    outside
        .query("CREATE TABLE shop.orders (id INT PRIMARY KEY, customer_id BIGINT, amount INT)")
        .await
        .expect("DDL on every shard");
    for i in 0..4 {
        assert_eq!(env.count_on(i, "orders"), 0, "the table is on shard {i}");
    }
    let rows: Vec<String> = (1..=20).map(|k| format!("({k}, {k}, {})", k % 3)).collect();
    outside
        .query(&format!(
            "INSERT INTO shop.orders (id, customer_id, amount) VALUES {}",
            rows.join(", ")
        ))
        .await
        .expect("split insert from no database");
    for k in 1..=20i64 {
        let on = env.on_shard(crc32_shard(k), &format!("SELECT COUNT(*) FROM orders WHERE id = {k}"));
        assert_eq!(on, "1", "row {k} where the hash says");
    }
    let mut in_test = client_in(&env, Some("test")).await;
    for c in [&mut outside, &mut in_test] {
        assert_eq!(c.value("SELECT COUNT(*) FROM shop.orders").await.as_deref(), Some("20"));
        assert_eq!(
            c.value("SELECT SUM(amount) FROM `shop`.`orders` WHERE amount > 0")
                .await
                .as_deref(),
            Some("21")
        );
        assert_eq!(
            c.value("SELECT amount FROM shop.orders WHERE customer_id = 7")
                .await
                .as_deref(),
            Some("1")
        );
    }
    in_test
        .query("UPDATE shop.orders SET amount = 10 WHERE customer_id = 5")
        .await
        .expect("point update from test");
    assert_eq!(
        env.on_shard(crc32_shard(5), "SELECT amount FROM orders WHERE id = 5"),
        "10"
    );
    in_test
        .query("CREATE TABLE test.local_t (id INT)")
        .await
        .expect("a table of test");
    let mixed = in_test
        .query("SELECT COUNT(*) FROM shop.orders o JOIN local_t l ON l.id = o.id")
        .await
        .expect_err("mixing shop and test is refused");
    assert_eq!(mixed.code, 1235, "{mixed:?}");
    assert!(mixed.message.contains("local_t"), "{}", mixed.message);
    assert_eq!(
        env.on_server(
            0,
            "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'shop'"
        ),
        "0",
        "nothing ever went to a plain `shop`"
    );
}
