//! The Markdown report and the terminal summary, rendered from run records.

use std::fmt::Write as _;

use crate::anchors::{matches_topology, PublishedRatio};
use crate::record::RunRecord;
use crate::relay::RELAY_TARGET;

/// Groups in first-seen order: `(topology, workload)` pairs.
pub fn sections(records: &[RunRecord]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for r in records {
        let key = (r.topology.clone(), r.workload.clone());
        if !out.contains(&key) {
            out.push(key);
        }
    }
    out
}

/// Targets in first-seen order (direct first, as the runner measures it first).
pub fn targets(records: &[RunRecord]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in records {
        if !out.contains(&r.target) {
            out.push(r.target.clone());
        }
    }
    out
}

/// Thread counts in ascending order.
pub fn thread_counts(records: &[RunRecord]) -> Vec<u32> {
    let mut t: Vec<u32> = records.iter().map(|r| r.threads).collect();
    t.sort_unstable();
    t.dedup();
    t
}

/// The run of the same topology, workload and threads as `record` that `which` picks.
fn alongside<'a>(
    records: &'a [RunRecord],
    record: &RunRecord,
    which: impl Fn(&RunRecord) -> bool,
) -> Option<&'a RunRecord> {
    records.iter().find(|r| {
        which(r) && r.topology == record.topology && r.workload == record.workload && r.threads == record.threads
    })
}

/// The direct run beside `record`.
fn direct_of<'a>(records: &'a [RunRecord], record: &RunRecord) -> Option<&'a RunRecord> {
    alongside(records, record, |d| !d.proxy)
}

/// The relay's run beside `record` (None for the relay itself).
fn relay_of<'a>(records: &'a [RunRecord], record: &RunRecord) -> Option<&'a RunRecord> {
    (record.target != RELAY_TARGET).then(|| alongside(records, record, is_relay))?
}

fn is_relay(r: &RunRecord) -> bool {
    r.proxy && r.target == RELAY_TARGET
}

/// Whether the relay ran (`--relay`): only then do the reports get relay columns.
pub fn has_relay(records: &[RunRecord]) -> bool {
    records.iter().any(is_relay)
}

/// qps of a proxy's `record` over the direct run of the same topology, workload and threads.
pub fn ratio_to_direct(records: &[RunRecord], record: &RunRecord) -> Option<f64> {
    let direct = direct_of(records, record)?;
    (record.proxy && direct.stats.qps > 0.0).then(|| record.stats.qps / direct.stats.qps)
}

/// qps of a proxy's `record` over the relay's run of the same topology, workload and threads:
/// how close it comes to the floor of any proxy (1.00 = as cheap as a zero-logic relay).
pub fn ratio_to_relay(records: &[RunRecord], record: &RunRecord) -> Option<f64> {
    let relay = relay_of(records, record)?;
    (record.proxy && relay.stats.qps > 0.0).then(|| record.stats.qps / relay.stats.qps)
}

/// A Markdown table row of `cells`.
fn row(cells: &[String]) -> String {
    format!("| {} |\n", cells.join(" | "))
}

/// A Markdown table head of `columns`.
fn head(columns: &[&str]) -> String {
    format!("| {} |\n|{}\n", columns.join(" | "), "---|".repeat(columns.len()))
}

fn two(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.2}"))
}

fn us_per_query(r: Option<&RunRecord>) -> String {
    two(r.and_then(|r| r.cpu).map(|c| c.us_per_query))
}

const TABLE_COLUMNS: [&str; 14] = [
    "system",
    "threads",
    "qps",
    "tps",
    "avg ms",
    "max ms",
    "p99 ms",
    "errors",
    "reconnects",
    "proxy CPU max %",
    "proxy CPU mean %",
    "proxy CPU us/query",
    "proxy peak RSS MB",
    "ratio to direct",
];

/// The per-workload table's head: the published reports' layout, our CPU and ratio columns, and
/// with a relay the ratio to it.
fn table_head(relay: bool) -> String {
    let mut columns = TABLE_COLUMNS.to_vec();
    if relay {
        columns.push("ratio to relay");
    }
    head(&columns)
}

