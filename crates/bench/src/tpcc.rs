//! TPC-C with go-tpc: locating the binary, prepare, run, `check`, and parsing its summary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::error::{BenchError, Result};
use crate::sysbench::Endpoint;

/// The go-tpc module version the kit builds (scripts/install-go-tpc.sh).
pub const GO_TPC_VERSION: &str = "v1.0.12";
const INSTALLED: &str = ".tools/bin/go-tpc";

/// One transaction type's line of go-tpc's `[Summary]`.
#[derive(Debug, Clone, PartialEq)]
pub struct TxnStats {
    pub name: String,
    pub count: u64,
    pub tpm: f64,
    pub avg_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// A TPC-C run's result.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TpccStats {
    pub tpmc: f64,
    pub tpm_total: f64,
    pub transactions: Vec<TxnStats>,
    /// Sum of the `*_ERR` summary counts (transactions that failed).
    pub errors: u64,
    /// Failed transactions per type (`NEW_ORDER_ERR` counted under `NEW_ORDER`), in go-tpc's order.
    pub failed: Vec<(String, u64)>,
}

impl TpccStats {
    /// Failed transactions of type `name` (0 when go-tpc printed no `<name>_ERR` line).
    pub fn failed_of(&self, name: &str) -> u64 {
        self.failed.iter().find(|(n, _)| n == name).map_or(0, |(_, c)| *c)
    }
}

/// Parses go-tpc's final `[Summary]` lines and its `tpmC:` line.
pub fn parse_run_output(text: &str) -> Result<TpccStats> {
    let mut stats = TpccStats::default();
    let mut saw_tpmc = false;
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("[Summary] ") {
            let txn = parse_summary_line(rest)?;
            if let Some(name) = txn.name.strip_suffix("_ERR") {
                stats.errors += txn.count;
                stats.failed.push((name.to_string(), txn.count));
            } else {
                stats.transactions.push(txn);
            }
        } else if let Some(rest) = line.strip_prefix("tpmC:") {
            let fields = key_values(&format!("tpmC:{rest}"));
            stats.tpmc = value(&fields, "tpmC")?;
            stats.tpm_total = value(&fields, "tpmTotal")?;
            saw_tpmc = true;
        }
    }
    if !saw_tpmc || stats.transactions.is_empty() {
        return Err(BenchError::parse(
            "go-tpc",
            "no [Summary] / tpmC lines (did the run fail?)",
        ));
    }
    Ok(stats)
}

/// `NEW_ORDER - Takes(s): 20.0, Count: 9010, TPM: 27039.7, ..., Avg(ms): 5.0, ..., 99th(ms): 12.1, ..., Max(ms): 21.0`
fn parse_summary_line(rest: &str) -> Result<TxnStats> {
    let (name, figures) = rest
        .split_once(" - ")
        .ok_or_else(|| BenchError::parse("go-tpc", format!("summary line {rest:?}")))?;
    let fields = key_values(figures);
    Ok(TxnStats {
        name: name.trim().to_string(),
        count: value::<f64>(&fields, "Count")? as u64,
        tpm: value(&fields, "TPM")?,
        avg_ms: value(&fields, "Avg(ms)")?,
        p50_ms: value(&fields, "50th(ms)")?,
        p90_ms: value(&fields, "90th(ms)")?,
        p95_ms: value(&fields, "95th(ms)")?,
        p99_ms: value(&fields, "99th(ms)")?,
        max_ms: value(&fields, "Max(ms)")?,
    })
}

fn key_values(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|kv| kv.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().trim_end_matches('%').to_string()))
        .collect()
}

fn value<T: std::str::FromStr>(fields: &[(String, String)], key: &str) -> Result<T> {
    let (_, v) = fields
        .iter()
        .find(|(k, _)| k == key)
        .ok_or_else(|| BenchError::parse("go-tpc", format!("no {key} in summary")))?;
    v.parse()
        .map_err(|_| BenchError::parse("go-tpc", format!("{key} = {v:?} is not a number")))
}

