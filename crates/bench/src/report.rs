//! The Markdown report and the terminal summary, rendered from run records.

use std::fmt::Write as _;

use crate::anchors::{matches_topology, PublishedRatio};
use crate::record::RunRecord;

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

/// qps of `record` over the direct run of the same topology, workload and threads.
pub fn ratio_to_direct(records: &[RunRecord], record: &RunRecord) -> Option<f64> {
    let direct = records.iter().find(|d| {
        !d.proxy && d.topology == record.topology && d.workload == record.workload && d.threads == record.threads
    })?;
    (record.proxy && direct.stats.qps > 0.0).then(|| record.stats.qps / direct.stats.qps)
}

const TABLE_HEAD: &str = "| system | threads | qps | tps | avg ms | max ms | p99 ms | errors | reconnects \
| proxy CPU max % | proxy CPU mean % | proxy CPU us/query | proxy peak RSS MB | ratio to direct |\n\
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";

/// One table row in the published reports' layout, plus our CPU and ratio columns.
fn table_row(records: &[RunRecord], r: &RunRecord) -> String {
    let s = &r.stats;
    let cpu = |f: &dyn Fn(&crate::cpu::CpuSummary) -> String| r.cpu.as_ref().map(f).unwrap_or_else(|| "-".into());
    let ratio = ratio_to_direct(records, r).map_or("-".to_string(), |x| format!("{x:.2}"));
    format!(
        "| {} | {} | {:.0} | {:.1} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} | {} | {} | {} |\n",
        r.target,
        r.threads,
        s.qps,
        s.tps,
        s.avg_ms,
        s.max_ms,
        s.p99_ms,
        s.errors,
        s.reconnects,
        cpu(&|c| format!("{:.0}", c.max_pct)),
        cpu(&|c| format!("{:.0}", c.mean_pct)),
        cpu(&|c| format!("{:.2}", c.us_per_query)),
        cpu(&|c| format!("{:.1}", c.peak_rss_kb as f64 / 1024.0)),
        ratio
    )
}

/// One table per (topology, workload), rows ordered by threads then target.
pub fn sysbench_tables(records: &[RunRecord], published: &[PublishedRatio]) -> String {
    let mut out = String::new();
    let mut current_topology = String::new();
    for (topology, workload) in sections(records) {
        if topology != current_topology {
            let _ = writeln!(out, "## Topology `{topology}`\n");
            current_topology = topology.clone();
        }
        let _ = write!(out, "### {workload}\n\n{TABLE_HEAD}");
        for threads in thread_counts(records) {
            for target in targets(records) {
                let found = records
                    .iter()
                    .filter(|r| r.topology == topology && r.workload == workload)
                    .filter(|r| r.threads == threads && r.target == target);
                for r in found {
                    out.push_str(&table_row(records, r));
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

/// The compact summary: per topology, workload and threads, each proxy's ratio and CPU per query.
pub fn summary_table(records: &[RunRecord]) -> String {
    let mut out = String::from(
        "| topology | workload | threads | system | qps | direct qps | ratio | p99 ms | proxy CPU us/query |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for r in records.iter().filter(|r| r.proxy) {
        let direct = records
            .iter()
            .find(|d| !d.proxy && d.topology == r.topology && d.workload == r.workload && d.threads == r.threads);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.0} | {} | {} | {:.2} | {} |",
            r.topology,
            r.workload,
            r.threads,
            r.target,
            r.stats.qps,
            direct.map_or("-".into(), |d| format!("{:.0}", d.stats.qps)),
            ratio_to_direct(records, r).map_or("-".into(), |x| format!("{x:.2}")),
            r.stats.p99_ms,
            r.cpu.map_or("-".into(), |c| format!("{:.2}", c.us_per_query)),
        );
    }
    out
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
    use crate::record::tests::sample;

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
}
