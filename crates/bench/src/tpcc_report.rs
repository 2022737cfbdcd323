//! The TPC-C sections of the report: tpmC per system with ratios and CPU, per-transaction
//! latencies and failures, the XA share and the scale-out ratio of sharded runs, the commands.

use std::fmt::Write as _;

use crate::cpu::CpuSummary;
use crate::metrics::XaShare;
use crate::tpcc::TpccStats;

/// One TPC-C run's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct TpccResult {
    pub target: String,
    pub stats: TpccStats,
    /// The proxy's CPU (runs through Tessera).
    pub cpu: Option<CpuSummary>,
    /// The MariaDB servers' CPU, summed over the servers the run used (100 = one core).
    pub servers_cpu_pct: Option<f64>,
    /// The whole machine's CPU busy % (100 = every core).
    pub machine_busy_pct: Option<f64>,
    /// Commits through Tessera in one and two phases (None: Tessera does not report them).
    pub xa: Option<XaShare>,
}

/// Everything a TPC-C section shows.
pub struct Section<'a> {
    pub title: String,
    /// Bullet lines under the title (layout, cap, ...).
    pub intro: Vec<String>,
    pub results: &'a [TpccResult],
    /// The check's verdict, e.g. "passed" or "FAILED".
    pub check: &'a str,
    /// Paragraphs after the tables (XA share, scale-out ratio).
    pub notes: Vec<String>,
    pub commands: &'a [String],
}

/// The section as Markdown.
pub fn render(s: &Section) -> String {
    let mut out = format!("## {}\n\n", s.title);
    for line in &s.intro {
        let _ = writeln!(out, "- {line}");
    }
    if !s.intro.is_empty() {
        out.push('\n');
    }
    out.push_str(&summary_table(s.results));
    out.push_str(
        "\nPer transaction type (latencies in ms, as go-tpc prints them; failed = go-tpc's `<TYPE>_ERR` count):\n\n",
    );
    out.push_str(&transaction_table(s.results));
    for note in &s.notes {
        let _ = write!(out, "\n{note}\n");
    }
    let _ = write!(
        out,
        "\n`go-tpc tpcc check` through Tessera after the runs: **{}**.\n\nCommands:\n\n```\n",
        s.check
    );
    for c in s.commands {
        let _ = writeln!(out, "{c}");
    }
    out.push_str("```\n");
    out
}

fn summary_table(results: &[TpccResult]) -> String {
    let mut out = String::from(
        "| system | tpmC | tpmTotal | failed transactions | ratio to direct | proxy CPU mean % | proxy CPU us/txn \
         | MariaDB CPU % | machine CPU busy % |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let direct = results.iter().find(|r| r.target == "direct").map(|r| r.stats.tpmc);
    for r in results {
        let ratio = match direct {
            Some(d) if d > 0.0 && r.target != "direct" => format!("{:.2}", r.stats.tpmc / d),
            _ => "-".into(),
        };
        let cpu = |f: fn(&CpuSummary) -> f64| r.cpu.map_or("-".into(), |c| format!("{:.1}", f(&c)));
        let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {} | {ratio} | {} | {} | {} | {} |",
            r.target,
            r.stats.tpmc,
            r.stats.tpm_total,
            r.stats.errors,
            cpu(|c| c.mean_pct),
            cpu(|c| c.us_per_query),
            pct(r.servers_cpu_pct),
            pct(r.machine_busy_pct),
        );
    }
    out
}

