//! XA two-phase commit under faults, end to end: four MariaDB servers hold the four shards of
//! schema `bank`, the real `tessera` binary runs in front as a child process, and concurrent
//! clients move money between accounts on different shards while faults strike:
//! (a) a backend is SIGKILLed while transactions sit between PREPARE and the decision;
//! (b) Tessera aborts at each step of the protocol (failpoints) and a fresh process recovers;
//! (c) Tessera aborts and a second Tessera, running beside it, recovers its branches.
//! After every round the servers are read directly, not through Tessera: no Tessera branch is
//! left in doubt, the money is all there, every acknowledged transfer exists, and every
//! transfer that exists was applied to both of its accounts.
//!
//! `cargo test -p tessera-proxy --test xa_faults -- --nocapture` prints one `XA-FAULTS` summary
//! line per scenario. `XA_FAULTS_SEED=<n>` replays a run's random choices.
//! `XA_FAULTS_HARNESS_ONLY=1` checks the harness against a build without XA: the configuration
//! leaves out the XA keys, the test aborts Tessera itself, metrics may be missing, and broken
//! invariants are reported in the summary instead of failing the test.

mod common;

use common::process::{killed_by, sample, TesseraProcess, ADMIN, LISTEN, SIGABRT};
use common::{Client, Failure};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};
use tessera_sandbox::{Sandbox, SandboxOptions};

/// Servers, groups and shards (shard `i` = database `bank_i` on server `i`, group `g{i}`).
const SHARDS: usize = 4;
const ACCOUNTS: u64 = 40;
const START_BALANCE: i64 = 1000;
const CLIENTS: usize = 8;
/// Rounds of scenarios (a) and (c).
const ROUNDS: usize = 20;
/// Rounds per failpoint in scenario (b) (four failpoints).
const ROUNDS_PER_FAILPOINT: usize = 5;
const FAILPOINTS: [&str; 4] = [
    "xa.before_prepare",
    "xa.after_prepare",
    "xa.after_decision",
    "xa.after_first_commit",
];
/// `abort@M` fires on a hit M in this range, so that some transfers commit first.
const ABORT_AT: std::ops::RangeInclusive<u64> = 3..=10;
const RECOVERY_INTERVAL_MS: u64 = 200;
const RESOLVE_AFTER_MS: u64 = 300;
/// A transfer's id is `sequence * ID_STRIDE + destination account`, so that the audit can
/// credit the destination from the `transfers` row alone.
const ID_STRIDE: u64 = 1000;
/// Out of this many transfers, one stays on one shard (a one-phase commit).
const SAME_SHARD_ONE_IN: u64 = 5;
/// Transfers acknowledged in a round before its fault, and after a restarted backend.
const ACKS_BEFORE_FAULT: u64 = 5;
const ACKS_AFTER_RESTART: u64 = 5;
/// Bounds of the waits for progress.
const PROGRESS_TIMEOUT: Duration = Duration::from_secs(60);
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const RECONNECT_PAUSE: Duration = Duration::from_millis(50);
const POLL: Duration = Duration::from_millis(20);
/// XA RECOVER rows whose `data` starts with this are Tessera's branches.
const TESSERA_BRANCH: &str = "tsr:";

const ONE_PHASE: &str = r#"tessera_commits_total{protocol="one_phase"}"#;
const TWO_PHASE: &str = r#"tessera_commits_total{protocol="two_phase"}"#;
const RECOVERED_COMMIT: &str = r#"tessera_xa_recovered_total{outcome="commit"}"#;
const RECOVERED_ROLLBACK: &str = r#"tessera_xa_recovered_total{outcome="rollback"}"#;
const IN_DOUBT: &str = "tessera_xa_in_doubt";
const SCANS: &str = "tessera_xa_recovery_scans_total";

