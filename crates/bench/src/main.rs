//! `tessera-bench`: runs the benchmark matrix and writes the results folder.

use std::path::PathBuf;
use std::process::ExitCode;

use tessera_bench::options::{parse, USAGE};
use tessera_bench::{app, leg_floor, relay, BenchError};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let result = match args.first().map(String::as_str) {
        Some("report") => rerender(&args[1..]),
        Some("relay") => relay::main(&args[1..]).map(|()| ExitCode::SUCCESS),
        Some("leg-floor") => leg_floor::main(&args[1..]).map(|()| ExitCode::SUCCESS),
        _ => run(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tessera-bench: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Result<ExitCode, BenchError> {
    let opts = parse(args)?;
    let outcome = app::run(&opts, args)?;
    if outcome.summary.lines().count() > 2 {
        println!("{}", outcome.summary);
    }
    println!("Report: {}", outcome.out_dir.join("report.md").display());
    if outcome.failures.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("{} run(s) failed:", outcome.failures.len());
    for f in &outcome.failures {
        eprintln!("  {f}");
    }
    Ok(ExitCode::from(1))
}

fn rerender(args: &[String]) -> Result<ExitCode, BenchError> {
    let dir = args
        .first()
        .map(PathBuf::from)
        .ok_or_else(|| BenchError::Usage("report needs the results folder".into()))?;
    let mut anchors = Vec::new();
    let mut rest = args[1..].iter();
    while let Some(flag) = rest.next() {
        match (flag.as_str(), rest.next()) {
            ("--anchors", Some(path)) => anchors.push(PathBuf::from(path)),
            _ => return Err(BenchError::Usage(format!("report: unexpected {flag:?}"))),
        }
    }
    println!("{}", app::rerender(&dir, &anchors)?);
    println!("Report: {}", dir.join("report.md").display());
    Ok(ExitCode::SUCCESS)
}
