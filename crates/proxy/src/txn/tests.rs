//! The commit protocol and recovery against scripted fake servers ([`FakeServer`]): what each
//! server received, in which order, and the outcome.

use super::commit::{self, Branch, Protocol, COMMIT, ROLLBACK};
use super::decision::{record_sql, Outcome};
use super::failpoints::Failpoints;
use super::recovery::{self, Groups};
use super::xid::{Xid, FORMAT_ID};
use crate::backend::fake_shard::{Answer, FakeConn, FakeServer, ServerTxn, Timeline};
use crate::backend::ShardConn;
use crate::error::ProxyError;
use crate::metrics::Metrics;
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const DB: &str = "tessera";
const GTRID: &str = "tsr:0000abcd:7@g0";

fn env<'a>(metrics: &'a Metrics, failpoints: &'a Failpoints) -> commit::Env<'a> {
    commit::Env {
        metrics,
        failpoints,
        xa_database: DB.into(),
        lock_wait_s: 3,
    }
}

fn xid(shard: usize) -> Xid {
    Xid {
        gtrid: GTRID.into(),
        bqual: format!("db{shard}"),
    }
}

fn count(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

/// A transaction over fake servers: server 0 is the coordinator (a plain transaction), every
/// other one an XA branch.
struct Txn {
    timeline: Timeline,
    servers: Vec<FakeServer>,
    branches: Vec<Branch<FakeConn>>,
}

impl Txn {
    /// Servers as `scripts` build them; `wrote[i]`: branch `i` wrote. The transaction opens
    /// with BEGIN or XA START (the scripts' rules must leave those answering OK).
    async fn open(wrote: &[bool], scripts: impl Fn(usize, FakeServer) -> FakeServer) -> Txn {
        let timeline = Timeline::default();
        let mut servers = Vec::new();
        let mut branches = Vec::new();
        for (shard, wrote) in wrote.iter().enumerate() {
            let server = scripts(shard, FakeServer::new(&format!("s{shard}"), &timeline));
            let mut conn = server.connect();
            let (start, x) = match shard {
                0 => ("BEGIN".to_string(), None),
                _ => (format!("XA START {}", xid(shard).sql()), Some(xid(shard))),
            };
            conn.simple_command(&start).await.expect("the transaction opens");
            conn.set_in_transaction(true);
            servers.push(server);
            branches.push(Branch {
                shard,
                conn,
                xid: x,
                wrote: *wrote,
            });
        }
        Txn {
            timeline,
            servers,
            branches,
        }
    }

    /// Commits the transaction (gtrid [`GTRID`]) with fresh metrics, returned to be read.
    async fn commit(&mut self) -> (Result<Protocol, ProxyError>, Metrics) {
        let (m, f) = (Metrics::default(), Failpoints::default());
        let result = commit::commit(&env(&m, &f), Some(GTRID), &mut self.branches).await;
        (result, m)
    }

    /// What server `i` received after the statement that opened the transaction.
    fn sent(&self, i: usize) -> Vec<String> {
        self.servers[i].log().split_off(1)
    }

    fn timeline_has(&self, needle: &str) -> bool {
        self.timeline.entries().iter().any(|e| e.contains(needle))
    }

    /// Server `i` holds no transaction of the test's connection.
    fn closed_on(&self, i: usize) -> bool {
        self.servers[i].txn(self.branches[i].conn.id) == ServerTxn::None
    }
}

fn xa(verb: &str, shard: usize) -> String {
    format!("{verb} {}", xid(shard).sql())
}

fn rolled_back(e: &ProxyError, needle: &str) -> bool {
    matches!(e, ProxyError::TxnRolledBack(m) if m.contains(needle))
}

#[tokio::test]
async fn one_written_branch_commits_in_one_phase() {
    let mut t = Txn::open(&[true, false], |_, s| s).await;
    let (result, m) = t.commit().await;
    assert_eq!(result.ok(), Some(Protocol::OnePhase));
    assert_eq!(t.sent(0), [COMMIT]);
    assert_eq!(
        t.sent(1),
        [xa("XA END", 1), format!("{} ONE PHASE", xa("XA COMMIT", 1))]
    );
    assert!(!t.timeline_has("XA PREPARE"));
    assert!(!t.timeline_has("INSERT"));
    assert!(t.closed_on(0) && t.closed_on(1));
    assert!(t.branches.iter().all(|b| !b.conn.in_transaction() && !b.conn.broken()));
    assert_eq!(count(&m.commits_one_phase), 1);
}

#[tokio::test]
async fn two_written_branches_prepare_decide_then_commit() {
    let mut t = Txn::open(&[true, true, true], |_, s| s).await;
    let (result, m) = t.commit().await;
    assert_eq!(result.ok(), Some(Protocol::TwoPhase));
    assert_eq!(t.sent(0), [record_sql(DB, GTRID, Outcome::Commit), COMMIT.to_string()]);
    for i in [1, 2] {
        assert_eq!(t.sent(i), [xa("XA END", i), xa("XA PREPARE", i), xa("XA COMMIT", i)]);
        assert!(t.servers[i].prepared().is_empty());
        assert!(t.closed_on(i));
    }
    let decision = t.timeline.position(&format!("s0: {COMMIT}"));
    for i in [1, 2] {
        assert!(t.timeline.position(&format!("s{i}: XA PREPARE")) < decision);
        assert!(t.timeline.position(&format!("s{i}: XA COMMIT")) > decision);
    }
    assert!(t.timeline.position("s0: INSERT") < decision);
    assert_eq!(count(&m.commits_two_phase), 1);
    assert_eq!(count(&m.commits_one_phase), 0);
}

#[tokio::test]
async fn a_read_only_xa_branch_commits_in_one_phase_inside_two_phase() {
    let mut t = Txn::open(&[true, true, false], |_, s| s).await;
    let (result, _) = t.commit().await;
    assert_eq!(result.ok(), Some(Protocol::TwoPhase));
    assert_eq!(t.sent(1), [xa("XA END", 1), xa("XA PREPARE", 1), xa("XA COMMIT", 1)]);
    assert_eq!(
        t.sent(2),
        [xa("XA END", 2), format!("{} ONE PHASE", xa("XA COMMIT", 2))]
    );
}

/// Every branch rolled back: ROLLBACK on the coordinator, XA END + XA ROLLBACK on the XA
/// branches, nothing committed anywhere.
fn assert_rolled_back_everywhere(t: &Txn) {
    assert_eq!(
        t.sent(0),
        [record_sql(DB, GTRID, Outcome::Commit), ROLLBACK.to_string()]
    );
    for i in 1..t.servers.len() {
        let sent = t.sent(i);
        assert_eq!(
            sent[2..],
            [xa("XA END", i), xa("XA ROLLBACK", i)],
            "server {i}: {sent:?}"
        );
        assert!(t.servers[i].prepared().is_empty());
    }
    assert!(!t.timeline_has("XA COMMIT"));
    assert!(!t.timeline_has(&format!("s0: {COMMIT}")));
}

#[tokio::test]
async fn a_failed_prepare_rolls_back_everywhere() {
    let mut t = Txn::open(&[true, true, true], |shard, s| match shard {
        2 => s.rule("XA PREPARE", Answer::Err(1030, "Got error 28".into())),
        _ => s,
    })
    .await;
    let (result, m) = t.commit().await;
    let e = result.expect_err("the transaction rolls back");
    assert!(rolled_back(&e, "shard 2 could not prepare"), "{e}");
    assert_eq!(t.sent(1)[..2], [xa("XA END", 1), xa("XA PREPARE", 1)]);
    assert_rolled_back_everywhere(&t);
    assert_eq!(count(&m.xa_rolled_back), 1);
    assert_eq!(count(&m.commits_two_phase), 0);
}

#[tokio::test]
async fn a_deadlock_at_prepare_is_the_servers_own_error() {
    let mut t = Txn::open(&[true, true], |shard, s| match shard {
        1 => s.rule("XA PREPARE", Answer::Err(1213, "Deadlock found".into())),
        _ => s,
    })
    .await;
    let (result, _) = t.commit().await;
    assert!(matches!(result, Err(ProxyError::Backend(p)) if p.code == 1213));
    assert_rolled_back_everywhere(&t);
}

#[tokio::test]
async fn a_failed_decision_write_rolls_back_everywhere() {
    let mut t = Txn::open(&[true, true, true], |shard, s| match shard {
        0 => s.rule("INSERT", Answer::Err(1290, "read-only".into())),
        _ => s,
    })
    .await;
    let (result, m) = t.commit().await;
    let e = result.expect_err("the transaction rolls back");
    assert!(rolled_back(&e, "shard 0 could not prepare"), "{e}");
    for i in [1, 2] {
        assert_eq!(t.sent(i)[..2], [xa("XA END", i), xa("XA PREPARE", i)]);
    }
    assert_rolled_back_everywhere(&t);
    assert_eq!(count(&m.xa_rolled_back), 1);
}

#[tokio::test]
async fn a_missing_decision_table_is_created_on_a_side_connection() {
    let mut t = Txn::open(&[true, true], |shard, s| match shard {
        0 => s.rule_times("INSERT", Answer::Err(1146, "no such table".into()), 1),
        _ => s,
    })
    .await;
    let (result, _) = t.commit().await;
    assert_eq!(result.ok(), Some(Protocol::TwoPhase));
    let sent = t.sent(0);
    let record = record_sql(DB, GTRID, Outcome::Commit);
    assert_eq!(sent.len(), 5, "{sent:?}");
    assert_eq!(sent[0], record);
    assert_eq!(sent[1], "CREATE DATABASE IF NOT EXISTS `tessera`");
    assert!(sent[2].starts_with("CREATE TABLE IF NOT EXISTS `tessera`.xa_decisions"));
    assert_eq!(sent[3..], [record, COMMIT.to_string()]);
    assert_eq!(t.sent(1)[2..], [xa("XA COMMIT", 1)]);
}

/// The fence's INSERT of a `rollback` row, as the coordinator receives it.
fn fence_sql() -> String {
    format!(
        "SET STATEMENT innodb_lock_wait_timeout = 3 FOR {}",
        record_sql(DB, GTRID, Outcome::Rollback)
    )
}

fn lookup_sql() -> String {
    format!("SELECT gtrid, outcome FROM `tessera`.xa_decisions WHERE gtrid IN ('{GTRID}')")
}

#[tokio::test]
async fn a_lost_decision_answer_commits_when_the_log_holds_commit() {
    let mut t = Txn::open(&[true, true, true], |shard, s| match shard {
        0 => s
            .rule("COMMIT", Answer::Lose)
            .rule("SET STATEMENT", Answer::Err(1062, "Duplicate entry".into()))
            .rule(
                "SELECT",
                Answer::Rows(vec![vec![Some(GTRID.into()), Some("commit".into())]]),
            ),
        _ => s,
    })
    .await;
    let (result, m) = t.commit().await;
    assert_eq!(result.ok(), Some(Protocol::TwoPhase));
    let record = record_sql(DB, GTRID, Outcome::Commit);
    assert_eq!(t.sent(0), [record, COMMIT.to_string(), fence_sql(), lookup_sql()]);
    for i in [1, 2] {
        assert_eq!(t.sent(i)[2..], [xa("XA COMMIT", i)]);
        assert!(t.servers[i].prepared().is_empty());
    }
    assert!(t.branches[0].conn.broken());
    assert_eq!(count(&m.commits_two_phase), 1, "a settled commit counts once");
}

#[tokio::test]
async fn a_lost_decision_answer_rolls_back_when_the_fence_lands() {
    let mut t = Txn::open(&[true, true, true], |shard, s| match shard {
        0 => s.rule("COMMIT", Answer::Lose),
        _ => s,
    })
    .await;
    let (result, m) = t.commit().await;
    let e = result.expect_err("the fence decided rollback");
    assert!(rolled_back(&e, "COMMIT failed on the first shard"), "{e}");
    let record = record_sql(DB, GTRID, Outcome::Commit);
    assert_eq!(t.sent(0), [record, COMMIT.to_string(), fence_sql()]);
    for i in [1, 2] {
        assert_eq!(t.sent(i)[2..], [xa("XA ROLLBACK", i)]);
        assert!(t.servers[i].prepared().is_empty());
    }
    assert!(!t.timeline_has("XA COMMIT"));
    assert_eq!(count(&m.xa_rolled_back), 1);
}

#[tokio::test]
async fn a_lost_decision_answer_with_the_log_unreachable_is_left_to_recovery() {
    let mut t = Txn::open(&[true, true, true], |shard, s| match shard {
        0 => s.rule("COMMIT", Answer::Lose).rule("SET STATEMENT", Answer::Lose),
        _ => s,
    })
    .await;
    let (result, _) = t.commit().await;
    assert!(matches!(result, Err(ProxyError::TxnOutcomeUnknown(_))), "{result:?}");
    for i in [1, 2] {
        assert_eq!(t.sent(i).len(), 2, "nothing after XA PREPARE on server {i}");
        assert_eq!(t.servers[i].prepared(), [xid(i).sql()]);
        assert!(
            t.branches[i].conn.broken(),
            "closed so that recovery can take the branch"
        );
    }
}

#[tokio::test]
async fn an_error_answer_to_the_decision_rolls_back_without_fencing() {
    let mut t = Txn::open(&[true, true], |shard, s| match shard {
        0 => s.rule("COMMIT", Answer::Err(1180, "Got error during COMMIT".into())),
        _ => s,
    })
    .await;
    let (result, _) = t.commit().await;
    assert!(
        matches!(&result, Err(e) if rolled_back(e, "COMMIT failed")),
        "{result:?}"
    );
    assert!(!t.timeline_has("SET STATEMENT"));
    assert_eq!(t.sent(1)[2..], [xa("XA ROLLBACK", 1)]);
}

#[tokio::test]
async fn a_lost_commit_answer_still_commits_and_leaves_the_branch_to_recovery() {
    let mut t = Txn::open(&[true, true, true], |shard, s| match shard {
        1 => s.rule("XA COMMIT", Answer::Lose),
        _ => s,
    })
    .await;
    let (result, m) = t.commit().await;
    assert_eq!(result.ok(), Some(Protocol::TwoPhase));
    assert_eq!(t.sent(1)[2..], [xa("XA COMMIT", 1)]);
    assert_eq!(t.servers[1].prepared(), [xid(1).sql()]);
    assert!(t.branches[1].conn.broken());
    assert_eq!(t.sent(2)[2..], [xa("XA COMMIT", 2)]);
    assert!(t.servers[2].prepared().is_empty());
    assert_eq!(count(&m.xa_left_to_recovery), 1);
    assert_eq!(count(&m.commits_two_phase), 1);
}

#[tokio::test]
async fn a_stalled_decision_holds_the_commit_and_nothing_is_committed() {
    let mut t = Txn::open(&[true, true], |shard, s| match shard {
        0 => s.rule("COMMIT", Answer::Stall),
        _ => s,
    })
    .await;
    let (m, f) = (Metrics::default(), Failpoints::default());
    let e = env(&m, &f);
    let commit = commit::commit(&e, Some(GTRID), &mut t.branches);
    let waited = tokio::time::timeout(Duration::from_millis(50), commit).await;
    assert!(waited.is_err(), "the protocol itself has no deadline");
    assert!(!t.timeline_has("XA COMMIT"));
    assert_eq!(t.servers[1].prepared(), [xid(1).sql()]);
}

#[tokio::test]
async fn rollback_rolls_back_every_branch() {
    let mut t = Txn::open(&[true, true], |_, s| s).await;
    commit::rollback(&mut t.branches).await;
    assert_eq!(t.sent(0), [ROLLBACK]);
    assert_eq!(t.sent(1), [xa("XA END", 1), xa("XA ROLLBACK", 1)]);
    assert!(t.closed_on(0) && t.closed_on(1));
    assert!(t.branches.iter().all(|b| !b.conn.broken() && !b.conn.in_transaction()));
}

/// Fake groups for recovery: group `i` is server `i`, named `g<i>`.
struct FakeGroups {
    servers: Vec<FakeServer>,
    down: BTreeSet<usize>,
}

impl Groups for FakeGroups {
    type Conn = FakeConn;

    fn shard_groups(&self) -> BTreeSet<usize> {
        (0..self.servers.len()).collect()
    }

    fn name(&self, group: usize) -> String {
        format!("g{group}")
    }

    fn index_of(&self, name: &str) -> Option<usize> {
        (0..self.servers.len()).find(|i| self.name(*i) == name)
    }

    fn connect(&self, group: usize) -> impl Future<Output = Result<FakeConn, ProxyError>> + Send {
        let conn = if self.down.contains(&group) {
            Err(ProxyError::BackendUnavailable {
                server: self.name(group),
                reason: "down".into(),
            })
        } else {
            Ok(self.servers[group].connect())
        };
        async move { conn }
    }
}

const DECIDED: &str = "tsr:0000abcd:1@g0";
const UNDECIDED: &str = "tsr:0000abcd:2@g0";

/// One `XA RECOVER` row.
fn recover_row(format_id: u32, gtrid: &str, bqual: &str) -> Vec<Option<String>> {
    vec![
        Some(format_id.to_string()),
        Some(gtrid.len().to_string()),
        Some(bqual.len().to_string()),
        Some(format!("{gtrid}{bqual}")),
    ]
}

fn branch(gtrid: &str) -> Xid {
    Xid {
        gtrid: gtrid.into(),
        bqual: "db1".into(),
    }
}

/// g0 holds the decision log (`commit` for DECIDED); g1 has three prepared branches: DECIDED's,
/// UNDECIDED's and one not made by Tessera.
fn recovery_groups(timeline: &Timeline) -> FakeGroups {
    let log = FakeServer::new("g0", timeline).rule(
        "SELECT gtrid, outcome",
        Answer::Rows(vec![vec![Some(DECIDED.into()), Some("commit".into())]]),
    );
    let rows = vec![
        recover_row(FORMAT_ID, DECIDED, "db1"),
        recover_row(FORMAT_ID, UNDECIDED, "db1"),
        recover_row(1, "foreign-gtrid", "x"),
        recover_row(FORMAT_ID, "not-tessera", "db1"),
    ];
    let shard = FakeServer::new("g1", timeline).rule("XA RECOVER", Answer::Rows(rows));
    FakeGroups {
        servers: vec![log, shard],
        down: BTreeSet::new(),
    }
}

fn recovery_env<'a>(
    groups: &'a FakeGroups,
    metrics: &'a Metrics,
    resolve_after: Duration,
) -> recovery::Env<'a, FakeGroups> {
    recovery::Env {
        groups,
        metrics,
        generation: 1,
        db: DB.into(),
        resolve_after,
        lock_wait_s: 3,
        retention_s: 600,
    }
}

