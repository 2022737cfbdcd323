//! Session-state safety by construction: every session system variable the running MariaDB
//! has, set in every SET spelling users send, stays with the client that set it.
//!
//! The variables are read from the server (`information_schema.SYSTEM_VARIABLES`, scope
//! SESSION or SESSION ONLY), and for each one a valid value different from what a fresh
//! session has is picked from its type, allowed values and numeric range. For each variable x
//! and each spelling of [`SPELLINGS`], client A runs the SET, then:
//! 1. A reads `@@session.x` (the new value; for `SET STATEMENT ... FOR`, the default again);
//! 2. a fresh client B, connected while A still is, reads it (the default);
//! 3. A reads it again after B's statement (still A's value);
//! 4. a fresh client C, connected after A left, reads it (the default).
//!
//! Everything runs through Tessera over ONE pooled backend connection (every client's
//! statements share it, so whatever Tessera fails to know or undo reaches the next client) and
//! directly against the same MariaDB. The observations directly are the expected ones (and are
//! checked to show the change, so a wrong expectation is caught); through Tessera they must be
//! the same, every difference listed. (Directly is not always "A sees the value": an unscoped
//! `@@tx_isolation` or `@@tx_read_only` is for the next transaction only.) Variables that
//! cannot be in the matrix are in [`SKIPPED`] with their reason, and the reasons that the
//! server can confirm are confirmed (a plain account's SET is refused). Both sides run at
//! once, one variable at a time, each fresh client C becoming the next case's A.

use super::sides::Side;
use crate::common::{Client, Env, Failure};
use std::time::Instant;
use tessera_protocol::response::ErrPacket;

/// Why a session variable is left out of the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Skip {
    /// Setting it needs a privilege an application account does not have (SUPER, BINLOG
    /// ADMIN, BINLOG REPLAY, FILE): confirmed by a plain account's SET failing with 1227.
    Privileged,
    /// No session assignment is possible (read only, or refused by this server's setup):
    /// confirmed by the variable being read only or a plain account's SET failing otherwise.
    Unsettable,
    /// Its meaning makes the check impossible (the reason says why); not confirmed.
    Meaning,
}

/// The variables left out, each with its reason. The test fails when the server disagrees
/// (a listed variable turns out settable, or one not listed cannot be set).
const SKIPPED: &[(&str, Skip, &str)] = &[
    ("binlog_annotate_row_events", Skip::Privileged, "SUPER or BINLOG ADMIN"),
    (
        "binlog_direct_non_transactional_updates",
        Skip::Privileged,
        "SUPER or BINLOG ADMIN",
    ),
    ("binlog_format", Skip::Privileged, "SUPER or BINLOG ADMIN"),
    ("binlog_row_image", Skip::Privileged, "SUPER or BINLOG ADMIN"),
    ("enforce_storage_engine", Skip::Privileged, "SUPER"),
    ("gtid_domain_id", Skip::Privileged, "SUPER or BINLOG REPLAY"),
    ("gtid_seq_no", Skip::Privileged, "SUPER or BINLOG REPLAY"),
    ("innodb_tmpdir", Skip::Privileged, "FILE"),
    ("log_disabled_statements", Skip::Privileged, "SUPER"),
    ("pseudo_thread_id", Skip::Privileged, "SUPER or BINLOG REPLAY"),
    ("server_id", Skip::Privileged, "SUPER or BINLOG REPLAY"),
    ("sql_log_bin", Skip::Privileged, "SUPER or BINLOG ADMIN"),
    ("sql_log_off", Skip::Privileged, "SUPER"),
    ("wsrep_on", Skip::Privileged, "SUPER"),
    (
        "error_count",
        Skip::Unsettable,
        "read only: the last statement's error count",
    ),
    (
        "external_user",
        Skip::Unsettable,
        "read only: set by the authentication plugin",
    ),
    (
        "in_transaction",
        Skip::Unsettable,
        "read only: whether a transaction is open",
    ),
    (
        "last_gtid",
        Skip::Unsettable,
        "read only: the GTID of the last transaction",
    ),
    ("max_allowed_packet", Skip::Unsettable, "its session value is read only"),
    (
        "max_user_connections",
        Skip::Unsettable,
        "its session value is read only",
    ),
    ("net_buffer_length", Skip::Unsettable, "its session value is read only"),
    (
        "proxy_user",
        Skip::Unsettable,
        "read only: set by the authentication plugin",
    ),
    (
        "query_cache_type",
        Skip::Unsettable,
        "the query cache is off globally: a session cannot turn it on (1925)",
    ),
    (
        "warning_count",
        Skip::Unsettable,
        "read only: the last statement's warning count",
    ),
    (
        "wsrep_gtid_seq_no",
        Skip::Unsettable,
        "refused without a Galera cluster (1231 for any value)",
    ),
    (
        "wsrep_trx_fragment_size",
        Skip::Unsettable,
        "refused without a Galera cluster (1231 for any value)",
    ),
    (
        "wsrep_trx_fragment_unit",
        Skip::Unsettable,
        "refused without a Galera cluster (1231 for any value)",
    ),
    (
        "max_relay_log_size",
        Skip::Meaning,
        "the session value is the default replication connection's, shared by every session",
    ),
    (
        "sql_slave_skip_counter",
        Skip::Meaning,
        "the session value is the default replication connection's, shared by every session",
    ),
];