/// One row of the per-workload table (see [`table_head`]).
fn table_row(records: &[RunRecord], r: &RunRecord, relay: bool) -> String {
    let s = &r.stats;
    let cpu = |f: &dyn Fn(&crate::cpu::CpuSummary) -> String| r.cpu.as_ref().map(f).unwrap_or_else(|| "-".into());
    let mut cells = vec![
        r.target.clone(),
        r.threads.to_string(),
        format!("{:.0}", s.qps),
        format!("{:.1}", s.tps),
        format!("{:.2}", s.avg_ms),
        format!("{:.2}", s.max_ms),
        format!("{:.2}", s.p99_ms),
        s.errors.to_string(),
        s.reconnects.to_string(),
        cpu(&|c| format!("{:.0}", c.max_pct)),
        cpu(&|c| format!("{:.0}", c.mean_pct)),
        cpu(&|c| format!("{:.2}", c.us_per_query)),
        cpu(&|c| format!("{:.1}", c.peak_rss_kb as f64 / 1024.0)),
        two(ratio_to_direct(records, r)),
    ];
    if relay {
        cells.push(two(ratio_to_relay(records, r)));
    }
    row(&cells)
}

/// One table per (topology, workload), rows ordered by threads then target.
pub fn sysbench_tables(records: &[RunRecord], published: &[PublishedRatio]) -> String {
    let mut out = String::new();
    let relay = has_relay(records);
    let mut current_topology = String::new();
    for (topology, workload) in sections(records) {
        if topology != current_topology {
            let _ = writeln!(out, "## Topology `{topology}`\n");
            current_topology = topology.clone();
        }
        let _ = write!(out, "### {workload}\n\n{}", table_head(relay));
        for threads in thread_counts(records) {
            for target in targets(records) {
                let found = records
                    .iter()
                    .filter(|r| r.topology == topology && r.workload == workload)
                    .filter(|r| r.threads == threads && r.target == target);
                for r in found {
                    out.push_str(&table_row(records, r, relay));
                }
            }
        }
        out.push_str(&published_table(&topology, &workload, published));
        out.push('\n');
    }
    out
}

/// Published ratios for the same workload, clearly labelled as other hardware.
fn published_table(topology: &str, workload: &str, published: &[PublishedRatio]) -> String {
    let rows: Vec<&PublishedRatio> = published
        .iter()
        .filter(|p| p.workload == workload && matches_topology(&p.system, topology))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nPublished figures for comparison (measured by their authors on other hardware; only the ratio \
         is comparable):\n\n| system | threads | published proxy qps | published direct qps | published ratio |\n\
         |---|---|---|---|---|\n",
    );
    for p in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} | {:.0} | {:.2} |",
            p.system, p.threads, p.proxy_qps, p.direct_qps, p.ratio
        );
    }
    out
}

/// The compact summary: per topology, workload and threads, each proxy's ratio and CPU per query;
/// with a relay, its qps and CPU per query beside each proxy's, and the ratio to it.
pub fn summary_table(records: &[RunRecord]) -> String {
    let relay = has_relay(records);
    let mut columns = vec![
        "topology",
        "workload",
        "threads",
        "system",
        "qps",
        "direct qps",
        "ratio",
    ];
    if relay {
        columns.extend(["relay qps", "ratio to relay"]);
    }
    columns.extend(["p99 ms", "proxy CPU us/query"]);
    if relay {
        columns.push("relay CPU us/query");
    }
    let mut out = head(&columns);
    for r in records.iter().filter(|r| r.proxy) {
        out.push_str(&row(&summary_cells(records, r, relay)));
    }
    out
}

/// The cells of one summary row (see [`summary_table`]).
fn summary_cells(records: &[RunRecord], r: &RunRecord, relay: bool) -> Vec<String> {
    let floor = relay_of(records, r);
    let mut cells = vec![
        r.topology.clone(),
        r.workload.clone(),
        r.threads.to_string(),
        r.target.clone(),
        format!("{:.0}", r.stats.qps),
        direct_of(records, r).map_or("-".into(), |d| format!("{:.0}", d.stats.qps)),
        two(ratio_to_direct(records, r)),
    ];
    if relay {
        cells.push(floor.map_or("-".into(), |f| format!("{:.0}", f.stats.qps)));
        cells.push(two(ratio_to_relay(records, r)));
    }
    cells.push(format!("{:.2}", r.stats.p99_ms));
    cells.push(us_per_query(Some(r)));
    if relay {
        cells.push(us_per_query(floor));
    }
    cells
}

