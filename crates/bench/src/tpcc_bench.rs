//! The TPC-C part of a benchmark: one MariaDB (direct and through Tessera) and, with the sharded
//! topology, shards behind Tessera ([`crate::tpcc_sharded`]); `check` through Tessera; sections.

use std::path::Path;
use std::time::Duration;

use crate::cpu::{machine_busy_pct, machine_ticks, summarize, ticks_per_sec, Sampler};
use crate::error::{BenchError, Result};
use crate::metrics::{scrape_commits, xa_share};
use crate::options::{BenchOptions, TpccOptions};
use crate::progress::Progress;
use crate::sysbench::Endpoint;
use crate::tessera::{TesseraProcess, TesseraSettings};
use crate::topology::{deploy, sql, Topology};
use crate::tpcc::{locate, GoTpc, HISTORY_INDEX};
use crate::tpcc_report::{render, Section, TpccResult};
use crate::tpcc_sharded;

pub const TPCC_DB: &str = "tpcc";
const SAMPLE_EVERY: Duration = Duration::from_millis(500);

/// The TPC-C sections (Markdown) and what failed.
#[derive(Debug, Default)]
pub struct TpccOutcome {
    pub section: String,
    pub failures: Vec<String>,
}

/// Whether TPC-C runs against one MariaDB (any non-sharded topology, or none given).
fn wants_single(opts: &BenchOptions) -> bool {
    opts.topologies.is_empty() || opts.topologies.iter().any(|t| !t.is_sharded())
}

/// Whether TPC-C runs over shards (`--topology sharded`).
fn wants_sharded(opts: &BenchOptions) -> bool {
    opts.topologies.iter().any(|t| t.is_sharded())
}

/// Steps and planned seconds (a prepare counted as one step of ~30 s per warehouse).
pub fn plan(opts: &BenchOptions) -> (usize, f64) {
    let Some(t) = &opts.tpcc else {
        return (0, 0.0);
    };
    let (w, secs) = (f64::from(t.warehouses), f64::from(t.seconds));
    let mut plan = (0, 0.0);
    if wants_single(opts) {
        plan = (4, 30.0 * w + 2.0 * secs + 30.0);
    }
    if wants_sharded(opts) {
        plan = (plan.0 + 5, plan.1 + 60.0 * w + 2.0 * secs + 30.0);
    }
    plan
}

/// Runs every TPC-C layout the options ask for; a failed layout leaves a failed section.
pub fn run(opts: &BenchOptions, tessera: &TesseraSettings, out_dir: &Path, progress: &mut Progress) -> TpccOutcome {
    let mut outcome = TpccOutcome::default();
    let Some(t) = &opts.tpcc else {
        return outcome;
    };
    let mut record = |title: &str, result: Result<String>| match result {
        Ok(section) => outcome.section.push_str(&section),
        Err(e) => {
            outcome.failures.push(format!("{title}: {e}"));
            outcome.section.push_str(&failed_section(title, &e));
        }
    };
    if wants_single(opts) {
        record("TPC-C", run_single(opts, t, tessera, out_dir, progress));
    }
    if wants_sharded(opts) {
        record("TPC-C sharded", tpcc_sharded::run(opts, t, tessera, out_dir, progress));
    }
    outcome
}

/// One MariaDB: prepare directly, run direct and through Tessera, `check` through Tessera.
fn run_single(
    opts: &BenchOptions,
    t: &TpccOptions,
    tessera: &TesseraSettings,
    out_dir: &Path,
    progress: &mut Progress,
) -> Result<String> {
    let bin = locate(t.go_tpc.as_deref())?;
    let mut deployment = deploy(Topology::Single, opts.mysql.as_ref(), &[TPCC_DB])?;
    let go = GoTpc {
        bin: &bin,
        db: TPCC_DB,
        warehouses: t.warehouses,
    };
    let direct = deployment.direct.clone();
    progress.starting(&format!("tpcc prepare {} warehouses (direct)", t.warehouses));
    go.prepare(&direct, t.threads)?;
    sql(&direct, &format!("USE `{TPCC_DB}`; {HISTORY_INDEX}"))?;
    progress.finished(30.0 * f64::from(t.warehouses));
    let mut intro = vec!["one MariaDB; direct and through Tessera alike".to_string()];
    if let Some(cap) = opts.cpu_cap {
        intro.extend(deployment.cap_cpu(cap)?);
    }
    let servers = deployment.server_pids.clone();
    let proxy = TesseraProcess::start(tessera, &deployment.backends, out_dir, "tpcc")?;
    let mut results = Vec::new();
    for (name, endpoint, proxy_pid) in [
        ("direct", &direct, None),
        ("tessera", &proxy.endpoint, Some(proxy.pid())),
    ] {
        progress.starting(&format!("tpcc run {}s, {} threads -> {name}", t.seconds, t.threads));
        let probe = Probe {
            proxy_pid,
            server_pids: &servers,
            admin: None,
        };
        results.push(run_one(&go, name, endpoint, &probe, t)?);
        progress.finished(f64::from(t.seconds));
    }
    deployment.uncap_cpu();
    progress.starting("tpcc check -> tessera");
    let check = go.check(&proxy.endpoint, "tessera");
    progress.finished(30.0);
    let commands = [
        go.shown(&direct, t.threads, "prepare --no-check"),
        format!("{HISTORY_INDEX}  (on the primary, database {TPCC_DB})"),
        go.shown(&direct, t.threads, &format!("--time {}s run", t.seconds)),
        go.shown(&proxy.endpoint, t.threads, &format!("--time {}s run", t.seconds)),
        go.shown(&proxy.endpoint, 1, "check"),
    ];
    let section = render(&Section {
        title: title(t, "one MariaDB"),
        intro,
        results: &results,
        check: if check.is_ok() { "passed" } else { "FAILED" },
        notes: Vec::new(),
        commands: &commands,
    });
    check?;
    Ok(section)
}

