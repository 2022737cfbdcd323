//! Transactions across shards end to end: one written shard commits in one phase, two or more
//! with XA and a durable decision; ROLLBACK, deadlocks and lost shards end every branch;
//! recovery follows the decision log; the client's own XA stays on one shard.

use crate::common;

use common::shards::{crc32_shard, key_where, ShardedEnv};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

const XA_SETTINGS: &str = "xa_recovery_interval_ms = 100\nxa_resolve_after_ms = 300\ncross_shard_lock_wait_s = 1";

async fn ready(env: &ShardedEnv) -> common::Client {
    let mut c = env.client().await;
    c.query("CREATE DATABASE shop").await.expect("shard databases");
    c.query("CREATE TABLE orders (id INT PRIMARY KEY, customer_id BIGINT, note VARCHAR(20), KEY (customer_id))")
        .await
        .expect("table");
    c
}

fn commits(env: &ShardedEnv) -> (u64, u64) {
    let m = &env.proxy.ctx.metrics;
    (
        m.commits_one_phase.load(Ordering::Relaxed),
        m.commits_two_phase.load(Ordering::Relaxed),
    )
}

fn total_orders(env: &ShardedEnv, filter: &str) -> u64 {
    (0..4)
        .map(|i| {
            env.on_shard(i, &format!("SELECT COUNT(*) FROM orders WHERE {filter}"))
                .parse::<u64>()
                .expect("count")
        })
        .sum()
}

fn in_doubt(env: &ShardedEnv) -> usize {
    (0..2)
        .map(|s| {
            env.on_server(s, "XA RECOVER")
                .lines()
                .filter(|l| l.contains("tsr:"))
                .count()
        })
        .sum()
}

