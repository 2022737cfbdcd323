//! The workload: concurrent clients moving money through Tessera, one transaction per transfer,
//! recording which transfers were acknowledged and counting every kind of failure.

use super::bank::{shard_of, ACCOUNTS, ID_STRIDE};
use super::{POLL, PROGRESS_TIMEOUT};
use crate::common::{Client, Failure};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CLIENTS: usize = 8;
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(20);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A workload that takes longer than this to stop has a client stuck: print why.
const SLOW_STOP: Duration = Duration::from_secs(5);
const RECONNECT_PAUSE: Duration = Duration::from_millis(50);

/// One transaction: money from `from` to one or two other accounts. Each leg is logged as a
/// `transfers` row on `from`'s shard; its id names the destination (see [`ID_STRIDE`]).
struct Transfer {
    from: u64,
    legs: Vec<Leg>,
}

/// `amount` to `to`, logged as transfer `id`.
struct Leg {
    id: u64,
    to: u64,
    amount: i64,
}

impl Transfer {
    /// One time in six all on one shard (a one-phase commit), one in three to two accounts on
    /// two more shards (two XA branches), else to one account on another shard.
    fn pick(rng: &mut Rng, next: &AtomicU64) -> Transfer {
        let from = 1 + rng.below(ACCOUNTS);
        let home = shard_of(from);
        let destinations = match rng.below(6) {
            0 => vec![pick_account(rng, |a| a != from && shard_of(a) == home)],
            1 | 2 => {
                let first = pick_account(rng, |a| shard_of(a) != home);
                let second = pick_account(rng, |a| ![home, shard_of(first)].contains(&shard_of(a)));
                vec![first, second]
            }
            _ => vec![pick_account(rng, |a| shard_of(a) != home)],
        };
        let legs = destinations
            .into_iter()
            .map(|to| Leg {
                id: next.fetch_add(1, Ordering::Relaxed) * ID_STRIDE + to,
                to,
                amount: 1 + rng.below(50) as i64,
            })
            .collect();
        Transfer { from, legs }
    }

    /// The ids of the transfer rows it writes.
    fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.legs.iter().map(|l| l.id)
    }

    fn statements(&self) -> Vec<String> {
        let from = self.from;
        let total: i64 = self.legs.iter().map(|l| l.amount).sum();
        let mut sql = vec![
            "START TRANSACTION".to_string(),
            format!("UPDATE accounts SET balance = balance - {total} WHERE id = {from}"),
        ];
        for Leg { to, amount, .. } in &self.legs {
            sql.push(format!(
                "UPDATE accounts SET balance = balance + {amount} WHERE id = {to}"
            ));
        }
        let rows: Vec<String> = self
            .legs
            .iter()
            .map(|l| format!("({}, {from}, {})", l.id, l.amount))
            .collect();
        sql.push(format!(
            "INSERT INTO transfers (id, account, amount) VALUES {}",
            rows.join(", ")
        ));
        sql.push("COMMIT".to_string());
        sql
    }

    /// Runs the transaction; Ok only when COMMIT answered OK.
    async fn run(&self, c: &mut Client) -> Result<(), Failure> {
        for sql in self.statements() {
            c.try_query(&sql).await?;
        }
        Ok(())
    }
}

/// A random account that satisfies `fits`.
fn pick_account(rng: &mut Rng, fits: impl Fn(u64) -> bool) -> u64 {
    loop {
        let a = 1 + rng.below(ACCOUNTS);
        if fits(a) {
            return a;
        }
    }
}

/// What the clients of one workload share.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    acks: AtomicU64,
    acked: Mutex<Vec<u64>>,
    errors: Mutex<BTreeMap<String, u64>>,
}

impl Shared {
    /// Records an acknowledged transaction and the transfer rows it wrote.
    fn ack(&self, ids: impl Iterator<Item = u64>) {
        self.acked.lock().expect("acked").extend(ids);
        self.acks.fetch_add(1, Ordering::SeqCst);
    }

    fn count(&self, kind: String) {
        *self.errors.lock().expect("errors").entry(kind).or_default() += 1;
    }
}

/// [`CLIENTS`] connections looping over transfers until stopped. An error of any kind is
/// counted, the connection dropped and a new one opened; an unacknowledged transfer may or may
/// not have happened.
pub struct Workload {
    shared: Arc<Shared>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    rt: tokio::runtime::Handle,
}