/// The whole report: header, summary, tables, notes, TPC-C section, charts.
pub struct ReportParts<'a> {
    pub header: &'a str,
    pub records: &'a [RunRecord],
    pub published: &'a [PublishedRatio],
    pub notes: &'a str,
    pub tpcc: &'a str,
    pub charts: &'a [String],
}

pub fn render(parts: &ReportParts) -> String {
    let mut out = String::from(parts.header);
    if !parts.records.is_empty() {
        let _ = write!(out, "\n## Summary\n\n{}\n", summary_table(parts.records));
        out.push_str(&sysbench_tables(parts.records, parts.published));
    }
    if !parts.notes.trim().is_empty() {
        let _ = write!(out, "## Notes\n\n{}\n", parts.notes.trim_end());
    }
    if !parts.tpcc.trim().is_empty() {
        let _ = write!(out, "\n{}\n", parts.tpcc.trim_end());
    }
    if !parts.charts.is_empty() {
        out.push_str("\n## Charts\n\n");
        for c in parts.charts {
            let _ = writeln!(out, "![{c}]({c})\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::{record, sample};

    #[test]
    fn ratios_pair_runs_of_the_same_workload_and_threads() {
        let r = sample();
        assert_eq!(ratio_to_direct(&r, &r[1]), Some(0.8));
        assert_eq!(ratio_to_direct(&r, &r[3]), Some(0.5));
        assert_eq!(ratio_to_direct(&r, &r[0]), None);
    }

    #[test]
    fn tables_follow_the_report_layout() {
        let text = sysbench_tables(&sample(), &[]);
        assert!(text.contains("## Topology `single`"));
        assert!(text.contains("### oltp_point_select"));
        assert!(text.contains("### oltp_read_only"));
        assert!(text.contains("| system | threads | qps | tps | avg ms | max ms | p99 ms |"));
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| tessera")).collect();
        assert_eq!(rows.len(), 3);
        assert!(
            rows[0].starts_with(
                "| tessera | 4 | 800 | 80.0 | 1.25 | 9.50 | 2.50 | 0 | 0 | 95 | 80 | 12.50 | 20.0 | 0.80 |"
            ),
            "{}",
            rows[0]
        );
        // Thread order within a workload: 4 before 16; direct before tessera.
        let p4 = text.find("| direct | 4 |").unwrap();
        let t4 = text.find("| tessera | 4 |").unwrap();
        let d16 = text.find("| direct | 16 |").unwrap();
        assert!(p4 < t4 && t4 < d16);
    }

    #[test]
    fn published_figures_appear_only_for_their_workload_and_topology() {
        let published = vec![PublishedRatio {
            system: "gaea-2.3.7".into(),
            workload: "oltp_read_only".into(),
            threads: 4,
            ratio: 0.64,
            proxy_qps: 7806.0,
            direct_qps: 12211.0,
        }];
        let text = sysbench_tables(&sample(), &published);
        let at = text.find("| gaea-2.3.7 | 4 | 7806 | 12211 | 0.64 |").unwrap();
        assert!(at > text.find("### oltp_read_only").unwrap());
        assert!(text.contains("other hardware"));
    }

    #[test]
    fn summary_and_full_report() {
        let records = sample();
        let summary = summary_table(&records);
        assert!(
            summary.contains("| single | oltp_point_select | 16 | tessera | 2000 | 4000 | 0.50 | 2.50 | 15.00 |"),
            "{summary}"
        );
        let charts = vec!["qps.png".to_string()];
        let report = render(&ReportParts {
            header: "# Report\n",
            records: &records,
            published: &[],
            notes: "- topology replica: not available yet\n",
            tpcc: "## TPC-C\n\nnothing\n",
            charts: &charts,
        });
        for needle in [
            "# Report",
            "## Summary",
            "## Notes",
            "not available yet",
            "## TPC-C",
            "![qps.png](qps.png)",
        ] {
            assert!(report.contains(needle), "{needle} missing:\n{report}");
        }
    }

    /// Direct, Tessera and the relay at 16 threads in `single`; direct and Tessera in `replica`
    /// (where the kit leaves the relay out).
    fn with_relay() -> Vec<RunRecord> {
        let mut replica = vec![
            record("direct", "oltp_point_select", 16, 5000.0, None),
            record("tessera", "oltp_point_select", 16, 3000.0, Some(18.0)),
        ];
        for r in &mut replica {
            r.topology = "replica".into();
        }
        let mut records = vec![
            record("direct", "oltp_point_select", 16, 4000.0, None),
            record("tessera", "oltp_point_select", 16, 1600.0, Some(20.0)),
            record("relay", "oltp_point_select", 16, 2000.0, Some(16.0)),
        ];
        records.extend(replica);
        records
    }

    #[test]
    fn ratios_to_the_relay_pair_proxies_with_the_relay_run_beside_them() {
        let r = with_relay();
        assert_eq!(ratio_to_relay(&r, &r[1]), Some(0.8));
        assert_eq!(ratio_to_direct(&r, &r[1]), Some(0.4));
        // The relay against direct, not against itself; direct has neither.
        assert_eq!(ratio_to_direct(&r, &r[2]), Some(0.5));
        assert_eq!(ratio_to_relay(&r, &r[2]), None);
        assert_eq!(ratio_to_relay(&r, &r[0]), None);
        // No relay in that topology, or none at all.
        assert_eq!(ratio_to_relay(&r, &r[4]), None);
        assert!(has_relay(&r) && !has_relay(&sample()));
        assert_eq!(ratio_to_relay(&sample(), &sample()[1]), None);
    }

    #[test]
    fn a_relay_adds_ratio_and_cpu_columns_beside_direct_ones() {
        let records = with_relay();
        let summary = summary_table(&records);
        let expected = "\
| topology | workload | threads | system | qps | direct qps | ratio | relay qps | ratio to relay | p99 ms | proxy CPU us/query | relay CPU us/query |
|---|---|---|---|---|---|---|---|---|---|---|---|
| single | oltp_point_select | 16 | tessera | 1600 | 4000 | 0.40 | 2000 | 0.80 | 2.50 | 20.00 | 16.00 |
| single | oltp_point_select | 16 | relay | 2000 | 4000 | 0.50 | - | - | 2.50 | 16.00 | - |
| replica | oltp_point_select | 16 | tessera | 3000 | 5000 | 0.60 | - | - | 2.50 | 18.00 | - |
";
        assert_eq!(summary, expected, "{summary}");

        let tables = sysbench_tables(&records, &[]);
        let single = &tables[..tables.find("## Topology `replica`").unwrap()];
        let expected = "\
| system | threads | qps | tps | avg ms | max ms | p99 ms | errors | reconnects | proxy CPU max % | proxy CPU mean % | proxy CPU us/query | proxy peak RSS MB | ratio to direct | ratio to relay |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
| direct | 16 | 4000 | 400.0 | 1.25 | 9.50 | 2.50 | 0 | 0 | - | - | - | - | - | - |
| tessera | 16 | 1600 | 160.0 | 1.25 | 9.50 | 2.50 | 0 | 0 | 95 | 80 | 20.00 | 20.0 | 0.40 | 0.80 |
| relay | 16 | 2000 | 200.0 | 1.25 | 9.50 | 2.50 | 0 | 0 | 95 | 80 | 16.00 | 20.0 | 0.50 | - |
";
        assert!(single.contains(expected), "{single}");
        let replica_tessera =
            "| tessera | 16 | 3000 | 300.0 | 1.25 | 9.50 | 2.50 | 0 | 0 | 95 | 80 | 18.00 | 20.0 | 0.60 | - |";
        assert!(tables.contains(replica_tessera), "{tables}");
    }

    #[test]
    fn without_a_relay_the_report_has_no_relay_column() {
        fn parts(records: &[RunRecord]) -> ReportParts<'_> {
            ReportParts {
                header: "# Report\n",
                records,
                published: &[],
                notes: "",
                tpcc: "",
                charts: &[],
            }
        }
        let without = render(&parts(&sample()));
        assert!(!without.contains("relay"), "{without}");
        assert!(without.contains("| ratio to direct |\n|---"), "{without}");
        let with = render(&parts(&with_relay()));
        assert!(with.contains("| ratio to direct | ratio to relay |\n|---"), "{with}");
        assert!(with.contains("| relay qps | ratio to relay |"), "{with}");
    }
}