/// How a spelling's statement is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// COM_QUERY.
    Query,
    /// COM_STMT_PREPARE, COM_STMT_EXECUTE, COM_STMT_CLOSE.
    Prepared,
    /// `SET STATEMENT ... FOR`: the value holds for that one statement only.
    Statement,
}

/// Every spelling of a session assignment: `{x}` is the variable, `{v}` the value.
const SPELLINGS: [(&str, Form); 16] = [
    ("SET {x} = {v}", Form::Query),
    ("SET @@{x} = {v}", Form::Query),
    ("SET SESSION {x} = {v}", Form::Query),
    ("SET @@session.{x} = {v}", Form::Query),
    ("SET LOCAL {x} = {v}", Form::Query),
    ("SET @@local.{x} = {v}", Form::Query),
    ("SET @@{x} := {v}", Form::Query),
    ("SET @matrix_a = 1, @@{x} = {v}", Form::Query),
    ("SET {x} = {v}, @matrix_b = 2", Form::Query),
    ("/*!40101 SET @@{x} = {v} */", Form::Query),
    ("/*M!100100 SET @@{x} = {v} */", Form::Query),
    ("SET @matrix_a = 1; SET @@{x} = {v}", Form::Query),
    ("SET @@{x} = {v}", Form::Prepared),
    ("SET SESSION {x} = {v}", Form::Prepared),
    ("SET {x} = {v}", Form::Prepared),
    ("SET STATEMENT {x} = {v} FOR SELECT @@{x}", Form::Statement),
];

/// What the SET's answer and the four reads of one case are called in a failure report.
const OBSERVATIONS: [&str; 5] = [
    "the SET's own answer",
    "A reads it",
    "B (fresh, A connected) reads it",
    "A reads it after B",
    "C (fresh, A gone) reads it",
];

/// One session variable as the server describes it.
#[derive(Debug, Clone)]
struct Variable {
    /// Lower case.
    name: String,
    /// `VARIABLE_TYPE`: BOOLEAN, ENUM, SET, FLAGSET, VARCHAR, INT, BIGINT UNSIGNED, DOUBLE, ...
    kind: String,
    read_only: bool,
    /// `ENUM_VALUE_LIST`, split.
    choices: Vec<String>,
    min: Option<String>,
    max: Option<String>,
    block: Option<String>,
    /// The value a fresh session has.
    fresh: String,
    /// Two fresh sessions have different values (a clock, a connection id, a random seed):
    /// read as whether it equals the value set, not as itself.
    volatile: bool,
}

/// A variable in the matrix, with the value its SETs assign (as SQL).
struct Case {
    var: Variable,
    value: String,
}

impl Case {
    /// The statement a spelling sends.
    fn statement(&self, spelling: &str) -> String {
        spelling.replace("{x}", &self.var.name).replace("{v}", &self.value)
    }

    /// The read of the variable's session value.
    fn probe(&self) -> String {
        if self.var.volatile {
            format!("SELECT @@session.{} = {}", self.var.name, self.value)
        } else {
            format!("SELECT @@session.{}", self.var.name)
        }
    }
}

const VARIABLES_SQL: &str = "SELECT LOWER(VARIABLE_NAME), VARIABLE_TYPE, READ_ONLY, ENUM_VALUE_LIST, \
     NUMERIC_MIN_VALUE, NUMERIC_MAX_VALUE, NUMERIC_BLOCK_SIZE, SESSION_VALUE \
     FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_SCOPE IN ('SESSION', 'SESSION ONLY') \
     ORDER BY VARIABLE_NAME";