/// `TPC-C (go-tpc, W warehouses, T threads, S s, <layout>)`.
pub fn title(t: &TpccOptions, layout: &str) -> String {
    format!(
        "TPC-C (go-tpc, {} warehouses, {} threads, {} s, {layout})",
        t.warehouses, t.threads, t.seconds
    )
}

/// The kit's command line as the report shows it.
pub fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("tessera-bench {}", args.join(" "))
}

/// What a measured run samples besides go-tpc's own figures.
pub struct Probe<'a> {
    /// Tessera's pid (its CPU), for runs through it.
    pub proxy_pid: Option<u32>,
    /// The MariaDB servers the run uses (their CPU, summed).
    pub server_pids: &'a [u32],
    /// Tessera's admin address, to scrape its commit counters before and after.
    pub admin: Option<&'a str>,
}

/// One measured `go-tpc run` with the proxy's, the servers' and the machine's CPU.
pub fn run_one(go: &GoTpc, name: &str, endpoint: &Endpoint, probe: &Probe, t: &TpccOptions) -> Result<TpccResult> {
    let commits_before = probe.admin.and_then(scrape_commits);
    let machine_before = machine_ticks();
    let proxy = probe.proxy_pid.map(|p| Sampler::start(p, SAMPLE_EVERY));
    let servers: Vec<Sampler> = probe
        .server_pids
        .iter()
        .map(|&p| Sampler::start(p, SAMPLE_EVERY))
        .collect();
    let stats = go.run(endpoint, t.threads, t.seconds);
    let proxy = proxy.map(Sampler::finish);
    let servers: Vec<_> = servers.into_iter().map(Sampler::finish).collect();
    let machine_after = machine_ticks();
    let commits_after = probe.admin.and_then(scrape_commits);
    let stats = stats?;
    let txns: u64 = stats.transactions.iter().map(|x| x.count).sum();
    let hz = ticks_per_sec();
    let servers_cpu_pct = servers
        .iter()
        .map(|s| summarize(s, hz, txns, 0.0).map(|c| c.mean_pct))
        .sum::<Option<f64>>();
    Ok(TpccResult {
        target: name.to_string(),
        cpu: proxy.and_then(|s| summarize(&s, hz, txns, 0.0)),
        servers_cpu_pct: servers_cpu_pct.filter(|_| !servers.is_empty()),
        machine_busy_pct: machine_before
            .zip(machine_after)
            .and_then(|(b, a)| machine_busy_pct(b, a)),
        xa: xa_share(commits_before, commits_after),
        stats,
    })
}

/// Used by `main` to refuse early when TPC-C is asked for but go-tpc is missing.
pub fn preflight(opts: &BenchOptions) -> Result<()> {
    match &opts.tpcc {
        Some(t) => locate(t.go_tpc.as_deref()).map(drop),
        None => Ok(()),
    }
}

/// The section written in place of a layout that did not complete.
pub fn failed_section(title: &str, e: &BenchError) -> String {
    format!("## {title}\n\n{title} did not complete: {e}\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn layouts_follow_the_topologies() {
        let single = crate::options::parse(&args("--tpcc-only")).unwrap();
        assert!(wants_single(&single) && !wants_sharded(&single));
        assert_eq!(plan(&single).0, 4);
        let sharded = crate::options::parse(&args("--tpcc-only --topology sharded")).unwrap();
        assert!(!wants_single(&sharded) && wants_sharded(&sharded));
        assert_eq!(plan(&sharded).0, 5);
        let both = crate::options::parse(&args("--tpcc --topology single,sharded")).unwrap();
        assert!(wants_single(&both) && wants_sharded(&both));
        assert_eq!(plan(&both).0, 9);
        assert_eq!(plan(&crate::options::parse(&[]).unwrap()), (0, 0.0));
    }

    #[test]
    fn titles_and_failed_sections_name_the_layout() {
        let t = TpccOptions::default();
        assert_eq!(
            title(&t, "one MariaDB"),
            "TPC-C (go-tpc, 2 warehouses, 4 threads, 60 s, one MariaDB)"
        );
        let e = BenchError::Tessera("refused".into());
        let text = failed_section("TPC-C sharded", &e);
        assert!(
            text.starts_with("## TPC-C sharded\n\nTPC-C sharded did not complete: Tessera: refused"),
            "{text}"
        );
    }
}
