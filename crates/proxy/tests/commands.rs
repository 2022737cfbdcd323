//! The commands besides COM_QUERY against a real MariaDB: prepared statements (binary protocol,
//! NULLs, long data, reuse across connections, bounded backend handles), COM_CHANGE_USER,
//! COM_RESET_CONNECTION, COM_INIT_DB, COM_FIELD_LIST, COM_STATISTICS, COM_PING, COM_SET_OPTION.

use crate::common;

use common::stmt::{Outcome, Param, StmtError};
use common::{Client, Env};
use tessera_protocol::response::{is_eof, is_err, is_ok, ErrPacket};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_round_trip_and_move_between_connections() {
    let env = Env::start("", "max_size = 2").await;
    let mut a = env.client_in_test().await;
    let mut others = [env.client_in_test().await, env.client_in_test().await];
    let (id, params, cols) = a.prepare("SELECT CONCAT(?, '-', ?), ?").await.expect("prepare");
    assert_eq!((params, cols), (3, 2));
    for i in 0..20 {
        // Other clients keep taking the pool's connections, so executions land on different ones.
        for o in others.iter_mut() {
            o.query("SELECT 1").await.expect("noise");
        }
        let v = format!("v{i}");
        let rows = a.execute(id, &[Some("héllo"), Some(&v), None]).await.expect("execute");
        assert_eq!(rows, vec![vec![Some(format!("héllo-{v}")), None]]);
    }
    let e = a.prepare("SELEC nonsense").await.expect_err("syntax error");
    assert_eq!((e.code, e.sql_state_str()), (1064, "42000"));
    a.close_stmt(id).await;
    let e = a.execute(id, &[Some("x"), Some("y"), None]).await.expect_err("closed");
    assert_eq!(e.code, 1243);
}