fn transaction_table(results: &[TpccResult]) -> String {
    let mut out = String::from(
        "| transaction | system | count | failed | TPM | avg | p50 | p90 | p95 | p99 | max |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let names: Vec<String> = results
        .first()
        .map(|r| r.stats.transactions.iter().map(|x| x.name.clone()).collect())
        .unwrap_or_default();
    for name in names {
        for r in results {
            let failed = r.stats.failed_of(&name);
            match r.stats.transactions.iter().find(|x| x.name == name) {
                Some(x) => {
                    let _ = writeln!(
                        out,
                        "| {name} | {} | {} | {failed} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                        r.target, x.count, x.tpm, x.avg_ms, x.p50_ms, x.p90_ms, x.p95_ms, x.p99_ms, x.max_ms
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "| {name} | {} | 0 | {failed} | - | - | - | - | - | - | - |",
                        r.target
                    );
                }
            }
        }
    }
    out
}

/// TPC-C's mix as go-tpc runs it: new-order 45%, payment 43% (the rest stays on one warehouse).
const NEW_ORDER_SHARE: f64 = 0.45;
const PAYMENT_SHARE: f64 = 0.43;
/// Payments whose customer is at another warehouse (TPC-C 2.5.1.2).
const REMOTE_PAYMENT: f64 = 0.15;
/// Order lines supplied by another warehouse (TPC-C 2.4.1.5); 1% of new-orders roll back.
const REMOTE_LINE: f64 = 0.01;
const ROLLBACK: f64 = 0.01;

/// The chance that "another warehouse" (uniform over the others) is on another shard, with
/// warehouses 1..=W placed by `w % shards`.
pub fn other_shard_chance(warehouses: u32, shards: u32) -> f64 {
    if warehouses < 2 || shards < 2 {
        return 0.0;
    }
    let (w, n) = (u64::from(warehouses), u64::from(shards));
    let same: u64 = (1..=w)
        .map(|a| (1..=w).filter(|&b| b != a && a % n == b % n).count() as u64)
        .sum();
    1.0 - same as f64 / (w * (w - 1)) as f64
}

/// New-orders with at least one remote line: 5..=15 lines, each remote with 1%.
fn remote_new_order() -> f64 {
    (5..=15).map(|n| 1.0 - (1.0 - REMOTE_LINE).powi(n)).sum::<f64>() / 11.0
}

/// The share of committed transactions expected to write on two shards. Only payments with a
/// remote customer do in go-tpc v1.0.12: its new-order reads a remote supply warehouse's stock but
/// updates the home warehouse's row (`newOrderUpdateStock` with `d.wID`), so those commit in one
/// phase (the remote shard only read).
pub fn expected_xa_share(warehouses: u32, shards: u32) -> f64 {
    let p = other_shard_chance(warehouses, shards);
    PAYMENT_SHARE * REMOTE_PAYMENT * p / (1.0 - NEW_ORDER_SHARE * ROLLBACK)
}

/// The XA paragraph of a sharded section.
pub fn xa_note(xa: Option<XaShare>, warehouses: u32, shards: u32) -> String {
    let measured = match xa.and_then(|x| x.fraction().map(|f| (x, f))) {
        Some((x, f)) => format!(
            "**{:.1}%** ({:.0} of {:.0} commits on the sharded schema; Δ two_phase = {:.0}, Δ one_phase = {:.0})",
            100.0 * f,
            x.two_phase,
            x.one_phase + x.two_phase,
            x.two_phase,
            x.one_phase
        ),
        None => "**n/a** (Tessera reported no `tessera_commits_total{protocol=...}` counters on /metrics)".into(),
    };
    format!(
        "Transactions through Tessera that needed XA (two-phase commit): {measured}. \
         Expected from TPC-C's mix: payment with a remote customer ~15% of payments, new-order with a \
         remote supply warehouse ~1% of order lines (~{:.1}% of new-orders), but go-tpc v1.0.12 updates the \
         home warehouse's stock row for a remote line (its remote shard is only read: one phase), so only \
         remote payments write on two shards; with {warehouses} warehouses over {shards} shards (mod) \
         another warehouse is on another shard with probability {:.2}, so about **{:.1}%** of committed \
         transactions.",
        100.0 * remote_new_order(),
        other_shard_chance(warehouses, shards),
        100.0 * expected_xa_share(warehouses, shards)
    )
}

/// The scale-out paragraph: sharded-through-Tessera tpmC over one-server-direct tpmC.
pub fn scaleout_note(results: &[TpccResult], cap: f64, shards: u32, command: &str) -> String {
    let tpmc = |name: &str| results.iter().find(|r| r.target == name).map(|r| r.stats.tpmc);
    let ratio = match (tpmc("direct"), tpmc("tessera")) {
        (Some(d), Some(t)) if d > 0.0 => format!("**{:.2}x**", t / d),
        _ => "n/a".into(),
    };
    let sharded = results.iter().find(|r| r.target == "tessera");
    let mut note = format!(
        "Scale-out (every MariaDB capped at {cap} core by a cgroup v1 CFS quota; Tessera and go-tpc uncapped): \
         {shards} shards through Tessera / one server direct = {ratio} (target >= 3.2x; the published Cetus \
         report: 4 shards 2.8x one server). Command: `{command}`."
    );
    if let Some(r) = sharded {
        let busy = r.machine_busy_pct.unwrap_or(0.0);
        let proxy = r.cpu.map_or(0.0, |c| c.mean_pct);
        let servers = r.servers_cpu_pct.unwrap_or(0.0);
        let ceiling = f64::from(shards) * cap * 100.0;
        let _ = write!(
            note,
            " During the sharded run the shards used {servers:.1}% CPU of their {ceiling:.0}% cap, Tessera \
             {proxy:.1}%, the machine {busy:.1}% of all cores{}.",
            if busy >= 90.0 {
                ": the cores, not the shards, limit the sharded side (Tessera and go-tpc share them)"
            } else if servers < 0.9 * ceiling {
                ": the shards did not use their whole cap, so the client side or waits limit the sharded side"
            } else {
                ""
            }
        );
    }
    note
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpcc::TxnStats;

    pub fn result(target: &str, tpmc: f64, failed: u64) -> TpccResult {
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
                    p50_ms: 4.0,
                    p90_ms: 8.0,
                    p95_ms: 9.0,
                    p99_ms: 12.0,
                    max_ms: 20.0,
                }],
                errors: failed,
                failed: vec![("NEW_ORDER".into(), failed)],
            },
            cpu: None,
            servers_cpu_pct: Some(24.5),
            machine_busy_pct: None,
            xa: None,
        }
    }

    fn section<'a>(results: &'a [TpccResult], check: &'a str, notes: Vec<String>) -> Section<'a> {
        Section {
            title: "TPC-C (go-tpc, 2 warehouses)".into(),
            intro: vec!["one MariaDB".into()],
            results,
            check,
            notes,
            commands: &[],
        }
    }

    #[test]
    fn section_shows_tpmc_ratio_latencies_failures_and_check() {
        let results = [result("direct", 1000.0, 1), result("tessera", 800.0, 2)];
        let text = render(&section(&results, "passed", vec!["XA: n/a".into()]));
        assert!(
            text.starts_with("## TPC-C (go-tpc, 2 warehouses)\n\n- one MariaDB\n"),
            "{text}"
        );
        assert!(
            text.contains("| tessera | 800.0 | 1760.0 | 2 | 0.80 | - | - | 24.5 | - |"),
            "{text}"
        );
        assert!(text.contains("| direct | 1000.0 | 2200.0 | 1 | - |"), "{text}");
        assert!(
            text.contains("| NEW_ORDER | tessera | 100 | 2 | 800.0 | 5.0 | 4.0 | 8.0 | 9.0 | 12.0 | 20.0 |"),
            "{text}"
        );
        assert!(text.contains("\nXA: n/a\n"), "{text}");
        assert!(text.contains("**passed**"));
        assert!(render(&section(&results[..1], "FAILED", vec![])).contains("**FAILED**"));
    }

    #[test]
    fn remote_warehouses_on_other_shards() {
        assert_eq!(other_shard_chance(4, 4), 1.0);
        assert_eq!(other_shard_chance(1, 4), 0.0);
        assert_eq!(other_shard_chance(8, 1), 0.0);
        // 8 over 4: each warehouse shares its shard with one of its 7 others.
        assert!((other_shard_chance(8, 4) - 6.0 / 7.0).abs() < 1e-12);
        let e = expected_xa_share(4, 4);
        assert!(e > 0.06 && e < 0.07, "{e}");
    }

    #[test]
    fn xa_note_reports_the_share_or_na_beside_the_expectation() {
        let na = xa_note(None, 4, 4);
        assert!(na.contains("**n/a**") && na.contains("~15% of payments"), "{na}");
        let share = XaShare {
            one_phase: 900.0,
            two_phase: 100.0,
        };
        let text = xa_note(Some(share), 4, 4);
        assert!(text.contains("**10.0%** (100 of 1000 commits"), "{text}");
        assert!(text.contains("about **6.5%**"), "{text}");
    }

    #[test]
    fn scaleout_note_gives_the_ratio_and_what_limits_it() {
        let mut sharded = result("tessera", 3000.0, 0);
        sharded.machine_busy_pct = Some(97.0);
        let results = [result("direct", 1000.0, 0), sharded];
        let text = scaleout_note(&results, 0.25, 4, "tessera-bench --tpcc-scaleout");
        assert!(text.contains("= **3.00x**"), "{text}");
        assert!(text.contains("capped at 0.25 core"), "{text}");
        assert!(text.contains("the cores, not the shards"), "{text}");
        assert!(text.contains("`tessera-bench --tpcc-scaleout`"), "{text}");
        assert!(scaleout_note(&results[..1], 0.25, 4, "x").contains("n/a"));
    }
}
