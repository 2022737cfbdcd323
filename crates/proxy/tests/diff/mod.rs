//! Support of the sharding differential test (see tests/difftest/README.md): the same
//! statements on one MariaDB holding every row (the reference) and through Tessera over the
//! shards; every answer must be equal, or a refusal the corpus allows.
//!
//! Layout: [`schema`] (tables, shard functions as SQL), [`data`] (seeded rows), [`setup`]
//! (sandbox, loader, table checks, Tessera's configuration), [`side`] (a reconnecting client
//! per side), [`corpus`] (the .sql format), [`params`] (literals to `?`), [`generator`]
//! (random statements), [`compare`] (answers), [`runner`] (judging and the summary).

pub mod compare;
pub mod corpus;
pub mod data;
pub mod generator;
pub mod params;
pub mod rng;
pub mod runner;
pub mod schema;
pub mod setup;
pub mod side;

use runner::{Runner, Stats};
use setup::{Mode, Topology};
use std::path::PathBuf;

/// Default random statements per run (DIFFTEST_N).
pub const DEFAULT_N: usize = 2000;
/// Default seed of the random statements (DIFFTEST_SEED).
pub const DEFAULT_SEED: u64 = 20_240_601;
/// Default share of random statements also run prepared (DIFFTEST_PREPARED_PCT).
pub const DEFAULT_PREPARED_PCT: u32 = 25;

/// What the environment asks of a run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Random statements.
    pub n: usize,
    pub seed: u64,
    pub prepared_pct: u32,
    /// Compare all column metadata, warnings and OK info too.
    pub strict: bool,
    /// Only corpus statements whose origin or text contains this (debugging).
    pub filter: Option<String>,
    /// Print every statement with both answers.
    pub verbose: bool,
    /// Mismatches printed in full.
    pub shown: usize,
}

impl Settings {
    /// DIFFTEST_N, DIFFTEST_SEED (decimal or 0x-hex), DIFFTEST_PREPARED_PCT,
    /// DIFFTEST_STRICT_META=1, DIFFTEST_FILTER, DIFFTEST_VERBOSE=1, DIFFTEST_SHOW.
    pub fn from_env() -> Settings {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let seed = var("DIFFTEST_SEED").map_or(DEFAULT_SEED, |s| parse_seed(&s));
        Settings {
            n: var("DIFFTEST_N").map_or(DEFAULT_N, |v| v.trim().parse().expect("DIFFTEST_N is a number")),
            seed,
            prepared_pct: var("DIFFTEST_PREPARED_PCT").map_or(DEFAULT_PREPARED_PCT, |v| {
                v.trim().parse().expect("DIFFTEST_PREPARED_PCT is a number")
            }),
            strict: var("DIFFTEST_STRICT_META").is_some_and(|v| v == "1"),
            filter: var("DIFFTEST_FILTER"),
            verbose: var("DIFFTEST_VERBOSE").is_some_and(|v| v == "1"),
            shown: var("DIFFTEST_SHOW").map_or(runner::SHOWN_MISMATCHES, |v| {
                v.trim().parse().expect("DIFFTEST_SHOW is a number")
            }),
        }
    }
}

fn parse_seed(s: &str) -> u64 {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).expect("DIFFTEST_SEED is hex after 0x"),
        None => s.parse().expect("DIFFTEST_SEED is a number"),
    }
}

/// tests/difftest/<name> of the repository.
fn corpus_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/difftest")
        .join(name)
}

/// The statements of a corpus file (filtered by DIFFTEST_FILTER).
pub fn load_corpus(name: &str, filter: Option<&str>) -> Vec<corpus::Statement> {
    let path = corpus_path(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let statements = corpus::parse(&text, name).unwrap_or_else(|e| panic!("{e}"));
    match filter {
        Some(f) => statements
            .into_iter()
            .filter(|s| s.origin.contains(f) || s.sql.contains(f))
            .collect(),
        None => statements,
    }
}

/// A whole run in `mode`: load, check the loader, corpus, random statements, DML, final table
/// check; prints the summary and returns the counts.
pub async fn run(mode: Mode) -> Stats {
    let settings = Settings::from_env();
    println!(
        "sharding difftest: mode {mode:?}, DIFFTEST_N={} DIFFTEST_SEED={} DIFFTEST_PREPARED_PCT={} strict={}",
        settings.n, settings.seed, settings.prepared_pct, settings.strict
    );
    let data = data::Dataset::generate(data::DATA_SEED);
    let topo = Topology::start(mode, &data).await;
    let all: Vec<String> = schema::TABLES.iter().map(|t| t.name.to_string()).collect();
    let problems = topo.check_shards(&all).await;
    assert!(problems.is_empty(), "the loader is wrong:\n{}", problems.join("\n"));
    if mode == Mode::SelfCheck {
        let problems = topo.check_copy(&all).await;
        assert!(problems.is_empty(), "the union copy differs:\n{}", problems.join("\n"));
    }
    println!("rows per shard: {}", topo.distribution().await.join(", "));
    let filter = settings.filter.as_deref();
    let mut runner = Runner::new(&topo, settings.strict, settings.verbose);
    runner.run_all("corpus", load_corpus("corpus.sql", filter)).await;
    if filter.is_none() {
        let mut generator = generator::Generator::new(settings.seed, &data, settings.prepared_pct);
        let random: Vec<corpus::Statement> = (0..settings.n).map(|i| generator.statement(i)).collect();
        runner.run_all("random", random).await;
    }
    runner.run_all("dml", load_corpus("dml.sql", filter)).await;
    let problems = topo.check_after_write(&all).await;
    let mut stats = runner.stats;
    for p in problems {
        stats.table_failures.push(runner::Failure {
            origin: "end of run".into(),
            protocol: "tables",
            sql: String::new(),
            params: Vec::new(),
            detail: "final table check".into(),
            reference: String::new(),
            under_test: p,
        });
    }
    let header = format!("{mode:?}, seed {}, {} random statements", settings.seed, settings.n);
    stats.print(&header, settings.shown, mode == Mode::Tessera || settings.verbose);
    stats
}
