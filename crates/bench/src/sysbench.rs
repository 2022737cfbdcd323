//! sysbench: the workloads, the command lines we run, and parsing of its final report.

use std::process::Command;

use crate::error::{BenchError, Result};

/// The sysbench OLTP workloads the kit knows (the standard middleware report set).
pub const WORKLOADS: &[&str] = &[
    "oltp_point_select",
    "oltp_read_only",
    "oltp_read_write",
    "oltp_write_only",
    "oltp_insert",
    "oltp_update_index",
    "oltp_update_non_index",
];

/// Accepts `point_select` as well as `oltp_point_select`; rejects unknown names.
pub fn canonical_workload(name: &str) -> Result<&'static str> {
    let full = if name.starts_with("oltp_") {
        name.to_string()
    } else {
        format!("oltp_{name}")
    };
    WORKLOADS
        .iter()
        .find(|w| **w == full)
        .copied()
        .ok_or_else(|| BenchError::Usage(format!("unknown workload {name:?}; known: {}", WORKLOADS.join(", "))))
}

/// Where and as whom sysbench connects.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
}

/// The data set: `tables` tables of `table_size` rows in database `db`.
#[derive(Debug, Clone, PartialEq)]
pub struct DataSet {
    pub db: String,
    pub tables: u32,
    pub table_size: u64,
    /// sysbench's `--auto_inc` (its default, on): ids from AUTO_INCREMENT. Off, sysbench writes
    /// the ids into its INSERTs, which a sharding proxy needs to place the rows.
    pub auto_inc: bool,
}

/// One `sysbench <workload> ... run`.
#[derive(Debug, Clone)]
pub struct RunSpec<'a> {
    pub workload: &'a str,
    pub threads: u32,
    pub seconds: u32,
    pub endpoint: &'a Endpoint,
    pub data: &'a DataSet,
}

/// The connection and data arguments every sysbench call shares. The password is last so
/// that [`redact`] can drop it from what we print.
pub fn common_args(endpoint: &Endpoint, data: &DataSet) -> Vec<String> {
    let mut args = vec![
        format!("--mysql-host={}", endpoint.host),
        format!("--mysql-port={}", endpoint.port),
        format!("--mysql-user={}", endpoint.user),
        format!("--mysql-db={}", data.db),
        format!("--tables={}", data.tables),
        format!("--table-size={}", data.table_size),
    ];
    if !data.auto_inc {
        args.push("--auto_inc=off".to_string());
    }
    args.push(format!("--mysql-password={}", endpoint.password));
    args
}

/// The arguments of a measured run (sysbench defaults otherwise: server-side prepared statements).
pub fn run_args(spec: &RunSpec) -> Vec<String> {
    let mut args = vec![spec.workload.to_string()];
    args.extend(common_args(spec.endpoint, spec.data));
    args.extend([
        format!("--threads={}", spec.threads),
        format!("--time={}", spec.seconds),
        "--events=0".to_string(),
        "--percentile=99".to_string(),
        "--db-ps-mode=auto".to_string(),
        "run".to_string(),
    ]);
    args
}

/// A command line for the report: `sysbench` plus `args`, password shown as `***`.
pub fn redact(args: &[String]) -> String {
    let shown: Vec<String> = args
        .iter()
        .map(|a| match a.strip_prefix("--mysql-password=") {
            Some(_) => "--mysql-password=***".to_string(),
            None => a.clone(),
        })
        .collect();
    format!("sysbench {}", shown.join(" "))
}

/// The figures of sysbench's final report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SysbenchStats {
    pub transactions: u64,
    pub tps: f64,
    pub queries: u64,
    pub qps: f64,
    pub errors: u64,
    pub reconnects: u64,
    pub seconds: f64,
    pub avg_ms: f64,
    pub max_ms: f64,
    pub p99_ms: f64,
}

/// Parses sysbench 1.0's final report. Fails when a figure we rely on is missing (a run that
/// died with FATAL prints none of them).
pub fn parse_output(text: &str) -> Result<SysbenchStats> {
    let mut stats = SysbenchStats::default();
    let mut seen = 0u32;
    for line in text.lines().map(str::trim) {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "transactions" => (stats.transactions, stats.tps) = (first_int(value)?, per_sec(value)?),
            "queries" => (stats.queries, stats.qps) = (first_int(value)?, per_sec(value)?),
            "ignored errors" => stats.errors = first_int(value)?,
            "reconnects" => stats.reconnects = first_int(value)?,
            "total time" => stats.seconds = number(value.trim_end_matches('s'))?,
            "avg" => stats.avg_ms = number(value)?,
            "max" => stats.max_ms = number(value)?,
            k if k.ends_with("th percentile") => stats.p99_ms = number(value)?,
            _ => continue,
        }
        seen += 1;
    }
    if seen < 8 {
        let fatal = text.lines().find(|l| l.contains("FATAL")).unwrap_or("no final report");
        return Err(BenchError::parse("sysbench", fatal.trim().to_string()));
    }
    Ok(stats)
}