/// The Bytes_received of the backend session the client's statements run on.
async fn backend_bytes_received(c: &mut Client) -> u64 {
    let rows = c
        .query("SHOW SESSION STATUS LIKE 'Bytes_received'")
        .await
        .expect("status");
    let value = rows.first().and_then(|r| r.get(1)).cloned().flatten();
    value.expect("a value").parse().expect("a number")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameter_types_reach_the_backend_only_when_they_change() {
    let env = Env::start("", "max_size = 1").await;
    let (mut a, mut b) = (env.client_in_test().await, env.client_in_test().await);
    let sa = a.stmt_prepare("SELECT ?").await.expect("prepare");
    let sb = b.stmt_prepare("SELECT ?").await.expect("prepare");
    let value = |o: Outcome| o.rows[0][0].clone();
    // In a transaction every execution runs on a's one backend connection.
    a.query("BEGIN").await.expect("begin");
    let mut sizes = Vec::new();
    for i in 0..3 {
        let before = backend_bytes_received(&mut a).await;
        let got = a.stmt_execute(&sa, &[Param::Int(40 + i)]).await.expect("execute");
        assert_eq!(value(got), Some((40 + i).to_string()));
        sizes.push(backend_bytes_received(&mut a).await - before);
    }
    // The first execution carries the parameter's two type bytes, the next ones do not.
    assert_eq!((sizes[0] - sizes[1], sizes[1]), (2, sizes[2]), "{sizes:?}");
    // After an execution the server answered with an error, the types go again.
    let failing = a
        .stmt_prepare("SELECT 1 FROM DUAL WHERE ? = (SELECT 1 UNION SELECT 2)")
        .await
        .expect("prepare");
    let mut sizes = Vec::new();
    for _ in 0..3 {
        let before = backend_bytes_received(&mut a).await;
        let e = a.stmt_execute(&failing, &[Param::Int(1)]).await.expect_err("two rows");
        assert!(matches!(e, StmtError::Server(ref e) if e.code == 1242), "{e}");
        sizes.push(backend_bytes_received(&mut a).await - before);
    }
    assert_eq!(
        (sizes[0], sizes[1]),
        (sizes[2], sizes[2]),
        "types every time: {sizes:?}"
    );
    a.query("COMMIT").await.expect("commit");
    // b's executions share that backend statement (one connection) with other types: the
    // types go again whenever they change, and every answer is typed as its client sent it.
    let got = b
        .stmt_execute(&sb, &[Param::Text("hello".into())])
        .await
        .expect("execute");
    assert_eq!(value(got), Some("hello".into()));
    let got = a.stmt_execute(&sa, &[Param::Int(7)]).await.expect("execute");
    assert_eq!(value(got), Some("7".into()));
    let got = b.stmt_execute(&sb, &[Param::Double(2.5)]).await.expect("execute");
    assert_eq!(value(got), Some("2.5".into()));
    let got = b.stmt_execute(&sb, &[Param::Null]).await.expect("execute");
    assert_eq!(value(got), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_data_is_replayed_before_execution() {
    let env = Env::start("", "").await;
    let mut c = env.client_in_test().await;
    let (id, _, _) = c.prepare("SELECT CONCAT('[', ?, ']')").await.expect("prepare");
    for chunk in ["abc", "def", &"x".repeat(100_000)] {
        let mut p = vec![0x18u8];
        p.extend_from_slice(&id.to_le_bytes());
        p.extend_from_slice(&0u16.to_le_bytes());
        p.extend_from_slice(chunk.as_bytes());
        c.io.reset_seq();
        c.io.send(&p).await.expect("long data");
    }
    let rows = c
        .execute(id, &[Some("ignored when long data was sent")])
        .await
        .expect("execute");
    let got = rows[0][0].clone().expect("value");
    assert_eq!(got, format!("[abcdef{}]", "x".repeat(100_000)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_prepared_statements_stay_bounded() {
    let env = Env::start("", "max_size = 4\nprepared_cache_size = 64").await;
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(env.client_in_test().await);
    }
    for i in 0..10_000 {
        let c = &mut clients[i % 4];
        let (id, _, _) = c.prepare(&format!("SELECT CONCAT(?, '{i}')")).await.expect("prepare");
        let rows = c.execute(id, &[Some("n")]).await.expect("execute");
        assert_eq!(rows, vec![vec![Some(format!("n{i}"))]]);
        c.close_stmt(id).await;
    }
    clients[0].query("SELECT 1").await.expect("flush pending closes");
    let status = env.backend_sql("SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'");
    let count: usize = status
        .split_whitespace()
        .nth(1)
        .expect("value")
        .parse()
        .expect("number");
    println!("Prepared_stmt_count after 10,000 distinct statements: {count} (bound 4 x 64 = 256)");
    assert!(count <= 4 * 64, "Prepared_stmt_count = {count}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn change_user_reset_connection_and_small_commands() {
    let env = Env::start("", "").await;
    let mut c = env.client_in_test().await;
    c.query("SET @x = 42, time_zone = '+05:00'").await.expect("set");
    c.query("CREATE TEMPORARY TABLE tmp (a INT)").await.expect("temp");
    // COM_RESET_CONNECTION: state gone, schema kept, pin released.
    assert!(is_ok(&c.raw(&[0x1f]).await));
    assert_eq!(c.value("SELECT @x").await, None);
    assert_eq!(c.value("SELECT DATABASE()").await.as_deref(), Some("test"));
    let e = c.query("SELECT * FROM tmp").await.expect_err("temporary table dropped");
    assert_eq!(e.code, 1146);
    // COM_INIT_DB, known and unknown.
    let mut p = vec![0x02u8];
    p.extend_from_slice(b"mysql");
    assert!(is_ok(&c.raw(&p).await));
    assert_eq!(c.value("SELECT DATABASE()").await.as_deref(), Some("mysql"));
    let mut p = vec![0x02u8];
    p.extend_from_slice(b"nope");
    let e = ErrPacket::parse(&c.raw(&p).await).expect("error");
    assert_eq!(e.code, 1049);
    // COM_FIELD_LIST: column definitions then EOF.
    c.query("CREATE TABLE test.fl (a INT, b TEXT)").await.expect("create");
    let mut p = vec![0x04u8];
    p.extend_from_slice(b"fl\0");
    c.query("USE test").await.expect("use");
    let mut defs = 0;
    let mut packet = c.raw(&p).await;
    while !is_eof(&packet) {
        assert!(!is_err(&packet), "field list failed");
        defs += 1;
        packet = c.io.read_packet().await.expect("next");
    }
    assert_eq!(defs, 2);
    // COM_STATISTICS: a plain text packet. COM_PING: OK. COM_SET_OPTION: EOF.
    let stats = c.raw(&[0x09]).await;
    assert!(String::from_utf8_lossy(&stats).contains("Uptime"));
    assert!(is_ok(&c.raw(&[0x0e]).await));
    assert!(is_eof(&c.raw(&[0x1b, 1, 0]).await), "multi-statements off");
    let e = c
        .query("SELECT 1; SELECT 2")
        .await
        .expect_err("multi statements refused");
    assert_eq!(e.code, 1064);
    assert!(is_eof(&c.raw(&[0x1b, 0, 0]).await), "multi-statements on");
    assert_eq!(
        c.query("SELECT 1; SELECT 2").await.expect("multi"),
        vec![vec![Some("2".into())]]
    );
    // COM_CHANGE_USER to another account, then a wrong password: refused, the connection
    // goes on as the account it was (as MariaDB, which allows three refusals).
    change_user(&mut c, "other", "other").await.expect("change user");
    assert_eq!(c.value("SELECT DATABASE()").await, None);
    let e = change_user(&mut c, "app", "bad").await.expect_err("wrong password");
    assert_eq!(e.code, 1045);
    assert_eq!(c.value("SELECT 'connected'").await.as_deref(), Some("connected"));
}

/// COM_CHANGE_USER with an empty auth response; Tessera answers with an auth switch.
async fn change_user(c: &mut Client, user: &str, password: &str) -> Result<(), ErrPacket> {
    let mut p = vec![0x11u8];
    p.extend_from_slice(user.as_bytes());
    p.extend_from_slice(&[0, 0, 0]);
    p.extend_from_slice(&45u16.to_le_bytes());
    let switch = c.raw(&p).await;
    let (plugin, scramble) = tessera_protocol::handshake::parse_auth_switch(&switch).expect("auth switch");
    assert_eq!(plugin, "mysql_native_password");
    c.io.send(&tessera_protocol::auth::native_scramble(password.as_bytes(), &scramble))
        .await
        .expect("send");
    let answer = c.io.read_packet().await.expect("answer");
    if is_ok(&answer) {
        Ok(())
    } else {
        Err(ErrPacket::parse(&answer).expect("err"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cannot_keep_unbounded_prepared_statements() {
    let env = Env::start("", "").await;
    let mut c = env.client_in_test().await;
    let limit = tessera_proxy::session::prepared::MAX_CLIENT_STATEMENTS;
    for _ in 0..limit {
        c.prepare("SELECT 1").await.expect("prepare within the limit");
    }
    let e = c.prepare("SELECT 1").await.expect_err("over the limit");
    assert_eq!((e.code, e.sql_state_str()), (1461, "42000"));
    assert_eq!(c.value("SELECT 'still usable'").await.as_deref(), Some("still usable"));
}

/// What every connected client costs while idle is mostly its task: the session's future. Its
/// commands' futures live on the heap while they run, so 10,000 idle clients stay well under
/// 100 MB (docs/benchmarks.md measures the RSS).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_task_stays_small() {
    let env = Env::start("", "").await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let client = tokio::net::TcpStream::connect(listener.local_addr().expect("addr"))
        .await
        .expect("connect");
    let (server_side, _) = listener.accept().await.expect("accept");
    let ctx = env.proxy.as_ref().expect("running").ctx.clone();
    let session = tessera_proxy::session::serve(ctx, server_side, "127.0.0.1".into());
    let size = std::mem::size_of_val(&session);
    assert!(size < 6 * 1024, "a session's future is {size} bytes");
    drop((session, client));
}

/// Column names and types a PREPARE of `sql` announces.
async fn announced(c: &mut Client, sql: &str) -> Vec<(String, u8)> {
    let p = c.stmt_prepare(sql).await.expect("prepare");
    let columns = p.columns.iter().map(|d| (d.name.clone(), d.column_type)).collect();
    c.stmt_close(&p).await.expect("close");
    columns
}

/// What two clients' PREPAREs of one text announce around a table change (`prefix` names the
/// table, so runs against the server and through Tessera do not meet).
async fn prepares_around_a_table_change(a: &mut Client, b: &mut Client, prefix: &str) -> Vec<Vec<(String, u8)>> {
    let t = format!("{prefix}_ddl");
    a.query(&format!("CREATE OR REPLACE TABLE {t} (id INT PRIMARY KEY, v INT)"))
        .await
        .expect("create");
    let sql = format!("SELECT * FROM {t}");
    let mut seen = vec![announced(a, &sql).await, announced(b, &sql).await];
    a.query(&format!("ALTER TABLE {t} MODIFY v VARCHAR(20), ADD COLUMN w DATE"))
        .await
        .expect("alter");
    seen.push(announced(b, &sql).await);
    seen.push(announced(a, &sql).await);
    b.query(&format!("DROP TABLE {t}")).await.expect("drop");
    b.query(&format!("CREATE TABLE {t} (k BIGINT)"))
        .await
        .expect("create again");
    seen.push(announced(a, &sql).await);
    a.query(&format!("DROP TABLE {t}")).await.expect("drop");
    seen
}

/// A PREPARE after a table change announces the table as it is now, as the server does, even
/// when another client prepared the same text on the same backend connection before (one
/// pooled connection here, so every PREPARE meets the earlier one's cached handle).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prepare_after_a_table_change_describes_the_table_as_it_is() {
    let env = Env::start("", "max_size = 1").await;
    let port = env.sandbox.servers()[0].port();
    let direct = || Client::connect(port, "tessera", "tessera", Some("test"));
    let (mut da, mut db) = (direct().await.expect("login"), direct().await.expect("login"));
    let server = prepares_around_a_table_change(&mut da, &mut db, "direct").await;
    let (mut a, mut b) = (env.client_in_test().await, env.client_in_test().await);
    let proxied = prepares_around_a_table_change(&mut a, &mut b, "proxied").await;
    let widths = |seen: &[Vec<(String, u8)>]| -> Vec<usize> { seen.iter().map(Vec::len).collect() };
    assert_eq!(
        widths(&server),
        vec![2, 2, 3, 3, 1],
        "the server's own answers: {server:?}"
    );
    assert_eq!(proxied, server);
}
