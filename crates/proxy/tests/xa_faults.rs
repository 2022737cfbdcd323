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

#[path = "xa_faults/bank.rs"]
mod bank;
use crate::common;
#[path = "xa_faults/workload.rs"]
mod workload;

use bank::{audit, first_few, Bank, ACCOUNTS, SHARDS, START_BALANCE};
use common::process::{killed_by, sample, TesseraProcess, SIGABRT};
use common::Client;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};
use workload::{Outcome, Rng, Workload};

/// Rounds of scenarios (a) and (c) (`XA_FAULTS_ROUNDS` raises it for a longer soak).
fn rounds() -> usize {
    std::env::var("XA_FAULTS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(20, |n: usize| n.max(20))
}
/// Rounds per failpoint in scenario (b) (four failpoints).
fn rounds_per_failpoint() -> usize {
    rounds().div_ceil(4)
}
const FAILPOINTS: [&str; 4] = [
    "xa.before_prepare",
    "xa.after_prepare",
    "xa.after_decision",
    "xa.after_first_commit",
];
/// `abort@M` fires on a hit M in this range, so that some transfers commit first.
const ABORT_AT: std::ops::RangeInclusive<u64> = 3..=10;
/// Recovery scans every 200 ms; a branch without a decision is rolled back after 1.5 s in
/// doubt (longer than scenario (a)'s 300 ms pause after PREPARE, so live transactions finish).
const XA_CONFIG: &str = "xa_recovery_interval_ms = 200\nxa_resolve_after_ms = 1500";
/// Transfers acknowledged in a round before its fault, and after a restarted backend.
const ACKS_BEFORE_FAULT: u64 = 5;
const ACKS_AFTER_RESTART: u64 = 5;
/// Bounds of the waits for progress.
const PROGRESS_TIMEOUT: Duration = Duration::from_secs(60);
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long Tessera may take to end its backend transactions once the clients are gone.
const END_TIMEOUT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(20);

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
    let start = Counters::read(&tessera);
    let mut before = start;
    for round in 0..rounds() {
        let workload = h.workload(tessera.port);
        workload.wait_acks(ACKS_BEFORE_FAULT, "before the kill");
        h.bank.crash_and_restart(round % SHARDS);
        h.tally.kills += 1;
        workload.wait_acks(workload.acks() + ACKS_AFTER_RESTART, "after the restart");
        let outcome = workload.stop(|| h.diagnose());
        before = h.end_round(round, outcome, &tessera, before);
    }
    let served = before.since(start);
    h.tally.commits = Some((served.one_phase, served.two_phase));
    if h.mode == Mode::Xa {
        assert!(served.two_phase > 0, "no transfer committed with XA");
    }
    h.finish();
}

