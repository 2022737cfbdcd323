//! One benchmark from options to results folder: checks, header, matrix, TPC-C, report, charts.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::anchors::{self, PublishedRatio};
use crate::charts;
use crate::error::{BenchError, Result};
use crate::machine::{now_utc, program_version, MachineInfo};
use crate::options::BenchOptions;
use crate::progress::Progress;
use crate::record::{from_csv, RunRecord};
use crate::report::{render, summary_table, ReportParts};
use crate::runner::{run_matrix, MatrixEnv, Pinning};
use crate::sysbench::{self, redact, run_args, DataSet, Endpoint, RunSpec};
use crate::tessera::{locate_binary, TesseraSettings};
use crate::text_backend::load_font;
use crate::tpcc_bench;

/// What a finished benchmark left behind.
pub struct Outcome {
    pub out_dir: PathBuf,
    pub summary: String,
    pub failures: Vec<String>,
}

/// Runs the whole benchmark described by `opts`; `argv` is echoed in the report.
pub fn run(opts: &BenchOptions, argv: &[String]) -> Result<Outcome> {
    let font = load_font()?;
    if opts.sysbench {
        sysbench::version()?;
    }
    tpcc_bench::preflight(opts)?;
    let tessera = TesseraSettings {
        bin: locate_binary(opts.tessera_bin.as_deref())?,
        workers: opts.tessera_workers,
        pool_max: opts.pool_max,
        consistency: opts.consistency.clone(),
    };
    let machine = MachineInfo::read();
    let pinning = if opts.pin {
        Some(Pinning::for_cores(machine.cores)?)
    } else {
        None
    };
    let published = load_anchors(&opts.anchors)?;
    let out_dir = make_out_dir(opts.out.as_deref())?;
    let header = header(opts, argv, &machine, &tessera);
    write(&out_dir.join("header.md"), &header)?;
    eprintln!("results go to {}", out_dir.display());

    let env = MatrixEnv {
        opts,
        tessera: opts.tessera.then_some(&tessera),
        out_dir: &out_dir,
        pinning,
        relay_bin: relay_bin(opts)?,
    };
    let mut progress = plan_progress(opts, &env);
    let leg_floor = opts.leg_floor && opts.sysbench;
    let floor_before = leg_floor.then(|| crate::leg_floor::kit_reading("before the matrix"));
    let mut matrix = if opts.sysbench {
        run_matrix(&env, &mut progress)
    } else {
        Default::default()
    };
    if leg_floor {
        matrix.notes.extend(floor_before);
        matrix.notes.push(crate::leg_floor::kit_reading("after the matrix"));
    }
    let tpcc = tpcc_bench::run(opts, &tessera, &out_dir, &mut progress);
    matrix.failures.extend(tpcc.failures);
    write(&out_dir.join("tpcc.md"), &tpcc.section)?;
    let mut notes: Vec<String> = matrix.notes.iter().map(|n| format!("- {n}")).collect();
    notes.extend(matrix.failures.iter().map(|f| format!("- FAILED: {f}")));
    write(&out_dir.join("notes.md"), &(notes.join("\n") + "\n"))?;
    write_report(&out_dir, &matrix.records, &published, &font)?;
    eprintln!("total time {}", crate::progress::human(progress.elapsed_secs()));
    Ok(Outcome {
        summary: summary_table(&crate::record::medians(&matrix.records)),
        out_dir,
        failures: matrix.failures,
    })
}

/// `tessera-bench report DIR`: renders report.md and the charts again from DIR's files.
pub fn rerender(dir: &Path, anchors: &[PathBuf]) -> Result<String> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    let records = from_csv(&read("runs.csv"))?;
    let published = load_anchors(anchors)?;
    write_report(dir, &records, &published, &load_font()?)?;
    Ok(summary_table(&crate::record::medians(&records)))
}

fn write_report(
    dir: &Path,
    records: &[RunRecord],
    published: &[PublishedRatio],
    font: &ab_glyph::FontArc,
) -> Result<()> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    crate::runner::write_csv(dir, records)?;
    // Every run stays in runs.csv; tables and charts show each target's median round.
    let shown = crate::record::medians(records);
    let charts = charts::write_all(dir, &shown, font)?;
    let report = render(&ReportParts {
        header: &read("header.md"),
        records: &shown,
        published,
        notes: &read("notes.md"),
        tpcc: &read("tpcc.md"),
        charts: &charts,
    });
    write(&dir.join("report.md"), &report)
}

fn plan_progress(opts: &BenchOptions, env: &MatrixEnv) -> Progress {
    let (mut steps, mut secs) = (0usize, 0.0f64);
    if opts.sysbench {
        for &topology in &opts.topologies {
            let (s, t) = env.plan_for(topology);
            steps += s;
            secs += t;
        }
    }
    let (s, t) = tpcc_bench::plan(opts);
    steps += s;
    secs += t;
    Progress::new(steps, secs)
}

