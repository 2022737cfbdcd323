//! KILL and KILL QUERY of work that never ends by itself, through Tessera and directly against
//! the sandbox MariaDB (whose behaviour is the expectation, asserted too): a looping compound
//! statement, a looping stored procedure and a read waiting on a table lock, on a connection of
//! its own, in a pipelined lane and over the shards of a sharded schema. The killed client gets
//! what MariaDB gives it (KILL QUERY: error 1317 and the connection goes on; KILL: the
//! connection closes), no backend thread runs the statement afterwards, and the killed
//! statement's connection does not reach another client with the state it left.

use crate::common::shards::ShardedEnv;
use crate::common::{Client, Env, Failure};
use std::time::Duration;
use tokio::time::{timeout, Instant};

/// Rounds of each statement and kind of KILL.
const ROUNDS: usize = 20;
/// How long a killed statement may take to end, and the backend to show it ended.
const DEADLINE: Duration = Duration::from_secs(10);

/// The looping procedure: it changes a session variable first, which a connection it was
/// killed on must not carry to another client.
const PROCEDURE_DDL: &str = "CREATE PROCEDURE kill_spin() BEGIN DECLARE i INT DEFAULT 0; \
    SET SESSION sql_select_limit = 7; LOOP SET i = i + 1; END LOOP; END";

/// A statement that never ends by itself, and how the process list shows a thread running it.
#[derive(Clone, Copy, Debug)]
struct Work {
    sql: &'static str,
    /// A condition on information_schema.PROCESSLIST, true for a thread running it.
    running: &'static str,
    /// The kinds of KILL that end it on MariaDB.
    kills: &'static [Kill],
}

const BOTH: &[Kill] = &[Kill::Query, Kill::Connection];

const COMPOUND: Work = Work {
    sql: "BEGIN NOT ATOMIC DECLARE i INT DEFAULT 0; LOOP SET i = i + 1; END LOOP; END",
    running: "INFO LIKE 'BEGIN NOT ATOMIC%'",
    kills: BOTH,
};

/// Issue 43's loop: MariaDB (10.11) itself does not stop it on KILL QUERY (nor one with `DO 1`
/// in the loop), only on KILL.
const COMPOUND_DDL: Work = Work {
    sql: "BEGIN NOT ATOMIC DECLARE i INT DEFAULT 0; LOOP SET i = i + 1; \
          CREATE OR REPLACE VIEW kill_v AS SELECT 1; END LOOP; END",
    running: "(INFO LIKE 'BEGIN NOT ATOMIC%' OR INFO LIKE 'CREATE OR REPLACE VIEW kill_v%')",
    kills: &[Kill::Connection],
};

const PROCEDURE: Work = Work {
    sql: "CALL kill_spin()",
    running: "INFO LIKE 'CALL kill_spin()%'",
    kills: BOTH,
};

const LOCK_WAIT: Work = Work {
    sql: "SELECT COUNT(*) FROM kill_locked",
    running: "INFO LIKE 'SELECT COUNT(*) FROM kill_locked%' AND STATE LIKE 'Waiting for%'",
    kills: BOTH,
};

/// The scatter read of [`kill_stops_a_scatter_read_on_every_shard`]: each
/// shard's statement names its shard database, so its process list entry starts alike.
const SCATTER_LOCK_WAIT: Work = Work {
    sql: "SELECT COUNT(*) FROM orders",
    running: "INFO LIKE 'SELECT COUNT(*) FROM%orders%' AND STATE LIKE 'Waiting for%'",
    kills: BOTH,
};

#[derive(Clone, Copy, Debug)]
enum Kill {
    Query,
    Connection,
}

impl Kill {
    fn sql(self, id: u32) -> String {
        match self {
            Kill::Query => format!("KILL QUERY {id}"),
            Kill::Connection => format!("KILL {id}"),
        }
    }
}

/// Where clients connect: Tessera or the server itself.
#[derive(Clone, Copy, Debug)]
struct Side {
    port: u16,
    account: (&'static str, &'static str),
    db: &'static str,
}

impl Side {
    fn proxy(env: &Env) -> Side {
        Side {
            port: env.port(),
            account: ("app", "app"),
            db: "test",
        }
    }

    fn direct(port: u16) -> Side {
        Side {
            port,
            account: ("tessera", "tessera"),
            db: "test",
        }
    }