/// Polls `done` until it holds (bounded).
async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn commits_are_one_phase_for_one_written_shard_and_two_phase_for_more() {
    let env = ShardedEnv::start(XA_SETTINGS).await;
    let mut c = ready(&env).await;
    let a = key_where(1, |s| s == 0);
    let b = key_where(1, |s| s == 2);
    let ins = |id: i64, k: i64| format!("INSERT INTO orders (id, customer_id) VALUES ({id}, {k})");

    // One shard written: plain COMMIT.
    let before = commits(&env);
    c.query("START TRANSACTION").await.expect("begin");
    c.query(&ins(1, a)).await.expect("insert");
    c.query("COMMIT").await.expect("commit");
    assert_eq!(commits(&env), (before.0 + 1, before.1));

    // The next transaction starting on the shard the last one ended on is a transaction too.
    c.query("BEGIN").await.expect("begin");
    c.query(&ins(100, a)).await.expect("insert on the same shard");
    c.query("ROLLBACK").await.expect("rollback");
    assert_eq!(
        total_orders(&env, "id = 100"),
        0,
        "the insert was inside the transaction"
    );

    // One shard written, another read: still one phase.
    c.query("BEGIN").await.expect("begin");
    c.query(&ins(2, a)).await.expect("insert");
    c.query(&format!("SELECT * FROM orders WHERE customer_id = {b}"))
        .await
        .expect("read");
    c.query("COMMIT").await.expect("commit");
    assert_eq!(commits(&env), (before.0 + 2, before.1));

    // Two shards written: XA, both rows visible, the decision logged, nothing in doubt.
    c.query("BEGIN").await.expect("begin");
    c.query(&ins(3, a)).await.expect("insert a");
    c.query(&ins(4, b)).await.expect("insert b");
    c.query("COMMIT").await.expect("commit");
    assert_eq!(commits(&env), (before.0 + 2, before.1 + 1));
    assert_eq!(
        env.on_shard(crc32_shard(a), "SELECT COUNT(*) FROM orders WHERE id = 3"),
        "1"
    );
    assert_eq!(
        env.on_shard(crc32_shard(b), "SELECT COUNT(*) FROM orders WHERE id = 4"),
        "1"
    );
    assert_eq!(
        env.on_server(0, "SELECT outcome FROM tessera.xa_decisions"),
        "commit",
        "the decision is on the coordinator's group (shard 0 is on g0)"
    );
    assert_eq!(in_doubt(&env), 0);

    // ROLLBACK across shards leaves nothing.
    c.query("BEGIN").await.expect("begin");
    c.query(&ins(5, a)).await.expect("insert a");
    c.query(&ins(6, b)).await.expect("insert b");
    c.query("ROLLBACK").await.expect("rollback");
    assert_eq!(total_orders(&env, "id IN (5, 6)"), 0);

    // An autocommit INSERT split over shards is atomic the same way.
    c.query(&format!(
        "INSERT INTO orders (id, customer_id) VALUES (7, {a}), (8, {b})"
    ))
    .await
    .expect("split insert");
    assert_eq!(commits(&env).1, before.1 + 2);
    assert_eq!(total_orders(&env, "id IN (7, 8)"), 2);

    // A duplicate on the second shard undoes the first shard's row too.
    let e = c
        .query(&format!(
            "INSERT INTO orders (id, customer_id) VALUES (9, {a}), (4, {b})"
        ))
        .await
        .expect_err("duplicate key");
    assert_eq!(e.code, 1062);
    assert_eq!(total_orders(&env, "id = 9"), 0);
    assert_eq!(in_doubt(&env), 0);

    // Prepared statements take the same path.
    let (id, _, _) = c
        .prepare("INSERT INTO orders (id, customer_id) VALUES (?, ?)")
        .await
        .expect("prepare");
    c.query("BEGIN").await.expect("begin");
    c.execute(id, &[Some("10"), Some(&a.to_string())])
        .await
        .expect("exec a");
    c.execute(id, &[Some("11"), Some(&b.to_string())])
        .await
        .expect("exec b");
    c.query("COMMIT").await.expect("commit");
    assert_eq!(commits(&env).1, before.1 + 3);
    assert_eq!(total_orders(&env, "id IN (10, 11)"), 2);

    // With autocommit off every statement is in a transaction, across shards too.
    c.query("SET autocommit = 0").await.expect("autocommit off");
    c.query(&ins(12, a)).await.expect("insert a");
    c.query(&ins(13, b)).await.expect("insert b");
    c.query("ROLLBACK").await.expect("rollback");
    assert_eq!(total_orders(&env, "id IN (12, 13)"), 0);
    c.query(&ins(14, a)).await.expect("insert a");
    c.query(&ins(15, b)).await.expect("insert b");
    c.query("SET autocommit = 1").await.expect("commits");
    assert_eq!(commits(&env).1, before.1 + 4);
    assert_eq!(total_orders(&env, "id IN (14, 15)"), 2);
    assert_eq!(in_doubt(&env), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deadlock_in_a_transaction_across_shards_rolls_back_every_branch() {
    let env = ShardedEnv::start(XA_SETTINGS).await;
    let mut setup = ready(&env).await;
    let x = key_where(1, |s| s == 3);
    let (p, q) = (key_where(1, |s| s == 1), key_where(100, |s| s == 1));
    for (id, k) in [(1, x), (2, p), (3, q)] {
        setup
            .query(&format!(
                "INSERT INTO orders (id, customer_id, note) VALUES ({id}, {k}, 'old')"
            ))
            .await
            .expect("row");
    }
    let mut c1 = env.client().await;
    let mut c2 = env.client().await;
    // c1 holds shard 3 (its coordinator) and row p on shard 1; c2 holds row q on shard 1.
    c1.query("BEGIN").await.expect("begin");
    c1.query(&format!("UPDATE orders SET note = 'c1' WHERE customer_id = {x}"))
        .await
        .expect("x");
    c1.query(&format!("UPDATE orders SET note = 'c1' WHERE customer_id = {p}"))
        .await
        .expect("p");
    c2.query("BEGIN").await.expect("begin");
    c2.query(&format!("UPDATE orders SET note = 'c2' WHERE customer_id = {q}"))
        .await
        .expect("q");
    let blocked = tokio::spawn(async move {
        let r = c1
            .query(&format!("UPDATE orders SET note = 'c1' WHERE customer_id = {q}"))
            .await;
        (c1, r)
    });
    // Wait until c1's update waits for c2's lock, then close the cycle.
    wait_for("c1 to wait for a row lock", || {
        env.on_server(0, "SELECT COUNT(*) FROM information_schema.INNODB_LOCK_WAITS") != "0"
    })
    .await;
    let r2 = c2
        .query(&format!("UPDATE orders SET note = 'c2' WHERE customer_id = {p}"))
        .await;
    let (mut c1, r1) = blocked.await.expect("task");
    let codes = (r1.as_ref().err().map(|e| e.code), r2.as_ref().err().map(|e| e.code));
    match codes {
        (Some(code), None) => {
            assert!(code == 1213 || code == 1205, "c1 failed with {code}");
            // c1's whole transaction is gone, also on its coordinator shard.
            assert_eq!(
                env.on_shard(3, &format!("SELECT note FROM orders WHERE customer_id = {x}")),
                "old"
            );
            c2.query("COMMIT").await.expect("c2 commits");
            c1.query("COMMIT").await.expect("nothing to commit");
            assert_eq!(
                env.on_shard(1, &format!("SELECT note FROM orders WHERE customer_id = {p}")),
                "c2"
            );
        }
        (None, Some(1213)) => {
            c1.query("COMMIT").await.expect("c1 commits");
            assert_eq!(
                env.on_shard(3, &format!("SELECT note FROM orders WHERE customer_id = {x}")),
                "c1"
            );
            assert_eq!(
                env.on_shard(1, &format!("SELECT note FROM orders WHERE customer_id = {q}")),
                "c1"
            );
        }
        other => panic!("expected exactly one victim, got {other:?}"),
    }
    assert_eq!(in_doubt(&env), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn recovery_commits_what_the_log_decided_and_rolls_back_the_rest() {
    let env = ShardedEnv::start(XA_SETTINGS).await;
    let _c = ready(&env).await;
    let scans = || env.proxy.ctx.metrics.xa_recovery_scans.load(Ordering::Relaxed);
    wait_for("a first recovery scan", || scans() >= 1).await;
    // Two branches prepared on shard 2 (server 1) by a "dead" Tessera; only the first has a
    // commit decision on g0.
    for (n, id) in [(1, 101), (2, 102)] {
        env.on_server(
            1,
            &format!(
                "XA START 'tsr:0000dead:{n}@g0','shop_2',29811; \
                 INSERT INTO shop_2.orders (id, customer_id) VALUES ({id}, 0); \
                 XA END 'tsr:0000dead:{n}@g0','shop_2',29811; XA PREPARE 'tsr:0000dead:{n}@g0','shop_2',29811;"
            ),
        );
    }
    env.on_server(
        0,
        "INSERT INTO tessera.xa_decisions (gtrid, outcome) VALUES ('tsr:0000dead:1@g0', 'commit')",
    );
    let m = &env.proxy.ctx.metrics;
    wait_for("both branches resolved", || {
        m.xa_recovered_commit.load(Ordering::Relaxed) >= 1 && m.xa_recovered_rollback.load(Ordering::Relaxed) >= 1
    })
    .await;
    assert_eq!(env.on_shard(2, "SELECT GROUP_CONCAT(id) FROM orders"), "101");
    assert_eq!(in_doubt(&env), 0);
    assert_eq!(
        env.on_server(
            0,
            "SELECT outcome FROM tessera.xa_decisions WHERE gtrid = 'tsr:0000dead:2@g0'"
        ),
        "rollback",
        "the rollback was decided (fenced) before it was applied"
    );
    let gauge = || m.xa_in_doubt.load(Ordering::Relaxed);
    let after = scans();
    wait_for("a later scan", || scans() > after).await;
    assert_eq!(gauge(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_clients_own_xa_stays_on_one_shard() {
    let env = ShardedEnv::start(XA_SETTINGS).await;
    let mut c = ready(&env).await;
    let a = key_where(1, |s| s == 1);
    let a2 = key_where(a + 1, |s| s == 1);
    let b = key_where(1, |s| s == 2);
    c.query("XA START 'app1'").await.expect("xa start");
    c.query(&format!("INSERT INTO orders (id, customer_id) VALUES (1, {a})"))
        .await
        .expect("first statement picks the shard");
    c.query(&format!("INSERT INTO orders (id, customer_id) VALUES (2, {a2})"))
        .await
        .expect("same shard");
    let e = c
        .query(&format!("INSERT INTO orders (id, customer_id) VALUES (3, {b})"))
        .await
        .expect_err("another shard");
    assert_eq!(e.code, 1235, "{}", e.message);
    c.query("XA END 'app1'").await.expect("end");
    c.query("XA PREPARE 'app1'").await.expect("prepare");
    drop(c);
    // A prepared XA transaction is committed from another connection: Tessera finds its shard.
    let mut other = env.client().await;
    // The first connection's branch is free once Tessera closed its backend connection.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match other.query("XA COMMIT 'app1'").await {
            Ok(_) => break,
            Err(e) if e.code == 1397 && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => panic!("commit from another connection: {e:?}"),
        }
    }
    assert_eq!(total_orders(&env, "id IN (1, 2)"), 2);
    let e = other.query("XA COMMIT 'nobody'").await.expect_err("unknown xid");
    assert_eq!(e.code, 1397);
    // BEGIN inside the client's XA is refused as MariaDB refuses it.
    other.query("XA START 'app2'").await.expect("xa start");
    assert_eq!(other.query("BEGIN").await.expect_err("outside").code, 1400);
}