/// Every session variable of the server, as two fresh direct sessions see it.
async fn session_variables(direct: Side) -> Vec<Variable> {
    let rows = direct.client().await.query(VARIABLES_SQL).await.expect("variables");
    let again = direct.client().await.query(VARIABLES_SQL).await.expect("variables");
    rows.into_iter()
        .zip(again)
        .map(|(r, r2)| {
            let text = |i: usize| r[i].clone().unwrap_or_default();
            Variable {
                name: text(0),
                kind: text(1),
                read_only: text(2) == "YES",
                choices: r[3]
                    .as_deref()
                    .map(|l| l.split(',').map(String::from).collect())
                    .unwrap_or_default(),
                min: r[4].clone(),
                max: r[5].clone(),
                block: r[6].clone(),
                fresh: text(7),
                volatile: r[7] != r2[7],
            }
        })
        .collect()
}

/// Values to try, in order, for variables whose type does not list them (character sets,
/// collations, locales, engines, free text). The first one the fresh session does not have is
/// used.
fn named_candidates(name: &str) -> &'static [&'static str] {
    match name {
        n if n.starts_with("character_set_") => &["'latin2'", "'latin1'"],
        n if n.starts_with("collation_") => &["'latin2_general_ci'", "'latin1_bin'"],
        "lc_messages" | "lc_time_names" => &["'de_DE'", "'fr_FR'"],
        "default_storage_engine" | "default_tmp_storage_engine" | "storage_engine" => &["'MyISAM'", "'Aria'"],
        "default_master_connection" => &["'matrix'"],
        // A session may set only 0 or the global value.
        "max_delayed_threads" | "max_insert_delayed_threads" => &["0"],
        "innodb_ft_user_stopword_table" => &["'test/matrix_stopwords'"],
        "session_track_system_variables" => &["'autocommit'", "'time_zone'"],
        "system_versioning_asof" => &["'2001-02-03 04:05:06'"],
        "time_zone" => &["'+05:00'", "'-03:00'"],
        // A fixed clock (the fresh value is the current time).
        "timestamp" => &["1000000000"],
        _ => &[],
    }
}

/// The literal `fresh` reads as (quotes off), to compare a candidate with it.
fn unquoted(literal: &str) -> &str {
    literal.trim_matches('\'')
}

/// A valid value different from the fresh session's, as SQL; None when none is known.
fn pick_value(var: &Variable) -> Option<String> {
    let named = named_candidates(&var.name);
    if !named.is_empty() {
        return named
            .iter()
            .find(|c| !unquoted(c).eq_ignore_ascii_case(&var.fresh))
            .map(|c| c.to_string());
    }
    let quoted = |c: &String| format!("'{c}'");
    match var.kind.as_str() {
        "BOOLEAN" => Some(if is_on(&var.fresh) { "0" } else { "1" }.to_string()),
        "ENUM" | "SET" => var
            .choices
            .iter()
            .find(|c| !c.eq_ignore_ascii_case(&var.fresh))
            .map(quoted),
        "FLAGSET" => flipped_flag(var),
        "DOUBLE" => other_double(var),
        k if k.contains("INT") => other_integer(var),
        _ => None,
    }
}

fn is_on(v: &str) -> bool {
    v.eq_ignore_ascii_case("on") || v == "1"
}

/// A FLAGSET's first flag set the other way (`'index_merge=off'`).
fn flipped_flag(var: &Variable) -> Option<String> {
    var.fresh.split(',').find_map(|pair| {
        let (flag, state) = pair.split_once('=')?;
        let other = if state == "on" { "off" } else { "on" };
        Some(format!("'{flag}={other}'"))
    })
}

/// An integer one block step from the fresh value (up where the range allows, else down).
fn other_integer(var: &Variable) -> Option<String> {
    let parse = |v: &Option<String>| v.as_deref().and_then(|s| s.parse::<i128>().ok());
    let fresh: i128 = var.fresh.parse().ok()?;
    let (min, max) = (parse(&var.min)?, parse(&var.max)?);
    let block = parse(&var.block).filter(|b| *b > 0).unwrap_or(1);
    [fresh + block, fresh - block, min, max]
        .into_iter()
        .find(|c| (min..=max).contains(c) && *c != fresh)
        .map(|c| c.to_string())
}

