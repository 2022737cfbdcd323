//! Runs statements on the reference and on the side under test, judges each answer (match,
//! mismatch, expected or unexpected refusal, corpus error), checks tables after writes, and
//! prints the summary.

use super::compare::{compare, refusal, render, well_formed_refusal, Mode as CompareMode, REFUSAL_PREFIX};
use super::corpus::Statement;
use super::params::{parameterize, shifted};
use super::setup::{Mode, Topology};
use super::side::{abbreviate, Answer, Side};
use crate::common::stmt::{Param, StmtError};

/// Mismatches printed with both answers (unless DIFFTEST_SHOW says otherwise).
pub const SHOWN_MISMATCHES: usize = 20;
/// The protocol label of a prepared statement's second execution, with other literals.
const BINARY_AGAIN: &str = "binary again";
/// Rows shown per answer.
const SHOWN_ROWS: usize = 8;

/// One failed check, with both answers rendered.
#[derive(Debug, Clone)]
pub struct Failure {
    pub origin: String,
    pub protocol: &'static str,
    pub sql: String,
    pub params: Vec<Param>,
    pub detail: String,
    pub reference: String,
    pub under_test: String,
}

impl Failure {
    fn print(&self, n: usize) {
        println!("#{n} {} [{}] {}", self.origin, self.protocol, self.detail);
        println!("    sql: {}", abbreviate(&self.sql, 600));
        if !self.params.is_empty() {
            println!("    params: {:?}", self.params);
        }
        println!("    reference: {}", self.reference);
        println!("    under test: {}", self.under_test);
    }
}

/// Counts and failures of a run.
#[derive(Debug, Default)]
pub struct Stats {
    pub statements: usize,
    pub text_executions: usize,
    pub binary_executions: usize,
    /// Binary executions that were a prepared statement's second, with other literals.
    pub second_executions: usize,
    pub matched: usize,
    pub mismatches: Vec<Failure>,
    pub expected_refusals: usize,
    pub unexpected_refusals: Vec<Failure>,
    /// Statements marked `refuse:` that were answered, and answered correctly.
    pub refusable_answered: Vec<String>,
    /// Statements whose reference answer contradicts their markers (a corpus or generator bug).
    pub corpus_errors: Vec<Failure>,
    pub table_checks: usize,
    pub table_failures: Vec<Failure>,
    /// Statements per phase, e.g. ("corpus", 310).
    pub phases: Vec<(String, usize)>,
}

impl Stats {
    /// True when nothing failed.
    pub fn passed(&self) -> bool {
        self.mismatches.is_empty()
            && self.unexpected_refusals.is_empty()
            && self.corpus_errors.is_empty()
            && self.table_failures.is_empty()
    }

    /// Prints the summary and the first `shown` mismatches (and the first failures of every
    /// other kind); `list_answered` lists the statements marked `refuse:` that were answered
    /// correctly.
    pub fn print(&self, header: &str, shown: usize, list_answered: bool) {
        println!("\n===== sharding difftest: {header} =====");
        for (phase, n) in &self.phases {
            println!("  {phase}: {n} statements");
        }
        println!("  statements: {}", self.statements);
        println!(
            "  compared: {} ({} text, {} binary, {} of them a prepared statement's second execution); matched: {}",
            self.text_executions + self.binary_executions,
            self.text_executions,
            self.binary_executions,
            self.second_executions,
            self.matched
        );
        println!("  mismatches: {}", self.mismatches.len());
        println!(
            "  refusals: {} expected, {} unexpected",
            self.expected_refusals,
            self.unexpected_refusals.len()
        );
        println!(
            "  marked refuse but answered correctly: {}",
            self.refusable_answered.len()
        );
        println!("  corpus errors: {}", self.corpus_errors.len());
        println!(
            "  table checks after writes: {} ({} failed)",
            self.table_checks,
            self.table_failures.len()
        );
        for origin in self.refusable_answered.iter().filter(|_| list_answered) {
            println!("  answered although marked refuse: {origin}");
        }
        print_failures("MISMATCH", &self.mismatches, shown);
        print_failures("UNEXPECTED REFUSAL", &self.unexpected_refusals, 100);
        print_failures("CORPUS ERROR", &self.corpus_errors, 20);
        print_failures("TABLE CHECK", &self.table_failures, 20);
        println!("===== {} =====", if self.passed() { "PASSED" } else { "FAILED" });
    }
}