/// The go-tpc binary: `--go-tpc`, then `.tools/bin/go-tpc`, then PATH.
pub fn locate(given: Option<&Path>) -> Result<PathBuf> {
    let candidates: Vec<PathBuf> = match given {
        Some(p) => vec![p.to_path_buf()],
        None => {
            let mut c = vec![PathBuf::from(INSTALLED)];
            if let Some(path) = std::env::var_os("PATH") {
                c.extend(std::env::split_paths(&path).map(|d| d.join("go-tpc")));
            }
            c
        }
    };
    candidates.into_iter().find(|p| p.is_file()).ok_or(BenchError::MissingTool {
        tool: "go-tpc",
        fix: format!("run `bash scripts/install-go-tpc.sh` (builds go-tpc {GO_TPC_VERSION} into {INSTALLED}) or pass --go-tpc PATH"),
    })
}

/// What go-tpc is asked to do.
pub struct GoTpc<'a> {
    pub bin: &'a Path,
    pub db: &'a str,
    pub warehouses: u32,
}

impl GoTpc<'_> {
    fn command(&self, endpoint: &Endpoint, threads: u32) -> Command {
        let mut cmd = Command::new(self.bin);
        cmd.args(["tpcc", "-H", &endpoint.host, "-P", &endpoint.port.to_string()])
            .args(["-U", &endpoint.user, "-p", &endpoint.password, "-D", self.db])
            .args(["--warehouses", &self.warehouses.to_string(), "-T", &threads.to_string()]);
        cmd
    }

    /// The command line for the report (password hidden).
    pub fn shown(&self, endpoint: &Endpoint, threads: u32, tail: &str) -> String {
        format!(
            "go-tpc tpcc -H {} -P {} -U {} -p *** -D {} --warehouses {} -T {threads} {tail}",
            endpoint.host, endpoint.port, endpoint.user, self.db, self.warehouses
        )
    }

    /// `prepare --no-check` (the kit adds the history index itself: see [`HISTORY_INDEX`]).
    pub fn prepare(&self, endpoint: &Endpoint, threads: u32) -> Result<()> {
        let out = self.command(endpoint, threads).args(["prepare", "--no-check"]).output();
        checked("go-tpc prepare", out).map(drop)
    }

    /// `run --time Ns`, parsed.
    pub fn run(&self, endpoint: &Endpoint, threads: u32, seconds: u32) -> Result<TpccStats> {
        let out = self
            .command(endpoint, threads)
            .args(["--time", &format!("{seconds}s"), "run"])
            .output();
        let text = checked("go-tpc run", out)?;
        parse_run_output(&text).map_err(|e| BenchError::Command {
            what: format!("go-tpc run ({e})"),
            code: Some(0),
            output: tail(&text, 30),
        })
    }

    /// `check` with `threads` threads: go-tpc's output (it exits 0 also when a condition fails).
    pub fn check_output(&self, endpoint: &Endpoint, threads: u32) -> Result<String> {
        checked("go-tpc check", self.command(endpoint, threads).arg("check").output())
    }

    /// `check`: the TPC-C consistency conditions; an error carries go-tpc's output.
    pub fn check(&self, endpoint: &Endpoint, target: &str) -> Result<String> {
        let out = self.command(endpoint, 1).arg("check").output();
        let text = checked("go-tpc check", out).map_err(|e| BenchError::TpccCheck {
            target: target.to_string(),
            output: e.to_string(),
        })?;
        // go-tpc prints "execute check failed, err ..." and still exits 0 when a condition fails.
        let failed = text.lines().any(|l| l.contains("failed"));
        if failed || !text.lines().any(|l| l.trim() == "Finished") {
            return Err(BenchError::TpccCheck {
                target: target.to_string(),
                output: text,
            });
        }
        Ok(text)
    }
}

