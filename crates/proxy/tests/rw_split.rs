//! Read/write splitting against a real sandbox: a MariaDB primary with two GTID replicas behind
//! an in-process Tessera. Which server ran a statement is told by `@@server_id`.

use crate::common;

use common::Client;
use std::collections::HashMap;
use std::time::Duration;
use tessera_proxy::server::{start, Running};
use tessera_sandbox::{Sandbox, SandboxOptions};

const MONITOR_MS: u64 = 200;

struct Cluster {
    sandbox: Sandbox,
    proxy: Running,
    /// server_id of s0 (primary), s1, s2.
    ids: Vec<String>,
}

fn replicated_sandbox() -> Sandbox {
    let sandbox = Sandbox::start(SandboxOptions {
        servers: 3,
        replication: true,
        ..SandboxOptions::default()
    })
    .expect("replicated sandbox starts");
    sandbox
        .server(0)
        .sql("CREATE TABLE test.t (id INT PRIMARY KEY, origin INT) ENGINE=InnoDB")
        .expect("table");
    sandbox
        .wait_for_replicas(Duration::from_secs(60))
        .expect("replicas catch up");
    sandbox
}

/// Weights: primary, s1, s2.
async fn cluster(weights: [u32; 3]) -> Cluster {
    cluster_with(weights, "").await
}

/// [`cluster`] with extra lines for the group's configuration.
async fn cluster_with(weights: [u32; 3], group_extra: &str) -> Cluster {
    let sandbox = tokio::task::spawn_blocking(replicated_sandbox).await.expect("thread");
    let port = |i: usize| sandbox.server(i).port();
    let text = format!(
        r#"
[server]
listen = "127.0.0.1:0"
[admin]
http_listen = "127.0.0.1:0"
[[users]]
name = "app"
password = "app"
[[users]]
name = "evt"
password = "evt"
read_consistency = "eventual"
[[users]]
name = "sess"
password = "sess"
read_consistency = "session"
[[users]]
name = "nosplit"
password = "nosplit"
read_write_split = false
[[groups]]
name = "main"
user = "tessera"
password = "tessera"
monitor_interval_ms = {MONITOR_MS}
max_replica_lag_s = 5
{group_extra}
primary = {{ address = "127.0.0.1:{}", weight = {} }}
replicas = [{{ address = "127.0.0.1:{}", weight = {} }}, {{ address = "127.0.0.1:{}", weight = {} }}]
"#,
        port(0),
        weights[0],
        port(1),
        weights[1],
        port(2),
        weights[2]
    );
    let config = tessera_config::parse_str(&text, "rw_split").expect("config");
    let proxy = start(config).await.expect("proxy starts");
    let ids = (0..3)
        .map(|i| {
            sandbox
                .server(i)
                .sql("SELECT @@server_id")
                .expect("id")
                .trim()
                .to_string()
        })
        .collect();
    let cluster = Cluster { sandbox, proxy, ids };
    cluster.wait_until_serving(&[1, 2]).await;
    cluster
}

impl Cluster {
    async fn client(&self, user: &str) -> Client {
        Client::connect(self.proxy.addr.port(), user, user, Some("test"))
            .await
            .expect("login")
    }

    /// Index (0 = primary) of the server whose id a statement returned.
    fn server_of(&self, id: &str) -> usize {
        self.ids
            .iter()
            .position(|x| x == id)
            .unwrap_or_else(|| panic!("unknown server id {id}"))
    }

