//! End to end: tessera-bench against a real sandbox MariaDB and a real Tessera, in a short run.

use std::path::{Path, PathBuf};
use std::process::Command;

use tessera_bench::record::from_csv;

fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tessera-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn bench(args: &[&str], out: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tessera-bench"))
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .expect("tessera-bench runs")
}

#[test]
fn a_short_run_writes_csv_report_and_four_charts() {
    let out = out_dir("short");
    let anchors = concat!(env!("CARGO_MANIFEST_DIR"), "/anchors/gaea-sysbench-published.csv");
    let run = bench(
        &[
            "--workloads",
            "point_select",
            "--threads",
            "2",
            "--time",
            "2",
            "--warmup",
            "1",
            "--anchors",
            anchors,
        ],
        &out,
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(
        stderr.contains("[  3/4] single oltp_point_select 2 threads -> direct"),
        "{stderr}"
    );

    let records = from_csv(&std::fs::read_to_string(out.join("runs.csv")).unwrap()).unwrap();
    let targets: Vec<&str> = records.iter().map(|r| r.target.as_str()).collect();
    assert_eq!(targets, ["direct", "tessera"]);
    for r in &records {
        assert!(r.stats.queries > 0 && r.stats.qps > 0.0, "{r:?}");
        assert_eq!((r.stats.errors, r.stats.reconnects), (0, 0), "{r:?}");
    }
    let cpu = records[1].cpu.expect("Tessera's CPU is sampled");
    assert!(cpu.us_per_query > 0.0 && cpu.peak_rss_kb > 0, "{cpu:?}");
    assert!(records[0].cpu.is_none());

    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    for needle in [
        "| tessera | 2 |",
        "| direct | 2 |",
        "ratio to direct",
        "gaea-2.3.7",
        "![qps.png](qps.png)",
    ] {
        assert!(report.contains(needle), "{needle} missing:\n{report}");
    }
    for chart in ["qps.png", "tps.png", "p99.png", "cpu.png"] {
        let bytes = std::fs::read(out.join(chart)).unwrap();
        assert_eq!(&bytes[1..4], b"PNG", "{chart}");
    }

    // The report can be rendered again from the CSV alone.
    std::fs::remove_file(out.join("qps.png")).unwrap();
    let again = Command::new(env!("CARGO_BIN_EXE_tessera-bench"))
        .arg("report")
        .arg(&out)
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert!(out.join("qps.png").is_file());
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn an_unreachable_target_fails_its_runs_but_not_the_others() {
    let out = out_dir("unreachable");
    // A port held by a bound socket that never listens: connections are refused, and no
    // concurrent test can take it.
    let closed = tokio::net::TcpSocket::new_v4().unwrap();
    closed.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let target = format!("ghost=127.0.0.1:{}", closed.local_addr().unwrap().port());
    let run = bench(
        &[
            "--workloads",
            "point_select",
            "--threads",
            "1",
            "--time",
            "1",
            "--warmup",
            "1",
            "--no-tessera",
            "--target",
            &target,
        ],
        &out,
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("-> ghost"), "{stderr}");
    let records = from_csv(&std::fs::read_to_string(out.join("runs.csv")).unwrap()).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].target, "direct");
    let notes = std::fs::read_to_string(out.join("notes.md")).unwrap();
    assert!(notes.contains("FAILED") && notes.contains("ghost"), "{notes}");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn relay_is_a_target_with_cpu_figures_and_stops_with_its_topology() {
    let out = out_dir("relay");
    let run = bench(
        &[
            "--workloads",
            "point_select",
            "--threads",
            "1",
            "--time",
            "1",
            "--warmup",
            "1",
            "--no-tessera",
            "--relay",
        ],
        &out,
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let records = from_csv(&std::fs::read_to_string(out.join("runs.csv")).unwrap()).unwrap();
    let targets: Vec<&str> = records.iter().map(|r| r.target.as_str()).collect();
    assert_eq!(targets, ["direct", "relay"]);
    assert!(records[1].proxy && records[1].stats.queries > 0, "{:?}", records[1]);
    let cpu = records[1].cpu.expect("the relay's CPU is sampled");
    assert!(cpu.peak_rss_kb > 0, "{cpu:?}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    for needle in [
        "| relay | 1 |",
        "relay CPU us/query",
        "ratio to relay",
        "- relay (`--relay`)",
    ] {
        assert!(report.contains(needle), "{needle} missing:\n{report}");
    }
    // The relay's log names its address; nothing listens there once the run is over.
    let log = std::fs::read_to_string(out.join("relay-single.log")).unwrap();
    let addr = log
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("relay log: {log:?}"));
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "the relay still listens on {addr}"
    );
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn usage_errors_exit_2_with_a_reason() {
    let run = Command::new(env!("CARGO_BIN_EXE_tessera-bench"))
        .args(["--threads", "zero"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("--threads"));
}
