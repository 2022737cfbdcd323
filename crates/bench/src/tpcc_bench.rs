//! The TPC-C part of a benchmark: prepare once, run direct and through Tessera, `check` through
//! Tessera, and render the section of the report.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use crate::cpu::{summarize, ticks_per_sec, CpuSummary, Sampler};
use crate::error::{BenchError, Result};
use crate::options::{BenchOptions, TpccOptions};
use crate::progress::Progress;
use crate::sysbench::Endpoint;
use crate::tessera::{TesseraProcess, TesseraSettings};
use crate::topology::{deploy, sql, Topology};
use crate::tpcc::{locate, GoTpc, TpccStats, HISTORY_INDEX};

pub const TPCC_DB: &str = "tpcc";

/// One TPC-C run's outcome.
pub struct TpccResult {
    pub target: String,
    pub stats: TpccStats,
    pub cpu: Option<CpuSummary>,
}

/// Steps and planned seconds (prepare counted as one step of ~30 s per warehouse).
pub fn plan(t: &TpccOptions) -> (usize, f64) {
    (4, 30.0 * f64::from(t.warehouses) + 2.0 * f64::from(t.seconds) + 30.0)
}

/// Runs TPC-C; returns the report section (Markdown). A failed `check` is an error.
pub fn run(opts: &BenchOptions, tessera: &TesseraSettings, out_dir: &Path, progress: &mut Progress) -> Result<String> {
    let Some(t) = &opts.tpcc else {
        return Ok(String::new());
    };
    let bin = locate(t.go_tpc.as_deref())?;
    let deployment = deploy(Topology::Single, opts.mysql.as_ref(), &[TPCC_DB])?;
    let go = GoTpc {
        bin: &bin,
        db: TPCC_DB,
        warehouses: t.warehouses,
    };
    let direct = &deployment.direct;
    progress.starting(&format!("tpcc prepare {} warehouses (direct)", t.warehouses));
    go.prepare(direct, t.threads)?;
    sql(direct, &format!("USE `{TPCC_DB}`; {HISTORY_INDEX}"))?;
    progress.finished(30.0 * f64::from(t.warehouses));
    let proxy = TesseraProcess::start(tessera, &deployment.backends, out_dir, "tpcc")?;
    let mut results = Vec::new();
    for (name, endpoint, pid) in [
        ("direct", direct, None),
        ("tessera", &proxy.endpoint, Some(proxy.pid())),
    ] {
        progress.starting(&format!("tpcc run {}s, {} threads -> {name}", t.seconds, t.threads));
        results.push(run_one(&go, name, endpoint, pid, t)?);
        progress.finished(f64::from(t.seconds));
    }
    progress.starting("tpcc check -> tessera");
    let check = go.check(&proxy.endpoint, "tessera");
    progress.finished(30.0);
    let commands = [
        go.shown(direct, t.threads, "prepare --no-check"),
        format!("{HISTORY_INDEX}  (on the primary, database {TPCC_DB})"),
        go.shown(direct, t.threads, &format!("--time {}s run", t.seconds)),
        go.shown(&proxy.endpoint, t.threads, &format!("--time {}s run", t.seconds)),
        go.shown(&proxy.endpoint, 1, "check"),
    ];
    let section = render(t, &results, check.is_ok(), &commands);
    check?;
    Ok(section)
}

fn run_one(go: &GoTpc, name: &str, endpoint: &Endpoint, pid: Option<u32>, t: &TpccOptions) -> Result<TpccResult> {
    let sampler = pid.map(|p| Sampler::start(p, Duration::from_millis(500)));
    let stats = go.run(endpoint, t.threads, t.seconds);
    let samples = sampler.map(Sampler::finish);
    let stats = stats?;
    let txns: u64 = stats.transactions.iter().map(|x| x.count).sum();
    let cpu = samples.and_then(|s| summarize(&s, ticks_per_sec(), txns, 0.0));
    Ok(TpccResult {
        target: name.to_string(),
        stats,
        cpu,
    })
}

