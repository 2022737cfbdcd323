//! What a client sees of its own session through Tessera, against a real sandbox MariaDB, each
//! as one MariaDB would answer: its identity and connection id (and KILL by that id), its
//! collation after SET NAMES ... COLLATE, the session tracking it asked for in its OK packets,
//! the diagnostics area of its previous statement after the connection went back to the pool,
//! and per-user backend accounts.

use crate::common;

use common::{Client, Env};
use std::time::Duration;
use tessera_protocol::flags::{CLIENT_SESSION_TRACK, SERVER_MORE_RESULTS_EXISTS, SERVER_SESSION_STATE_CHANGED};
use tessera_protocol::response::{OkPacket, SessionChange};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_and_connection_id_are_the_clients_own() {
    let env = Env::start("", "max_size = 2").await;
    let mut a = env.client().await;
    let mut b = env.client().await;
    let id = a.value("SELECT CONNECTION_ID()").await.expect("id");
    assert_eq!(id, a.connection_id.to_string(), "the handshake's connection id");
    for _ in 0..10 {
        b.query("SELECT 1").await.expect("other client");
        assert_eq!(a.value("SELECT CONNECTION_ID()").await.as_deref(), Some(id.as_str()));
    }
    let rows = a
        .query("SELECT USER(), SESSION_USER(), SYSTEM_USER(), CURRENT_USER(), CURRENT_USER")
        .await
        .expect("identity");
    assert_eq!(
        rows[0],
        ["app@127.0.0.1", "app@127.0.0.1", "app@127.0.0.1", "app@%", "app@%"].map(|s| Some(s.to_string()))
    );
    assert_eq!(
        a.value("SELECT 'USER()'").await.as_deref(),
        Some("USER()"),
        "strings untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_query_by_connection_id_interrupts_only_that_query() {
    let env = Env::start("", "max_size = 4").await;
    let mut a = env.client().await;
    let mut b = env.client().await;
    let id = a.value("SELECT CONNECTION_ID()").await.expect("id");
    let sleeper = tokio::spawn(async move {
        let r = a.query("SELECT SLEEP(30) /* kill-me */").await;
        (a, r)
    });
    env.wait_until_backend_runs("SELECT SLEEP(30) /* kill-me */").await;
    b.query(&format!("KILL QUERY {id}")).await.expect("kill query");
    let (mut a, r) = tokio::time::timeout(Duration::from_secs(20), sleeper)
        .await
        .expect("the query ended early")
        .expect("task");
    match r {
        Err(e) => assert_eq!(e.code, 1317, "{e}"),
        Ok(rows) => assert_eq!(rows[0][0].as_deref(), Some("1"), "SLEEP interrupted"),
    }
    assert_eq!(a.value("SELECT CONNECTION_ID()").await.as_deref(), Some(id.as_str()));
    let e = b.query("KILL QUERY 999999").await.expect_err("unknown id");
    assert_eq!(e.code, 1094);
    b.query(&format!("KILL {id}")).await.expect("kill connection");
    assert!(a.is_closed().await, "A was closed");
    b.query("SELECT 1").await.expect("B goes on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_names_with_a_collation_is_kept_on_every_connection() {
    let env = Env::start("", "max_size = 2").await;
    let mut a = env.client().await;
    let mut b = env.client().await;
    a.query("SET NAMES utf8mb4 COLLATE utf8mb4_bin")
        .await
        .expect("set names");
    for _ in 0..5 {
        b.query("SET NAMES latin1").await.expect("b changes its own");
        b.query("SELECT 1").await.expect("b");
        assert_eq!(
            a.value("SELECT @@collation_connection").await.as_deref(),
            Some("utf8mb4_bin")
        );
        assert_eq!(a.value("SELECT 'a' = 'A'").await.as_deref(), Some("0"));
    }
    a.query("SET CHARACTER SET latin1").await.expect("set character set");
    let rows = a
        .query("SELECT @@character_set_client, @@character_set_results, @@character_set_connection = @@character_set_database")
        .await
        .expect("charsets");
    assert_eq!(rows[0], ["latin1", "latin1", "1"].map(|s| Some(s.to_string())));
    a.query("SET collation_connection = utf8mb4_unicode_ci")
        .await
        .expect("set");
    b.query("SELECT 1").await.expect("b");
    assert_eq!(
        a.value("SELECT @@collation_connection").await.as_deref(),
        Some("utf8mb4_unicode_ci")
    );
}

/// The session changes an OK packet for `sql` reports to a client that negotiated tracking.
async fn tracked_changes(client: &mut Client, sql: &str) -> Vec<SessionChange> {
    let mut payload = vec![0x03];
    payload.extend_from_slice(sql.as_bytes());
    let answer = client.raw(&payload).await;
    let ok = OkPacket::parse(&answer, CLIENT_SESSION_TRACK).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    if ok.status & SERVER_SESSION_STATE_CHANGED == 0 {
        return Vec::new();
    }
    ok.session_changes().expect("session state")
}

fn variable_names(changes: &[SessionChange]) -> Vec<String> {
    changes
        .iter()
        .filter_map(|c| match c {
            SessionChange::SystemVariable { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_get_the_session_tracking_they_asked_for() {
    let env = Env::start("", "max_size = 2").await;
    let port = env.port();
    let mut a = Client::connect_with(port, "app", "app", Some("test"), CLIENT_SESSION_TRACK)
        .await
        .expect("login");
    // MariaDB's defaults: a few variables and the schema, not last_gtid or sql_mode.
    let changes = tracked_changes(&mut a, "SET sql_mode = 'ANSI', time_zone = '+01:00'").await;
    assert_eq!(variable_names(&changes), ["time_zone"], "{changes:?}");
    // Connector/J's initialisation: an expression over the client's own value, mixed with others.
    a.raw(b"\x03SET autocommit=1, session_track_schema=1, session_track_system_variables=CONCAT(@@session_track_system_variables, ',sql_mode'), names utf8mb4")
        .await;
    assert_eq!(
        a.value("SELECT @@session_track_system_variables").await.as_deref(),
        // MariaDB stores the list sorted, each name once.
        Some("autocommit,character_set_client,character_set_connection,character_set_results,sql_mode,time_zone")
    );
    let changes = tracked_changes(&mut a, "SET sql_mode = 'TRADITIONAL'").await;
    assert_eq!(variable_names(&changes), ["sql_mode"], "{changes:?}");
    a.raw(b"\x03SET session_track_system_variables = '', session_track_schema = OFF")
        .await;
    assert!(tracked_changes(&mut a, "USE mysql").await.is_empty(), "nothing tracked");
    a.raw(b"\x03SET session_track_system_variables = '*', session_track_state_change = ON")
        .await;
    let changes = tracked_changes(&mut a, "SET @x = 1").await;
    assert!(changes.contains(&SessionChange::StateChanged), "{changes:?}");
    // Tessera's own tracking on the backend is untouched: it still replays state.
    let mut b = env.client().await;
    b.query("SELECT 1").await.expect("b");
    let mode = a.value("SELECT @@sql_mode").await.expect("sql_mode");
    assert!(mode.contains("TRADITIONAL"), "{mode}");
}

/// Waits until no session is pinned to a connection (an idle one gave its connection back).
async fn wait_until_unpinned(env: &Env) {
    wait_until_zero(env, "tessera_pool_pinned{").await;
}

/// Waits until the pool has no connection in use (the session gave its one back).
async fn wait_until_released(env: &Env) {
    wait_until_zero(env, "tessera_pool_in_use{").await;
}

/// Waits until the metrics starting with `prefix` add up to 0 (at most 20 s).
async fn wait_until_zero(env: &Env, prefix: &str) {
    for _ in 0..200 {
        if env.metric_sum(prefix) == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the session never gave its connection back ({prefix} stayed above 0)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_diagnostics_area_is_the_previous_statements_after_the_connection_went_back() {
    let env = Env::start("", "max_size = 2").await;
    let mut a = env.client().await;
    let mut b = env.client().await;
    a.query("USE no_such_db").await.expect_err("1049");
    wait_until_released(&env).await;
    b.query("SELECT CAST('zz' AS SIGNED)").await.expect("b's own warning");
    wait_until_released(&env).await;
    let rows = a.query("SHOW WARNINGS").await.expect("show warnings");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0][1].as_deref(), Some("1049"), "{rows:?}");
    a.query("SELECT CAST('abc' AS SIGNED)").await.expect("warning");
    wait_until_released(&env).await;
    b.query("USE no_such_db").await.expect_err("b's own error");
    wait_until_released(&env).await;
    let rows = a.query("SHOW WARNINGS").await.expect("show warnings");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0][1].as_deref(), Some("1292"), "{rows:?}");
    assert_eq!(a.value("SELECT @@warning_count").await.as_deref(), Some("1"));
    assert_eq!(a.value("SHOW COUNT(*) WARNINGS").await.as_deref(), Some("1"));
    a.query("SELECT * FROM mysql.db LIMIT 0").await.expect("reads a table");
    wait_until_released(&env).await;
    b.query("SELECT CAST('zz' AS SIGNED)").await.expect("b's own warning");
    assert!(a.query("SHOW WARNINGS").await.expect("empty").is_empty());
    assert_eq!(a.value("SELECT @@warning_count").await.as_deref(), Some("0"));
}

/// SHOW WARNINGS statements the backend has run (the client's own and Tessera's).
fn show_warnings_run(env: &Env) -> u64 {
    global_status(env, "Com_show_warnings")
}

/// A counter of the backend's global status.
fn global_status(env: &Env, name: &str) -> u64 {
    let out = env.backend_sql(&format!("SHOW GLOBAL STATUS LIKE '{name}'"));
    out.split_whitespace()
        .last()
        .and_then(|n| n.parse().ok())
        .expect("a count")
}

/// A write in a transaction leaves notes (decimals rounded), then COMMIT and BEGIN, neither of
/// which clears them on MariaDB: the client reads them after each, and Tessera does not read
/// the area back at those edges (the connection stays with the session until a statement
/// clears it, or the session goes idle).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transactions_notes_stay_readable_past_its_edges_without_being_read_back() {
    let env = Env::start("", "max_size = 2").await;
    let mut a = env.client().await;
    a.query("CREATE TABLE test.notes (id INT PRIMARY KEY, amount DECIMAL(6,2))")
        .await
        .expect("table");
    let before = show_warnings_run(&env);
    a.query("BEGIN").await.expect("begin");
    a.query("INSERT INTO test.notes VALUES (1, 1.005), (2, 2.005)")
        .await
        .expect("insert with notes");
    a.query("COMMIT").await.expect("commit");
    a.query("START TRANSACTION").await.expect("start");
    a.query("SELECT * FROM test.notes").await.expect("reads a table");
    a.query("COMMIT").await.expect("commit");
    assert_eq!(show_warnings_run(&env), before, "no SHOW WARNINGS at the edges");

    a.query("BEGIN").await.expect("begin");
    a.query("INSERT INTO test.notes VALUES (3, 3.005), (4, 4.005)")
        .await
        .expect("insert with notes");
    a.query("COMMIT").await.expect("commit");
    let notes = |rows: &[Vec<Option<String>>]| rows.iter().filter(|r| r[1].as_deref() == Some("1265")).count();
    assert_eq!(notes(&a.query("SHOW WARNINGS").await.expect("after commit")), 2);
    a.query("START TRANSACTION").await.expect("start");
    assert_eq!(notes(&a.query("SHOW WARNINGS").await.expect("after begin")), 2);
    assert_eq!(a.value("SELECT @@warning_count").await.as_deref(), Some("2"));
    a.query("ROLLBACK").await.expect("rollback");

    // Autocommit, then statements that do not clear the area: still readable, and the
    // connection goes back once the session is idle.
    a.query("INSERT INTO test.notes VALUES (5, 5.005), (6, 6.005)")
        .await
        .expect("insert with notes");
    a.query("SELECT 1").await.expect("keeps the area");
    a.query("DO 1").await.expect("keeps the area");
    assert_eq!(notes(&a.query("SHOW WARNINGS").await.expect("after two")), 2);
    a.query("SELECT COUNT(*) FROM test.notes").await.expect("clears");
    wait_until_released(&env).await;
    assert!(a.query("SHOW WARNINGS").await.expect("empty").is_empty());
}

/// Two sessions on one backend connection assign the same LAST_INSERT_ID() value in turn (two
/// tables' first ids, the same LAST_INSERT_ID(expr)): each session's LAST_INSERT_ID() is what it
/// assigned, as on its own MariaDB connection, though the connection's value did not change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_insert_id_is_the_sessions_own_when_it_repeats_another_sessions_value() {
    let env = Env::start("", "max_size = 1").await;
    let mut a = env.client().await;
    let mut b = env.client().await;
    for t in ["t1", "t2"] {
        a.query(&format!(
            "CREATE TABLE test.{t} (id INT AUTO_INCREMENT PRIMARY KEY, v INT)"
        ))
        .await
        .expect("table");
    }
    let lii = "SELECT LAST_INSERT_ID()";
    a.query("INSERT INTO test.t1 (v) VALUES (1)").await.expect("a: id 1");
    b.query("INSERT INTO test.t2 (v) VALUES (1)")
        .await
        .expect("b: id 1 too");
    assert_eq!(b.value(lii).await.as_deref(), Some("1"), "an insert's id");
    a.query("SELECT LAST_INSERT_ID(9)").await.expect("a: 9");
    b.query("SELECT LAST_INSERT_ID(9)").await.expect("b: 9 too");
    assert_eq!(b.value(lii).await.as_deref(), Some("9"), "LAST_INSERT_ID(expr)");
    a.query("INSERT INTO test.t2 (v) VALUES (2)").await.expect("a: id 2");
    b.query("BEGIN").await.expect("begin");
    b.query("INSERT INTO test.t1 (v) VALUES (2)")
        .await
        .expect("b: id 2 too");
    b.query("COMMIT").await.expect("commit");
    assert_eq!(b.value(lii).await.as_deref(), Some("2"), "in a transaction");
    assert_eq!(a.value(lii).await.as_deref(), Some("2"));
    b.query("INSERT INTO test.t1 (id, v) VALUES (50, 3)")
        .await
        .expect("an explicit id assigns nothing");
    assert_eq!(b.value(lii).await.as_deref(), Some("2"));
}

/// Two sessions over a pool of one backend connection, and their table `test.t` with an
/// AUTO_INCREMENT key.
async fn two_sessions_on_one_connection() -> (Env, Client, Client) {
    let env = Env::start("", "max_size = 1").await;
    let mut a = env.client().await;
    let b = env.client().await;
    a.query("CREATE TABLE test.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
        .await
        .expect("table");
    (env, a, b)
}

/// Inserts of two sessions taking turns on one backend connection: the value read back after
/// each leaves the connection at 0, so no insert needs a SET first; each session reads its
/// own value, and an insert that generates nothing keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inserts_of_sessions_sharing_a_connection_need_no_set_and_keep_their_own_ids() {
    let (env, mut a, mut b) = two_sessions_on_one_connection().await;
    let sets_before = global_status(&env, "Com_set_option");
    for round in 0..3 {
        a.query(&format!("INSERT INTO test.t (v) VALUES ({round})"))
            .await
            .expect("a");
        b.query(&format!("INSERT INTO test.t (id, v) VALUES (0, {round}), (NULL, 9)"))
            .await
            .expect("b: two generated ids");
    }
    assert_eq!(
        global_status(&env, "Com_set_option"),
        sets_before,
        "no SET before inserts"
    );
    let lii = "SELECT LAST_INSERT_ID()";
    assert_eq!(a.value(lii).await.as_deref(), Some("7"), "a's last insert");
    assert_eq!(
        b.value(lii).await.as_deref(),
        Some("8"),
        "b's: the first of its two rows"
    );
    b.query("INSERT INTO test.t (id, v) VALUES (100, 1)")
        .await
        .expect("an explicit id generates nothing");
    b.query("INSERT IGNORE INTO test.t (id, v) VALUES (1, 1)")
        .await
        .expect("an ignored row generates nothing");
    assert_eq!(b.value(lii).await.as_deref(), Some("8"));
    a.query("INSERT INTO test.t (v) VALUES (LAST_INSERT_ID())")
        .await
        .expect("an insert that reads the value");
    assert_eq!(
        a.value("SELECT v FROM test.t WHERE id = 101").await.as_deref(),
        Some("7")
    );
    assert_eq!(a.value(lii).await.as_deref(), Some("101"));
    assert_eq!(b.value(lii).await.as_deref(), Some("8"));
}

/// A transaction whose insert names its id (as sysbench's writes do) may have changed
/// LAST_INSERT_ID(): the value is read behind the COMMIT or ROLLBACK, in its write, not by a
/// round trip of its own when the connection goes back (text and prepared statements).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transactions_last_insert_id_is_read_behind_its_end() {
    let (env, mut a, mut b) = two_sessions_on_one_connection().await;
    for sql in [
        "BEGIN",
        "INSERT INTO test.t VALUES (10, 1)",
        "INSERT INTO test.t (v) VALUES (2)",
        "COMMIT",
    ] {
        a.query(sql).await.expect(sql);
    }
    b.query("BEGIN").await.expect("begin");
    let (insert, _, _) = b.prepare("INSERT INTO test.t VALUES (?, 3)").await.expect("prepare");
    b.execute(insert, &[Some("20")]).await.expect("an explicit id");
    let (rollback, _, _) = b.prepare("ROLLBACK").await.expect("prepare");
    b.execute(rollback, &[]).await.expect("rollback");
    let round_trips = "tessera_last_insert_id_round_trips_total";
    assert_eq!(env.metric_sum(round_trips), 0, "read behind the transactions' ends");
    let lii = "SELECT LAST_INSERT_ID()";
    assert_eq!(a.value(lii).await.as_deref(), Some("11"));
    assert_eq!(
        b.value(lii).await.as_deref(),
        Some("0"),
        "an explicit id assigns nothing"
    );
    // COMMIT RELEASE: the server closes the connection after its OK, nothing is read behind.
    for sql in ["BEGIN", "INSERT INTO test.t VALUES (30, 1)"] {
        a.query(sql).await.expect(sql);
    }
    a.query("COMMIT RELEASE").await.expect("the commit's OK");
    assert_eq!(
        b.value("SELECT COUNT(*) FROM test.t WHERE id = 30").await.as_deref(),
        Some("1")
    );
}

/// An insert's LAST_INSERT_ID() is read by a statement appended to the client's query (one
/// answer from the server, no second wake-up): the client gets only its own OK, without
/// "more results", with and without session tracking; a failing insert runs nothing
/// appended; the insert's notes stay readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inserts_appended_read_stays_out_of_the_clients_answer() {
    let env = Env::start("", "max_size = 1").await;
    env.backend_sql("SET GLOBAL log_output = 'TABLE'; SET GLOBAL general_log = ON");
    let port = env.port();
    let mut a = Client::connect_with(port, "app", "app", Some("test"), CLIENT_SESSION_TRACK)
        .await
        .expect("login");
    let mut b = env.client().await;
    a.query("CREATE TABLE test.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT UNIQUE, d DECIMAL(5,1))")
        .await
        .expect("table");
    let answer = a.raw(b"\x03INSERT INTO test.t (v) VALUES (1)").await;
    let ok = OkPacket::parse(&answer, CLIENT_SESSION_TRACK).expect("an OK");
    assert_eq!((ok.last_insert_id, ok.status & SERVER_MORE_RESULTS_EXISTS), (1, 0));
    b.query("INSERT INTO test.t (v) VALUES (2)").await.expect("b: id 2");
    let err = a
        .query("INSERT INTO test.t (v) VALUES (2)")
        .await
        .expect_err("a duplicate");
    assert!(err.to_string().contains("Duplicate"), "{err}");
    let lii = "SELECT LAST_INSERT_ID()";
    assert_eq!(
        a.value(lii).await.as_deref(),
        Some("1"),
        "a failed insert assigns nothing"
    );
    assert_eq!(b.value(lii).await.as_deref(), Some("2"));
    b.query("INSERT INTO test.t (v, d) VALUES (3, 1.25)")
        .await
        .expect("a note");
    let notes = b.query("SHOW WARNINGS").await.expect("notes");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(b.value(lii).await.as_deref(), Some("4"));
    let appended = env.backend_sql(
        "SELECT COUNT(*) FROM mysql.general_log WHERE argument LIKE 'INSERT INTO test.t%;SELECT LAST_INSERT_ID(%'",
    );
    let count = appended.split_whitespace().last().and_then(|n| n.parse::<u64>().ok());
    assert_eq!(count, Some(4), "read in each insert's own query: {appended}");
}