#[test]
fn b_tessera_aborted_at_each_protocol_step() {
    let _serial = serial();
    let mut h = Harness::new("b");
    let mut round = 0;
    for failpoint in FAILPOINTS {
        for _ in 0..rounds_per_failpoint() {
            let mut doomed = h.doomed_tessera("b-doomed", failpoint);
            let workload = h.workload(doomed.port);
            h.await_abort(&mut doomed, &workload);
            let outcome = workload.stop(|| h.diagnose());
            let fresh = h.tessera("b-fresh", None);
            let after = h.end_round(round, outcome, &fresh, Counters::default());
            h.expect_recovered(round, failpoint, Counters::default(), after);
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
    let mut before = Counters::read(&survivor);
    for round in 0..rounds() {
        let failpoint = ["xa.after_prepare", "xa.after_decision"][round % 2];
        let mut doomed = h.doomed_tessera("c-A", failpoint);
        let workload = h.workload(doomed.port);
        h.await_abort(&mut doomed, &workload);
        let outcome = workload.stop(|| h.diagnose());
        let after = h.end_round(round, outcome, &survivor, before);
        h.expect_recovered(round, failpoint, before, after);
        before = after;
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

    /// The `[server]` keys of the XA build (a build without XA refuses unknown keys).
    fn server_config(self) -> &'static str {
        match self {
            Mode::Xa => XA_CONFIG,
            Mode::HarnessOnly => "",
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
        let config = bank.config(mode.server_config());
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

    /// Starts the transfer clients against `port`.
    fn workload(&mut self, port: u16) -> Workload {
        Workload::start(&self.rt, port, &self.next_transfer, self.rng.next())
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
        let recovered = after.since(before);
        self.tally.recovered_commit += recovered.recovered_commit;
        self.tally.recovered_rollback += recovered.recovered_rollback;
        self.tally.in_doubt_left = after.in_doubt;
        let mut audit = audit(&self.bank, &self.acked);
        if after.in_doubt > 0 {
            audit.violations.push(format!(
                "{IN_DOUBT} is {} although no server lists a Tessera branch",
                after.in_doubt
            ));
        }
        audit.violations.extend(self.wait_transactions_ended());
        self.tally.committed = audit.transfers;
        self.tally.total_always_right &= audit.total == START_BALANCE * ACCOUNTS as i64;
        self.judge(round, audit.violations, resolver);
        after
    }

    /// XA build: an abort at `xa.after_prepare` leaves the aborting transaction's prepared
    /// branches without a decision, so the resolver must have rolled back at least one; at
    /// `xa.after_decision` it must have committed at least one. (The other failpoints may leave
    /// nothing to recover: before PREPARE the server rolls back a branch whose connection ends;
    /// after the first XA COMMIT a transaction with a single branch is done.)
    fn expect_recovered(&self, round: usize, failpoint: &str, before: Counters, after: Counters) {
        if self.mode != Mode::Xa {
            return;
        }
        let recovered = after.since(before);
        let (outcome, recovered) = match failpoint {
            "xa.after_prepare" => ("rolled back", recovered.recovered_rollback),
            "xa.after_decision" => ("committed", recovered.recovered_commit),
            _ => return,
        };
        assert!(
            recovered > 0,
            "scenario {} round {round} (seed {}): after an abort at {failpoint} the resolver {outcome} no branch",
            self.scenario,
            self.seed
        );
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

    /// Waits until no server has an open transaction: with the clients gone, Tessera must
    /// not keep one (its row locks would block every later transfer on those rows). A
    /// violation if some remain after [`END_TIMEOUT`].
    fn wait_transactions_ended(&self) -> Option<String> {
        let deadline = Instant::now() + END_TIMEOUT;
        loop {
            let open = self.bank.open_transactions();
            if open.is_empty() {
                return None;
            }
            if Instant::now() >= deadline {
                return Some(format!(
                    "transactions still open {END_TIMEOUT:?} after the clients left: {}",
                    first_few(&open)
                ));
            }
            std::thread::sleep(POLL);
        }
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

    /// Prints the servers' open transactions and running statements (for a stuck client).
    fn diagnose(&self) {
        eprintln!(
            "XA-FAULTS scenario={}: a client is slow to stop; the servers:",
            self.scenario
        );
        for i in 0..SHARDS {
            for sql in [
                "SELECT trx_id, trx_state, trx_started, trx_mysql_thread_id, trx_query FROM information_schema.innodb_trx",
                "SELECT id, user, db, command, time, state, info FROM information_schema.processlist WHERE command <> 'Sleep'",
                "XA RECOVER",
            ] {
                for row in self.bank.rows(i, sql) {
                    eprintln!("  s{i} {}: {}", &sql[..20], row.join(" | "));
                }
            }
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

    /// The counters' increase since `earlier` (the gauge as it is now).
    fn since(self, earlier: Counters) -> Counters {
        Counters {
            one_phase: self.one_phase.saturating_sub(earlier.one_phase),
            two_phase: self.two_phase.saturating_sub(earlier.two_phase),
            recovered_commit: self.recovered_commit.saturating_sub(earlier.recovered_commit),
            recovered_rollback: self.recovered_rollback.saturating_sub(earlier.recovered_rollback),
            in_doubt: self.in_doubt,
        }
    }
}