#[test]
fn a_backend_killed_between_prepare_and_commit() {
    let _serial = serial();
    let mut h = Harness::new("a");
    let tessera = h.tessera("a", Some("xa.after_prepare=delay(300)"));
    let start = h.counters(&tessera);
    let mut before = start;
    for round in 0..ROUNDS {
        let workload = h.workload(tessera.port);
        workload.wait_acks(ACKS_BEFORE_FAULT, "before the kill");
        h.bank.crash_and_restart(round % SHARDS);
        h.tally.kills += 1;
        workload.wait_acks(workload.acks() + ACKS_AFTER_RESTART, "after the restart");
        let outcome = workload.stop();
        before = h.end_round(round, outcome, &tessera, before);
    }
    h.tally.commits = Some((before.one_phase - start.one_phase, before.two_phase - start.two_phase));
    if h.mode == Mode::Xa {
        assert!(before.two_phase > start.two_phase, "no transfer committed with XA");
    }
    h.finish();
}

#[test]
fn b_tessera_aborted_at_each_protocol_step() {
    let _serial = serial();
    let mut h = Harness::new("b");
    let mut round = 0;
    for failpoint in FAILPOINTS {
        for _ in 0..ROUNDS_PER_FAILPOINT {
            let mut doomed = h.doomed_tessera("b-doomed", failpoint);
            let workload = h.workload(doomed.port);
            h.await_abort(&mut doomed, &workload);
            let outcome = workload.stop();
            let fresh = h.tessera("b-fresh", None);
            h.end_round(round, outcome, &fresh, Counters::default());
            round += 1;
        }
    }
    h.finish();
}

#[test]
fn c_a_second_tessera_recovers_the_branches_of_an_aborted_one() {
    let _serial = serial();
    let mut h = Harness::new("c");
    let survivor = h.tessera("c-B", None);
    let mut before = h.counters(&survivor);
    for round in 0..ROUNDS {
        let failpoint = ["xa.after_prepare", "xa.after_decision"][round % 2];
        let mut doomed = h.doomed_tessera("c-A", failpoint);
        let workload = h.workload(doomed.port);
        h.await_abort(&mut doomed, &workload);
        let outcome = workload.stop();
        before = h.end_round(round, outcome, &survivor, before);
    }
    h.finish();
}

#[test]
fn metric_samples_are_found_by_exact_name_and_labels() {
    let text = "# TYPE tessera_commits_total counter\n\
                tessera_commits_total{protocol=\"one_phase\"} 12\n\
                tessera_commits_total{protocol=\"two_phase\"} 3\n\
                tessera_xa_in_doubt 0\n";
    assert_eq!(sample(text, TWO_PHASE), Some(3.0));
    assert_eq!(sample(text, IN_DOUBT), Some(0.0));
    assert_eq!(sample(text, "tessera_commits_total"), None);
    assert_eq!(sample(text, "tessera_xa"), None);
}

#[test]
fn the_audit_credits_the_destination_encoded_in_the_transfer_id() {
    let rows = [
        TransferRow {
            id: 7 * ID_STRIDE + 2,
            account: 1,
            amount: 30,
        },
        TransferRow {
            id: 8 * ID_STRIDE + 1,
            account: 3,
            amount: 5,
        },
    ];
    let expected = expected_balances(&rows);
    assert_eq!(expected[&1], START_BALANCE - 30 + 5);
    assert_eq!(expected[&2], START_BALANCE + 30);
    assert_eq!(expected[&3], START_BALANCE - 5);
    assert_eq!(expected.values().sum::<i64>(), START_BALANCE * ACCOUNTS as i64);
}

/// The scenarios share the machine's two cores: one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the run expects of the build under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// The XA build: XA config keys, failpoints and metrics exist; invariants are asserted.
    Xa,
    /// A build without XA (`XA_FAULTS_HARNESS_ONLY=1`): checks the harness; violations are
    /// reported, not asserted.
    HarnessOnly,
}

impl Mode {
    fn from_env() -> Mode {
        match std::env::var("XA_FAULTS_HARNESS_ONLY").as_deref() {
            Ok("1") => Mode::HarnessOnly,
            _ => Mode::Xa,
        }
    }
}

/// One scenario's servers, runtime, random choices and running totals.
struct Harness {
    scenario: &'static str,
    mode: Mode,
    seed: u64,
    rng: Rng,
    rt: tokio::runtime::Runtime,
    bank: Bank,
    config: String,
    next_transfer: Arc<AtomicU64>,
    acked: HashSet<u64>,
    tally: Tally,
    started: Instant,
}