fn print_failures(kind: &str, failures: &[Failure], max: usize) {
    if failures.is_empty() {
        return;
    }
    println!(
        "\n--- {kind}: {} (first {} shown) ---",
        failures.len(),
        failures.len().min(max)
    );
    for (n, f) in failures.iter().take(max).enumerate() {
        f.print(n + 1);
    }
}

/// The reference, the side under test, and what happened so far.
pub struct Runner<'a> {
    topo: &'a Topology,
    reference: Side,
    under_test: Side,
    strict: bool,
    /// Print every statement with the reference's answer (DIFFTEST_VERBOSE=1).
    verbose: bool,
    pub stats: Stats,
}

impl<'a> Runner<'a> {
    pub fn new(topo: &'a Topology, strict: bool, verbose: bool) -> Runner<'a> {
        Runner {
            topo,
            reference: topo.reference(),
            under_test: topo.under_test(),
            strict,
            verbose,
            stats: Stats::default(),
        }
    }

    /// Runs a phase's statements in order.
    pub async fn run_all(&mut self, phase: &str, statements: impl IntoIterator<Item = Statement>) {
        let mut n = 0;
        for st in statements {
            self.run(&st).await;
            n += 1;
            if n % 500 == 0 {
                eprintln!(
                    "difftest {phase}: {n} statements, {} mismatches, {} unexpected refusals",
                    self.stats.mismatches.len(),
                    self.stats.unexpected_refusals.len()
                );
            }
        }
        self.stats.phases.push((phase.to_string(), n));
    }

    /// Runs one statement (text, and binary when marked prepared; DML once).
    pub async fn run(&mut self, st: &Statement) {
        self.stats.statements += 1;
        if st.is_dml() {
            self.run_write(st).await;
        } else {
            self.run_read(st).await;
        }
    }

    /// A read runs over the text protocol, and over the binary one when marked prepared: with
    /// integer literals, the prepared statement is executed a second time with each of them
    /// moved by one (a plan kept from the first execution must not answer the second).
    async fn run_read(&mut self, st: &Statement) {
        let a = self.reference.text(&st.sql).await;
        let b = self.under_test.text(&st.sql).await;
        self.judge(st, "text", &st.sql, &[], a, b);
        if !st.marks.prepared {
            return;
        }
        let (sql, params) = parameterize(&st.sql);
        let Some(again) = shifted(&params) else {
            let a = self.reference.binary(&sql, &params).await;
            let b = self.under_test.binary(&sql, &params).await;
            self.judge(st, "binary", &sql, &params, a, b);
            return;
        };
        let (a, a_again) = self.reference.binary_twice(&sql, &params, &again).await;
        let (b, b_again) = self.under_test.binary_twice(&sql, &params, &again).await;
        self.judge(st, "binary", &sql, &params, a, b);
        if let (Some(a), Some(b)) = (a_again, b_again) {
            self.judge(st, BINARY_AGAIN, &sql, &again, a, b);
        }
    }

    /// A write runs once per side (over the binary protocol when marked prepared), first on the
    /// side under test so that a refused write is not applied to the reference; then the
    /// touched tables are compared.
    async fn run_write(&mut self, st: &Statement) {
        let (protocol, sql, params) = if st.marks.prepared {
            let (sql, params) = parameterize(&st.sql);
            ("binary", sql, params)
        } else {
            ("text", st.sql.clone(), Vec::new())
        };
        let b = exec(&mut self.under_test, protocol, &sql, &params).await;
        if let Some(message) = refusal(&Ok(Default::default()), &b) {
            self.count(protocol);
            let failure = Failure {
                origin: st.origin.clone(),
                protocol,
                sql: sql.clone(),
                params: params.clone(),
                detail: format!("refused: {message}"),
                reference: "(not run: a refused write is not applied to the reference)".into(),
                under_test: render(&b, SHOWN_ROWS),
            };
            self.refused(st, failure, well_formed_refusal(&b));
            return;
        }
        let a = exec(&mut self.reference, protocol, &sql, &params).await;
        self.judge(st, protocol, &sql, &params, a, b);
        self.check_tables(st).await;
    }

    async fn check_tables(&mut self, st: &Statement) {
        let touched = st.touched_tables();
        self.stats.table_checks += 1;
        let problems = self.topo.check_after_write(&touched).await;
        if !problems.is_empty() {
            self.stats.table_failures.push(Failure {
                origin: st.origin.clone(),
                protocol: "tables",
                sql: st.sql.clone(),
                params: Vec::new(),
                detail: "table contents differ after the write".into(),
                reference: "(see under test)".into(),
                under_test: problems.join("\n        "),
            });
            for t in &touched {
                self.topo.resync(t).await;
            }
            return;
        }
        if self.topo.mode == Mode::Tessera {
            for table in touched.iter().filter_map(|t| super::schema::table(t)) {
                let read = Statement {
                    sql: table.dump_sql(table.name),
                    marks: super::corpus::Marks {
                        ordered: true,
                        ..Default::default()
                    },
                    origin: format!("{} (contents of {} through Tessera)", st.origin, table.name),
                };
                self.run_read(&read).await;
            }
        }
    }

    fn count(&mut self, protocol: &str) {
        match protocol {
            "binary" => self.stats.binary_executions += 1,
            BINARY_AGAIN => {
                self.stats.binary_executions += 1;
                self.stats.second_executions += 1;
            }
            _ => self.stats.text_executions += 1,
        }
    }

    /// Counts a refusal: expected when the statement is marked `refuse:` and the message is
    /// well formed; every unexpected one also gives the side under test a fresh session.
    fn refused(&mut self, st: &Statement, mut failure: Failure, well_formed: bool) {
        if st.marks.refuse.is_some() && well_formed {
            self.stats.expected_refusals += 1;
            return;
        }
        if !well_formed {
            failure.detail = format!(
                "refusal message must start with {REFUSAL_PREFIX:?} (SQLSTATE 42000); {}",
                failure.detail
            );
        }
        self.stats.unexpected_refusals.push(failure);
        self.under_test.reset();
    }

    /// Classifies one pair of answers.
    fn judge(&mut self, st: &Statement, protocol: &'static str, sql: &str, params: &[Param], a: Answer, b: Answer) {
        self.count(protocol);
        if self.verbose {
            println!(
                "{} [{protocol}] {}\n    reference -> {}\n    {} -> {}",
                st.origin,
                abbreviate(sql, 300),
                render(&a, 3),
                self.under_test.label,
                render(&b, 3)
            );
        }
        let failure = |detail: String| Failure {
            origin: st.origin.clone(),
            protocol,
            sql: sql.to_string(),
            params: params.to_vec(),
            detail,
            reference: render(&a, SHOWN_ROWS),
            under_test: render(&b, SHOWN_ROWS),
        };
        if let Some(message) = refusal(&a, &b) {
            let well_formed = well_formed_refusal(&b);
            self.refused(st, failure(format!("refused: {message}")), well_formed);
            return;
        }
        // The markers describe the statement's own literals, not the second set.
        if let Some(problem) = marker_problem(st, &a).filter(|_| protocol != BINARY_AGAIN) {
            self.stats.corpus_errors.push(failure(problem));
            return;
        }
        let mode = CompareMode {
            ordered: st.marks.ordered,
            ci: st.marks.ci,
            strict: self.strict,
        };
        match compare(&a, &b, mode) {
            Ok(()) => {
                self.stats.matched += 1;
                if st.marks.refuse.is_some() && protocol == "text" {
                    self.stats
                        .refusable_answered
                        .push(format!("{} {}", st.origin, abbreviate(&st.sql, 120)));
                }
            }
            Err(detail) => {
                self.stats.mismatches.push(failure(detail));
                // A wrong answer may leave the session in a state no client asked for: later
                // statements start from a fresh one, so that each failure stands on its own.
                self.under_test.reset();
            }
        }
    }
}

/// Runs `sql` over `protocol` on `side`.
async fn exec(side: &mut Side, protocol: &str, sql: &str, params: &[Param]) -> Answer {
    match protocol {
        "binary" => side.binary(sql, params).await,
        _ => side.text(sql).await,
    }
}

/// When the reference's answer contradicts the statement's markers: an error on a statement
/// not marked `error`, an answer on one marked `error`, or no answer at all.
fn marker_problem(st: &Statement, reference: &Answer) -> Option<String> {
    match (reference, st.marks.error) {
        (Err(StmtError::Io(e)), _) => Some(format!("the reference gave no answer: {e}")),
        (Err(StmtError::Server(e)), false) => Some(format!(
            "the reference answered error {} ({}); mark the statement `error` or fix it",
            e.code, e.message
        )),
        (Ok(_), true) => Some("marked `error` but the reference answered".into()),
        _ => None,
    }
}
