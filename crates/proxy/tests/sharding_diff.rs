//! The differential test for sharding: the curated corpus (tests/difftest/corpus.sql), seeded
//! random SELECTs and the DML section (tests/difftest/dml.sql) run on one MariaDB holding all
//! rows and through Tessera over four shards on two groups; every answer must be the same, or
//! a refusal the corpus marks as by design. See tests/difftest/README.md.
//!
//! `harness_self_check` always runs: it puts a plain union copy of the shards where Tessera
//! would be, which checks the loader, the corpus markers and the comparison.

#[path = "diff/mod.rs"]
mod diff;

use diff::setup::Mode;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn harness_self_check() {
    let stats = diff::run(Mode::SelfCheck).await;
    assert!(
        stats.passed(),
        "the differential test's self-check failed (summary above)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tessera_answers_like_one_mariadb() {
    let self_check = std::env::var("DIFFTEST_SELF").is_ok_and(|v| v == "1");
    let mode = if self_check { Mode::SelfCheck } else { Mode::Tessera };
    let stats = diff::run(mode).await;
    assert!(
        stats.passed(),
        "Tessera's answers differ from one MariaDB's, or it refused unexpectedly (summary above)"
    );
}