/// What a scenario did, for its summary line.
#[derive(Default)]
struct Tally {
    rounds: usize,
    kills: usize,
    recovered_commit: u64,
    recovered_rollback: u64,
    in_doubt_left: u64,
    total_always_right: bool,
    committed: usize,
    /// (one-phase, two-phase) commits, where one process served the whole scenario.
    commits: Option<(u64, u64)>,
    errors: BTreeMap<String, u64>,
    violations: Vec<String>,
}

impl Harness {
    /// Starts the servers and creates and fills `bank` through a short-lived Tessera.
    fn new(scenario: &'static str) -> Harness {
        let mode = Mode::from_env();
        let seed = seed();
        eprintln!("XA-FAULTS scenario={scenario} starting: mode={mode:?} seed={seed}");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let bank = Bank::start();
        let config = bank.config(mode);
        let h = Harness {
            scenario,
            mode,
            seed,
            rng: Rng::new(seed),
            rt,
            bank,
            config,
            next_transfer: Arc::new(AtomicU64::new(1)),
            acked: HashSet::new(),
            tally: Tally {
                total_always_right: true,
                ..Tally::default()
            },
            started: Instant::now(),
        };
        h.create_bank();
        let audit = audit(&h.bank, &h.acked);
        assert!(audit.violations.is_empty(), "fresh bank: {:?}", audit.violations);
        h
    }

    fn create_bank(&self) {
        let setup = self.tessera("setup", None);
        let accounts: Vec<String> = (1..=ACCOUNTS).map(|id| format!("({id}, {START_BALANCE})")).collect();
        let statements = [
            "CREATE DATABASE bank".to_string(),
            "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL)".to_string(),
            "CREATE TABLE transfers (id BIGINT PRIMARY KEY, account BIGINT NOT NULL, amount BIGINT NOT NULL)"
                .to_string(),
            format!("INSERT INTO accounts (id, balance) VALUES {}", accounts.join(", ")),
        ];
        self.rt.block_on(async {
            let mut c = Client::connect(setup.port, "app", "app", Some("bank"))
                .await
                .expect("login");
            for sql in &statements {
                c.query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
        });
    }

    /// A Tessera over the four servers; `failpoints` becomes `TESSERA_FAILPOINTS`.
    fn tessera(&self, name: &str, failpoints: Option<&str>) -> TesseraProcess {
        let env: Vec<(&str, &str)> = failpoints.map(|f| ("TESSERA_FAILPOINTS", f)).into_iter().collect();
        TesseraProcess::start(name, &self.config, &env)
    }

    /// A Tessera that aborts on hit M of `failpoint`, M random in [`ABORT_AT`].
    fn doomed_tessera(&mut self, name: &str, failpoint: &str) -> TesseraProcess {
        let at = ABORT_AT.start() + self.rng.below(ABORT_AT.end() - ABORT_AT.start() + 1);
        self.tessera(name, Some(&format!("{failpoint}=abort@{at}")))
    }

    /// Waits for `doomed` to abort under the workload (the XA build's failpoint fires; without
    /// XA the test sends SIGABRT after a few acknowledged transfers) and checks that it died by
    /// SIGABRT.
    fn await_abort(&mut self, doomed: &mut TesseraProcess, workload: &Workload) {
        let status = match self.mode {
            Mode::Xa => doomed.wait_exit(PROGRESS_TIMEOUT).unwrap_or_else(|| {
                panic!(
                    "{}: the abort failpoint never fired ({} transfers acknowledged, errors {:?}); log:\n{}",
                    doomed.name(),
                    workload.acks(),
                    workload.errors(),
                    doomed.log_tail(30)
                )
            }),
            Mode::HarnessOnly => {
                workload.wait_acks(ACKS_BEFORE_FAULT, "before the abort");
                doomed.abort()
            }
        };
        assert!(
            killed_by(status, SIGABRT),
            "{} ended with {status}, not by abort; log:\n{}",
            doomed.name(),
            doomed.log_tail(30)
        );
        self.tally.kills += 1;
    }

    /// Starts [`CLIENTS`] transfer loops against `port`.
    fn workload(&mut self, port: u16) -> Workload {
        Workload::start(&self.rt, port, &self.next_transfer, self.rng.next())
    }

    /// `process`'s counters (missing ones are 0: a build without XA has none).
    fn counters(&self, process: &TesseraProcess) -> Counters {
        Counters::read(process)
    }

    /// Ends a round: records the workload's outcome, waits until `resolver` has settled every
    /// branch, and audits the servers. `before` are `resolver`'s counters at the round's start;
    /// returns them at its end.
    fn end_round(&mut self, round: usize, outcome: Outcome, resolver: &TesseraProcess, before: Counters) -> Counters {
        self.tally.rounds += 1;
        self.acked.extend(&outcome.acked);
        for (kind, n) in outcome.errors {
            *self.tally.errors.entry(kind).or_default() += n;
        }
        let after = self.settle(round, resolver);
        self.tally.recovered_commit += after.recovered_commit - before.recovered_commit;
        self.tally.recovered_rollback += after.recovered_rollback - before.recovered_rollback;
        self.tally.in_doubt_left = after.in_doubt;
        let audit = audit(&self.bank, &self.acked);
        self.tally.committed = audit.transfers;
        self.tally.total_always_right &= audit.total == START_BALANCE * ACCOUNTS as i64;
        self.judge(round, audit.violations, resolver);
        after
    }

    /// Fails the test on violations (XA build), or records them (harness only).
    fn judge(&mut self, round: usize, violations: Vec<String>, resolver: &TesseraProcess) {
        if violations.is_empty() {
            return;
        }
        match self.mode {
            Mode::Xa => panic!(
                "scenario {} round {round} (seed {}): {}\n{} log:\n{}",
                self.scenario,
                self.seed,
                violations.join("\n"),
                resolver.name(),
                resolver.log_tail(40)
            ),
            Mode::HarnessOnly => {
                eprintln!(
                    "XA-FAULTS scenario={} round={round} violations: {violations:?}",
                    self.scenario
                );
                self.tally
                    .violations
                    .extend(violations.into_iter().map(|v| format!("round {round}: {v}")));
            }
        }
    }

    /// Waits until no server lists a Tessera branch in XA RECOVER, then (XA build) until
    /// `resolver` completes one more recovery scan, so that its in-doubt gauge describes the
    /// settled state. Returns `resolver`'s counters.
    fn settle(&self, round: usize, resolver: &TesseraProcess) -> Counters {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        loop {
            let branches = self.bank.in_doubt();
            if branches.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "scenario {} round {round}: branches still in doubt after {SETTLE_TIMEOUT:?}: {branches:?}\n{} log:\n{}",
                self.scenario,
                resolver.name(),
                resolver.log_tail(40)
            );
            std::thread::sleep(POLL);
        }
        if self.mode == Mode::Xa {
            self.wait_for_scan(resolver);
        }
        Counters::read(resolver)
    }