    async fn client(self) -> Client {
        let (user, password) = self.account;
        Client::connect(self.port, user, password, Some(self.db))
            .await
            .expect("login")
    }
}

/// Direct connections to the backend servers that watch their process lists.
struct Watch(Vec<Client>);

impl Watch {
    async fn on(ports: &[u16]) -> Watch {
        let mut clients = Vec::new();
        for port in ports {
            clients.push(Side::direct(*port).client().await);
        }
        Watch(clients)
    }

    /// The backend threads (server index, thread id) for which `condition` holds.
    async fn threads(&mut self, condition: &str) -> Vec<(usize, String)> {
        let sql =
            format!("SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND ({condition})");
        let mut out = Vec::new();
        for (i, c) in self.0.iter_mut().enumerate() {
            let rows = c.query(&sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
            out.extend(
                rows.into_iter()
                    .filter_map(|r| r.into_iter().next().flatten())
                    .map(|id| (i, id)),
            );
        }
        out
    }

    /// Waits until `want` threads at least run `work` (0: until none does); returns them.
    async fn until_running(&mut self, work: &Work, want: usize) -> Vec<(usize, String)> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let threads = self.threads(work.running).await;
            let reached = if want == 0 {
                threads.is_empty()
            } else {
                threads.len() >= want
            };
            if reached {
                return threads;
            }
            assert!(
                Instant::now() < deadline,
                "{work:?}: {threads:?} running, waited for {want}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Waits until none of `threads` is busy (each gone or idle).
    async fn until_idle(&mut self, threads: &[(usize, String)], work: &Work) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let busy: Vec<_> = self
                .threads("COMMAND NOT IN ('Sleep', 'Daemon')")
                .await
                .into_iter()
                .filter(|t| threads.contains(t))
                .collect();
            if busy.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{work:?}: still busy after the KILL or the client's leaving: {busy:?}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// One round: a client runs `work`, another kills it once the backend runs it on `shards`
/// threads; the killed client gets what MariaDB gives it and the work stops on every thread.
async fn round(side: Side, watch: &mut Watch, killer: &mut Client, (work, shards): (Work, usize), kill: Kill) {
    let mut a = side.client().await;
    let id = a.connection_id;
    let task = tokio::spawn(async move {
        let r = a.try_query(work.sql).await;
        (a, r)
    });
    let threads = watch.until_running(&work, shards).await;
    killer.query(&kill.sql(id)).await.expect("KILL");
    let (mut a, r) = timeout(DEADLINE, task)
        .await
        .unwrap_or_else(|_| panic!("{side:?} {work:?} {kill:?}: the statement did not end"))
        .expect("task");
    match kill {
        Kill::Query => {
            match r {
                Err(Failure::Server(e)) => {
                    assert_eq!((e.code, e.message.as_str()), (1317, "Query execution was interrupted"))
                }
                other => panic!("{side:?} {work:?}: KILL QUERY gave {other:?}"),
            }
            assert_eq!(
                a.value("SELECT 1").await.as_deref(),
                Some("1"),
                "the connection goes on"
            );
        }
        Kill::Connection => {
            // MariaDB closes the connection without answering the statement.
            assert!(matches!(r, Err(Failure::Io(_))), "{side:?} {work:?}: KILL gave {r:?}");
            assert!(a.is_closed().await, "{side:?} {work:?}: KILL closes the connection");
        }
    }
    watch.until_idle(&threads, &work).await;
    watch.until_running(&work, 0).await;
}

/// Every round of `work` with both kinds of KILL on `side`.
async fn rounds(side: Side, watch: &mut Watch, work: (Work, usize)) {
    let mut killer = side.client().await;
    for &kill in work.0.kills {
        for _ in 0..ROUNDS {
            round(side, watch, &mut killer, work, kill).await;
        }
    }
}

/// The state the looping procedure left on its connection reaches no other client.
async fn assert_fresh_state(side: Side) {
    let mut fresh = side.client().await;
    assert_eq!(
        fresh.value("SELECT @@sql_select_limit").await.as_deref(),
        Some("18446744073709551615"),
        "{side:?}: a new client sees the default"
    );
}

/// A sandbox and Tessera (a pool of one connection, so a connection the work ran on is the
/// next one lent), with the procedure and the table of the lock waits.
async fn start(server_extra: &str, pool: &str) -> (Env, Side, Side, Watch) {
    let env = Env::start(server_extra, pool).await;
    let direct = Side::direct(env.sandbox.servers()[0].port());
    let mut setup = direct.client().await;
    setup.query(PROCEDURE_DDL).await.expect("procedure");
    setup
        .query("CREATE TABLE kill_locked (id INT PRIMARY KEY)")
        .await
        .expect("table");
    let watch = Watch::on(&[direct.port]).await;
    let proxy = Side::proxy(&env);
    (env, proxy, direct, watch)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_stops_a_looping_compound_statement() {
    let (_env, proxy, direct, mut watch) = start("", "max_size = 1").await;
    for side in [direct, proxy] {
        rounds(side, &mut watch, (COMPOUND, 1)).await;
        rounds(side, &mut watch, (COMPOUND_DDL, 1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_stops_a_looping_stored_procedure() {
    let (_env, proxy, direct, mut watch) = start("", "max_size = 1").await;
    for side in [direct, proxy] {
        rounds(side, &mut watch, (PROCEDURE, 1)).await;
        assert_fresh_state(side).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_stops_a_read_waiting_on_a_table_lock() {
    let (_env, proxy, direct, mut watch) = start("pipeline_lanes = 0", "max_size = 1").await;
    let mut holder = direct.client().await;
    holder.query("LOCK TABLES kill_locked WRITE").await.expect("lock");
    for side in [direct, proxy] {
        rounds(side, &mut watch, (LOCK_WAIT, 1)).await;
    }
}

/// A pure read goes through a pipelined lane; one that waits there (the lane's bound raised
/// so that it stays) is killed on the lane's connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_stops_a_read_waiting_in_a_pipelined_lane() {
    let (env, proxy, direct, mut watch) = start("pipeline_statement_bound_ms = 600000", "max_size = 8").await;
    let mut holder = direct.client().await;
    holder.query("LOCK TABLES kill_locked WRITE").await.expect("lock");
    rounds(proxy, &mut watch, (LOCK_WAIT, 1)).await;
    let lane_writes = env.metric_sum("tessera_pipeline_writes_total");
    assert!(
        lane_writes >= 2 * ROUNDS as u64,
        "{lane_writes}: the reads went through a lane"
    );
}

/// A sharded schema `shop` whose `orders` is write-locked on two shards, one per server: the
/// environment, the lock holders (the locks last as long as they do), a watch on both servers
/// and the servers' ports.
async fn locked_shards() -> (ShardedEnv, Vec<Client>, Watch, [u16; 2]) {
    let env = ShardedEnv::start("").await;
    let mut setup = env.client().await;
    setup.query("CREATE DATABASE shop").await.expect("shard databases");
    setup
        .query("CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT)")
        .await
        .expect("table");
    let ports = [env.sandbox.server(0).port(), env.sandbox.server(1).port()];
    let mut holders = Vec::new();
    for (port, shard) in ports.iter().zip(["shop_0", "shop_2"]) {
        let mut holder = Side::direct(*port).client().await;
        holder
            .query(&format!("LOCK TABLES {shard}.orders WRITE"))
            .await
            .expect("lock");
        holders.push(holder);
    }
    let watch = Watch::on(&ports).await;
    (env, holders, watch, ports)
}

/// A scatter read waiting on two locked shards (one per server) is killed on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_stops_a_scatter_read_on_every_shard() {
    let (env, _holders, mut watch, _) = locked_shards().await;
    let side = Side {
        port: env.proxy.addr.port(),
        account: ("app", "app"),
        db: "shop",
    };
    rounds(side, &mut watch, (SCATTER_LOCK_WAIT, 2)).await;
}

/// A user lock wait the holder never releases: MariaDB ends it when its client leaves.
const USER_LOCK_WAIT: Work = Work {
    sql: "SELECT GET_LOCK('kill_dangling', 3600)",
    running: "INFO = 'SELECT GET_LOCK(''kill_dangling'', 3600)' AND STATE = 'User lock'",
    kills: BOTH,
};

/// One round of a client that vanishes (its socket closed without COM_QUIT, as mysqltest's
/// `dirty_close` and a killed process do) while its statement waits: the wait ends on the
/// backend as it does when the client is the server's own, and the transaction the client had
/// open is rolled back (its row is not there, its row lock is free).
async fn vanish_round(side: Side, watch: &mut Watch, other: &mut Client, work: Work) {
    let mut a = side.client().await;
    a.query("SET @@sql_select_limit = 7").await.expect("session state");
    a.query("BEGIN").await.expect("begin");
    a.query("INSERT INTO kill_locked VALUES (1)").await.expect("insert");
    let task = tokio::spawn(async move { a.try_query(work.sql).await });
    let threads = watch.until_running(&work, 1).await;
    task.abort();
    assert!(
        task.await.is_err_and(|e| e.is_cancelled()),
        "the client left while its statement waited"
    );
    watch.until_idle(&threads, &work).await;
    watch.until_running(&work, 0).await;
    let row = timeout(
        DEADLINE,
        other.query("SELECT id FROM kill_locked WHERE id = 1 FOR UPDATE"),
    )
    .await
    .unwrap_or_else(|_| panic!("{side:?}: the row lock of the client that left is still held"))
    .expect("read");
    assert!(
        row.is_empty(),
        "{side:?}: the insert of the client that left was rolled back"
    );
}

/// Issue 43 (mtr's `dirty_close`): a client that vanishes while its statement waits does not
/// leave the statement waiting on the backend, nor its transaction open, nor its state on the
/// pooled connection (one connection, so the next client gets the one the statement ran on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_vanishes_mid_statement_leaves_no_work_behind() {
    let (_env, proxy, direct, mut watch) = start("pipeline_lanes = 0", "max_size = 1").await;
    let mut holder = direct.client().await;
    assert_eq!(
        holder.value("SELECT GET_LOCK('kill_dangling', 0)").await.as_deref(),
        Some("1")
    );
    for side in [direct, proxy] {
        let mut other = side.client().await;
        for _ in 0..ROUNDS / 4 {
            vanish_round(side, &mut watch, &mut other, USER_LOCK_WAIT).await;
        }
        drop(other);
        assert_fresh_state(side).await;
    }
}

/// A client vanishes while `work` waits on `threads` backend threads (no transaction): the
/// wait ends on every one of them, as it does when the client is the server's own.
async fn vanish_while_waiting(side: Side, watch: &mut Watch, (work, threads): (Work, usize)) {
    let mut a = side.client().await;
    let task = tokio::spawn(async move { a.try_query(work.sql).await });
    let running = watch.until_running(&work, threads).await;
    task.abort();
    assert!(
        task.await.is_err_and(|e| e.is_cancelled()),
        "the client left while its statement waited"
    );
    watch.until_idle(&running, &work).await;
    watch.until_running(&work, 0).await;
}

/// A scatter read waits on two locked shards (one per server) and its client vanishes: the
/// statements end on both shards, as a read waiting on one locked server ends directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_vanishes_mid_scatter_read_leaves_no_work_on_any_shard() {
    let (env, _holders, mut watch, ports) = locked_shards().await;
    let direct = Side {
        db: "shop_0",
        ..Side::direct(ports[0])
    };
    let proxy = Side {
        port: env.proxy.addr.port(),
        account: ("app", "app"),
        db: "shop",
    };
    for (side, threads) in [(direct, 1), (proxy, 2)] {
        for _ in 0..ROUNDS / 4 {
            vanish_while_waiting(side, &mut watch, (SCATTER_LOCK_WAIT, threads)).await;
        }
    }
}

/// A pure read waits in a pipelined lane (its bound raised so that it stays there) and its
/// client vanishes: the lane's statement is interrupted, and the lane serves the next read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_vanishes_in_a_pipelined_lane_leaves_no_work_behind() {
    let (env, proxy, direct, mut watch) = start("pipeline_statement_bound_ms = 600000", "max_size = 8").await;
    let mut holder = direct.client().await;
    holder.query("LOCK TABLES kill_locked WRITE").await.expect("lock");
    for side in [direct, proxy] {
        for _ in 0..ROUNDS / 4 {
            vanish_while_waiting(side, &mut watch, (LOCK_WAIT, 1)).await;
        }
    }
    let lane_writes = env.metric_sum("tessera_pipeline_writes_total");
    assert!(
        lane_writes >= (ROUNDS / 4) as u64,
        "{lane_writes}: the reads went through a lane"
    );
    holder.query("UNLOCK TABLES").await.expect("unlock");
    let mut next = proxy.client().await;
    assert_eq!(
        next.value("SELECT COUNT(*) FROM kill_locked").await.as_deref(),
        Some("0")
    );
}