/// `--relay`: this executable, whose `relay` subcommand the kit starts in front of the server.
fn relay_bin(opts: &BenchOptions) -> Result<Option<PathBuf>> {
    if !opts.relay {
        return Ok(None);
    }
    std::env::current_exe()
        .map(Some)
        .map_err(|e| BenchError::io("locating tessera-bench (for --relay)", e))
}

fn load_anchors(paths: &[PathBuf]) -> Result<Vec<PublishedRatio>> {
    let mut all = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(p).map_err(|e| BenchError::io(format!("reading {}", p.display()), e))?;
        all.extend(anchors::parse(&text)?);
    }
    Ok(all)
}

fn make_out_dir(given: Option<&Path>) -> Result<PathBuf> {
    let dir = match given {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("results").join(now_utc().replace([' ', ':'], "-")),
    };
    std::fs::create_dir_all(&dir).map_err(|e| BenchError::io(format!("creating {}", dir.display()), e))?;
    Ok(dir)
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| BenchError::io(format!("writing {}", path.display()), e))
}

/// The report's top: when, where, which versions, the exact command and settings.
fn header(opts: &BenchOptions, argv: &[String], machine: &MachineInfo, tessera: &TesseraSettings) -> String {
    let mut h = format!("# Tessera benchmark report\n\n- date: {} UTC\n", now_utc());
    let shared = if opts.pin {
        "with --pin: proxies on the last core, sysbench and MariaDB on the others"
    } else {
        "client (sysbench / go-tpc), MariaDB servers and proxy all share these cores"
    };
    let _ = writeln!(h, "- machine: {}; {shared}", machine.summary());
    let _ = writeln!(
        h,
        "- versions: {}; {}; {}",
        program_version("mariadbd", &["--version"]),
        program_version("sysbench", &["--version"]),
        program_version(&tessera.bin.to_string_lossy(), &["--version"]),
    );
    let _ = writeln!(h, "- command: `tessera-bench {}`", argv.join(" "));
    for (name, bin) in &opts.compare_bins {
        let _ = writeln!(
            h,
            "- target `{name}`: {} ({}), configured as Tessera",
            bin.display(),
            program_version(&bin.to_string_lossy(), &["--version"])
        );
    }
    let _ = writeln!(
        h,
        "- Tessera: worker_threads = {}, pool.max_size = {}; proxy CPU sampled from /proc every 0.5 s",
        opts.tessera_workers, opts.pool_max
    );
    if let Some(cap) = opts.cpu_cap {
        let _ = writeln!(
            h,
            "- --cpu-cap {cap}: every MariaDB server the kit starts runs in a cgroup v1 cpu group of its own \
             (cpu.cfs_quota_us = {} per cpu.cfs_period_us = {}) during the measured runs; Tessera and the clients are not capped",
            crate::cgroup::quota_us(cap),
            crate::cgroup::PERIOD_US
        );
    }
    if opts.rounds > 1 {
        let _ = writeln!(
            h,
            "- --rounds {}: every thread count measured {} times, the targets interleaved in each round; \
             tables and charts show each target's median-qps run, runs.csv keeps every run",
            opts.rounds, opts.rounds
        );
    }
    if opts.sysbench {
        h.push_str(&sysbench_lines(opts));
    } else {
        h.push_str("- TPC-C only (go-tpc): its layouts and settings are in the TPC-C sections below\n");
    }
    h
}

/// The header lines about the sysbench matrix: data, topologies, the command of each run.
fn sysbench_lines(opts: &BenchOptions) -> String {
    let mut h = format!(
        "- data: sysbench {} tables x {} rows; runs of {} s after a {} s warm-up per workload and target; \
         targets interleaved per (workload, threads)\n",
        opts.tables, opts.table_size, opts.seconds, opts.warmup
    );
    for t in &opts.topologies {
        let _ = writeln!(h, "- topology `{}`: {}", t.name(), t.describe());
    }
    if opts.relay {
        h.push_str(
            "- relay (`--relay`): `tessera-bench relay`, started by the kit in front of the direct server \
             (single topology): one tokio current_thread runtime, one backend connection per client, TCP_NODELAY, \
             bytes copied both ways, nothing parsed; its CPU sampled like Tessera's\n",
        );
    }
    let example = example_command(opts);
    let _ = writeln!(
        h,
        "- each run: `{example}` (prepared statements on: sysbench's default)"
    );
    h
}

fn example_command(opts: &BenchOptions) -> String {
    let endpoint = Endpoint {
        host: "HOST".into(),
        port: 3306,
        user: "USER".into(),
        password: String::new(),
    };
    let data = DataSet {
        db: crate::runner::SYSBENCH_DB.into(),
        tables: opts.tables,
        table_size: opts.table_size,
        auto_inc: true,
    };
    let spec = RunSpec {
        workload: opts.workloads.first().copied().unwrap_or("oltp_read_only"),
        threads: opts.threads.first().copied().unwrap_or(1),
        seconds: opts.seconds,
        endpoint: &endpoint,
        data: &data,
    };
    redact(&run_args(&spec)).replace("--mysql-port=3306", "--mysql-port=PORT")
}