    /// Waits until `resolver` completes a recovery scan that started after this call.
    fn wait_for_scan(&self, resolver: &TesseraProcess) {
        let scans = || resolver.metric(SCANS);
        let first = scans().unwrap_or_else(|| panic!("{} exposes no {SCANS}", resolver.name()));
        // A scan running now may have started before the call: wait for the one after it.
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        while scans().unwrap_or(first) < first + 2.0 {
            assert!(
                Instant::now() < deadline,
                "{}: no recovery scan completed in {SETTLE_TIMEOUT:?}",
                resolver.name()
            );
            std::thread::sleep(POLL);
        }
    }

    /// Prints the summary line and checks what must hold at the end.
    fn finish(self) {
        let t = &self.tally;
        let commits = t
            .commits
            .map_or_else(|| "n/a".to_string(), |(one, two)| format!("{one}/{two}"));
        let errors: Vec<String> = t.errors.iter().map(|(k, n)| format!("{k}:{n}")).collect();
        eprintln!(
            "XA-FAULTS scenario={} rounds={} acknowledged={} committed_total={} kills={} recovered={} (commit={} rollback={}) in_doubt_left={} total_unchanged={} one/two_phase_commits={} errors=[{}] violations={} seed={} mode={:?} elapsed={:.1}s",
            self.scenario,
            t.rounds,
            self.acked.len(),
            t.committed,
            t.kills,
            t.recovered_commit + t.recovered_rollback,
            t.recovered_commit,
            t.recovered_rollback,
            t.in_doubt_left,
            if t.total_always_right { "yes" } else { "no" },
            commits,
            errors.join(","),
            t.violations.len(),
            self.seed,
            self.mode,
            self.started.elapsed().as_secs_f64()
        );
        if self.mode == Mode::Xa {
            assert_eq!(t.in_doubt_left, 0, "branches in doubt after the last round");
            assert!(t.total_always_right, "the total changed");
        }
    }
}