fn xa_sent(server: &FakeServer) -> Vec<String> {
    server
        .log()
        .into_iter()
        .filter(|s| s.starts_with("XA COMMIT") || s.starts_with("XA ROLLBACK"))
        .collect()
}

#[tokio::test]
async fn recovery_commits_the_decided_and_waits_for_the_undecided() {
    let timeline = Timeline::default();
    let groups = recovery_groups(&timeline);
    let m = Metrics::default();
    let mut memory = recovery::Memory::default();
    recovery::scan(&recovery_env(&groups, &m, Duration::from_secs(3600)), &mut memory).await;
    assert_eq!(
        xa_sent(&groups.servers[1]),
        [format!("XA COMMIT {}", branch(DECIDED).sql())]
    );
    assert!(
        !timeline.entries().iter().any(|e| e.contains("SET STATEMENT")),
        "no fence before due"
    );
    let lookup =
        format!("SELECT gtrid, outcome FROM `tessera`.xa_decisions WHERE gtrid IN ('{DECIDED}','{UNDECIDED}')");
    assert_eq!(groups.servers[0].received("SELECT"), [lookup]);
    assert!(!timeline
        .entries()
        .iter()
        .any(|e| e.contains("foreign") || e.contains("not-tessera")));
    assert_eq!(count(&m.xa_recovered_commit), 1);
    assert_eq!(count(&m.xa_in_doubt), 1);
    // Every group was reached: old decisions are forgotten, keeping the one still in doubt.
    for s in &groups.servers {
        let delete = s.received("DELETE");
        assert_eq!(delete.len(), 1);
        assert!(
            delete[0].ends_with(&format!("AND gtrid NOT IN ('{UNDECIDED}')")),
            "{delete:?}"
        );
    }
}

