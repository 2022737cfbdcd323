//! Sharding end to end: two MariaDB servers as groups g0 and g1 holding four shards of the
//! logical schema `shop`, an in-process Tessera in front. Rows are checked on the shard
//! databases directly, where the documented shard function says they live.

use crate::common;

use common::shards::{crc32_shard, crc32_text_shard, ShardedEnv};
use common::Client;

/// The servers and Tessera, the shard databases of `shop` and its `orders` table on every
/// shard, and a client on `shop`.
async fn shop_with_orders() -> (ShardedEnv, Client) {
    let env = ShardedEnv::start("").await;
    let mut c = env.client().await;
    c.query("CREATE DATABASE shop").await.expect("shard databases");
    c.query("CREATE TABLE orders (id INT PRIMARY KEY, customer_id BIGINT, note VARCHAR(20))")
        .await
        .expect("ddl on every shard");
    (env, c)
}

/// A client on `shop` that takes LOAD DATA LOCAL INFILE file requests.
async fn local_files_client(env: &ShardedEnv) -> Client {
    Client::connect_with(
        env.proxy.addr.port(),
        "app",
        "app",
        Some("shop"),
        tessera_protocol::flags::CLIENT_LOCAL_FILES,
    )
    .await
    .expect("login with LOCAL INFILE")
}

