//! Tessera on a runtime whose threads' park submits the io_uring's sends (`tessera serve`'s,
//! with one worker thread, the benchmark setting, and with two): many sessions at once,
//! through lanes, transactions whose edges travel later, and results large enough to be sent
//! in several parts, each get exactly their answer.

use crate::common;

use common::Client;
use std::sync::mpsc;
use tokio::sync::oneshot;

const SESSIONS: usize = 16;
const ROWS: usize = 2000;

/// A proxy running on a thread of its own, on the runtime `tessera serve` builds.
struct Parked {
    port: u16,
    sends_wait_for_park: bool,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Parked {
    fn start(config: tessera_config::Config, workers: usize) -> Parked {
        let (started_tx, started) = mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let (runtime, park) = tessera_proxy::uring::runtime_with_park(workers).expect("runtime");
            runtime.block_on(async move {
                let running = tessera_proxy::server::start_with_park(config, Some(park))
                    .await
                    .expect("proxy starts");
                let at_park = running.ctx.ring.as_ref().is_some_and(|r| r.sends_wait_for_park());
                started_tx.send((running.addr.port(), at_park)).expect("report");
                let _ = stopped.await;
                running.shutdown().await;
            });
        });
        let (port, sends_wait_for_park) = started.recv().expect("the proxy thread started");
        Parked {
            port,
            sends_wait_for_park,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn wide(i: usize) -> String {
    format!("{i:0>300}")
}

async fn one_session(port: u16, s: usize) {
    let mut c = Client::connect(port, "app", "app", Some("test")).await.expect("login");
    let (id, _, _) = c
        .prepare("SELECT CONCAT(id) FROM park_t WHERE id = ?")
        .await
        .expect("prepare");
    for r in 0..40 {
        let key = (s * 40 + r) % ROWS + 1;
        let rows = c.execute(id, &[Some(&key.to_string())]).await.expect("execute");
        assert_eq!(rows, vec![vec![Some(key.to_string())]], "session {s}, lane read {r}");
    }
    for t in 0..3 {
        c.query("BEGIN").await.expect("begin");
        for k in [s + 1, s + 101, s + 201] {
            let rows = c
                .query(&format!("SELECT v FROM park_t WHERE id = {k}"))
                .await
                .expect("read");
            assert_eq!(rows, vec![vec![Some(wide(k))]], "session {s}, transaction {t}");
        }
        c.query("COMMIT").await.expect("commit");
    }
    let all = c.query("SELECT id, v FROM park_t ORDER BY id").await.expect("all rows");
    assert_eq!(all.len(), ROWS, "session {s}");
    for (i, row) in all.iter().enumerate() {
        assert_eq!(
            row,
            &vec![Some((i + 1).to_string()), Some(wide(i + 1))],
            "session {s}, row {i}"
        );
    }
}

/// Loads the table, runs every session at once, and checks the proxy's sends waited for parks.
async fn sessions_each_get_exactly_their_answers(workers: usize) {
    let sandbox = tokio::task::spawn_blocking(common::sandbox)
        .await
        .expect("sandbox thread");
    let extra = format!("worker_threads = {workers}");
    let proxy = Parked::start(common::config(sandbox.servers()[0].port(), &extra, ""), workers);
    assert!(
        proxy.sends_wait_for_park,
        "a plain TCP configuration has its sends submitted at the park"
    );
    let mut c = Client::connect(proxy.port, "app", "app", Some("test"))
        .await
        .expect("login");
    c.query("CREATE TABLE park_t (id INT PRIMARY KEY, v VARCHAR(300))")
        .await
        .expect("create");
    let values: Vec<String> = (1..=ROWS).map(|i| format!("({i}, '{}')", wide(i))).collect();
    c.query(&format!("INSERT INTO park_t VALUES {}", values.join(",")))
        .await
        .expect("insert");
    let sessions: Vec<_> = (0..SESSIONS)
        .map(|s| tokio::spawn(one_session(proxy.port, s)))
        .collect();
    for s in sessions {
        s.await.expect("session task");
    }
    drop(proxy);
    drop(sandbox);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_on_one_thread_whose_park_sends_each_get_exactly_their_answers() {
    sessions_each_get_exactly_their_answers(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_on_two_threads_whose_parks_send_each_get_exactly_their_answers() {
    sessions_each_get_exactly_their_answers(2).await;
}