/// The random seed: `XA_FAULTS_SEED`, else the clock.
fn seed() -> u64 {
    if let Ok(s) = std::env::var("XA_FAULTS_SEED") {
        return s.parse().expect("XA_FAULTS_SEED is a number");
    }
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    (nanos as u64) | 1
}

/// A Tessera process's XA counters (0 where the build exposes none).
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    one_phase: u64,
    two_phase: u64,
    recovered_commit: u64,
    recovered_rollback: u64,
    in_doubt: u64,
}

impl Counters {
    fn read(process: &TesseraProcess) -> Counters {
        let text = process.metrics().unwrap_or_default();
        let get = |key: &str| sample(&text, key).map_or(0, |v| v as u64);
        Counters {
            one_phase: get(ONE_PHASE),
            two_phase: get(TWO_PHASE),
            recovered_commit: get(RECOVERED_COMMIT),
            recovered_rollback: get(RECOVERED_ROLLBACK),
            in_doubt: get(IN_DOUBT),
        }
    }
}

/// The four servers; server `i` holds shard database `bank_i` (group `g{i}`).
struct Bank {
    sandbox: Sandbox,
}

impl Bank {
    fn start() -> Bank {
        let sandbox = Sandbox::start(SandboxOptions {
            servers: SHARDS,
            ..Default::default()
        })
        .expect("sandbox of four servers");
        Bank { sandbox }
    }

    /// Tessera's configuration (with [`LISTEN`] and [`ADMIN`] left to fill in): one group per
    /// server, schema `bank` with `accounts` by `id` and `transfers` by `account`, both `mod`.
    fn config(&self, mode: Mode) -> String {
        let xa = match mode {
            Mode::Xa => {
                format!("xa_recovery_interval_ms = {RECOVERY_INTERVAL_MS}\nxa_resolve_after_ms = {RESOLVE_AFTER_MS}")
            }
            Mode::HarnessOnly => String::new(),
        };
        let groups: String = self
            .sandbox
            .servers()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                format!(
                    "[[groups]]\nname = \"g{i}\"\nuser = \"tessera\"\npassword = \"tessera\"\nprimary = {{ address = \"127.0.0.1:{}\" }}\n",
                    s.port()
                )
            })
            .collect();
        let shards: Vec<String> = (0..SHARDS).map(|i| format!("\"g{i}:bank_{i}\"")).collect();
        format!(
            r#"[server]
listen = "{LISTEN}"
worker_threads = 2
cross_shard_lock_wait_s = 1
shutdown_timeout_ms = 1000
{xa}
[pool]
backoff_max_ms = 200
connect_timeout_ms = 1000
checkout_timeout_ms = 5000
[admin]
http_listen = "{ADMIN}"
[[users]]
name = "app"
password = "app"
{groups}
[[schemas]]
name = "bank"
shards = [{}]
[[schemas.tables]]
name = "accounts"
shard_key = "id"
function = "mod"
[[schemas.tables]]
name = "transfers"
shard_key = "account"
function = "mod"
"#,
            shards.join(", ")
        )
    }

    /// The rows of `sql` run as root on server `i`, split into columns.
    fn rows(&self, i: usize, sql: &str) -> Vec<Vec<String>> {
        let out = self
            .sandbox
            .server(i)
            .sql(sql)
            .unwrap_or_else(|e| panic!("s{i}: {sql}: {e}"));
        out.lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.split('\t').map(str::to_string).collect())
            .collect()
    }

    /// (account, balance, server) of every account row on every shard.
    fn accounts(&self) -> Vec<(u64, i64, usize)> {
        (0..SHARDS)
            .flat_map(|i| {
                self.rows(i, &format!("SELECT id, balance FROM bank_{i}.accounts"))
                    .into_iter()
                    .map(move |r| (number(&r[0]), number(&r[1]), i))
            })
            .collect()
    }

    /// Every transfer row on every shard, with the server it was found on.
    fn transfers(&self) -> Vec<(TransferRow, usize)> {
        (0..SHARDS)
            .flat_map(|i| {
                self.rows(i, &format!("SELECT id, account, amount FROM bank_{i}.transfers"))
                    .into_iter()
                    .map(move |r| {
                        let row = TransferRow {
                            id: number(&r[0]),
                            account: number(&r[1]),
                            amount: number(&r[2]),
                        };
                        (row, i)
                    })
            })
            .collect()
    }

    /// Tessera's prepared branches on all servers, as `s<i>: <xid data>`.
    fn in_doubt(&self) -> Vec<String> {
        (0..SHARDS)
            .flat_map(|i| {
                self.rows(i, "XA RECOVER")
                    .into_iter()
                    .filter(|r| r.get(3).is_some_and(|data| data.starts_with(TESSERA_BRANCH)))
                    .map(move |r| format!("s{i}: {}", r[3]))
            })
            .collect()
    }

    /// SIGKILLs server `i`, then starts it again on its data dir and port.
    fn crash_and_restart(&mut self, i: usize) {
        let server = self.sandbox.server_mut(i);
        server.kill().expect("SIGKILL the server");
        server.start().expect("restart the server");
    }
}

