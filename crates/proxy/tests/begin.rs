//! A client's plain BEGIN travels with its first statement (one round trip less per
//! transaction); what the client sees must be what MariaDB shows: the transaction is open from
//! BEGIN on, its snapshot holds, ROLLBACK undoes, and an empty BEGIN/COMMIT is a no-op.

use crate::common;

use common::{Client, Env};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_begin_opens_the_transaction_its_first_statement_runs_in() {
    let env = Env::start("", "").await;
    let mut a = env.client_in_test().await;
    let mut b = env.client_in_test().await;
    a.query("CREATE TABLE begin_t (id INT PRIMARY KEY)")
        .await
        .expect("create");
    a.query("INSERT INTO begin_t VALUES (1)").await.expect("insert");

    a.query("BEGIN").await.expect("begin");
    assert_eq!(a.value("SELECT @@in_transaction").await.as_deref(), Some("1"));
    assert_eq!(a.value("SELECT COUNT(*) FROM begin_t").await.as_deref(), Some("1"));
    b.query("INSERT INTO begin_t VALUES (2)").await.expect("other insert");
    // Repeatable read: the snapshot taken at the first read holds.
    assert_eq!(a.value("SELECT COUNT(*) FROM begin_t").await.as_deref(), Some("1"));
    a.query("COMMIT").await.expect("commit");
    assert_eq!(a.value("SELECT COUNT(*) FROM begin_t").await.as_deref(), Some("2"));
    assert_eq!(a.value("SELECT @@in_transaction").await.as_deref(), Some("0"));

    a.query("START TRANSACTION").await.expect("start");
    a.query("INSERT INTO begin_t VALUES (3)").await.expect("insert in txn");
    assert_eq!(b.value("SELECT COUNT(*) FROM begin_t").await.as_deref(), Some("2"));
    a.query("ROLLBACK").await.expect("rollback");
    assert_eq!(b.value("SELECT COUNT(*) FROM begin_t").await.as_deref(), Some("2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_transaction_and_a_second_begin_behave_as_on_the_server() {
    let env = Env::start("", "").await;
    let mut a = env.client_in_test().await;
    a.query("CREATE TABLE begin_e (id INT PRIMARY KEY)")
        .await
        .expect("create");
    for end in ["COMMIT", "ROLLBACK", "commit work;"] {
        a.query("begin").await.expect("begin");
        a.query(end).await.expect("end");
        assert_eq!(a.value("SELECT @@in_transaction").await.as_deref(), Some("0"), "{end}");
        assert_eq!(a.value("SELECT ROW_COUNT()").await.as_deref(), Some("-1"));
    }
    // BEGIN inside a transaction commits it first, as on the server.
    a.query("BEGIN").await.expect("begin");
    a.query("INSERT INTO begin_e VALUES (1)").await.expect("insert");
    a.query("BEGIN").await.expect("second begin");
    a.query("ROLLBACK").await.expect("rollback");
    assert_eq!(a.value("SELECT COUNT(*) FROM begin_e").await.as_deref(), Some("1"));
    // A BEGIN with options goes to the server as it is.
    a.query("START TRANSACTION READ ONLY").await.expect("read only");
    let e = a
        .query("INSERT INTO begin_e VALUES (2)")
        .await
        .expect_err("read-only transaction");
    assert_eq!(e.code, 1792);
    a.query("COMMIT").await.expect("commit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prepared_begin_is_deferred_like_a_text_one() {
    let env = Env::start("", "").await;
    let mut a = env.client_in_test().await;
    let mut b = env.client_in_test().await;
    a.query("CREATE TABLE begin_p (id INT PRIMARY KEY)")
        .await
        .expect("create");
    let (begin, _, _) = a.prepare("BEGIN").await.expect("prepare begin");
    let (rollback, _, _) = a.prepare("ROLLBACK").await.expect("prepare rollback");
    let (commit, _, _) = a.prepare("COMMIT").await.expect("prepare commit");
    a.execute(begin, &[]).await.expect("begin");
    a.query("INSERT INTO begin_p VALUES (1)").await.expect("insert");
    assert_eq!(b.value("SELECT COUNT(*) FROM begin_p").await.as_deref(), Some("0"));
    a.execute(rollback, &[]).await.expect("rollback");
    a.execute(begin, &[]).await.expect("begin");
    a.execute(commit, &[]).await.expect("empty commit");
    assert_eq!(a.value("SELECT @@in_transaction").await.as_deref(), Some("0"));
    assert_eq!(a.value("SELECT COUNT(*) FROM begin_p").await.as_deref(), Some("0"));
}

fn counter(env: &Env, pick: impl FnOnce(&tessera_proxy::metrics::Metrics) -> &std::sync::atomic::AtomicU64) -> u64 {
    pick(&env.proxy.as_ref().expect("running").ctx.metrics).load(std::sync::atomic::Ordering::Relaxed)
}

fn queued_ends(env: &Env) -> u64 {
    counter(env, |m| &m.queued_transaction_ends)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_commit_of_a_transaction_that_only_read_travels_with_the_next_command() {
    // One connection: every command after the COMMIT runs where the COMMIT is queued.
    let env = Env::start("", "max_size = 1").await;
    let mut a = env.client_in_test().await;
    a.query("CREATE TABLE end_r (id INT PRIMARY KEY)")
        .await
        .expect("create");
    a.query("INSERT INTO end_r VALUES (1)").await.expect("insert");

    a.query("BEGIN").await.expect("begin");
    assert_eq!(a.value("SELECT COUNT(*) FROM end_r").await.as_deref(), Some("1"));
    a.query("COMMIT").await.expect("commit");
    assert_eq!(queued_ends(&env), 1);
    env.backend_sql("INSERT INTO test.end_r VALUES (2)");
    // The snapshot ended: the next read sees the other connection's row, outside a transaction.
    assert_eq!(a.value("SELECT COUNT(*) FROM end_r").await.as_deref(), Some("2"));
    assert_eq!(a.value("SELECT @@in_transaction").await.as_deref(), Some("0"));

    // Prepared, as sysbench runs it; ROLLBACK ends a read-only transaction the same way.
    let (begin, _, _) = a.prepare("BEGIN").await.expect("prepare begin");
    let (read, _, _) = a
        .prepare("SELECT id FROM end_r WHERE id = ?")
        .await
        .expect("prepare read");
    let (commit, _, _) = a.prepare("COMMIT").await.expect("prepare commit");
    a.execute(begin, &[]).await.expect("begin");
    a.execute(read, &[Some("2")]).await.expect("read");
    a.execute(commit, &[]).await.expect("commit");
    a.query("BEGIN").await.expect("begin");
    a.query("SELECT id FROM end_r").await.expect("read");
    a.query("ROLLBACK").await.expect("rollback");
    assert_eq!(queued_ends(&env), 3);
    assert_eq!(a.value("SELECT @@in_transaction").await.as_deref(), Some("0"));

    // A write, a locking read or a variable makes the transaction's end a statement of its own.
    for stmt in [
        "INSERT INTO end_r VALUES (3)",
        "SELECT id FROM end_r WHERE id = 1 FOR UPDATE",
        "SELECT @x := id FROM end_r WHERE id = 1",
    ] {
        a.query("BEGIN").await.expect("begin");
        a.query("SELECT COUNT(*) FROM end_r").await.expect("read");
        a.query(stmt).await.expect(stmt);
        a.query("COMMIT").await.expect("commit");
        assert_eq!(queued_ends(&env), 3, "{stmt}");
    }
    // The write was committed when its COMMIT was acknowledged.
    assert_eq!(env.backend_sql("SELECT COUNT(*) FROM test.end_r").trim(), "3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_commit_is_sent_when_no_command_comes() {
    let env = Env::start("", "").await;
    let mut a = env.client_in_test().await;
    a.query("CREATE TABLE end_q (id INT PRIMARY KEY)")
        .await
        .expect("create");
    a.query("BEGIN").await.expect("begin");
    a.query("SELECT COUNT(*) FROM end_q").await.expect("read");
    a.query("COMMIT").await.expect("commit");
    assert_eq!(queued_ends(&env), 1);
    // An open read-only transaction would hold the table's metadata lock: the ALTER would
    // wait out lock_wait_timeout and fail. The pool sends the queued COMMIT on its own.
    let port = env.sandbox.servers()[0].port();
    let mut direct = Client::connect(port, "tessera", "tessera", Some("test"))
        .await
        .expect("direct login");
    direct.query("SET SESSION lock_wait_timeout = 20").await.expect("set");
    let altered = direct.query("ALTER TABLE end_q ADD COLUMN c INT").await;
    assert!(
        altered.is_ok(),
        "ALTER TABLE waited for a transaction Tessera had committed: {altered:?}"
    );
    assert_eq!(a.value("SELECT COUNT(*) FROM end_q").await.as_deref(), Some("0"));
}

/// A client statement remembers its backend handle per connection, and forgets it when that
/// connection's handles change: here the client's own SET of sql_mode drops the handles parsed
/// under the old mode, in the middle of a transaction on the same connection. A statement the
/// new mode reads alike runs on a handle prepared again; one it reads otherwise keeps the
/// reading of its PREPARE, as on the server (MariaDB answers `0` for it after the SET).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remembered_backend_handle_follows_the_connections_handles() {
    let env = Env::start("pipeline_lanes = 0", "max_size = 1").await;
    let mut c = env.client_in_test().await;
    let (pipes, _, _) = c.prepare("SELECT CAST(? || 'b' AS CHAR)").await.expect("prepare");
    let (concat, _, _) = c.prepare("SELECT CONCAT(?, 'b')").await.expect("prepare");
    let one = |v: &str| vec![vec![Some(v.to_string())]];
    c.query("BEGIN").await.expect("begin");
    for _ in 0..2 {
        assert_eq!(
            c.execute(pipes, &[Some("a")]).await.expect("execute"),
            one("0"),
            "|| is OR by default"
        );
        assert_eq!(c.execute(concat, &[Some("a")]).await.expect("execute"), one("ab"));
    }
    c.query("SET sql_mode = 'PIPES_AS_CONCAT'").await.expect("set");
    for _ in 0..2 {
        assert_eq!(
            c.execute(pipes, &[Some("a")]).await.expect("execute"),
            one("0"),
            "as at its PREPARE"
        );
        assert_eq!(
            c.execute(concat, &[Some("a")]).await.expect("execute"),
            one("ab"),
            "a handle prepared again"
        );
    }
    c.query("COMMIT").await.expect("commit");
    assert_eq!(c.execute(pipes, &[Some("c")]).await.expect("after"), one("0"));
    assert_eq!(c.execute(concat, &[Some("c")]).await.expect("after"), one("cb"));
}

fn com_commits(env: &Env) -> u64 {
    let out = env
        .backend_sql("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'COM_COMMIT'");
    out.trim().parse().expect("Com_commit")
}

fn folded_ends(env: &Env) -> u64 {
    counter(env, |m| &m.transaction_ends_folded)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_begin_behind_a_queued_commit_of_reads_ends_that_transaction_itself() {
    // One connection: the next transaction's BEGIN lands where the COMMIT is queued, and the
    // pool leaves the queued COMMIT there for the test's lifetime.
    let env = Env::start("", "max_size = 1\nqueued_end_settle_ms = 600000").await;
    let mut a = env.client_in_test().await;
    a.query("CREATE TABLE end_f (id INT PRIMARY KEY)")
        .await
        .expect("create");
    a.query("INSERT INTO end_f VALUES (1)").await.expect("insert");
    let commits = com_commits(&env);

    a.query("BEGIN").await.expect("begin");
    assert_eq!(a.value("SELECT COUNT(*) FROM end_f").await.as_deref(), Some("1"));
    a.query("COMMIT").await.expect("commit");
    env.backend_sql("INSERT INTO test.end_f VALUES (2)");
    a.query("BEGIN").await.expect("second begin");
    // The first snapshot ended (the BEGIN committed it): the new one sees the other row.
    assert_eq!(a.value("SELECT COUNT(*) FROM end_f").await.as_deref(), Some("2"));
    assert_eq!(folded_ends(&env), 1);
    assert_eq!(com_commits(&env), commits, "no COMMIT reached the server");
    // A ROLLBACK of reads folds the same way.
    a.query("ROLLBACK").await.expect("rollback");
    env.backend_sql("INSERT INTO test.end_f VALUES (3)");
    a.query("START TRANSACTION").await.expect("third begin");
    assert_eq!(a.value("SELECT COUNT(*) FROM end_f").await.as_deref(), Some("3"));
    assert_eq!(folded_ends(&env), 2);
    assert_eq!(a.value("SELECT @@in_transaction").await.as_deref(), Some("1"));
    a.query("COMMIT").await.expect("commit");
    assert_eq!(a.value("SELECT @@in_transaction").await.as_deref(), Some("0"));

    // A queued COMMIT followed by anything but a BEGIN is sent as it is.
    let commits = com_commits(&env);
    a.query("BEGIN").await.expect("fourth begin");
    assert_eq!(a.value("SELECT COUNT(*) FROM end_f").await.as_deref(), Some("3"));
    a.query("COMMIT").await.expect("commit");
    assert_eq!(a.value("SELECT COUNT(*) FROM end_f").await.as_deref(), Some("3"));
    assert_eq!(folded_ends(&env), 2);
    assert_eq!(com_commits(&env), commits + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_chains_runs_where_its_transaction_is() {
    // With completion_type CHAIN a COMMIT begins the next transaction on its connection. Were
    // it queued there, the next session to borrow that connection would find itself inside
    // that transaction and its autocommit write would stay uncommitted.
    let env = Env::start("", "max_size = 2\nqueued_end_settle_ms = 600000").await;
    let mut a = env.client_in_test().await;
    let mut b = env.client_in_test().await;
    a.query("CREATE TABLE end_c (id INT PRIMARY KEY)")
        .await
        .expect("create");
    let direct = env.backend_sql(
        "SET completion_type = 'CHAIN'; BEGIN; SELECT COUNT(*) FROM test.end_c; COMMIT; SELECT @@in_transaction",
    );
    assert_eq!(direct.trim().lines().last(), Some("1"), "the server chains");

    a.query("SET completion_type = 'CHAIN'").await.expect("chain");
    a.query("BEGIN").await.expect("begin");
    assert_eq!(a.value("SELECT COUNT(*) FROM end_c").await.as_deref(), Some("0"));
    a.query("COMMIT").await.expect("commit");
    b.query("INSERT INTO end_c VALUES (1)")
        .await
        .expect("autocommit insert");
    assert_eq!(
        env.backend_sql("SELECT COUNT(*) FROM test.end_c").trim(),
        "1",
        "b's insert is committed"
    );
    assert_eq!(queued_ends(&env), 0, "a chaining COMMIT is sent, not queued");
    assert_eq!(
        a.value("SELECT @@in_transaction").await.as_deref(),
        Some("1"),
        "a is in the chained transaction"
    );
    a.query("ROLLBACK").await.expect("rollback");
}

/// Runs the RELEASE cases on one port (MariaDB directly, or Tessera) as `user`.
async fn release_cases(port: u16, user: &str, table: &str) {
    let connect = || async move { Client::connect(port, user, user, Some("test")).await.expect("login") };
    let mut a = connect().await;
    a.query(&format!("CREATE TABLE {table} (id INT PRIMARY KEY)"))
        .await
        .expect("create");
    // completion_type RELEASE: a plain COMMIT closes the connection.
    a.query("SET completion_type = 'RELEASE'").await.expect("release");
    a.query("BEGIN").await.expect("begin");
    a.query(&format!("INSERT INTO {table} VALUES (1)"))
        .await
        .expect("insert");
    a.query("COMMIT").await.expect("commit answers OK");
    assert!(
        a.is_closed().await,
        "{port}: COMMIT with completion_type RELEASE closes"
    );

    // NO RELEASE overrides completion_type; the connection stays.
    let mut b = connect().await;
    b.query("SET completion_type = 'RELEASE'").await.expect("release");
    b.query("BEGIN").await.expect("begin");
    b.query("COMMIT NO RELEASE").await.expect("commit no release");
    assert_eq!(b.value("SELECT 'open'").await.as_deref(), Some("open"), "{port}");

    // An explicit ROLLBACK RELEASE undoes, then closes.
    let mut c = connect().await;
    c.query("BEGIN").await.expect("begin");
    c.query(&format!("INSERT INTO {table} VALUES (2)"))
        .await
        .expect("insert");
    c.query("ROLLBACK AND NO CHAIN RELEASE")
        .await
        .expect("rollback release");
    assert!(c.is_closed().await, "{port}: ROLLBACK RELEASE closes");

    // Even outside a transaction, in autocommit.
    let mut d = connect().await;
    d.query("COMMIT RELEASE").await.expect("commit release");
    assert!(
        d.is_closed().await,
        "{port}: COMMIT RELEASE outside a transaction closes"
    );

    let mut e = connect().await;
    assert_eq!(
        e.value(&format!("SELECT GROUP_CONCAT(id) FROM {table}"))
            .await
            .as_deref(),
        Some("1"),
        "{port}: the released COMMIT committed, the released ROLLBACK undid"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_releases_closes_the_client_connection() {
    // One pooled connection: a backend connection the server closed must not be lent again.
    let env = Env::start("", "max_size = 1").await;
    release_cases(env.sandbox.servers()[0].port(), "tessera", "rel_direct").await;
    release_cases(env.port(), "app", "rel_proxy").await;
    let mut again = env.client_in_test().await;
    assert_eq!(again.value("SELECT 'served'").await.as_deref(), Some("served"));
    assert_eq!(
        counter(&env, |m| &m.backend_lost),
        0,
        "no statement met a closed connection"
    );
}