/// Without it, check 3.3.2.10 scans history once per customer and takes many minutes.
pub const HISTORY_INDEX: &str = "ALTER TABLE history ADD INDEX idx_history_customer (h_c_w_id, h_c_d_id, h_c_id)";

fn checked(what: &str, out: std::io::Result<Output>) -> Result<String> {
    let out = out.map_err(|e| BenchError::io(format!("starting {what}"), e))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(BenchError::Command {
            what: what.to_string(),
            code: out.status.code(),
            output: tail(&text, 30),
        });
    }
    Ok(text)
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> String {
    let last: Vec<&str> = text.lines().rev().take(lines).collect();
    last.into_iter().rev().collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "\
[Current] NEW_ORDER - Takes(s): 10.0, Count: 4430, TPM: 26625.2, Sum(ms): 22629.7, Avg(ms): 5.1, 50th(ms): 4.7, 90th(ms): 7.9, 95th(ms): 9.4, 99th(ms): 12.1, 99.9th(ms): 16.8, Max(ms): 21.0
Finished
[Summary] DELIVERY - Takes(s): 20.0, Count: 834, TPM: 2504.2, Sum(ms): 7329.1, Avg(ms): 8.8, 50th(ms): 8.4, 90th(ms): 12.1, 95th(ms): 13.6, 99th(ms): 16.3, 99.9th(ms): 22.0, Max(ms): 23.1
[Summary] NEW_ORDER - Takes(s): 20.0, Count: 9010, TPM: 27039.7, Sum(ms): 45318.0, Avg(ms): 5.0, 50th(ms): 4.7, 90th(ms): 7.9, 95th(ms): 9.4, 99th(ms): 12.1, 99.9th(ms): 16.3, Max(ms): 21.0
[Summary] NEW_ORDER_ERR - Takes(s): 20.0, Count: 3, TPM: 9.0, Sum(ms): 15.0, Avg(ms): 5.0, 50th(ms): 4.7, 90th(ms): 7.9, 95th(ms): 9.4, 99th(ms): 12.1, 99.9th(ms): 16.3, Max(ms): 21.0
[Summary] PAYMENT - Takes(s): 20.0, Count: 8560, TPM: 25688.4, Sum(ms): 22930.7, Avg(ms): 2.7, 50th(ms): 2.6, 90th(ms): 4.2, 95th(ms): 5.2, 99th(ms): 7.9, 99.9th(ms): 11.5, Max(ms): 19.9
tpmC: 27039.6, tpmTotal: 60084.7, efficiency: 105130.6%
";

    #[test]
    fn parses_summary_and_tpmc() {
        let s = parse_run_output(OUTPUT).unwrap();
        assert_eq!(s.tpmc, 27039.6);
        assert_eq!(s.tpm_total, 60084.7);
        assert_eq!(s.errors, 3);
        assert_eq!(s.failed, [("NEW_ORDER".to_string(), 3)]);
        assert_eq!((s.failed_of("NEW_ORDER"), s.failed_of("PAYMENT")), (3, 0));
        let names: Vec<&str> = s.transactions.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["DELIVERY", "NEW_ORDER", "PAYMENT"]);
        let no = &s.transactions[1];
        assert_eq!(
            (no.count, no.tpm, no.avg_ms, no.p99_ms, no.max_ms),
            (9010, 27039.7, 5.0, 12.1, 21.0)
        );
        assert_eq!((no.p50_ms, no.p90_ms, no.p95_ms), (4.7, 7.9, 9.4));
    }

    #[test]
    fn a_run_without_summary_is_an_error() {
        assert!(parse_run_output("Error 1045: Access denied\n").is_err());
        let broken = OUTPUT.replace("Avg(ms): 8.8", "Avg(ms): x");
        assert!(parse_run_output(&broken).is_err());
    }

    #[test]
    fn missing_binary_names_the_install_step() {
        let err = locate(Some(Path::new("/nonexistent/go-tpc"))).unwrap_err().to_string();
        assert!(err.contains("install-go-tpc.sh"), "{err}");
    }
}