/// A number one away from the fresh value, within the range.
fn other_double(var: &Variable) -> Option<String> {
    let fresh: f64 = var.fresh.parse().ok()?;
    let max: f64 = var.max.as_deref()?.parse().ok()?;
    let value = if fresh + 1.0 <= max { fresh + 1.0 } else { fresh - 1.0 };
    Some(value.to_string())
}

/// An answer as one comparable line: rows joined, an error by its code (messages follow
/// `lc_messages`, which is one of the variables).
fn seen(answer: Result<crate::common::Rows, Failure>) -> String {
    match answer {
        Ok(rows) if rows.is_empty() => "ok".into(),
        Ok(rows) => rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|v| v.as_deref().unwrap_or("NULL"))
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect::<Vec<_>>()
            .join(";"),
        Err(Failure::Server(e)) => format!("error {}", e.code),
        Err(Failure::Io(m)) => format!("connection lost ({m})"),
    }
}

fn seen_err(e: ErrPacket) -> String {
    seen(Err(Failure::Server(e)))
}

/// Runs one spelling's statement in `a`; returns its answer.
async fn run_set(a: &mut Client, sql: &str, form: Form) -> String {
    if form != Form::Prepared {
        return seen(a.try_query(sql).await);
    }
    let id = match a.prepare(sql).await {
        Ok((id, _, _)) => id,
        Err(e) => return seen_err(e),
    };
    let answer = match a.execute(id, &[]).await {
        Ok(rows) => seen(Ok(rows)),
        Err(e) => seen_err(e),
    };
    a.close_stmt(id).await;
    answer
}

/// One (variable, spelling) case on one side: A (a fresh client) sets, A reads, B reads, A
/// reads, A leaves, C reads. Returns the observations and C, a fresh client for the next case.
async fn run_case(side: Side, case: &Case, (spelling, form): (&str, Form), mut a: Client) -> (Vec<String>, Client) {
    let probe = case.probe();
    let set = run_set(&mut a, &case.statement(spelling), form).await;
    let a_reads = seen(a.try_query(&probe).await);
    let mut b = side.client().await;
    let b_reads = seen(b.try_query(&probe).await);
    let a_again = seen(a.try_query(&probe).await);
    drop(a);
    let mut c = side.client().await;
    let c_reads = seen(c.try_query(&probe).await);
    drop(b);
    (vec![set, a_reads, b_reads, a_again, c_reads], c)
}

/// Every spelling for one variable on one side, in turn.
async fn run_variable(side: Side, case: &Case, mut fresh: Client) -> (Vec<Vec<String>>, Client) {
    let mut all = Vec::with_capacity(SPELLINGS.len());
    for spelling in SPELLINGS {
        let (seen, next) = run_case(side, case, spelling, fresh).await;
        all.push(seen);
        fresh = next;
    }
    (all, fresh)
}

/// What a plain account (no privilege beyond the database) gets for `SET SESSION x = v`.
async fn plain_account_set(port: u16, case_sql: &str) -> Result<(), ErrPacket> {
    let mut plain = Client::connect(port, "plain", "plain", Some("test"))
        .await
        .expect("plain login");
    plain.query(case_sql).await.map(|_| ())
}

/// Checks one variable against [`SKIPPED`]: whether it is in the matrix, and the
/// disagreements between the list and the server.
async fn classify(direct_port: u16, var: &Variable, problems: &mut Vec<String>) -> Option<Case> {
    let listed = SKIPPED.iter().find(|(n, _, _)| *n == var.name).map(|(_, s, _)| *s);
    let value = pick_value(var);
    let refusal = match (&value, var.read_only) {
        (Some(v), false) => plain_account_set(direct_port, &format!("SET SESSION {} = {v}", var.name))
            .await
            .err(),
        _ => None,
    };
    let found = match (&value, var.read_only, &refusal) {
        (_, true, _) => Some(Skip::Unsettable),
        (None, false, _) => {
            if listed.is_none() {
                problems.push(format!("{}: no value known for a {} variable", var.name, var.kind));
            }
            return None;
        }
        (Some(_), false, Some(e)) if e.code == 1227 => Some(Skip::Privileged),
        (Some(_), false, Some(_)) => Some(Skip::Unsettable),
        (Some(_), false, None) => None,
    };
    if listed != found && listed != Some(Skip::Meaning) {
        problems.push(format!(
            "{}: SKIPPED says {listed:?}, the server says {found:?} (a plain account's SET: {:?})",
            var.name,
            refusal.map(|e| format!("{} {}", e.code, e.message))
        ));
    }
    match (listed, value) {
        (None, Some(value)) => Some(Case {
            var: var.clone(),
            value,
        }),
        _ => None,
    }
}

