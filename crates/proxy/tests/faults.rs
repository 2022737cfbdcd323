//! Faults and bad input against a real MariaDB: wrong credentials, unknown schema, malformed
//! and oversize packets, stalled handshakes, dead and killed backends, KILL, pool exhaustion,
//! and draining on shutdown. Nothing a client sends may crash or stall the proxy.

use crate::common;

use common::{Client, Env};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_errors_are_mysql_errors() {
    let env = Env::start("", "").await;
    let e = Client::connect(env.port(), "app", "wrong", None)
        .await
        .expect_err("refused");
    assert_eq!((e.code, e.sql_state_str()), (1045, "28000"));
    let e = Client::connect(env.port(), "nobody", "x", None)
        .await
        .expect_err("refused");
    assert_eq!(e.code, 1045);
    let e = Client::connect(env.port(), "app", "app", Some("no_such_db"))
        .await
        .expect_err("refused");
    assert_eq!((e.code, e.sql_state_str()), (1049, "42000"));
    let mut c = Client::connect(env.port(), "app", "app", Some("test"))
        .await
        .expect("login with db");
    assert_eq!(c.value("SELECT DATABASE()").await.as_deref(), Some("test"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_packets_close_only_that_connection() {
    let env = Env::start("", "").await;
    let mut healthy = env.client().await;
    for garbage in [vec![0x17u8, 1], vec![0x19], vec![0x1c, 1, 0], vec![]] {
        let mut bad = env.client().await;
        bad.io.reset_seq();
        bad.io.send(&garbage).await.expect("send");
        assert!(bad.is_closed().await, "connection closed after {garbage:?}");
    }
    // Random bytes straight after connecting, before any handshake response.
    let mut raw = tokio::net::TcpStream::connect(("127.0.0.1", env.port()))
        .await
        .expect("connect");
    raw.write_all(&[0xff; 64]).await.expect("write");
    drop(raw);
    assert_eq!(healthy.value("SELECT 1+1").await.as_deref(), Some("2"));
    let mut again = env.client().await;
    assert_eq!(
        again.value("SELECT 'still serving'").await.as_deref(),
        Some("still serving")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_packet_gets_1153_and_closes() {
    let env = Env::start("max_allowed_packet = 4096", "").await;
    let mut c = env.client().await;
    let big = format!("SELECT '{}'", "x".repeat(10_000));
    let e = c.query(&big).await.expect_err("too large");
    assert_eq!(e.code, 1153);
    assert!(c.is_closed().await);
    let mut other = env.client().await;
    assert_eq!(other.value("SELECT 7").await.as_deref(), Some("7"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_handshake_times_out() {
    let env = Env::start("handshake_timeout_ms = 300", "").await;
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", env.port()))
        .await
        .expect("connect");
    let mut io = tessera_protocol::PacketStream::new(tcp);
    io.read_packet().await.expect("greeting arrives");
    let closed = tokio::time::timeout(Duration::from_secs(10), io.read_packet()).await;
    assert!(
        matches!(closed, Ok(Err(_))),
        "server hangs up on a client that never answers"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_down_at_start_then_back() {
    let mut sandbox = tokio::task::spawn_blocking(common::sandbox).await.expect("sandbox");
    let port = sandbox.servers()[0].port();
    sandbox.server_mut(0).stop().expect("stop backend");
    let proxy = tessera_proxy::server::start(common::config(port, "", "backoff_max_ms = 200"))
        .await
        .expect("proxy starts without backend");
    let mut c = Client::connect(proxy.addr.port(), "app", "app", None)
        .await
        .expect("login needs no backend");
    let e = c.query("SELECT 1").await.expect_err("backend down");
    assert_eq!(e.code, 1429, "{e}");
    assert!(e.message.contains("unavailable"), "{e}");
    let mut sandbox = tokio::task::spawn_blocking(move || {
        sandbox.server_mut(0).start().expect("restart");
        sandbox
    })
    .await
    .expect("restart thread");
    let ok = c.query_until_ok("SELECT 1", 15).await;
    assert!(ok.is_some(), "queries succeed once the backend is back");
    proxy.shutdown().await;
    tokio::task::spawn_blocking(move || sandbox.server_mut(0).stop())
        .await
        .ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_killed_mid_query_errors_one_client_and_pool_heals() {
    let mut env = Env::start("", "backoff_max_ms = 200").await;
    let mut victim = env.client().await;
    let mut bystander = env.client().await;
    victim.io.reset_seq();
    victim.io.send(b"\x03SELECT SLEEP(30)").await.expect("send");
    env.wait_until_backend_runs("SELECT SLEEP(30)").await;
    env.sandbox.server_mut(0).kill().expect("SIGKILL backend");
    let e = tokio::time::timeout(Duration::from_secs(10), victim.read_results())
        .await
        .expect("answer in time")
        .expect_err("error");
    assert_eq!(e.code, 1158, "{e}");
    let e = bystander.query("SELECT 1").await.expect_err("backend is down");
    assert!(e.code == 1429 || e.code == 1158, "{e}");
    let restarted = tokio::task::spawn_blocking(move || {
        env.sandbox.server_mut(0).start().expect("restart");
        env
    });
    let env = restarted.await.expect("restart thread");
    let back = victim.query_until_ok("SELECT 2", 15).await;
    assert_eq!(back, Some(vec![vec![Some("2".to_string())]]));
    assert_eq!(bystander.value("SELECT 3").await.as_deref(), Some("3"));
    drop(env);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_query_and_kill_connection() {
    let env = Env::start("", "").await;
    let mut victim = env.client().await;
    let mut killer = env.client().await;
    victim.io.reset_seq();
    victim.io.send(b"\x03SELECT SLEEP(20)").await.expect("send");
    env.wait_until_backend_runs("SELECT SLEEP(20)").await;
    killer
        .query(&format!("KILL QUERY {}", victim.connection_id))
        .await
        .expect("kill query");
    let answer = tokio::time::timeout(Duration::from_secs(10), victim.read_results())
        .await
        .expect("answers fast");
    // MariaDB reports an interrupted SLEEP() as the value 1 (or error 1317 on some versions).
    match answer {
        Ok(rows) => assert_eq!(rows, vec![vec![Some("1".to_string())]]),
        Err(e) => assert_eq!(e.code, 1317),
    }
    assert_eq!(victim.value("SELECT 'alive'").await.as_deref(), Some("alive"));
    killer
        .query(&format!("KILL {}", victim.connection_id))
        .await
        .expect("kill connection");
    assert!(victim.is_closed().await);
    let e = killer.query("KILL 999999").await.expect_err("unknown thread");
    assert_eq!(e.code, 1094);
    let mut stranger = Client::connect(env.port(), "other", "other", None)
        .await
        .expect("login");
    let e = stranger
        .query(&format!("KILL {}", killer.connection_id))
        .await
        .expect_err("not owner");
    assert_eq!(e.code, 1095);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exhausted_pool_fails_with_clear_error() {
    let env = Env::start("", "max_size = 1\ncheckout_timeout_ms = 300").await;
    let mut holder = env.client().await;
    holder.query("BEGIN").await.expect("begin");
    holder.query("SELECT 1").await.expect("in transaction");
    let mut waiter = env.client().await;
    let e = waiter.query("SELECT 1").await.expect_err("no connection free");
    assert_eq!(e.code, 1040);
    assert!(e.message.contains("max_size = 1"), "{e}");
    holder.query("COMMIT").await.expect("commit");
    assert_eq!(waiter.value("SELECT 5").await.as_deref(), Some("5"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_running_statements_finish() {
    let mut env = Env::start("shutdown_timeout_ms = 10000", "").await;
    let port = env.port();
    let mut c = env.client().await;
    c.io.reset_seq();
    c.io.send(b"\x03SELECT SLEEP(2), 'done'").await.expect("send");
    env.wait_until_backend_runs("SELECT SLEEP(2)").await;
    let proxy = env.proxy.take().expect("running");
    let drain = tokio::spawn(proxy.shutdown());
    let rows = c.read_results().await.expect("statement finishes during drain");
    assert_eq!(rows[0][1].as_deref(), Some("done"));
    tokio::time::timeout(Duration::from_secs(10), drain)
        .await
        .expect("drain completes")
        .expect("join");
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err(),
        "no longer accepting"
    );
}

/// The status line of `GET /health` on `admin` (a balancer's check).
async fn health(admin: &str) -> String {
    let admin = admin.to_string();
    tokio::task::spawn_blocking(move || match tessera_proxy::admin::fetch(&admin, "/health") {
        Ok(body) => body.trim().to_string(),
        Err(e) => e.to_string(),
    })
    .await
    .expect("health check")
}

/// A drain behind a balancer: `/health` turns unhealthy first while new clients are still
/// taken; once the balancer (here a check every 300 ms) has had `drain_checks` unhealthy
/// answers the listener closes; a session between transactions ends at once, one inside a
/// transaction finishes it (its COMMIT lands) and ends after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_turns_health_first_then_ends_sessions_between_transactions() {
    let mut env = Env::start("shutdown_timeout_ms = 60000\ndrain_checks = 3", "").await;
    let port = env.port();
    let admin = env
        .proxy
        .as_ref()
        .and_then(|p| p.admin_addr)
        .expect("admin")
        .to_string();
    let mut idle = env.client().await;
    let mut busy = env.client().await;
    busy.query("CREATE TABLE test.drained (id INT PRIMARY KEY)")
        .await
        .expect("table");
    busy.query("BEGIN").await.expect("begin");
    busy.query("INSERT INTO test.drained VALUES (1)")
        .await
        .expect("first row");
    let answers = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let balancer = tokio::spawn({
        let (admin, answers) = (admin.clone(), answers.clone());
        async move {
            let mut every = tokio::time::interval(Duration::from_millis(300));
            loop {
                every.tick().await;
                let answer = health(&admin).await;
                answers.lock().expect("answers").push(answer);
            }
        }
    });
    let seen = |n: usize| {
        let answers = answers.clone();
        move || answers.lock().expect("answers").len() >= n
    };
    common::wait_for("two healthy checks", seen(2)).await;
    assert!(
        answers.lock().expect("answers").iter().all(|a| a == "ok"),
        "{answers:?}"
    );
    let proxy = env.proxy.take().expect("running");
    let drain = tokio::spawn(proxy.shutdown());
    let unhealthy = {
        let answers = answers.clone();
        move || answers.lock().expect("answers").iter().any(|a| a.contains("503"))
    };
    common::wait_for("an unhealthy answer", unhealthy).await;
    assert!(
        answers
            .lock()
            .expect("answers")
            .last()
            .is_some_and(|a| a.contains("draining")),
        "{answers:?}"
    );
    let mut late = Client::connect(port, "app", "app", None)
        .await
        .expect("a client the balancer sent before it noticed is still taken");
    assert_eq!(late.value("SELECT 'late'").await.as_deref(), Some("late"));
    for _ in 0..600 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let draining = answers
        .lock()
        .expect("answers")
        .iter()
        .filter(|a| a.contains("draining"))
        .count();
    assert!(
        draining >= 3,
        "the listener closed after 3 unhealthy answers: {answers:?}"
    );
    assert!(idle.try_query("SELECT 1").await.is_err(), "an idle session ended");
    assert!(late.try_query("SELECT 1").await.is_err(), "so did the late one");
    busy.query("INSERT INTO test.drained VALUES (2)")
        .await
        .expect("the transaction goes on");
    busy.query("COMMIT").await.expect("and commits");
    assert!(busy.try_query("SELECT 1").await.is_err(), "then the session ends");
    tokio::time::timeout(Duration::from_secs(30), drain)
        .await
        .expect("the drain completes")
        .expect("join");
    balancer.abort();
    let rows = env
        .sandbox
        .server(0)
        .sql("SELECT COUNT(*) FROM test.drained")
        .expect("count");
    assert_eq!(rows.trim(), "2", "both rows committed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_that_stops_reading_cannot_hold_a_backend_connection() {
    let env = Env::start(
        "net_write_timeout_ms = 500",
        "max_size = 1\ncheckout_timeout_ms = 20000",
    )
    .await;
    let mut stalled = env.client_in_test().await;
    stalled.io.reset_seq();
    // ~200 MB of result that this client never reads.
    stalled
        .io
        .send(b"\x03SELECT REPEAT('x', 2000) FROM seq_1_to_100000")
        .await
        .expect("send");
    // The column count proves the statement holds the pool's only backend connection
    // before the second client asks for it; after that this client reads nothing.
    let column_count = stalled.io.read_packet().await.expect("result starts");
    assert_eq!(&column_count[..], &[1u8][..], "one column");
    let mut next = env.client().await;
    let started = std::time::Instant::now();
    assert_eq!(next.value("SELECT 'served'").await.as_deref(), Some("served"));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "served after the stalled client was cut off"
    );
    // What the kernel buffered before the cut is still readable; then the connection ends.
    let mut packets = 1u64;
    let drained = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(p) = stalled.io.read_packet().await {
            assert!(
                !tessera_protocol::response::is_err(&p),
                "no error: the result was cut off"
            );
            packets += 1;
        }
    })
    .await;
    assert!(drained.is_ok(), "connection closed after {packets} packets");
    assert!(packets < 100_000, "the result was cut short ({packets} packets)");
}

/// A tiny deterministic generator (xorshift) so failures are reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = (self.next() as usize) % max;
        (0..n).map(|_| self.next() as u8).collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_command_packets_never_crash_or_stall_the_proxy() {
    let env = Env::start("", "max_size = 4\ncheckout_timeout_ms = 2000").await;
    let mut rng = Rng(0x7e55_e7a0_1234_5678);
    let commands = [
        0x01u8, 0x02, 0x03, 0x04, 0x09, 0x0c, 0x0e, 0x11, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1f, 0x99,
    ];
    for round in 0..300 {
        let mut c = env.client_in_test().await;
        for _ in 0..30 {
            let mut p = vec![commands[(rng.next() as usize) % commands.len()]];
            p.extend(rng.bytes(64));
            c.io.reset_seq();
            if c.io.send(&p).await.is_err() {
                break;
            }
            if matches!(p[0], 0x18 | 0x19) {
                continue; // COM_STMT_SEND_LONG_DATA and COM_STMT_CLOSE have no response
            }
            // Whatever comes back (an answer, an error, a close) is fine; it must come quickly.
            match tokio::time::timeout(Duration::from_secs(5), c.io.read_packet()).await {
                Ok(Ok(_)) => {}
                Ok(Err(_)) => break,
                Err(_) => panic!("round {round}: no answer to command {:#x} within 5 s", p[0]),
            }
        }
    }
    let mut c = env.client_in_test().await;
    assert_eq!(
        c.value("SELECT 'still serving'").await.as_deref(),
        Some("still serving")
    );
}