/// What a stopped workload reports.
pub struct Outcome {
    pub acked: Vec<u64>,
    pub errors: BTreeMap<String, u64>,
}

impl Workload {
    pub fn start(rt: &tokio::runtime::Runtime, port: u16, next: &Arc<AtomicU64>, seed: u64) -> Workload {
        let shared = Arc::new(Shared::default());
        let tasks = (0..CLIENTS as u64)
            .map(|i| {
                let rng = Rng::new(seed ^ (i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                rt.spawn(client_loop(port, shared.clone(), next.clone(), rng))
            })
            .collect();
        Workload {
            shared,
            tasks,
            rt: rt.handle().clone(),
        }
    }

    pub fn acks(&self) -> u64 {
        self.shared.acks.load(Ordering::SeqCst)
    }

    pub fn errors(&self) -> BTreeMap<String, u64> {
        self.shared.errors.lock().expect("errors").clone()
    }

    /// Waits until `n` transfers are acknowledged; panics after [`PROGRESS_TIMEOUT`].
    pub fn wait_acks(&self, n: u64, when: &str) {
        let deadline = Instant::now() + PROGRESS_TIMEOUT;
        while self.acks() < n {
            assert!(
                Instant::now() < deadline,
                "only {} of {n} transfers acknowledged {when} within {PROGRESS_TIMEOUT:?}; errors {:?}",
                self.acks(),
                self.errors()
            );
            std::thread::sleep(POLL);
        }
    }

    /// Lets every client finish its transfer, then reports. If that takes longer than
    /// [`SLOW_STOP`], `on_slow` runs once (to print what the servers are waiting for).
    pub fn stop(self, on_slow: impl FnOnce()) -> Outcome {
        self.shared.stop.store(true, Ordering::SeqCst);
        let started = Instant::now();
        let mut on_slow = Some(on_slow);
        while !self.tasks.iter().all(|t| t.is_finished()) {
            if started.elapsed() > SLOW_STOP {
                if let Some(f) = on_slow.take() {
                    f();
                }
            }
            assert!(
                started.elapsed() < TRANSFER_TIMEOUT + CONNECT_TIMEOUT * 2,
                "the clients did not stop"
            );
            std::thread::sleep(POLL);
        }
        for t in self.tasks {
            self.rt.block_on(t).expect("client task");
        }
        let acked = std::mem::take(&mut *self.shared.acked.lock().expect("acked"));
        let errors = std::mem::take(&mut *self.shared.errors.lock().expect("errors"));
        Outcome { acked, errors }
    }
}

/// One client: transfers until `shared.stop`, reconnecting after any error.
async fn client_loop(port: u16, shared: Arc<Shared>, next: Arc<AtomicU64>, mut rng: Rng) {
    let mut conn: Option<Client> = None;
    while !shared.stop.load(Ordering::SeqCst) {
        let mut c = match conn.take() {
            Some(c) => c,
            None => match connect(port).await {
                Ok(c) => c,
                Err(kind) => {
                    shared.count(kind);
                    tokio::time::sleep(RECONNECT_PAUSE).await;
                    continue;
                }
            },
        };
        let transfer = Transfer::pick(&mut rng, &next);
        match tokio::time::timeout(TRANSFER_TIMEOUT, transfer.run(&mut c)).await {
            Ok(Ok(())) => {
                shared.ack(transfer.ids());
                conn = Some(c);
            }
            Ok(Err(f)) => {
                shared.count(kind_of(&f));
                tokio::time::sleep(RECONNECT_PAUSE).await;
            }
            Err(_) => shared.count("timeout".into()),
        }
    }
}

/// A client in `bank`, or the kind of failure.
async fn connect(port: u16) -> Result<Client, String> {
    match tokio::time::timeout(CONNECT_TIMEOUT, Client::try_connect(port, "app", "app", Some("bank"))).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(Failure::Io(_))) => Err("connect".into()),
        Ok(Err(Failure::Server(e))) => Err(format!("login-{}", e.code)),
        Err(_) => Err("connect-timeout".into()),
    }
}

/// How a failure is counted: `lost` for a broken connection, else the error code.
fn kind_of(f: &Failure) -> String {
    match f {
        Failure::Io(_) => "lost".into(),
        Failure::Server(e) => e.code.to_string(),
    }
}

/// A small deterministic generator (xorshift64*), so that a seed replays a run's choices.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform-enough in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