    /// GET `path` from the proxy's admin endpoint.
    fn admin_get(&self, path: &str) -> String {
        let admin = self.proxy.admin_addr.expect("admin endpoint").to_string();
        tessera_proxy::admin::fetch(&admin, path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn status(&self) -> String {
        self.admin_get("/status")
    }

    fn state_of(&self, server: usize) -> String {
        let port = self.sandbox.server(server).port().to_string();
        let status = self.status();
        let line = status
            .lines()
            .find(|l| l.contains(&format!(":{port}\t")))
            .expect("server in status");
        line.split('\t').nth(3).unwrap_or_default().to_string()
    }

    /// Polls `tessera status` until each of `servers` is in `state` (bounded wait, not a timing claim).
    async fn wait_for_state(&self, servers: &[usize], state: &str) {
        for _ in 0..300 {
            if servers.iter().all(|&s| self.state_of(s) == state) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("servers {servers:?} never reached `{state}`:\n{}", self.status());
    }

    /// The sum over servers of a `tessera_server_*` metric.
    fn metric_total(&self, name: &str) -> u64 {
        self.admin_get("/metrics")
            .lines()
            .filter(|l| l.starts_with(&format!("{name}{{")))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }

    /// Inserts row `i`, then reads it back in the same session: whether the read was served by a
    /// replica. Panics if the session does not see its own write.
    async fn write_then_read(&self, app: &mut Client, i: usize) -> bool {
        app.query(&format!("INSERT INTO t VALUES ({i}, 0)"))
            .await
            .expect("insert");
        let rows = app
            .query(&format!("SELECT id, @@server_id FROM t WHERE id = {i}"))
            .await
            .expect("select");
        assert_eq!(rows.len(), 1, "round {i}: the session's own write is not visible");
        rows[0][1].as_deref() != Some(self.ids[0].as_str())
    }

    async fn wait_until_serving(&self, servers: &[usize]) {
        self.wait_for_state(servers, "serving reads").await;
    }

    /// Runs `sql` `n` times; how often each server answered.
    async fn spread(&self, client: &mut Client, sql: &str, n: usize) -> [usize; 3] {
        let mut counts = [0; 3];
        for _ in 0..n {
            let id = client.value(sql).await.expect("server id");
            counts[self.server_of(&id)] += 1;
        }
        counts
    }
}

fn within_ten_percent(count: usize, expected: f64) -> bool {
    (count as f64 - expected).abs() <= expected * 0.10
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_follow_weights_writes_transactions_and_locking_reads_stay_on_the_primary() {
    let c = cluster([1, 1, 2]).await;
    let mut app = c.client("app").await;
    let counts = c.spread(&mut app, "SELECT @@server_id", 10_000).await;
    for (i, expected) in [2500.0, 2500.0, 5000.0].into_iter().enumerate() {
        assert!(within_ten_percent(counts[i], expected), "server {i}: {counts:?}");
    }
    // Writes: the row records which server executed the INSERT.
    for i in 0..50 {
        app.query(&format!("INSERT INTO t VALUES ({i}, @@server_id)"))
            .await
            .expect("insert");
    }
    let origins = c
        .sandbox
        .server(0)
        .sql("SELECT DISTINCT origin FROM test.t")
        .expect("origins");
    assert_eq!(origins.trim(), c.ids[0], "every write ran on the primary");
    // Transactions and locking reads.
    app.query("BEGIN").await.expect("begin");
    assert_eq!(c.spread(&mut app, "SELECT @@server_id", 20).await, [20, 0, 0]);
    app.query("COMMIT").await.expect("commit");
    for sql in [
        "SELECT @@server_id FROM t WHERE id = 1 FOR UPDATE",
        "SELECT @@server_id FROM t WHERE id = 1 LOCK IN SHARE MODE",
        "SELECT /*+ tessera:primary */ @@server_id",
        "SELECT /*master*/ @@server_id",
    ] {
        assert_eq!(c.spread(&mut app, sql, 20).await, [20, 0, 0], "{sql}");
    }
    // A read-only transaction runs on one server throughout.
    app.query("START TRANSACTION READ ONLY").await.expect("start ro");
    let in_txn = c.spread(&mut app, "SELECT @@server_id", 20).await;
    assert_eq!(in_txn.iter().filter(|&&n| n == 20).count(), 1, "{in_txn:?}");
    app.query("COMMIT").await.expect("commit");
    // strong: everything to the primary, except what a replica hint asks for.
    app.query("SET tessera_read_consistency = 'strong'").await.expect("set");
    assert_eq!(c.spread(&mut app, "SELECT @@server_id", 50).await, [50, 0, 0]);
    let hinted = c.spread(&mut app, "SELECT /*slave*/ @@server_id", 60).await;
    assert!(hinted[1] + hinted[2] == 60, "{hinted:?}");
    let err = app
        .query("SET tessera_read_consistency = 'sometimes'")
        .await
        .expect_err("bad level");
    assert_eq!(err.code, 1231);
    app.query("SET tessera_read_consistency = 'eventual'")
        .await
        .expect("set");
    // Sequence functions write the sequence or read the session's last value: the primary's
    // (at `eventual`, where nothing else keeps a read off the replicas).
    app.query("CREATE SEQUENCE seq_t").await.expect("create sequence");
    for sql in [
        "SELECT @@server_id, NEXTVAL(seq_t)",
        "SELECT @@server_id, NEXT VALUE FOR seq_t",
        "SELECT @@server_id, PREVIOUS VALUE FOR seq_t",
        "SELECT @@server_id, LastVal(seq_t)",
        "SELECT @@server_id, SETVAL(seq_t, 1000)",
        "SELECT @@server_id /*!100300 , nextval(seq_t) */",
    ] {
        assert_eq!(c.spread(&mut app, sql, 20).await, [20, 0, 0], "{sql}");
    }
    // The session's sequence values (LASTVAL) now live on its primary connection, which it
    // keeps (pin `unseen_state`): a fresh session. Prepared statements follow the same rules
    // per execution.
    assert_eq!(
        c.spread(&mut app, "SELECT @@server_id, LASTVAL(seq_t) IS NOT NULL", 5)
            .await,
        [5, 0, 0]
    );
    let mut app = c.client("app").await;
    app.query("SET tessera_read_consistency = 'eventual'")
        .await
        .expect("set");
    let (id, _, _) = app.prepare("SELECT CAST(@@server_id AS CHAR)").await.expect("prepare");
    let mut by_server: HashMap<usize, usize> = HashMap::new();
    for _ in 0..200 {
        let rows = app.execute(id, &[]).await.expect("execute");
        let sid = rows[0][0].clone().expect("id");
        *by_server.entry(c.server_of(&sid)).or_default() += 1;
    }
    assert!(
        by_server.get(&1).is_some_and(|&n| n > 0) && by_server.get(&2).is_some_and(|&n| n > 0),
        "{by_server:?}"
    );
    // A user with splitting off.
    let mut nosplit = c.client("nosplit").await;
    assert_eq!(c.spread(&mut nosplit, "SELECT @@server_id", 50).await, [50, 0, 0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_consistency_reads_its_own_writes_while_a_replica_is_slow() {
    let mut c = cluster([0, 1, 1]).await;
    // s1: SQL thread stopped for a while; s2: applies everything two seconds late.
    c.sandbox.server(1).stop_replica_sql_thread().expect("stop sql thread");
    c.sandbox
        .server(2)
        .sql("STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 2; START SLAVE")
        .expect("delay");
    let mut app = c.client("app").await;
    let mut from_replicas = 0;
    for i in 0..1000 {
        if i == 500 {
            c.sandbox
                .server_mut(1)
                .start_replica_sql_thread()
                .expect("start sql thread");
        }
        from_replicas += usize::from(c.write_then_read(&mut app, i).await);
    }
    eprintln!("session mode: {from_replicas} of 1000 reads served by replicas");
    // Once the replicas have applied the session's last write, its reads use them again.
    let sandbox = &c.sandbox;
    sandbox
        .wait_for_replicas(Duration::from_secs(60))
        .expect("replicas catch up");
    let mut served_by_replica = false;
    for _ in 0..100 {
        let rows = app
            .query("SELECT id, @@server_id FROM t WHERE id = 999")
            .await
            .expect("select");
        assert_eq!(rows.len(), 1);
        if rows[0][1].as_deref() != Some(c.ids[0].as_str()) {
            served_by_replica = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(MONITOR_MS / 2)).await;
    }
    assert!(served_by_replica, "caught-up replicas serve the session's reads again");
    // eventual: reads keep going to the healthy, delayed replica.
    let mut evt = c.client("evt").await;
    c.wait_until_serving(&[1, 2]).await;
    let counts = c.spread(&mut evt, "SELECT @@server_id", 200).await;
    assert_eq!(counts[0], 0, "{counts:?}");
    assert!(counts[1] > 0 && counts[2] > 0, "{counts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_replica_loses_its_reads_and_gets_them_back() {
    let c = cluster([0, 1, 1]).await;
    let mut evt = c.client("evt").await;
    c.sandbox.server(1).stop_replica_sql_thread().expect("stop");
    c.wait_for_state(&[1], "not replicating").await;
    assert_eq!(c.spread(&mut evt, "SELECT @@server_id", 300).await, [0, 0, 300]);
    c.sandbox.server(1).start_replica_sql_thread().expect("start");
    c.wait_until_serving(&[1]).await;
    let counts = c.spread(&mut evt, "SELECT @@server_id", 300).await;
    assert!(counts[1] > 0 && counts[2] > 0 && counts[0] == 0, "{counts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replica_costs_no_failed_reads_and_comes_back() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let mut c = cluster([0, 1, 1]).await;
    let port = c.proxy.addr.port();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let served = std::sync::Arc::new(AtomicU64::new(0));
    let mut readers = Vec::new();
    for _ in 0..8 {
        let (stop, served) = (stop.clone(), served.clone());
        readers.push(tokio::spawn(async move {
            let mut client = Client::connect(port, "evt", "evt", Some("test")).await.expect("login");
            let (id, _, _) = client.prepare("SELECT id FROM t WHERE id = ?").await.expect("prepare");
            let (mut ok, mut failed) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                match client.execute(id, &[Some("1")]).await {
                    Ok(_) => ok += 1,
                    Err(_) => failed += 1,
                }
                served.fetch_add(1, Ordering::Relaxed);
            }
            (ok, failed)
        }));
    }
    // Progress, not time: the kill lands while reads are flowing, and reads go on after it.
    let wait_for_reads = |n: u64| {
        let served = served.clone();
        async move {
            let target = served.load(Ordering::Relaxed) + n;
            while served.load(Ordering::Relaxed) < target {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    wait_for_reads(500).await;
    c.sandbox.server_mut(1).kill().expect("kill -9 replica");
    c.wait_for_state(&[1], "down").await;
    wait_for_reads(500).await;
    stop.store(true, Ordering::Relaxed);
    let (mut ok, mut failed) = (0, 0);
    for r in readers {
        let (o, f) = r.await.expect("reader");
        ok += o;
        failed += f;
    }
    eprintln!("replica killed: {ok} reads ok, {failed} failed");
    assert!(ok > 0);
    // A read that failed before any byte reached its client is retried on another server; only a
    // response cut off half-way could fail, at most one per client.
    assert!(failed <= 8, "{failed} failed reads");
    let mut evt = c.client("evt").await;
    assert_eq!(c.spread(&mut evt, "SELECT @@server_id", 100).await, [0, 0, 100]);
    c.sandbox.server_mut(1).start().expect("restart replica");
    c.wait_until_serving(&[1]).await;
    // Reads come back to it (a stale pooled connection may still fail once and take it out of
    // the rotation until the monitor's next look: bounded rounds, not a timing claim).
    let mut counts = [0; 3];
    for _ in 0..50 {
        counts = c.spread(&mut evt, "SELECT @@server_id", 100).await;
        if counts[1] > 0 {
            break;
        }
        c.wait_until_serving(&[1]).await;
    }
    assert!(counts[1] > 0, "{counts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tessera_follows_an_external_promotion() {
    let c = cluster([0, 1, 1]).await;
    let mut app = c.client("app").await;
    app.query("INSERT INTO t VALUES (1, @@server_id)")
        .await
        .expect("insert");
    // An external tool promotes s1: the old primary becomes read-only, s1 writable.
    c.sandbox.server(0).sql("SET GLOBAL read_only = 1").expect("demote");
    c.sandbox
        .server(1)
        .sql("STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0")
        .expect("promote");
    c.wait_for_state(&[1], "primary").await;
    app.query("INSERT INTO t VALUES (2, @@server_id)")
        .await
        .expect("insert after promotion");
    let origin = c
        .sandbox
        .server(1)
        .sql("SELECT origin FROM test.t WHERE id = 2")
        .expect("row");
    assert_eq!(origin.trim(), c.ids[1], "writes follow the new primary");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_go_on_while_the_primary_is_down() {
    let mut c = cluster([0, 1, 1]).await;
    let mut evt = c.client("evt").await;
    c.sandbox.server_mut(0).kill().expect("kill -9 primary");
    c.wait_for_state(&[0], "down").await;
    let counts = c.spread(&mut evt, "SELECT @@server_id", 200).await;
    assert!(counts[0] == 0 && counts[1] > 0 && counts[2] > 0, "{counts:?}");
    let err = evt.query("INSERT INTO t VALUES (7, 0)").await.expect_err("no primary");
    assert!(err.code == 1429 || err.code == 1158, "{err}");
    c.sandbox.server_mut(0).start().expect("restart primary");
    let ok = evt.query_until_ok("INSERT INTO t VALUES (7, @@server_id)", 30).await;
    assert!(ok.is_some(), "writes work again once the primary is back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_reads_wait_on_a_replica_for_their_write_up_to_the_bound() {
    let c = cluster_with([0, 1, 1], "read_your_writes_wait_ms = 2000").await;
    let mut app = c.client("app").await;
    let mut from_replicas = 0;
    for i in 0..200 {
        from_replicas += usize::from(c.write_then_read(&mut app, i).await);
    }
    // The monitor cannot have seen each write yet: without the wait these reads go to the primary.
    eprintln!("with the wait: {from_replicas} of 200 reads right after a write served by replicas");
    assert!(from_replicas >= 100, "{from_replicas} of 200");
    // (A read may also find that the monitor already saw its write: no wait needed.)
    let applied = c.metric_total("tessera_server_gtid_waits_applied_total") as usize;
    assert!(
        applied > 0 && applied <= from_replicas,
        "{applied} waits, {from_replicas} replica reads"
    );
    // After one write, only the first read asks: the session remembers the replica that confirmed it.
    let asked_before = c.metric_total("tessera_server_gtid_waits_applied_total");
    assert!(c.write_then_read(&mut app, 1000).await, "served by a replica");
    for _ in 0..20 {
        let id = app
            .value("SELECT @@server_id FROM t WHERE id = 1000")
            .await
            .expect("read");
        assert_ne!(c.server_of(&id), 0, "a replica that has the write serves it");
    }
    let asked = c.metric_total("tessera_server_gtid_waits_applied_total") - asked_before;
    assert!(asked <= 1, "{asked} waits for one write");
    // Replicas that apply every write 3 s late, still within max lag: each read waits out the
    // bound, then the primary answers.
    for s in [1, 2] {
        c.sandbox
            .server(s)
            .sql("STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 3; START SLAVE")
            .expect("delay");
    }
    c.wait_until_serving(&[1, 2]).await;
    let timed_out_before = c.metric_total("tessera_server_gtid_waits_timed_out_total");
    for i in 200..203 {
        assert!(!c.write_then_read(&mut app, i).await, "round {i}: the primary answers");
    }
    let timed_out = c.metric_total("tessera_server_gtid_waits_timed_out_total") - timed_out_before;
    assert_eq!(timed_out, 3, "each read waited on a replica first");
}

/// Connection `writer` inserts rows (autocommit) while `reader` (another connection) reads each
/// one right after its INSERT was acknowledged: how many reads missed their row.
async fn missed_reads_across_connections(c: &Cluster, user: &str, rounds: usize, first_id: usize) -> usize {
    let mut writer = c.client(user).await;
    let mut reader = c.client(user).await;
    let mut missed = 0;
    for i in first_id..first_id + rounds {
        writer
            .query(&format!("INSERT INTO t VALUES ({i}, 0)"))
            .await
            .expect("insert");
        let rows = reader
            .query(&format!("SELECT id FROM t WHERE id = {i}"))
            .await
            .expect("select");
        missed += usize::from(rows.is_empty());
    }
    missed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_consistency_reads_see_writes_acknowledged_to_other_connections() {
    let c = cluster([0, 1, 1]).await;
    // Both replicas lag: s1 applies nothing, s2 everything two seconds late.
    c.sandbox.server(1).stop_replica_sql_thread().expect("stop sql thread");
    c.sandbox
        .server(2)
        .sql("STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 2; START SLAVE")
        .expect("delay");
    c.wait_until_serving(&[2]).await;
    // The default level (global): no read misses a row another connection was told is written.
    assert_eq!(missed_reads_across_connections(&c, "app", 300, 0).await, 0);
    // session consistency covers one connection only: the other connection's reads miss.
    let missed = missed_reads_across_connections(&c, "sess", 50, 1000).await;
    assert!(
        missed > 0,
        "the test can tell: session consistency missed {missed} of 50"
    );
}

/// A statement that raised a warning on a replica, then GET DIAGNOSTICS (which assigns user
/// variables, so it runs on the primary): the primary must read the replica's area.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_diagnostics_on_the_primary_reads_the_warnings_a_replica_raised() {
    let c = cluster([0, 1, 1]).await;
    let mut app = c.client("app").await;
    for round in 0..6 {
        let rows = app
            .query("SELECT CAST('x' AS SIGNED), @@server_id")
            .await
            .expect("cast");
        let id = rows[0][1].clone().expect("server id");
        assert_ne!(c.server_of(&id), 0, "round {round}: the read ran on a replica");
        let get = "GET DIAGNOSTICS @n = NUMBER";
        let get_errno = "GET DIAGNOSTICS CONDITION 1 @e = MYSQL_ERRNO";
        if round % 2 == 0 {
            app.query(get).await.expect("get diagnostics");
            app.query(get_errno).await.expect("get condition");
        } else {
            for sql in [get, get_errno] {
                let (stmt, _, _) = app.prepare(sql).await.expect("prepare");
                app.execute(stmt, &[]).await.expect("execute");
                app.close_stmt(stmt).await;
            }
        }
        assert_eq!(app.value("SELECT @n").await.as_deref(), Some("1"), "round {round}");
        assert_eq!(app.value("SELECT @e").await.as_deref(), Some("1292"), "round {round}");
    }
}

/// Under `NO_BACKSLASH_ESCAPES` a string ending in a backslash (`'a\'`) ends at its quote:
/// what follows it is read, so a locking read stays on the primary and a statement after it
/// in the same query is seen, as the server sees them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_are_read_as_no_backslash_escapes_reads_them() {
    let c = cluster([1, 1, 1]).await;
    let mut evt = c.client("evt").await;
    evt.query("INSERT INTO t VALUES (900, 0)").await.expect("insert");
    c.sandbox
        .wait_for_replicas(Duration::from_secs(60))
        .expect("replicas catch up");
    evt.query("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')")
        .await
        .expect("set mode");
    let locking = r"SELECT @@server_id, 'a\' FROM t WHERE id = 900 FOR UPDATE";
    assert_eq!(c.spread(&mut evt, locking, 20).await, [20, 0, 0], "{locking}");
    let (id, _, _) = evt
        .prepare(r"SELECT CAST(@@server_id AS CHAR), 'a\' FROM t WHERE id = 900 FOR UPDATE")
        .await
        .expect("prepare");
    for _ in 0..20 {
        let rows = evt.execute(id, &[]).await.expect("execute");
        let sid = rows[0][0].clone().expect("server id");
        assert_eq!(c.server_of(&sid), 0, "a prepared locking read runs on the primary");
    }
    let read = r"SELECT @@server_id, 'a\' FROM t WHERE id = 900";
    let spread = c.spread(&mut evt, read, 60).await;
    assert!(
        spread[1] + spread[2] > 0,
        "a plain read still goes to replicas: {spread:?}"
    );
    evt.query(r"SELECT LENGTH('a\'); INSERT INTO t VALUES (901, @@server_id)")
        .await
        .expect("read then write");
    let origin = c
        .sandbox
        .server(0)
        .sql("SELECT origin FROM test.t WHERE id = 901")
        .expect("origin");
    assert_eq!(
        origin.trim(),
        c.ids[0],
        "the write in the same query ran on the primary"
    );
    evt.query("UPDATE t SET origin = 1 WHERE id IN (900, 901)")
        .await
        .expect("update");
    let rows = evt.query(r"SELECT 'a\', ROW_COUNT()").await.expect("row count");
    assert_eq!(
        rows[0][1].as_deref(),
        Some("2"),
        "the session's ROW_COUNT() after a string ending in a backslash"
    );
    // A user variable assigned after such a string is seen, and follows reads to any server.
    evt.query(r"SET @nbe_a = 'x\', @nbe_b = 7")
        .await
        .expect("set user variables");
    for _ in 0..10 {
        let rows = evt
            .query("SELECT CONCAT(@nbe_a, @nbe_b)")
            .await
            .expect("read variables");
        assert_eq!(rows[0][0].as_deref(), Some(r"x\7"), "both variables, one backslash");
    }
}