/// LAST_INSERT_ID(expr) with a warning keeps the connection for SHOW WARNINGS; when the
/// session then goes idle and the connection goes back, the value set is still the session's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_insert_id_set_beside_a_warning_survives_the_idle_release() {
    // One backend connection: the other client changes the very connection the first gave back.
    let env = Env::start("", "max_size = 1").await;
    let mut a = env.client().await;
    let mut b = env.client().await;
    a.query("SELECT LAST_INSERT_ID(42), CAST('zz' AS SIGNED)")
        .await
        .expect("a warning");
    assert_eq!(env.metric_sum("tessera_pool_pinned{"), 1, "kept for SHOW WARNINGS");
    wait_until_unpinned(&env).await;
    b.query("SELECT LAST_INSERT_ID(7)").await.expect("b's own");
    assert_eq!(a.value("SELECT LAST_INSERT_ID()").await.as_deref(), Some("42"));
    assert_eq!(b.value("SELECT LAST_INSERT_ID()").await.as_deref(), Some("7"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_with_a_backend_account_of_their_own_get_its_privileges() {
    let sandbox = tokio::task::spawn_blocking(common::sandbox).await.expect("sandbox");
    sandbox.servers()[0]
        .sql(
            "CREATE USER 'reader'@'%' IDENTIFIED BY 'rpw'; GRANT SELECT ON test.* TO 'reader'@'%';
             CREATE TABLE test.t (a INT); INSERT INTO test.t VALUES (1)",
        )
        .expect("account");
    let mut config = common::config(sandbox.servers()[0].port(), "", "");
    config.users.push(tessera_config::UserConfig {
        name: "report".into(),
        password: Some("report".into()),
        password_hash: None,
        read_write_split: true,
        read_consistency: "global".into(),
        backend_user: Some("reader".into()),
        backend_password: Some("rpw".into()),
    });
    let proxy = tessera_proxy::server::start(config).await.expect("proxy");
    let port = proxy.addr.port();
    let mut report = Client::connect(port, "report", "report", Some("test"))
        .await
        .expect("login");
    assert_eq!(report.value("SELECT COUNT(*) FROM t").await.as_deref(), Some("1"));
    assert_eq!(
        report.value("SELECT CURRENT_USER()").await.as_deref(),
        Some("reader@%"),
        "the backend account answers"
    );
    assert_eq!(report.value("SELECT USER()").await.as_deref(), Some("report@127.0.0.1"));
    let e = report
        .query("INSERT INTO t VALUES (2)")
        .await
        .expect_err("no INSERT privilege");
    assert_eq!(e.code, 1142, "{e}");
    let mut app = Client::connect(port, "app", "app", Some("test")).await.expect("login");
    app.query("INSERT INTO t VALUES (2)")
        .await
        .expect("the proxy account may");
    drop(proxy);
}

/// Every frame (sequence id, payload) of the answer to one command from a client with
/// `CLIENT_DEPRECATE_EOF`: an OK or ERR, or one result set up to its end packet (header 0xFE).
async fn frames_without_eofs(c: &mut Client, command: &[u8]) -> Vec<(u8, Vec<u8>)> {
    c.io.reset_seq();
    c.io.send(command).await.expect("send");
    let mut frames = Vec::new();
    let mut next = async |frames: &mut Vec<(u8, Vec<u8>)>| {
        let (seq, p) = c.io.read_packet_with_seq().await.expect("frame");
        frames.push((seq, p.to_vec()));
        p
    };
    let first = next(&mut frames).await;
    if matches!(first[0], 0x00 | 0xff) {
        return frames;
    }
    for _ in 0..first[0] {
        next(&mut frames).await;
    }
    while !matches!(next(&mut frames).await[0], 0xfe | 0xff) {}
    frames
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_eof_packets_gets_the_servers_own_framing() {
    use tessera_protocol::flags::CLIENT_DEPRECATE_EOF;
    let env = Env::start("", "").await;
    let mut setup = env.client_in_test().await;
    setup.create_value_table("no_eof", 300, "value ").await;
    let server = env.sandbox.servers()[0].port();
    let mut direct = Client::connect_with(server, "tessera", "tessera", Some("test"), CLIENT_DEPRECATE_EOF)
        .await
        .expect("direct login");
    let mut proxied = Client::connect_with(env.port(), "app", "app", Some("test"), CLIENT_DEPRECATE_EOF)
        .await
        .expect("login");
    let query = |sql: &str| [&[3u8][..], sql.as_bytes()].concat();
    // 300 rows cross sequence id 255; results larger than one read (about 30 KB) and than
    // what a reader waits for to pass whole (about 90 KB); one row; no rows; a warning.
    let statements = [
        "SELECT id, v FROM no_eof ORDER BY id",
        "SELECT id, REPEAT(v, 10) FROM no_eof ORDER BY id",
        "SELECT id, REPEAT(v, 30) FROM no_eof ORDER BY id",
        "SELECT id, v FROM no_eof WHERE id = 7",
        "SELECT v FROM no_eof WHERE id > 1000",
        "SELECT CAST('1x' AS INT) FROM no_eof WHERE id = 1",
    ];
    for in_transaction in [false, true] {
        if in_transaction {
            direct.query("BEGIN").await.expect("begin");
            proxied.query("BEGIN").await.expect("begin");
        }
        for sql in statements {
            let want = frames_without_eofs(&mut direct, &query(sql)).await;
            let got = frames_without_eofs(&mut proxied, &query(sql)).await;
            assert_eq!(got, want, "{sql} (in a transaction: {in_transaction})");
        }
    }
    direct.query("COMMIT").await.expect("commit");
    proxied.query("COMMIT").await.expect("commit");
    // The binary protocol: a prepared statement's result.
    let mut executes = Vec::new();
    for c in [&mut direct, &mut proxied] {
        let prepared = {
            c.io.reset_seq();
            let sql = b"SELECT id, v FROM no_eof WHERE id <= 260 ORDER BY id";
            c.io.send(&[&[0x16u8][..], &sql[..]].concat()).await.expect("prepare");
            let ok = c.io.read_packet().await.expect("prepare ok");
            assert_eq!(ok[0], 0, "prepared");
            for _ in 0..2 {
                c.io.read_packet().await.expect("column definition");
            }
            u32::from_le_bytes([ok[1], ok[2], ok[3], ok[4]])
        };
        let mut execute = vec![0x17u8];
        execute.extend_from_slice(&prepared.to_le_bytes());
        execute.extend_from_slice(&[0, 1, 0, 0, 0]);
        executes.push(frames_without_eofs(c, &execute).await);
    }
    assert_eq!(executes[1], executes[0], "a prepared statement's binary rows");
}

/// Every frame (sequence id, payload) of the answer to a COM_QUERY that returns one result
/// set (or an error), whatever the client negotiated about EOF and metadata.
async fn result_frames(c: &mut Client, sql: &str, deprecate_eof: bool, cached: bool) -> Vec<(u8, Vec<u8>)> {
    c.io.reset_seq();
    c.io.send(&[&[3u8][..], sql.as_bytes()].concat()).await.expect("send");
    let mut frames = Vec::new();
    let mut next = async || {
        let (seq, p) = c.io.read_packet_with_seq().await.expect("frame");
        frames.push((seq, p.to_vec()));
        p.to_vec()
    };
    let first = next().await;
    if first[0] == 0xff {
        return frames;
    }
    let mut r = tessera_protocol::codec::Reader::new(&first);
    let columns = r.lenenc_int().expect("column count");
    let follows = !cached || r.u8().expect("the metadata follows byte") == 1;
    for _ in 0..if follows { columns } else { 0 } {
        next().await;
    }
    if !deprecate_eof {
        assert_eq!(next().await[0], 0xfe, "EOF after the definitions");
    }
    loop {
        let p = next().await;
        if p[0] == 0xff || (p[0] == 0xfe && (p.len() < 9 || deprecate_eof)) {
            break;
        }
    }
    frames
}

/// A plain `SELECT LAST_INSERT_ID()` is answered by Tessera from the session's value, frame
/// for frame as MariaDB answers it, in every dialect a client may negotiate; FOUND_ROWS(),
/// ROW_COUNT() and the diagnostics area after it are the server's too. Any other form, and a
/// session that holds a connection (here: after a warning), still goes to the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_select_last_insert_id_is_answered_from_the_sessions_value_as_the_server_would() {
    use tessera_protocol::flags::{
        CLIENT_DEPRECATE_EOF, MARIADB_CLIENT_CACHE_METADATA, MARIADB_CLIENT_EXTENDED_METADATA,
    };
    let env = Env::start("", "").await;
    let server = env.sandbox.servers()[0].port();
    let mut setup = env.client_in_test().await;
    setup
        .query("CREATE TABLE lii_answer (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
        .await
        .expect("table");
    let answered = || env.metric_sum("tessera_last_insert_id_answered_total");
    let dialects = [
        (0, 0),
        (CLIENT_DEPRECATE_EOF, 0),
        (0, MARIADB_CLIENT_CACHE_METADATA),
        (
            CLIENT_DEPRECATE_EOF,
            MARIADB_CLIENT_CACHE_METADATA | MARIADB_CLIENT_EXTENDED_METADATA,
        ),
    ];
    for (extra, extended) in dialects {
        let (eof, cached) = (
            extra & CLIENT_DEPRECATE_EOF != 0,
            extended & MARIADB_CLIENT_CACHE_METADATA != 0,
        );
        let mut direct = Client::connect_capable(server, ("tessera", "tessera"), Some("test"), extra, extended).await;
        let mut proxied = Client::connect_capable(env.port(), ("app", "app"), Some("test"), extra, extended).await;
        for c in [&mut direct, &mut proxied] {
            c.query("SELECT LAST_INSERT_ID(4242)").await.expect("set the value");
        }
        let before = answered();
        for sql in ["SELECT LAST_INSERT_ID()", " select\tlast_insert_id() "] {
            let want = result_frames(&mut direct, sql, eof, cached).await;
            let got = result_frames(&mut proxied, sql, eof, cached).await;
            assert_eq!(got, want, "{sql:?}, capabilities {extra:#x} / {extended:#x}");
        }
        assert_eq!(answered() - before, 2, "both answered by Tessera");
        for sql in ["SELECT FOUND_ROWS()", "SELECT ROW_COUNT()"] {
            assert_eq!(proxied.value(sql).await, direct.value(sql).await, "{sql}");
        }
        // Forms the server names or computes otherwise still go to it, alike.
        for sql in [
            "SELECT LAST_INSERT_ID( )",
            "SELECT LAST_INSERT_ID() AS id",
            "SELECT LAST_INSERT_ID();",
        ] {
            let want = result_frames(&mut direct, sql, eof, cached).await;
            let got = result_frames(&mut proxied, sql, eof, cached).await;
            assert_eq!(got, want, "{sql:?}");
        }
        assert_eq!(answered() - before, 2, "the other forms went to the server");
    }
    // After an insert: the session's own generated id. After a warning: the server's answer
    // (the session holds its connection), and the warning stays readable behind it.
    let mut a = env.client_in_test().await;
    let mut b = env.client_in_test().await;
    let ids: Vec<u64> = {
        let mut ids = Vec::new();
        for c in [&mut a, &mut b] {
            c.query("INSERT INTO lii_answer (v) VALUES (1)").await.expect("insert");
            ids.push(
                c.value("SELECT LAST_INSERT_ID()")
                    .await
                    .expect("id")
                    .parse()
                    .expect("number"),
            );
        }
        ids
    };
    assert_eq!(ids, [1, 2], "each session its own generated id");
    let explicit = format!("INSERT IGNORE INTO lii_answer (id, v) VALUES ({}, 2)", ids[0]);
    a.query(&explicit).await.expect("a duplicate, ignored");
    let before = answered();
    assert_eq!(a.value("SELECT LAST_INSERT_ID()").await, Some(ids[0].to_string()));
    assert_eq!(answered(), before, "held after a warning: the server answered");
    let warnings = a.query("SHOW WARNINGS").await.expect("warnings");
    assert_eq!(warnings.len(), 1, "the duplicate's warning is still there");
}
