//! One measured run ([`RunRecord`]) and the CSV file every run is written to and read back from.

use crate::cpu::CpuSummary;
use crate::error::{BenchError, Result};
use crate::sysbench::SysbenchStats;

/// The columns of `runs.csv`, in order.
pub const CSV_HEADER: &str = "topology,workload,threads,target,proxy,qps,tps,avg_ms,max_ms,p99_ms,errors,reconnects,\
queries,transactions,seconds,cpu_max_pct,cpu_mean_pct,cpu_us_per_query,peak_rss_kb,pinned";

/// One sysbench run against one target.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub topology: String,
    pub workload: String,
    pub threads: u32,
    pub target: String,
    /// True for proxies (Tessera and --target endpoints); false for direct MariaDB.
    pub proxy: bool,
    pub stats: SysbenchStats,
    /// The proxy's CPU and memory; None for direct runs and proxies without a known pid.
    pub cpu: Option<CpuSummary>,
    pub pinned: bool,
}

impl RunRecord {
    /// One CSV line (no newline). Names never hold commas: the option parser refuses them.
    pub fn to_csv(&self) -> String {
        let s = &self.stats;
        let cpu = |f: fn(&CpuSummary) -> String| self.cpu.as_ref().map(f).unwrap_or_default();
        [
            self.topology.clone(),
            self.workload.clone(),
            self.threads.to_string(),
            self.target.clone(),
            self.proxy.to_string(),
            format!("{:.2}", s.qps),
            format!("{:.2}", s.tps),
            format!("{:.2}", s.avg_ms),
            format!("{:.2}", s.max_ms),
            format!("{:.2}", s.p99_ms),
            s.errors.to_string(),
            s.reconnects.to_string(),
            s.queries.to_string(),
            s.transactions.to_string(),
            format!("{:.2}", s.seconds),
            cpu(|c| format!("{:.1}", c.max_pct)),
            cpu(|c| format!("{:.1}", c.mean_pct)),
            cpu(|c| format!("{:.2}", c.us_per_query)),
            cpu(|c| c.peak_rss_kb.to_string()),
            self.pinned.to_string(),
        ]
        .join(",")
    }

    /// Parses a line written by [`RunRecord::to_csv`].
    pub fn from_csv(line: &str) -> Result<RunRecord> {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != CSV_HEADER.split(',').count() {
            return Err(BenchError::parse("runs.csv", format!("{} fields in {line:?}", f.len())));
        }
        let stats = SysbenchStats {
            qps: field(f[5])?,
            tps: field(f[6])?,
            avg_ms: field(f[7])?,
            max_ms: field(f[8])?,
            p99_ms: field(f[9])?,
            errors: field(f[10])?,
            reconnects: field(f[11])?,
            queries: field(f[12])?,
            transactions: field(f[13])?,
            seconds: field(f[14])?,
        };
        let cpu = if f[15].is_empty() {
            None
        } else {
            Some(CpuSummary {
                max_pct: field(f[15])?,
                mean_pct: field(f[16])?,
                us_per_query: field(f[17])?,
                peak_rss_kb: field(f[18])?,
            })
        };
        Ok(RunRecord {
            topology: f[0].to_string(),
            workload: f[1].to_string(),
            threads: field(f[2])?,
            target: f[3].to_string(),
            proxy: field(f[4])?,
            stats,
            cpu,
            pinned: field(f[19])?,
        })
    }
}

fn field<T: std::str::FromStr>(text: &str) -> Result<T> {
    text.parse()
        .map_err(|_| BenchError::parse("runs.csv", format!("bad value {text:?}")))
}

/// The whole CSV text for `records`.
pub fn to_csv(records: &[RunRecord]) -> String {
    let mut text = String::from(CSV_HEADER);
    text.push('\n');
    for r in records {
        text.push_str(&r.to_csv());
        text.push('\n');
    }
    text
}