fn number<T: std::str::FromStr>(text: &str) -> T {
    text.parse().unwrap_or_else(|_| panic!("`{text}` is not a number"))
}

/// A row of `transfers`.
#[derive(Clone, Copy, Debug)]
struct TransferRow {
    id: u64,
    account: u64,
    amount: i64,
}

/// What the servers hold, and what is wrong with it.
struct Audit {
    total: i64,
    transfers: usize,
    violations: Vec<String>,
}

/// Reads every shard directly and checks: the total is unchanged; every account and transfer
/// is on the shard the `mod` function names; every acknowledged transfer exists; and each
/// balance is the start balance minus the transfers out plus the transfers in (so every
/// transfer present was applied to both accounts, and nothing else was).
fn audit(bank: &Bank, acked: &HashSet<u64>) -> Audit {
    let accounts = bank.accounts();
    let transfers = bank.transfers();
    let mut violations = Vec::new();
    let total: i64 = accounts.iter().map(|&(_, balance, _)| balance).sum();
    let expected_total = START_BALANCE * ACCOUNTS as i64;
    if total != expected_total {
        violations.push(format!("total {total}, expected {expected_total}"));
    }
    if accounts.len() as u64 != ACCOUNTS {
        violations.push(format!("{} account rows, expected {ACCOUNTS}", accounts.len()));
    }
    let misplaced: Vec<String> = accounts
        .iter()
        .map(|&(id, _, server)| (id, server))
        .chain(transfers.iter().map(|(t, server)| (t.account, *server)))
        .filter(|&(key, server)| key as usize % SHARDS != server)
        .map(|(key, server)| format!("key {key} on s{server}"))
        .collect();
    if !misplaced.is_empty() {
        violations.push(format!("rows on the wrong shard: {}", first_few(&misplaced)));
    }
    let rows: Vec<TransferRow> = transfers.iter().map(|&(t, _)| t).collect();
    let present: HashSet<u64> = rows.iter().map(|t| t.id).collect();
    let mut missing: Vec<u64> = acked.difference(&present).copied().collect();
    missing.sort_unstable();
    if !missing.is_empty() {
        violations.push(format!(
            "{} acknowledged transfers missing: {}",
            missing.len(),
            first_few(&missing)
        ));
    }
    let expected = expected_balances(&rows);
    let wrong: Vec<String> = accounts
        .iter()
        .filter(|&&(id, balance, _)| expected.get(&id) != Some(&balance))
        .map(|&(id, balance, _)| {
            format!(
                "account {id} holds {balance}, its transfers say {:?}",
                expected.get(&id)
            )
        })
        .collect();
    if !wrong.is_empty() {
        violations.push(format!(
            "{} balances disagree with the transfers: {}",
            wrong.len(),
            first_few(&wrong)
        ));
    }
    Audit {
        total,
        transfers: rows.len(),
        violations,
    }
}

