//! Multiplexing without losing session state, against a real MariaDB: many clients over a tiny
//! pool, each with its own variables, time zone and temporary table; exact LAST_INSERT_ID(),
//! ROW_COUNT() and FOUND_ROWS() while connections change hands; pins that start and end.

use crate::common;

use common::{Client, Env};
use std::sync::atomic::Ordering;

/// Backend connections Tessera has open right now (seen from MariaDB).
fn backend_connections(env: &Env) -> usize {
    let n = env.backend_sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'tessera'");
    n.trim().parse().expect("count")
}

/// `n` clients straight to the server (no Tessera), for the expected answers.
async fn direct_clients(env: &Env, n: usize) -> Vec<Client> {
    let port = env.sandbox.servers()[0].port();
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(
            Client::connect(port, "tessera", "tessera", Some("test"))
                .await
                .expect("login"),
        );
    }
    out
}

async fn clients(env: &Env, n: usize) -> Vec<Client> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(env.client_in_test().await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_clients_over_two_connections_keep_their_own_state() {
    let env = Env::start("", "max_size = 2").await;
    let mut cs = clients(&env, 20).await;
    for (i, c) in cs.iter_mut().enumerate() {
        c.query(&format!(
            "SET @v = {i}, @s = 'client-{i}', time_zone = '+{:02}:00'",
            i % 13
        ))
        .await
        .expect("set");
    }
    let mut max_backends = 0;
    for round in 0..50 {
        for (i, c) in cs.iter_mut().enumerate() {
            let rows = c.query("SELECT @v, @s, @@time_zone").await.expect("read back");
            let want = vec![
                Some(i.to_string()),
                Some(format!("client-{i}")),
                Some(format!("+{:02}:00", i % 13)),
            ];
            assert_eq!(rows, vec![want], "client {i} round {round}");
        }
        if round % 10 == 0 {
            max_backends = max_backends.max(backend_connections(&env));
        }
    }
    assert!(
        max_backends <= 2,
        "user variables and time_zone do not pin: saw {max_backends} backend connections"
    );
    let pool = env
        .proxy
        .as_ref()
        .expect("proxy")
        .ctx
        .generation()
        .default_pool()
        .clone();
    assert_eq!(pool.stats.pinned.load(Ordering::Relaxed), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_diagnostics_targets_follow_the_session_across_connections() {
    let env = Env::start("", "max_size = 2").await;
    let mut cs = clients(&env, 6).await;
    for (i, c) in cs.iter_mut().enumerate() {
        // Client i raises i % 3 + 1 warnings, then stores their number (text or prepared).
        let casts = vec!["CAST('x' AS SIGNED)"; i % 3 + 1].join(", ");
        c.query(&format!("SELECT {casts}")).await.expect("casts");
        let get = "GET DIAGNOSTICS @n = NUMBER";
        if i % 2 == 0 {
            c.query(get).await.expect("get diagnostics");
        } else {
            let (id, _, _) = c.prepare(get).await.expect("prepare get diagnostics");
            c.execute(id, &[]).await.expect("execute get diagnostics");
        }
    }
    for round in 0..10 {
        for (i, c) in cs.iter_mut().enumerate() {
            let want = (i % 3 + 1).to_string();
            assert_eq!(c.value("SELECT @n").await, Some(want), "client {i} round {round}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temporary_tables_pin_until_dropped() {
    let env = Env::start("", "max_size = 2").await;
    let mut cs = clients(&env, 20).await;
    for (i, c) in cs.iter_mut().enumerate() {
        c.query("CREATE TEMPORARY TABLE t (x INT)").await.expect("create");
        c.query(&format!("INSERT INTO t VALUES ({i})")).await.expect("insert");
        c.query(&format!("SET @v = {i}, time_zone = '-{:02}:00'", i % 11 + 1))
            .await
            .expect("set");
    }
    for round in 0..50 {
        for (i, c) in cs.iter_mut().enumerate() {
            let rows = c
                .query("SELECT @v, @@time_zone, (SELECT x FROM t)")
                .await
                .expect("read back");
            let want = vec![
                Some(i.to_string()),
                Some(format!("-{:02}:00", i % 11 + 1)),
                Some(i.to_string()),
            ];
            assert_eq!(rows, vec![want], "client {i} round {round}");
        }
    }
    let pool = env
        .proxy
        .as_ref()
        .expect("proxy")
        .ctx
        .generation()
        .default_pool()
        .clone();
    assert_eq!(
        pool.stats.pinned.load(Ordering::Relaxed),
        20,
        "each temp-table session pinned"
    );
    assert!(pool.in_use() <= 2);
    for c in cs.iter_mut() {
        c.query("DROP TEMPORARY TABLE t").await.expect("drop");
        c.query("SELECT 1").await.expect("next statement");
    }
    assert_eq!(
        pool.stats.pinned.load(Ordering::Relaxed),
        0,
        "pins end with the temporary tables"
    );
    let metrics = tessera_proxy::admin::exposition::render(&env.proxy.as_ref().expect("proxy").ctx);
    assert!(
        metrics.contains("tessera_pins_total{reason=\"temporary_table\"} 20"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_functions_are_exact_across_connections() {
    let env = Env::start("", "max_size = 3").await;
    let mut a = env.client().await;
    let mut noise = clients(&env, 3).await;
    a.query("CREATE TABLE test.ids (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
        .await
        .expect("create");
    a.query("INSERT INTO test.ids (v) VALUES (1), (2), (3)")
        .await
        .expect("insert");
    for n in noise.iter_mut() {
        n.query("INSERT INTO test.ids (v) VALUES (9)")
            .await
            .expect("noise insert");
        n.query("SELECT 1 FROM test.ids").await.expect("noise select");
    }
    assert_eq!(
        a.value("SELECT LAST_INSERT_ID()").await.as_deref(),
        Some("1"),
        "first id of the multi-row insert"
    );
    a.query("UPDATE test.ids SET v = v + 1 WHERE v < 3")
        .await
        .expect("update");
    for n in noise.iter_mut() {
        n.query("UPDATE test.ids SET v = v WHERE id = 1")
            .await
            .expect("noise update");
    }
    assert_eq!(
        a.query("SELECT ROW_COUNT()").await.expect("row_count"),
        vec![vec![Some("2".into())]]
    );
    a.query("SELECT * FROM test.ids WHERE v = 9").await.expect("select");
    for n in noise.iter_mut() {
        n.query("SELECT 1").await.expect("noise");
    }
    assert_eq!(a.value("SELECT FOUND_ROWS()").await.as_deref(), Some("3"));
    a.query("SELECT SQL_CALC_FOUND_ROWS * FROM test.ids LIMIT 1")
        .await
        .expect("calc found rows");
    assert_eq!(a.value("SELECT FOUND_ROWS()").await.as_deref(), Some("6"));
    assert_eq!(a.value("SELECT LAST_INSERT_ID()").await.as_deref(), Some("1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_statements_are_applied_or_refused() {
    let env = Env::start("", "max_size = 2").await;
    let mut a = env.client().await;
    let mut b = env.client().await;
    a.query("SET sql_mode = 'ANSI_QUOTES', NAMES latin1")
        .await
        .expect("set");
    a.query("USE test").await.expect("use");
    for _ in 0..5 {
        b.query("SELECT 1").await.expect("b");
        assert_eq!(a.value("SELECT @@sql_mode").await.as_deref(), Some("ANSI_QUOTES"));
        assert_eq!(
            a.value("SELECT @@character_set_client").await.as_deref(),
            Some("latin1")
        );
        assert_eq!(a.value("SELECT DATABASE()").await.as_deref(), Some("test"));
        assert_ne!(b.value("SELECT @@sql_mode").await.as_deref(), Some("ANSI_QUOTES"));
        assert_eq!(b.value("SELECT DATABASE()").await, None);
    }
    let e = a.query("SET no_such_variable = 1").await.expect_err("unknown variable");
    assert_eq!(e.code, 1193);
    a.query("SET session_track_schema = OFF")
        .await
        .expect("the client's own tracking");
    assert_eq!(a.value("SELECT @@session_track_schema").await.as_deref(), Some("0"));
    let e = a
        .query("SET session_track_schema = 'sometimes'")
        .await
        .expect_err("bad value");
    assert_eq!(e.code, 1231);
    a.query("SELECT CAST('x' AS SIGNED)").await.expect("warning statement");
    b.query("SELECT 1").await.expect("other client in between");
    let warnings = a.query("SHOW WARNINGS").await.expect("show warnings");
    assert_eq!(
        warnings.len(),
        1,
        "SHOW WARNINGS sees the previous statement's warning: {warnings:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_and_locks_keep_their_connection() {
    let env = Env::start("", "max_size = 2").await;
    let mut a = env.client().await;
    let mut b = env.client().await;
    a.query("CREATE TABLE test.tx (v INT)").await.expect("create");
    a.query("START TRANSACTION").await.expect("begin");
    a.query("INSERT INTO test.tx VALUES (1)").await.expect("insert");
    assert_eq!(
        b.value("SELECT COUNT(*) FROM test.tx").await.as_deref(),
        Some("0"),
        "not committed yet"
    );
    a.query("ROLLBACK").await.expect("rollback");
    a.query("SET autocommit = 0").await.expect("autocommit off");
    a.query("INSERT INTO test.tx VALUES (2)").await.expect("insert");
    assert_eq!(b.value("SELECT COUNT(*) FROM test.tx").await.as_deref(), Some("0"));
    a.query("COMMIT").await.expect("commit");
    assert_eq!(b.value("SELECT COUNT(*) FROM test.tx").await.as_deref(), Some("1"));
    assert_eq!(
        a.value("SELECT GET_LOCK('tessera-test', 5)").await.as_deref(),
        Some("1")
    );
    b.query("SELECT 1").await.expect("b");
    assert_eq!(
        b.value("SELECT IS_FREE_LOCK('tessera-test')").await.as_deref(),
        Some("0")
    );
    assert_eq!(
        a.value("SELECT RELEASE_LOCK('tessera-test')").await.as_deref(),
        Some("1")
    );
    assert_eq!(
        b.value("SELECT IS_FREE_LOCK('tessera-test')").await.as_deref(),
        Some("1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_give_back_connections_kept_for_one_statement() {
    let env = Env::start("", "max_size = 2").await;
    let pool = env
        .proxy
        .as_ref()
        .expect("proxy")
        .ctx
        .generation()
        .default_pool()
        .clone();
    let mut clients = clients(&env, 5).await;
    for c in clients.iter_mut() {
        let _ = c.query("SELECT * FROM no_such_table").await.expect_err("error");
    }
    assert_eq!(pool.stats.pinned.load(Ordering::Relaxed), 5, "kept for SHOW WARNINGS");
    // The clients stay idle: after a second the connections return to the pool.
    let mut released = false;
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if pool.stats.pinned.load(Ordering::Relaxed) == 0 {
            released = true;
            break;
        }
    }
    assert!(released, "one-statement pins end when the session is idle");
    for c in clients.iter_mut() {
        assert_eq!(c.value("SELECT 'ok'").await.as_deref(), Some("ok"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_inside_a_transaction_keeps_the_transaction() {
    let env = Env::start("", "max_size = 4").await;
    let mut c = env.client_in_test().await;
    c.query("CREATE TABLE err_in_txn (id INT PRIMARY KEY)")
        .await
        .expect("table");
    c.query("INSERT INTO err_in_txn VALUES (1)").await.expect("row");
    c.query("BEGIN").await.expect("begin");
    c.query("INSERT INTO err_in_txn VALUES (2)").await.expect("in txn");
    let e = c
        .query("INSERT INTO err_in_txn VALUES (1)")
        .await
        .expect_err("duplicate");
    assert_eq!(e.code, 1062);
    c.query("INSERT INTO err_in_txn VALUES (3)")
        .await
        .expect("still in txn");
    c.query("ROLLBACK").await.expect("rollback");
    assert_eq!(
        c.value("SELECT GROUP_CONCAT(id) FROM err_in_txn").await.as_deref(),
        Some("1"),
        "the rows written around the error were in the rolled back transaction"
    );
}

/// Three sessions' `default_master_connection` (a free-text variable) holding a backslash, two
/// of them under `NO_BACKSLASH_ESCAPES`; what each reads back on every statement.
async fn backslash_values(cs: &mut [Client]) -> Vec<Option<String>> {
    let nbe = "SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')";
    let sets = [
        (Some(nbe), r"SET SESSION default_master_connection = 'a\b'"),
        (Some(nbe), r"SET SESSION default_master_connection = 'c\d\'"),
        (None, r"SET SESSION default_master_connection = 'e\\f'"),
    ];
    for (c, (mode, set)) in cs.iter_mut().zip(sets) {
        if let Some(mode) = mode {
            c.query(mode).await.expect("mode");
        }
        c.query(set).await.expect("set");
    }
    let mut seen = Vec::new();
    for _ in 0..4 {
        for c in cs.iter_mut() {
            let read = "SELECT CONCAT(LENGTH(@@default_master_connection), ':', @@default_master_connection)";
            seen.push(c.value(read).await);
        }
    }
    seen
}

/// Session variables replayed on another connection are read back as the client set them
/// whatever the connection's and the session's `NO_BACKSLASH_ESCAPES` (the replay is parsed
/// under the connection's mode). One pooled connection: every statement moves it between
/// sessions. The same steps directly against the server give the expected answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backslashes_in_session_variables_survive_any_sql_mode() {
    let env = Env::start("", "max_size = 1").await;
    let mut direct = direct_clients(&env, 3).await;
    let server = backslash_values(&mut direct).await;
    let want: Vec<Option<String>> = ["3:a\\b", "4:c\\d\\", "3:e\\f"]
        .iter()
        .map(|s| Some(s.to_string()))
        .cycle()
        .take(12)
        .collect();
    assert_eq!(server, want, "the server's own answers");
    let mut proxied = clients(&env, 3).await;
    assert_eq!(backslash_values(&mut proxied).await, want);
}

/// Statements whose text the parse variables read differently: a backslash in a string
/// (`NO_BACKSLASH_ESCAPES`), double quotes (`ANSI_QUOTES`), `||` (`PIPES_AS_CONCAT`) and a
/// literal's character set (`character_set_connection`).
const PARSE_SENSITIVE: [&str; 4] = [
    r"SELECT CONCAT(LENGTH('a\nb'), ':', ?)",
    r#"SELECT CONCAT("x", ?)"#,
    r"SELECT CONCAT(('a' || 'b'), ?)",
    r"SELECT CONCAT(CHARSET('c'), ?)",
];

const OTHER_PARSE: &str =
    "SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES,ANSI_QUOTES,PIPES_AS_CONCAT'), \
     character_set_connection = latin1";

/// Client 0 prepares [`PARSE_SENSITIVE`] under the default parse variables, then changes them
/// and prepares them again; both sets run after the change and after a change back, between
/// statements of client 1 (which keeps the defaults). What each execution answers.
async fn executions_across_parse_changes(cs: &mut [Client]) -> Vec<String> {
    let mut before = Vec::new();
    for sql in PARSE_SENSITIVE {
        before.push(cs[0].prepare(sql).await.expect("prepare under the defaults").0);
    }
    cs[0].query(OTHER_PARSE).await.expect("other parse variables");
    let mut after = Vec::new();
    for sql in PARSE_SENSITIVE {
        after.push(cs[0].prepare(sql).await.map(|p| p.0));
    }
    let mut seen = Vec::new();
    for round in 0..4 {
        if round == 2 {
            cs[0]
                .query("SET SESSION sql_mode = DEFAULT, character_set_connection = DEFAULT")
                .await
                .expect("back to the defaults");
        }
        for id in before.iter().map(|id| Ok(*id)).chain(after.iter().cloned()) {
            let answer = match id {
                Ok(id) => match cs[0].execute(id, &[Some("!")]).await {
                    Ok(rows) => format!("{rows:?}"),
                    Err(e) => format!("error {}", e.code),
                },
                Err(e) => format!("prepare error {}", e.code),
            };
            seen.push(format!("round {round}: {answer}"));
            let other = cs[1].value("SELECT CONCAT(LENGTH('a\\nb'), \"x\")").await;
            assert_eq!(
                other.as_deref(),
                Some("3x"),
                "client 1 keeps the default parse variables"
            );
        }
    }
    seen
}

/// The server parses a prepared statement at PREPARE and keeps that reading when the session
/// changes `sql_mode` or its connection character set later. Through Tessera the statement
/// runs on whatever connection the pool gives (here one, which the other client's default
/// variables change back and forth), so a handle parsed under the variables of its PREPARE is
/// made there. The same steps directly against the server give the expected answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_keep_the_parse_of_their_prepare() {
    let env = Env::start("", "max_size = 1").await;
    let mut direct = direct_clients(&env, 2).await;
    let want = executions_across_parse_changes(&mut direct).await;
    assert!(
        want.iter().any(|a| a.contains("3:!")) && want.iter().any(|a| a.contains("4:!")),
        "both readings of the backslash: {want:?}"
    );
    let mut proxied = clients(&env, 2).await;
    assert_eq!(executions_across_parse_changes(&mut proxied).await, want);
}

/// A cursor over a statement prepared under other parse variables than the session's now is
/// refused with a clear error (its handle would be one fetches do not find); the statement
/// runs without a cursor, and a cursor opens once the variables are back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_over_a_statement_parsed_under_other_variables_is_refused() {
    let env = Env::start("", "").await;
    let mut c = env.client_in_test().await;
    // Set explicitly (a variable never set is the server's default, which Tessera does not
    // take to equal any value set later), and kept to be set back.
    c.query("SET SESSION sql_mode = @@sql_mode").await.expect("sql_mode");
    c.query("SET @m = @@sql_mode, @c = @@character_set_connection")
        .await
        .expect("keep");
    let (id, _, _) = c.prepare(PARSE_SENSITIVE[0]).await.expect("prepare");
    c.query(OTHER_PARSE).await.expect("other parse variables");
    let cursor = |id: u32| {
        let mut p = vec![0x17u8];
        p.extend_from_slice(&id.to_le_bytes());
        p.push(1); // CURSOR_TYPE_READ_ONLY
        p.extend_from_slice(&1u32.to_le_bytes());
        p.extend_from_slice(&[0, 1, 0xfd, 0, 1, b'!']);
        p
    };
    let refused = c.raw(&cursor(id)).await;
    let err = tessera_protocol::response::ErrPacket::parse(&refused).expect("an error");
    assert_eq!(err.code, 1235, "{}", err.message);
    assert!(err.message.contains("sql_mode"), "{}", err.message);
    assert_eq!(
        c.execute(id, &[Some("!")]).await.expect("without a cursor"),
        vec![vec![Some("3:!".to_string())]]
    );
    c.query("SET SESSION sql_mode = @m, character_set_connection = @c")
        .await
        .expect("back");
    let opened = c.raw(&cursor(id)).await;
    assert_ne!(opened[0], 0xff, "a cursor opens under the variables of the PREPARE");
}