/// Directly, `SET x = v` must change what A reads (else the picked value is wrong), and in
/// every spelling B and C must read what a fresh session has and A must read one value
/// throughout. (An unscoped `@@tx_isolation` or `@@tx_read_only` is for the next transaction
/// only, so some spellings read the default in A too: what direct shows is the expectation.)
fn check_direct(case: &Case, direct: &[Vec<String>], problems: &mut Vec<String>) {
    let default = &direct[0][2];
    let mut wrong = Vec::new();
    if direct[0][1] == *default || direct[0][0].starts_with("error") {
        wrong.push(0);
    }
    for (i, seen) in direct.iter().enumerate() {
        let consistent = seen[1] == seen[3] && seen[2] == *default && seen[4] == *default;
        if !consistent || seen[0].starts_with("connection lost") {
            wrong.push(i);
        }
    }
    for i in wrong {
        let (spelling, form) = SPELLINGS[i];
        problems.push(format!(
            "{} = {} / {spelling} ({form:?}): directly {:?}",
            case.var.name, case.value, direct[i]
        ));
    }
}

/// Every observation that differs between Tessera and direct.
fn compare(case: &Case, proxy: &[Vec<String>], direct: &[Vec<String>], mismatches: &mut Vec<String>) {
    for (((spelling, form), got), want) in SPELLINGS.iter().zip(proxy).zip(direct) {
        for ((what, g), w) in OBSERVATIONS.iter().zip(got).zip(want) {
            if g != w {
                mismatches.push(format!(
                    "{} = {} / `{}` ({form:?}) / {what}: through Tessera `{g}`, directly `{w}`",
                    case.var.name,
                    case.value,
                    case.statement(spelling)
                ));
            }
        }
    }
}

/// Tessera over one pooled connection (a session that keeps it makes the others wait only
/// a short while), the objects and account the matrix needs, and both sides.
async fn env_with_one_connection() -> (Env, Side, Side) {
    let env = Env::start("", "max_size = 1\ncheckout_timeout_ms = 3000").await;
    env.backend_sql(
        "CREATE TABLE test.matrix_stopwords (value VARCHAR(30)) ENGINE=InnoDB; \
         CREATE USER plain@'127.0.0.1' IDENTIFIED BY 'plain'; \
         GRANT ALL ON test.* TO plain@'127.0.0.1'",
    );
    let proxy = Side::Proxy(env.port());
    let direct = Side::Direct(env.sandbox.servers()[0].port());
    (env, proxy, direct)
}

fn report(title: &str, lines: &[String]) -> String {
    format!("{} {title}:\n  {}", lines.len(), lines.join("\n  "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_session_variable_in_every_set_spelling_stays_with_its_client() {
    let started = Instant::now();
    let (env, proxy, direct) = env_with_one_connection().await;
    let direct_port = env.sandbox.servers()[0].port();
    let mut expectation_problems = Vec::new();
    let mut cases = Vec::new();
    let variables = session_variables(direct).await;
    for var in &variables {
        if let Some(case) = classify(direct_port, var, &mut expectation_problems).await {
            cases.push(case);
        }
    }
    let mut mismatches = Vec::new();
    let (mut through, mut straight) = (proxy.client().await, direct.client().await);
    for case in &cases {
        let ((got, next_through), (want, next_straight)) =
            tokio::join!(run_variable(proxy, case, through), run_variable(direct, case, straight));
        (through, straight) = (next_through, next_straight);
        check_direct(case, &want, &mut expectation_problems);
        compare(case, &got, &want, &mut mismatches);
    }
    let checks = cases.len() * SPELLINGS.len() * OBSERVATIONS.len();
    eprintln!(
        "state matrix: {} session variables on the server, {} checked, {} skipped; {} spellings; \
         {checks} checks on each side; {} mismatches through Tessera, {} expectation problems; {:.1} s",
        variables.len(),
        cases.len(),
        variables.len() - cases.len(),
        SPELLINGS.len(),
        mismatches.len(),
        expectation_problems.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        expectation_problems.is_empty(),
        "{}",
        report("problems with the expectations (directly)", &expectation_problems)
    );
    assert!(cases.len() > 150, "only {} variables checked", cases.len());
    assert!(mismatches.is_empty(), "{}", report("mismatches", &mismatches));
}