/// Each account's balance according to the transfer rows.
fn expected_balances(rows: &[TransferRow]) -> BTreeMap<u64, i64> {
    let mut balances: BTreeMap<u64, i64> = (1..=ACCOUNTS).map(|id| (id, START_BALANCE)).collect();
    for t in rows {
        *balances.entry(t.account).or_default() -= t.amount;
        *balances.entry(t.id % ID_STRIDE).or_default() += t.amount;
    }
    balances
}

/// Up to five items of a list, for messages.
fn first_few<T: std::fmt::Debug>(items: &[T]) -> String {
    let shown: Vec<String> = items.iter().take(5).map(|i| format!("{i:?}")).collect();
    let more = items.len().saturating_sub(5);
    if more == 0 {
        shown.join(", ")
    } else {
        format!("{} and {more} more", shown.join(", "))
    }
}

/// One transfer: debit `from`, credit `to`, log it on `from`'s shard, in one transaction.
struct Transfer {
    id: u64,
    from: u64,
    to: u64,
    amount: i64,
}

impl Transfer {
    /// Two distinct accounts, on different shards except one time in [`SAME_SHARD_ONE_IN`].
    fn pick(rng: &mut Rng, next: &AtomicU64) -> Transfer {
        let from = 1 + rng.below(ACCOUNTS);
        let same_shard = rng.below(SAME_SHARD_ONE_IN) == 0;
        let to = loop {
            let to = 1 + rng.below(ACCOUNTS);
            if to != from && (to % SHARDS as u64 == from % SHARDS as u64) == same_shard {
                break to;
            }
        };
        Transfer {
            id: next.fetch_add(1, Ordering::Relaxed) * ID_STRIDE + to,
            from,
            to,
            amount: 1 + rng.below(50) as i64,
        }
    }

    /// Runs the transaction; Ok only when COMMIT answered OK.
    async fn run(&self, c: &mut Client) -> Result<(), Failure> {
        let (id, from, to, x) = (self.id, self.from, self.to, self.amount);
        let statements = [
            "START TRANSACTION".to_string(),
            format!("UPDATE accounts SET balance = balance - {x} WHERE id = {from}"),
            format!("UPDATE accounts SET balance = balance + {x} WHERE id = {to}"),
            format!("INSERT INTO transfers (id, account, amount) VALUES ({id}, {from}, {x})"),
            "COMMIT".to_string(),
        ];
        for sql in &statements {
            c.try_query(sql).await?;
        }
        Ok(())
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
    fn ack(&self, id: u64) {
        self.acked.lock().expect("acked").push(id);
        self.acks.fetch_add(1, Ordering::SeqCst);
    }

    fn count(&self, kind: String) {
        *self.errors.lock().expect("errors").entry(kind).or_default() += 1;
    }
}

/// [`CLIENTS`] connections looping over transfers until stopped. An error of any kind is
/// counted, the connection dropped and a new one opened; an unacknowledged transfer may or may
/// not have happened.
struct Workload {
    shared: Arc<Shared>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    rt: tokio::runtime::Handle,
}

/// What a stopped workload reports.
struct Outcome {
    acked: Vec<u64>,
    errors: BTreeMap<String, u64>,
}

impl Workload {
    fn start(rt: &tokio::runtime::Runtime, port: u16, next: &Arc<AtomicU64>, seed: u64) -> Workload {
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

    fn acks(&self) -> u64 {
        self.shared.acks.load(Ordering::SeqCst)
    }

    fn errors(&self) -> BTreeMap<String, u64> {
        self.shared.errors.lock().expect("errors").clone()
    }

    /// Waits until `n` transfers are acknowledged; panics after [`PROGRESS_TIMEOUT`].
    fn wait_acks(&self, n: u64, when: &str) {
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

    /// Lets every client finish its transfer, then reports.
    fn stop(self) -> Outcome {
        self.shared.stop.store(true, Ordering::SeqCst);
        let tasks = self.tasks;
        let joined = self.rt.block_on(async {
            tokio::time::timeout(TRANSFER_TIMEOUT + CONNECT_TIMEOUT * 2, async {
                for t in tasks {
                    t.await.expect("client task");
                }
            })
            .await
        });
        assert!(joined.is_ok(), "the clients did not stop");
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
                shared.ack(transfer.id);
                conn = Some(c);
            }
            Ok(Err(f)) => shared.count(kind_of(&f)),
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
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform-enough in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