fn number(s: &str) -> Result<f64> {
    s.trim()
        .parse()
        .map_err(|_| BenchError::parse("sysbench", format!("not a number: {s:?}")))
}

fn first_int(value: &str) -> Result<u64> {
    let first = value.split_whitespace().next().unwrap_or("");
    first
        .parse()
        .map_err(|_| BenchError::parse("sysbench", format!("not a count: {value:?}")))
}

/// `"10000  (996.58 per sec.)"` -> 996.58
fn per_sec(value: &str) -> Result<f64> {
    let inner = value
        .split_once('(')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .ok_or_else(|| BenchError::parse("sysbench", format!("no rate in {value:?}")))?;
    number(inner)
}

/// `sysbench --version`, or a clear error with the install step.
pub fn version() -> Result<String> {
    let out = Command::new("sysbench")
        .arg("--version")
        .output()
        .map_err(|_| missing())?;
    if !out.status.success() {
        return Err(missing());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn missing() -> BenchError {
    BenchError::MissingTool {
        tool: "sysbench",
        fix: "run `bash scripts/install-deps.sh` (installs Debian's sysbench 1.0.20) or `apt-get install sysbench`"
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

SQL statistics:
    queries performed:
        read:                            140000
        write:                           0
        other:                           20000
        total:                           160000
    transactions:                        10000  (996.58 per sec.)
    queries:                             160000 (15945.25 per sec.)
    ignored errors:                      3      (0.30 per sec.)
    reconnects:                          0      (0.00 per sec.)

General statistics:
    total time:                          10.0324s
    total number of events:              10000

Latency (ms):
         min:                                    2.95
         avg:                                    4.01
         max:                                   14.83
         99th percentile:                        5.67
         sum:                                40085.45

Threads fairness:
    events (avg/stddev):           2500.0000/12.33
    execution time (avg/stddev):   10.0213/0.01
";

    #[test]
    fn parses_the_final_report() {
        let s = parse_output(REPORT).unwrap();
        assert_eq!(s.transactions, 10000);
        assert_eq!(s.tps, 996.58);
        assert_eq!(s.queries, 160000);
        assert_eq!(s.qps, 15945.25);
        assert_eq!(s.errors, 3);
        assert_eq!(s.reconnects, 0);
        assert_eq!(s.seconds, 10.0324);
        assert_eq!(s.avg_ms, 4.01);
        assert_eq!(s.max_ms, 14.83);
        assert_eq!(s.p99_ms, 5.67);
    }

    #[test]
    fn a_fatal_run_is_an_error_naming_the_cause() {
        let text = "FATAL: unable to connect to MySQL server on host '127.0.0.1', port 1, aborting...\n";
        let err = parse_output(text).unwrap_err().to_string();
        assert!(err.contains("unable to connect"), "{err}");
    }

    #[test]
    fn garbage_numbers_are_errors_not_zeros() {
        let text = REPORT.replace("15945.25", "lots");
        assert!(parse_output(&text).is_err());
    }

    #[test]
    fn workload_names_accept_the_short_form() {
        assert_eq!(canonical_workload("point_select").unwrap(), "oltp_point_select");
        assert_eq!(canonical_workload("oltp_read_only").unwrap(), "oltp_read_only");
        assert!(canonical_workload("select_star").is_err());
    }

    #[test]
    fn run_args_keep_prepared_statements_on_and_redact_the_password() {
        let ep = Endpoint {
            host: "127.0.0.1".into(),
            port: 6033,
            user: "app".into(),
            password: "secret".into(),
        };
        let data = DataSet {
            db: "sbtest".into(),
            tables: 4,
            table_size: 10000,
            auto_inc: true,
        };
        let spec = RunSpec {
            workload: "oltp_read_only",
            threads: 16,
            seconds: 30,
            endpoint: &ep,
            data: &data,
        };
        let args = run_args(&spec);
        assert!(args.contains(&"--db-ps-mode=auto".to_string()));
        assert!(args.contains(&"--percentile=99".to_string()));
        let shown = redact(&args);
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.starts_with("sysbench oltp_read_only --mysql-host=127.0.0.1 --mysql-port=6033"));
        assert!(!shown.contains("auto_inc"), "sysbench's default unless asked: {shown}");
        let sharded = DataSet {
            auto_inc: false,
            ..data.clone()
        };
        let args = common_args(&ep, &sharded);
        assert!(args.contains(&"--auto_inc=off".to_string()), "{args:?}");
        assert!(args.last().is_some_and(|a| a.starts_with("--mysql-password=")));
    }
}