/// Reads back a CSV written by [`to_csv`].
pub fn from_csv(text: &str) -> Result<Vec<RunRecord>> {
    let mut lines = text.lines();
    if lines.next() != Some(CSV_HEADER) {
        return Err(BenchError::parse("runs.csv", "unexpected header"));
    }
    lines
        .filter(|l| !l.trim().is_empty())
        .map(RunRecord::from_csv)
        .collect()
}

/// One record per topology, workload, thread count and target: of its `--rounds` runs, the
/// one with the median qps (the lower middle one for an even count). First-seen order.
pub fn medians(records: &[RunRecord]) -> Vec<RunRecord> {
    let key = |r: &RunRecord| (r.topology.clone(), r.workload.clone(), r.threads, r.target.clone());
    let mut keys = Vec::new();
    for r in records {
        let k = key(r);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.iter()
        .filter_map(|k| {
            let mut runs: Vec<&RunRecord> = records.iter().filter(|r| key(r) == *k).collect();
            runs.sort_by(|a, b| a.stats.qps.total_cmp(&b.stats.qps));
            runs.get(runs.len().checked_sub(1)? / 2).map(|r| (*r).clone())
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn medians_keep_the_middle_run_of_each_target() {
        let runs = vec![
            record("tessera", "oltp_point_select", 16, 300.0, None),
            record("relay", "oltp_point_select", 16, 250.0, None),
            record("tessera", "oltp_point_select", 16, 100.0, None),
            record("relay", "oltp_point_select", 16, 260.0, None),
            record("tessera", "oltp_point_select", 16, 200.0, None),
            record("tessera", "oltp_point_select", 64, 900.0, None),
        ];
        let shown = medians(&runs);
        let qps: Vec<(&str, u32, f64)> = shown
            .iter()
            .map(|r| (r.target.as_str(), r.threads, r.stats.qps))
            .collect();
        assert_eq!(
            qps,
            vec![("tessera", 16, 200.0), ("relay", 16, 250.0), ("tessera", 64, 900.0)]
        );
    }

    /// A record for tests elsewhere in the crate.
    pub fn record(target: &str, workload: &str, threads: u32, qps: f64, cpu_us: Option<f64>) -> RunRecord {
        RunRecord {
            topology: "single".into(),
            workload: workload.into(),
            threads,
            target: target.into(),
            proxy: target != "direct",
            stats: SysbenchStats {
                transactions: (qps / 10.0) as u64 * 15,
                tps: qps / 10.0,
                queries: qps as u64 * 15,
                qps,
                errors: 0,
                reconnects: 0,
                seconds: 15.0,
                avg_ms: 1.25,
                max_ms: 9.5,
                p99_ms: 2.5,
            },
            cpu: cpu_us.map(|us| CpuSummary {
                max_pct: 95.0,
                mean_pct: 80.5,
                us_per_query: us,
                peak_rss_kb: 20480,
            }),
            pinned: false,
        }
    }

    /// Two workloads, direct and Tessera, 4 and 16 threads (for report and chart tests).
    pub fn sample() -> Vec<RunRecord> {
        vec![
            record("direct", "oltp_point_select", 4, 1000.0, None),
            record("tessera", "oltp_point_select", 4, 800.0, Some(12.5)),
            record("direct", "oltp_point_select", 16, 4000.0, None),
            record("tessera", "oltp_point_select", 16, 2000.0, Some(15.0)),
            record("direct", "oltp_read_only", 4, 900.0, None),
            record("tessera", "oltp_read_only", 4, 450.0, Some(17.0)),
        ]
    }

    #[test]
    fn csv_round_trips() {
        let records = vec![
            record("direct", "oltp_point_select", 4, 1000.0, None),
            record("tessera", "oltp_point_select", 4, 800.0, Some(15.25)),
        ];
        let text = to_csv(&records);
        assert!(text.starts_with("topology,workload,threads"));
        assert_eq!(from_csv(&text).unwrap(), records);
    }

    #[test]
    fn malformed_csv_is_an_error() {
        assert!(from_csv("nope\n").is_err());
        let bad = format!("{CSV_HEADER}\nsingle,oltp_read_only,x\n");
        assert!(from_csv(&bad).is_err());
    }
}