/// A COM_QUERY packet's payload.
fn com_query(sql: &str) -> Vec<u8> {
    let mut command = vec![0x03u8];
    command.extend_from_slice(sql.as_bytes());
    command
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sharded_schema_takes_ddl_writes_transactions_and_point_reads() {
    let (env, mut c) = shop_with_orders().await;
    c.query("CREATE TABLE products (id INT PRIMARY KEY, name VARCHAR(20))")
        .await
        .expect("broadcast ddl");
    for i in 0..4 {
        assert_eq!(env.count_on(i, "orders"), 0, "table exists on shard {i}");
    }

    // A multi-row INSERT is split by key; every row lands where the hash says.
    let rows: Vec<String> = (1..=20).map(|k| format!("({k}, {k}, 'n{k}')")).collect();
    let ok = c
        .query(&format!(
            "INSERT INTO orders (id, customer_id, note) VALUES {}",
            rows.join(", ")
        ))
        .await;
    ok.expect("split insert");
    for k in 1..=20i64 {
        let shard = crc32_shard(k);
        assert_eq!(
            env.on_shard(shard, &format!("SELECT COUNT(*) FROM orders WHERE id = {k}")),
            "1",
            "row {k} on shard {shard}"
        );
    }
    assert_eq!((0..4).map(|i| env.count_on(i, "orders")).sum::<u64>(), 20);

    // Point reads by key, text and prepared.
    assert_eq!(
        c.value("SELECT note FROM orders WHERE customer_id = 7")
            .await
            .as_deref(),
        Some("n7")
    );
    assert_eq!(
        c.value("SELECT note FROM shop.orders WHERE customer_id = '13'")
            .await
            .as_deref(),
        Some("n13")
    );
    let (id, _, _) = c
        .prepare("SELECT note FROM orders WHERE customer_id = ?")
        .await
        .expect("prepare");
    let r = c.execute(id, &[Some("11")]).await.expect("execute");
    assert_eq!(r, vec![vec![Some("n11".to_string())]]);

    // A multi-row INSERT whose last row is a duplicate leaves no row on any shard.
    let e = c
        .query("INSERT INTO orders (id, customer_id, note) VALUES (100, 100, 'a'), (101, 101, 'b'), (102, 102, 'c'), (7, 7, 'dup')")
        .await
        .expect_err("duplicate key");
    assert_eq!(e.code, 1062);
    assert_eq!(
        (0..4).map(|i| env.count_on(i, "orders")).sum::<u64>(),
        20,
        "nothing of the failed insert stays"
    );

    // UPDATE on every shard: affected rows summed as one server would.
    c.query("UPDATE orders SET note = 'x' WHERE id <= 10")
        .await
        .expect("update all");
    assert_eq!(c.value("SELECT ROW_COUNT()").await.as_deref(), Some("10"));

    // A transaction over two shards: ROLLBACK reaches both, COMMIT reaches both.
    let (a, b) = (
        1000i64,
        (1001..)
            .find(|k| crc32_shard(*k) != crc32_shard(1000))
            .expect("another shard"),
    );
    c.query("BEGIN").await.expect("begin");
    c.query(&format!("INSERT INTO orders (id, customer_id) VALUES ({a}, {a})"))
        .await
        .expect("first");
    c.query(&format!("INSERT INTO orders (id, customer_id) VALUES ({b}, {b})"))
        .await
        .expect("second");
    c.query("ROLLBACK").await.expect("rollback");
    assert_eq!(
        (0..4).map(|i| env.count_on(i, "orders")).sum::<u64>(),
        20,
        "rolled back on both shards"
    );
    c.query("BEGIN").await.expect("begin");
    c.query(&format!("INSERT INTO orders (id, customer_id) VALUES ({a}, {a})"))
        .await
        .expect("first");
    c.query(&format!("INSERT INTO orders (id, customer_id) VALUES ({b}, {b})"))
        .await
        .expect("second");
    c.query("COMMIT").await.expect("commit");
    assert_eq!(
        (0..4).map(|i| env.count_on(i, "orders")).sum::<u64>(),
        22,
        "committed on both shards"
    );

    // Broadcast writes reach every shard.
    c.query("INSERT INTO products (id, name) VALUES (1, 'p1')")
        .await
        .expect("broadcast insert");
    for i in 0..4 {
        assert_eq!(env.count_on(i, "products"), 1, "products on shard {i}");
    }

    // Refusals are clear MySQL errors, and EXPLAIN ROUTE says where a statement goes.
    let e = c
        .query("UPDATE orders SET customer_id = 5 WHERE id = 1")
        .await
        .expect_err("shard key update");
    assert_eq!(e.code, 1235);
    assert!(e.message.contains("shard key"), "{}", e.message);
    let plan = c
        .query("EXPLAIN ROUTE SELECT * FROM orders WHERE customer_id = 7")
        .await
        .expect("explain");
    let shard = crc32_shard(7).to_string();
    assert!(plan.iter().any(|r| r[1].as_deref() == Some(shard.as_str())), "{plan:?}");
    assert_eq!(c.value("SELECT DATABASE()").await.as_deref(), Some("shop"));

    // AUTO_INCREMENT shard keys come from Tessera's sequence: unique over shards, reported as
    // the insert id and LAST_INSERT_ID() (the first row's, as MariaDB does).
    c.query("CREATE TABLE items (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT)")
        .await
        .expect("items");
    c.query("INSERT INTO items (v) VALUES (1), (2), (3), (4), (5)")
        .await
        .expect("generated keys");
    let first: i64 = c
        .value("SELECT LAST_INSERT_ID()")
        .await
        .expect("id")
        .parse()
        .expect("number");
    c.query("INSERT INTO items (v) VALUES (6)").await.expect("one more");
    let ids: Vec<i64> = (0..4)
        .flat_map(|i| {
            env.on_shard(i, "SELECT id FROM items")
                .lines()
                .map(|l| l.parse::<i64>().expect("id"))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        (first..first + 6).collect::<Vec<_>>(),
        "six distinct ids from {first}"
    );
    for id in ids {
        assert_eq!(
            env.on_shard(crc32_shard(id), &format!("SELECT COUNT(*) FROM items WHERE id = {id}")),
            "1"
        );
    }

    // LOAD DATA LOCAL INFILE is split by key: every record on its shard, all or nothing.
    let mut loader = local_files_client(&env).await;
    let sql = "LOAD DATA LOCAL INFILE 'orders.csv' INTO TABLE orders FIELDS TERMINATED BY ',' ENCLOSED BY '\"' IGNORE 1 LINES (id, customer_id, note)";
    let request = loader.raw(&com_query(sql)).await;
    assert_eq!(request[0], 0xfb, "Tessera asks for the file");
    let file: String = std::iter::once("id,customer_id,note\n".to_string())
        .chain((3001..3041).map(|k| format!("{k},{k},\"n,{k}\"\n")))
        .collect();
    loader.io.write_packet(&file.as_bytes()[..100]);
    loader.io.write_packet(&file.as_bytes()[100..]);
    loader.io.write_packet(&[]);
    loader.io.flush().await.expect("file sent");
    let ok = loader.io.read_packet().await.expect("answer");
    assert_eq!(ok[0], 0, "OK after the load: {ok:?}");
    for k in 3001..3041i64 {
        let note = env.on_shard(crc32_shard(k), &format!("SELECT note FROM orders WHERE id = {k}"));
        assert_eq!(note, format!("n,{k}"), "row {k} on its shard");
    }
    assert_eq!((0..4).map(|i| env.count_on(i, "orders")).sum::<u64>(), 62);
    // A record no shard can take fails the whole load: no shard keeps any of its rows.
    let sql = "LOAD DATA LOCAL INFILE 'bad.csv' INTO TABLE orders FIELDS TERMINATED BY ',' (id, customer_id, note)";
    assert_eq!(loader.raw(&com_query(sql)).await[0], 0xfb);
    loader.io.write_packet(b"4001,4001,x\n4002,4002,y\n4003,abc,z\n");
    loader.io.write_packet(&[]);
    loader.io.flush().await.expect("file sent");
    let err = loader.io.read_packet().await.expect("answer");
    assert_eq!(err[0], 0xff, "an error: {err:?}");
    assert_eq!(u16::from_le_bytes([err[1], err[2]]), 1366);
    assert_eq!(
        (0..4).map(|i| env.count_on(i, "orders")).sum::<u64>(),
        62,
        "nothing of the failed load"
    );

    // Metadata shows the logical schema.
    let tables = c.query("SHOW TABLES").await.expect("show tables");
    assert!(tables.iter().any(|r| r[0].as_deref() == Some("orders")), "{tables:?}");
    let schemas = c
        .query("SELECT DISTINCT TABLE_SCHEMA FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop'")
        .await
        .expect("information_schema");
    assert_eq!(schemas, vec![vec![Some("shop".to_string())]]);

    // Scatter reads merge as one server would answer.
    assert_eq!(c.value("SELECT COUNT(*) FROM orders").await.as_deref(), Some("62"));
    let top = c
        .query("SELECT id FROM orders WHERE id < 3000 ORDER BY id DESC LIMIT 2, 3")
        .await
        .expect("sorted scatter");
    let ids: Vec<_> = top.iter().map(|r| r[0].clone().unwrap_or_default()).collect();
    assert_eq!(ids, ["20", "19", "18"], "after {b} and 1000");
    let sum = c.value("SELECT SUM(customer_id) FROM orders WHERE id <= 20").await;
    assert_eq!(sum.as_deref(), Some("210"));
    let avg = c.value("SELECT AVG(customer_id) FROM orders WHERE id <= 20").await;
    assert_eq!(avg.as_deref(), Some("10.5000"));
    let notes = c
        .query("SELECT note, COUNT(*) FROM orders GROUP BY note HAVING COUNT(*) > 1")
        .await
        .expect("having");
    let expected = vec![
        vec![None, Some("2".to_string())],
        vec![Some("x".to_string()), Some("10".to_string())],
    ];
    assert_eq!(notes, expected, "NULL notes (the transaction's rows) group first");
    let (id, _, _) = c
        .prepare("SELECT note FROM orders WHERE customer_id IN (?, ?) ORDER BY note")
        .await
        .expect("prepare");
    let r = c.execute(id, &[Some("11"), Some("12")]).await.expect("binary scatter");
    assert_eq!(r, vec![vec![Some("n11".to_string())], vec![Some("n12".to_string())]]);

    // Tables joined by their key values (not on their keys) run where the values meet; values
    // on different shards are refused as an unsupported construct.
    let (k1, k2) = (
        1i64,
        (2..)
            .find(|k| crc32_shard(*k) != crc32_shard(1))
            .expect("another shard"),
    );
    let k3 = (2..).find(|k| crc32_shard(*k) == crc32_shard(1)).expect("same shard");
    c.query(&format!(
        "SELECT o.id FROM orders o, items i WHERE o.customer_id = {k1} AND i.id = {k3}"
    ))
    .await
    .expect("values on one shard");
    let e = c
        .query(&format!(
            "SELECT o.id FROM orders o, items i WHERE o.customer_id = {k1} AND i.id = {k2}"
        ))
        .await
        .expect_err("values on two shards");
    assert_eq!(e.code, 1235, "{}", e.message);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cross_shard_commit_ends_as_its_options_and_completion_type_say() {
    let (env, mut c) = shop_with_orders().await;
    let other = (2..)
        .find(|k| crc32_shard(*k) != crc32_shard(1))
        .expect("another shard");
    let insert = |k: i64| format!("INSERT INTO orders (id, customer_id) VALUES ({k}, {k})");
    let total = |env: &ShardedEnv| (0..4).map(|i| env.count_on(i, "orders")).sum::<u64>();

    // AND CHAIN NO RELEASE: the next transaction begins at once, the connection stays.
    c.query("BEGIN").await.expect("begin");
    c.query(&insert(1)).await.expect("first shard");
    c.query(&insert(other)).await.expect("second shard");
    c.query("COMMIT AND CHAIN NO RELEASE").await.expect("commit and chain");
    assert_eq!(total(&env), 2, "committed on both shards");
    assert_eq!(
        c.value("SELECT @@in_transaction").await.as_deref(),
        Some("1"),
        "chained"
    );
    c.query(&insert(other + 1000))
        .await
        .expect("in the chained transaction");
    c.query("ROLLBACK").await.expect("rollback");
    assert_eq!(total(&env), 2, "the chained transaction rolled back");

    // completion_type RELEASE: the cross-shard COMMIT commits on both, then the client closes.
    c.query("SET completion_type = 'RELEASE'").await.expect("release");
    c.query("BEGIN").await.expect("begin");
    c.query(&insert(3)).await.expect("a shard");
    c.query(&insert(other + 2000)).await.expect("another");
    c.query("COMMIT").await.expect("commit answers OK");
    assert!(c.is_closed().await, "COMMIT with completion_type RELEASE closes");
    assert_eq!(total(&env), 4, "committed before the close");

    let mut d = env.client().await;
    d.query("BEGIN").await.expect("begin");
    d.query(&insert(5)).await.expect("a shard");
    d.query("ROLLBACK RELEASE").await.expect("rollback release");
    assert!(d.is_closed().await, "ROLLBACK RELEASE closes");
    assert_eq!(total(&env), 4, "rolled back");
}

/// Under `NO_BACKSLASH_ESCAPES` a backslash in a string is itself: a prepared statement that
/// runs on several shards (its parameters inlined as text) finds the rows holding one, as it
/// does in the default mode.
#[tokio::test(flavor = "multi_thread")]
async fn a_scatter_execution_inlines_backslashes_as_the_sql_mode_reads_them() {
    let (env, mut c) = shop_with_orders().await;
    c.query(r"INSERT INTO orders (id, customer_id, note) VALUES (1, 1, 'x\\y'), (2, 2, 'x\\y'), (3, 3, 'z')")
        .await
        .expect("insert in the default mode");
    let lengths: Vec<String> = (1..=2i64)
        .map(|k| {
            env.on_shard(
                crc32_shard(k),
                &format!("SELECT LENGTH(note) FROM orders WHERE id = {k}"),
            )
        })
        .collect();
    assert_eq!(lengths, ["3", "3"], "one backslash stored");
    let (id, _, _) = c
        .prepare("SELECT CONCAT(id) FROM orders WHERE note = ? ORDER BY id")
        .await
        .expect("prepare");
    let ids = |v: &[i64]| -> Vec<Vec<Option<String>>> { v.iter().map(|k| vec![Some(k.to_string())]).collect() };
    let found = c.execute(id, &[Some(r"x\y")]).await.expect("scatter");
    assert_eq!(found, ids(&[1, 2]), "default mode");
    c.query("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')")
        .await
        .expect("set mode");
    let found = c.execute(id, &[Some(r"x\y")]).await.expect("scatter");
    assert_eq!(found, ids(&[1, 2]), "NO_BACKSLASH_ESCAPES");
    let found = c.execute(id, &[Some(r"x\\y")]).await.expect("scatter");
    assert_eq!(found, ids(&[]), "two backslashes are another value");
}

const NO_BACKSLASH_ESCAPES: &str = "SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')";

/// A prepared statement keeps the reading of its PREPARE after the session turns on
/// `NO_BACKSLASH_ESCAPES`, as the server does: on one shard its handle is parsed under the
/// variables of the PREPARE; over several shards, where its text would run under the new
/// mode, it is refused with a clear error, unless its text reads alike in both modes.
#[tokio::test(flavor = "multi_thread")]
async fn a_prepared_statement_keeps_its_reading_on_one_shard_and_is_refused_over_several() {
    let (_env, mut c) = shop_with_orders().await;
    c.query("INSERT INTO orders (id, customer_id, note) VALUES (1, 1, 'n1'), (2, 2, 'n2')")
        .await
        .expect("insert");
    let (one, _, _) = c
        .prepare(r"SELECT CONCAT(LENGTH('a\nb'), note) FROM orders WHERE customer_id = ?")
        .await
        .expect("prepare");
    let (several, _, _) = c
        .prepare(r"SELECT CONCAT(LENGTH('a\nb'), note) FROM orders WHERE customer_id IN (1, ?) ORDER BY id")
        .await
        .expect("prepare");
    let (plain, _, _) = c
        .prepare("SELECT note FROM orders WHERE customer_id IN (1, ?) ORDER BY id")
        .await
        .expect("prepare");
    c.query(NO_BACKSLASH_ESCAPES).await.expect("set mode");
    for _ in 0..2 {
        let row = c.execute(one, &[Some("2")]).await.expect("one shard");
        assert_eq!(row, vec![vec![Some("3n2".to_string())]], "read as at PREPARE");
        let err = c.execute(several, &[Some("2")]).await.expect_err("refused");
        assert_eq!(err.code, 1235, "{}", err.message);
        assert!(err.message.contains("sql_mode"), "{}", err.message);
        let rows = c.execute(plain, &[Some("2")]).await.expect("reads alike");
        assert_eq!(rows, vec![vec![Some("n1".to_string())], vec![Some("n2".to_string())]]);
    }
}

/// Under `NO_BACKSLASH_ESCAPES` a backslash in a string is itself: a string shard key holding
/// one goes to the shard of the value the server stores, where a default-mode session and a
/// prepared statement find it. A string the mode ends at a backslash, and a scatter that would
/// merge with a separator read the default way, are refused rather than answered wrongly.
#[tokio::test(flavor = "multi_thread")]
async fn string_keys_with_backslashes_go_where_the_sql_mode_reads_them() {
    let (env, mut c) = shop_with_orders().await;
    c.query("CREATE TABLE labels (label VARCHAR(20) PRIMARY KEY, n INT)")
        .await
        .expect("ddl");
    // A key whose default-mode reading (`\y` is `y`) hashes to another shard.
    let key = (0..)
        .map(|i| format!(r"k{i}\y"))
        .find(|k| crc32_text_shard(k) != crc32_text_shard(&k.replace('\\', "")))
        .expect("a key");
    let mut d = env.client().await;
    d.query("INSERT INTO labels (label, n) VALUES ('p', 2), ('q', 3), ('r', 4), ('s', 5)")
        .await
        .expect("default-mode rows");
    c.query(NO_BACKSLASH_ESCAPES).await.expect("set mode");
    c.query(&format!("INSERT INTO labels (label, n) VALUES ('{key}', 1)"))
        .await
        .expect("insert under the mode");
    let home = crc32_text_shard(&key);
    let find = format!("SELECT n FROM labels WHERE label = '{}'", key.replace('\\', r"\\"));
    assert_eq!(env.on_shard(home, &find), "1", "on the shard of the stored value {key}");
    let under_mode = format!("SELECT n FROM labels WHERE label = '{key}'");
    assert_eq!(c.value(&under_mode).await.as_deref(), Some("1"), "read under the mode");
    assert_eq!(d.value(&find).await.as_deref(), Some("1"), "read in the default mode");
    let (id, _, _) = c
        .prepare("SELECT CONCAT(n) FROM labels WHERE label = ?")
        .await
        .expect("prepare");
    let found = c.execute(id, &[Some(&key)]).await.expect("execute");
    assert_eq!(found, vec![vec![Some("1".to_string())]], "a bound parameter");

    let e = c
        .query(r"SELECT n FROM labels WHERE label = 'a\' OR n = 2")
        .await
        .expect_err("a string ending in a backslash");
    assert_eq!(e.code, 1235, "{}", e.message);
    assert!(e.message.contains("NO_BACKSLASH_ESCAPES"), "{}", e.message);

    let concat = r"SELECT GROUP_CONCAT(label ORDER BY label SEPARATOR '\t') FROM labels WHERE n > 1";
    assert_eq!(
        d.value(concat).await.as_deref(),
        Some("p\tq\tr\ts"),
        "default mode: a tab between values"
    );
    let e = c
        .query(concat)
        .await
        .expect_err("the mode reads the separator as two characters");
    assert_eq!(e.code, 1235, "{}", e.message);
}

/// GROUP_CONCAT's separator belongs to the plan: two statements that differ only in it each
/// merge with their own.
#[tokio::test(flavor = "multi_thread")]
async fn each_separator_merges_its_own_statement() {
    let (_env, mut c) = shop_with_orders().await;
    c.query("INSERT INTO orders (id, customer_id, note) VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c'), (4, 4, 'd')")
        .await
        .expect("rows on several shards");
    for separator in [",", ";", " | ", ""] {
        let sql = format!("SELECT GROUP_CONCAT(note ORDER BY note SEPARATOR '{separator}') FROM orders");
        let want = ["a", "b", "c", "d"].join(separator);
        assert_eq!(c.value(&sql).await.as_deref(), Some(want.as_str()), "{sql}");
    }
}

/// A UNION's ORDER BY position belongs to the plan: two statements that differ only in it
/// each sort by their own column.
#[tokio::test(flavor = "multi_thread")]
async fn each_union_sorts_by_its_own_position() {
    let (_env, mut c) = shop_with_orders().await;
    c.query("INSERT INTO orders (id, customer_id, note) VALUES (1, 1, 'd'), (2, 2, 'c'), (3, 3, 'b'), (4, 4, 'a')")
        .await
        .expect("rows on several shards");
    for (position, want) in [(1, "1,2,3,4"), (2, "4,3,2,1"), (1, "1,2,3,4")] {
        let sql = format!(
            "SELECT id, note FROM orders WHERE id <= 2 UNION ALL SELECT id, note FROM orders WHERE id > 2 ORDER BY {position}"
        );
        let rows = c.query(&sql).await.expect("union");
        let got: Vec<String> = rows.iter().map(|r| r[0].clone().unwrap_or_default()).collect();
        assert_eq!(got.join(","), want, "{sql}");
    }
}

/// Under `NO_BACKSLASH_ESCAPES` LOAD DATA's strings keep their backslashes: Tessera asks the
/// client for the file it names and splits the records by the terminator the shards read.
#[tokio::test(flavor = "multi_thread")]
async fn load_data_reads_its_strings_under_no_backslash_escapes() {
    let (env, _c) = shop_with_orders().await;
    let mut loader = local_files_client(&env).await;
    loader.query(NO_BACKSLASH_ESCAPES).await.expect("set mode");
    let sql = r"LOAD DATA LOCAL INFILE 'C:\in\orders.csv' INTO TABLE orders FIELDS TERMINATED BY '\t' ESCAPED BY '' (id, customer_id, note)";
    let request = loader.raw(&com_query(sql)).await;
    assert_eq!(
        &request[..],
        &b"\xfbC:\\in\\orders.csv"[..],
        "the file the statement names"
    );
    let file: String = (5001..5021).map(|k| format!("{k}\\t{k}\\tn{k}\n")).collect();
    loader.io.write_packet(file.as_bytes());
    loader.io.write_packet(&[]);
    loader.io.flush().await.expect("file sent");
    let ok = loader.io.read_packet().await.expect("answer");
    assert_eq!(ok[0], 0, "OK after the load: {ok:?}");
    for k in 5001..5021i64 {
        let note = env.on_shard(crc32_shard(k), &format!("SELECT note FROM orders WHERE id = {k}"));
        assert_eq!(note, format!("n{k}"), "row {k} on its shard");
    }
}