#[tokio::test]
async fn recovery_fences_and_rolls_back_the_undecided_once_due() {
    let timeline = Timeline::default();
    let groups = recovery_groups(&timeline);
    let m = Metrics::default();
    let mut memory = recovery::Memory::default();
    recovery::scan(&recovery_env(&groups, &m, Duration::ZERO), &mut memory).await;
    let fence = format!(
        "SET STATEMENT innodb_lock_wait_timeout = 3 FOR {}",
        record_sql(DB, UNDECIDED, Outcome::Rollback)
    );
    assert_eq!(groups.servers[0].received("SET STATEMENT"), [fence]);
    let sent = xa_sent(&groups.servers[1]);
    assert_eq!(
        sent,
        [
            format!("XA COMMIT {}", branch(DECIDED).sql()),
            format!("XA ROLLBACK {}", branch(UNDECIDED).sql())
        ]
    );
    let fenced = timeline.position("g0: SET STATEMENT");
    assert!(fenced < timeline.position("g1: XA ROLLBACK"), "the fence comes first");
    assert_eq!(count(&m.xa_recovered_rollback), 1);
    assert_eq!(count(&m.xa_in_doubt), 0);
}

#[tokio::test]
async fn recovery_follows_a_commit_the_fence_finds() {
    let timeline = Timeline::default();
    let mut groups = recovery_groups(&timeline);
    groups.servers[0] = FakeServer::new("g0", &timeline)
        .rule_times("SELECT", Answer::Rows(Vec::new()), 1)
        .rule("SET STATEMENT", Answer::Err(1062, "Duplicate entry".into()))
        .rule(
            "SELECT",
            Answer::Rows(vec![vec![Some(UNDECIDED.into()), Some("commit".into())]]),
        );
    let m = Metrics::default();
    let mut memory = recovery::Memory::default();
    recovery::scan(&recovery_env(&groups, &m, Duration::ZERO), &mut memory).await;
    let sent = xa_sent(&groups.servers[1]);
    assert!(
        sent.contains(&format!("XA COMMIT {}", branch(UNDECIDED).sql())),
        "{sent:?}"
    );
    assert!(!sent.iter().any(|s| s.starts_with("XA ROLLBACK")), "{sent:?}");
}

#[tokio::test]
async fn recovery_keeps_decisions_while_a_group_is_unreachable() {
    let timeline = Timeline::default();
    let mut groups = recovery_groups(&timeline);
    groups.servers.push(FakeServer::new("g2", &timeline));
    groups.down.insert(2);
    let m = Metrics::default();
    let mut memory = recovery::Memory::default();
    recovery::scan(&recovery_env(&groups, &m, Duration::from_secs(3600)), &mut memory).await;
    assert_eq!(
        xa_sent(&groups.servers[1]),
        [format!("XA COMMIT {}", branch(DECIDED).sql())]
    );
    assert!(!timeline.entries().iter().any(|e| e.contains("DELETE")));
}