/// The TPC-C section: tpmC per system with the ratio, per-transaction latency, check, commands.
pub fn render(t: &TpccOptions, results: &[TpccResult], check_passed: bool, commands: &[String]) -> String {
    let mut out = format!(
        "## TPC-C (go-tpc, {} warehouses, {} threads, {} s, one MariaDB)\n\n\
         | system | tpmC | tpmTotal | failed transactions | ratio to direct | proxy CPU mean % | proxy CPU us/txn |\n\
         |---|---|---|---|---|---|---|\n",
        t.warehouses, t.threads, t.seconds
    );
    let direct = results.iter().find(|r| r.target == "direct").map(|r| r.stats.tpmc);
    for r in results {
        let ratio = match direct {
            Some(d) if d > 0.0 && r.target != "direct" => format!("{:.2}", r.stats.tpmc / d),
            _ => "-".into(),
        };
        let cpu = |f: fn(&CpuSummary) -> f64| r.cpu.map_or("-".into(), |c| format!("{:.1}", f(&c)));
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {} | {ratio} | {} | {} |",
            r.target,
            r.stats.tpmc,
            r.stats.tpm_total,
            r.stats.errors,
            cpu(|c| c.mean_pct),
            cpu(|c| c.us_per_query)
        );
    }
    out.push_str("\nPer transaction (ms):\n\n| transaction |");
    for r in results {
        let _ = write!(out, " {0} count | {0} avg | {0} p99 | {0} max |", r.target);
    }
    out.push_str(&format!("\n|---|{}\n", "---|---|---|---|".repeat(results.len())));
    let names: Vec<String> = results
        .first()
        .map(|r| r.stats.transactions.iter().map(|x| x.name.clone()).collect())
        .unwrap_or_default();
    for name in names {
        let _ = write!(out, "| {name} |");
        for r in results {
            match r.stats.transactions.iter().find(|x| x.name == name) {
                Some(x) => {
                    let _ = write!(
                        out,
                        " {} | {:.1} | {:.1} | {:.1} |",
                        x.count, x.avg_ms, x.p99_ms, x.max_ms
                    );
                }
                None => out.push_str(" - | - | - | - |"),
            }
        }
        out.push('\n');
    }
    let verdict = if check_passed { "passed" } else { "FAILED" };
    let _ = write!(
        out,
        "\n`go-tpc tpcc check` through Tessera after both runs: **{verdict}**.\n\nCommands:\n\n```\n"
    );
    for c in commands {
        let _ = writeln!(out, "{c}");
    }
    out.push_str("```\n");
    out
}

/// Used by `main` to refuse early when TPC-C is asked for but go-tpc is missing.
pub fn preflight(opts: &BenchOptions) -> Result<()> {
    match &opts.tpcc {
        Some(t) => locate(t.go_tpc.as_deref()).map(drop),
        None => Ok(()),
    }
}

/// Makes BenchError usable where the section must still be written on failure.
pub fn failed_section(e: &BenchError) -> String {
    format!("## TPC-C\n\nTPC-C did not complete: {e}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpcc::TxnStats;

    fn result(target: &str, tpmc: f64) -> TpccResult {
        TpccResult {
            target: target.into(),
            stats: TpccStats {
                tpmc,
                tpm_total: tpmc * 2.2,
                transactions: vec![TxnStats {
                    name: "NEW_ORDER".into(),
                    count: 100,
                    tpm: tpmc,
                    avg_ms: 5.0,
                    p99_ms: 12.0,
                    max_ms: 20.0,
                }],
                errors: 0,
            },
            cpu: None,
        }
    }

    #[test]
    fn section_shows_tpmc_ratio_latencies_and_check() {
        let t = TpccOptions::default();
        let text = render(
            &t,
            &[result("direct", 1000.0), result("tessera", 800.0)],
            true,
            &["go-tpc x".into()],
        );
        assert!(
            text.contains("## TPC-C (go-tpc, 2 warehouses, 4 threads, 60 s"),
            "{text}"
        );
        assert!(text.contains("| tessera | 800.0 | 1760.0 | 0 | 0.80 |"), "{text}");
        assert!(
            text.contains("| NEW_ORDER | 100 | 5.0 | 12.0 | 20.0 | 100 | 5.0 | 12.0 | 20.0 |"),
            "{text}"
        );
        assert!(text.contains("**passed**"));
        let failed = render(&t, &[result("direct", 1000.0)], false, &[]);
        assert!(failed.contains("**FAILED**"));
    }
}
