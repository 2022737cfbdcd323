//! The benchmark matrix: for every topology, workload and thread count, each target in turn
//! (interleaved, so machine drift hits all alike), with the proxy's CPU sampled meanwhile.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::cpu::{summarize, ticks_per_sec, Sampler};
use crate::error::{BenchError, Result};
use crate::options::BenchOptions;
use crate::progress::Progress;
use crate::record::{to_csv, RunRecord};
use crate::relay::{RelayProcess, RELAY_TARGET};
use crate::sysbench::{common_args, parse_output, redact, run_args, DataSet, Endpoint, RunSpec};
use crate::tessera::{TesseraProcess, TesseraSettings};
use crate::topology::{deploy, Deployment, Sharding, Topology, SHARDS_PER_GROUP};

const SAMPLE_EVERY: Duration = Duration::from_millis(500);
/// Planned seconds per run beyond its measured time (connecting, reporting).
pub const RUN_OVERHEAD_SECS: f64 = 2.0;
pub const SYSBENCH_DB: &str = "sbtest";

/// One endpoint measured in the matrix.
#[derive(Debug, Clone)]
pub struct Target {
    pub name: String,
    pub endpoint: Endpoint,
    /// The proxy process, for CPU figures (None for direct MariaDB or an unknown process).
    pub pid: Option<u32>,
    pub proxy: bool,
}

/// Which CPUs `--pin` gives to proxies and to everything else.
#[derive(Debug, Clone, PartialEq)]
pub struct Pinning {
    pub proxy_cpus: String,
    pub other_cpus: String,
}

impl Pinning {
    /// The last core for proxies, the others for sysbench and MariaDB.
    pub fn for_cores(cores: usize) -> Result<Pinning> {
        if cores < 2 {
            return Err(BenchError::Usage("--pin needs at least 2 cores".into()));
        }
        let other = if cores == 2 {
            "0".to_string()
        } else {
            format!("0-{}", cores - 2)
        };
        Ok(Pinning {
            proxy_cpus: (cores - 1).to_string(),
            other_cpus: other,
        })
    }
}

/// What the sysbench part of a benchmark produced.
#[derive(Default)]
pub struct MatrixOutcome {
    pub records: Vec<RunRecord>,
    pub notes: Vec<String>,
    pub failures: Vec<String>,
}

/// Everything the matrix needs besides the options.
pub struct MatrixEnv<'a> {
    pub opts: &'a BenchOptions,
    pub tessera: Option<&'a TesseraSettings>,
    pub out_dir: &'a Path,
    pub pinning: Option<Pinning>,
    /// `--relay`: the program whose `relay` subcommand is the floor target (this executable).
    pub relay_bin: Option<PathBuf>,
}

impl MatrixEnv<'_> {
    /// sysbench's data set in `topology` (sysbench's defaults everywhere: in the sharded
    /// topology `sbtest*` ids come from Tessera's AUTO_INCREMENT sequence).
    fn data(&self) -> DataSet {
        DataSet {
            db: SYSBENCH_DB.into(),
            tables: self.opts.tables,
            table_size: self.opts.table_size,
            auto_inc: true,
        }
    }

    /// Whether `topology` gets the relay (`--relay`, and one server that the proxies use).
    fn has_relay(&self, topology: Topology) -> bool {
        self.relay_bin.is_some() && topology.is_single_server()
    }

    /// Targets in `topology`: direct, Tessera, the relay, then the user's endpoints.
    fn target_count(&self, topology: Topology) -> usize {
        usize::from(self.opts.direct)
            + usize::from(self.opts.tessera)
            + self.compared().len()
            + usize::from(self.has_relay(topology))
            + self.opts.externals.len()
    }

    /// `--compare-bin`: the other builds, each configured as the kit's Tessera (none without it).
    fn compared(&self) -> Vec<(&str, TesseraSettings)> {
        let Some(settings) = self.tessera else {
            return Vec::new();
        };
        self.opts
            .compare_bins
            .iter()
            .map(|(name, bin)| {
                let mut other = settings.clone();
                other.bin = bin.clone();
                (name.as_str(), other)
            })
            .collect()
    }

    /// Steps and planned seconds of `topology`'s matrix.
    pub fn plan_for(&self, topology: Topology) -> (usize, f64) {
        let o = self.opts;
        let targets = self.target_count(topology);
        let rounds = o.rounds as usize;
        let per_workload = targets * (1 + o.threads.len() * rounds);
        let steps = o.workloads.len() * per_workload;
        let warm = (o.workloads.len() * targets) as f64 * (f64::from(o.warmup) + RUN_OVERHEAD_SECS);
        let measured = (o.workloads.len() * o.threads.len() * rounds * targets) as f64
            * (f64::from(o.seconds) + RUN_OVERHEAD_SECS);
        (steps, warm + measured)
    }
}

/// Runs every topology's matrix; records are also written to `runs.csv` after each run.
pub fn run_matrix(env: &MatrixEnv, progress: &mut Progress) -> MatrixOutcome {
    let mut outcome = MatrixOutcome::default();
    for &topology in &env.opts.topologies {
        let (steps, secs) = env.plan_for(topology);
        if let Err(e) = run_topology(env, topology, progress, &mut outcome) {
            let line = format!("topology `{}`: {e}", topology.name());
            eprintln!("{line}");
            match e {
                BenchError::NotAvailable { .. } => outcome.notes.push(line),
                _ => outcome.failures.push(line),
            }
            // Skip what was planned for it so that the ETA stays honest.
            for _ in 0..steps {
                progress.finished(secs / steps.max(1) as f64);
            }
        }
    }
    outcome
}

fn run_topology(
    env: &MatrixEnv,
    topology: Topology,
    progress: &mut Progress,
    outcome: &mut MatrixOutcome,
) -> Result<()> {
    let mut deployment = deploy(topology, env.opts.mysql.as_ref(), &[SYSBENCH_DB])?;
    let data = env.data();
    prepare_data(&deployment.direct, &data, env.opts.tables)?;
    deployment.wait_for_replicas()?;
    let tessera = match env.tessera {
        Some(settings) => Some(TesseraProcess::start(
            settings,
            &deployment.backends,
            env.out_dir,
            topology.name(),
        )?),
        None => None,
    };
    let left_out = match (&tessera, &deployment.backends.sharding) {
        (Some(proxy), Some(sharding)) => load_through_proxy(&proxy.endpoint, sharding, &data)
            .err()
            .map(|e| left_out_line(topology, &e)),
        _ => None,
    };
    if let Some(line) = &left_out {
        eprintln!("{line}");
        outcome.failures.push(line.clone());
    }
    // Other builds read the data the kit's Tessera loaded, through the same generated config.
    let mut compared = Vec::new();
    for (name, settings) in env.compared() {
        let label = format!("{}-{name}", topology.name());
        compared.push((
            name,
            TesseraProcess::start(&settings, &deployment.backends, env.out_dir, &label)?,
        ));
    }
    let relay = start_relay(env, &deployment, outcome)?;
    if let Some(cap) = env.opts.cpu_cap {
        outcome.notes.extend(deployment.cap_cpu(cap)?);
    }
    let targets = targets_for(env.opts, &deployment, tessera.as_ref(), &compared, relay.as_ref());
    if let Some(pin) = &env.pinning {
        pin_processes(pin, &deployment, &targets)?;
    }
    let matrix = TopologyRuns {
        env,
        topology,
        data: &data,
        targets: &targets,
        left_out: left_out.as_ref().map(|_| "tessera"),
    };
    for &workload in &env.opts.workloads {
        matrix.run_workload(workload, progress, outcome)?;
    }
    drop(relay);
    drop(compared);
    drop(tessera);
    Ok(())
}

/// `--relay`: starts the relay in front of the direct server where that server is all the
/// proxies use; elsewhere notes that it was left out. Stopped when the guard is dropped.
fn start_relay(env: &MatrixEnv, deployment: &Deployment, outcome: &mut MatrixOutcome) -> Result<Option<RelayProcess>> {
    let Some(program) = &env.relay_bin else {
        return Ok(None);
    };
    let topology = deployment.topology;
    if !env.has_relay(topology) {
        let line = format!(
            "topology `{}`: relay left out (it fronts one server, as in the single topology; here the proxies \
             use several)",
            topology.name()
        );
        eprintln!("{line}");
        outcome.notes.push(line);
        return Ok(None);
    }
    RelayProcess::start(program, &deployment.direct, env.out_dir, topology.name()).map(Some)
}

/// The failure line of a sharded topology whose data Tessera could not load.
fn left_out_line(topology: Topology, e: &BenchError) -> String {
    let layout = match topology {
        Topology::Sharded { groups } => format!(" ({groups} groups x {SHARDS_PER_GROUP} shards)"),
        _ => String::new(),
    };
    format!(
        "topology `{}`{layout}: loading sysbench's tables through Tessera failed, so every run through Tessera \
         is left out: {e}",
        topology.name()
    )
}

/// Loads sysbench's tables through the proxy (it must create them on every shard and split the
/// multi-row INSERTs), then checks on the shards that every row arrived where it belongs.
fn load_through_proxy(proxy: &Endpoint, sharding: &Sharding, data: &DataSet) -> Result<()> {
    sysbench_data(proxy, data, data.tables, "prepare")?;
    sharding.check_placement(data.tables, data.table_size)
}

/// One topology's runs: its targets, data set, and the target left out (if any).
struct TopologyRuns<'a> {
    env: &'a MatrixEnv<'a>,
    topology: Topology,
    data: &'a DataSet,
    targets: &'a [Target],
    /// A target that cannot run here (its failure is already recorded).
    left_out: Option<&'a str>,
}

impl TopologyRuns<'_> {
    /// A warm-up per target, then every thread count per target.
    fn run_workload(&self, workload: &str, progress: &mut Progress, outcome: &mut MatrixOutcome) -> Result<()> {
        let opts = self.env.opts;
        let name = self.topology.name();
        for target in self.targets {
            progress.starting(&format!("{name} {workload} warm-up -> {}", target.name));
            let spec = self.spec(workload, opts.threads[0], opts.warmup.max(1), target);
            if self.left_out != Some(target.name.as_str()) {
                if let Err(e) = run_sysbench(&spec, self.env.pinning.as_ref()) {
                    outcome
                        .failures
                        .push(format!("warm-up {workload} -> {}: {e}", target.name));
                }
            }
            progress.finished(f64::from(opts.warmup) + RUN_OVERHEAD_SECS);
        }
        for &threads in &opts.threads {
            // Rounds interleave the targets, so that a drift of the machine touches them alike.
            for round in 1..=opts.rounds {
                for target in self.targets {
                    self.measure_one(workload, threads, round, target, progress, outcome)?;
                }
            }
        }
        Ok(())
    }

    fn measure_one(
        &self,
        workload: &str,
        threads: u32,
        round: u32,
        target: &Target,
        progress: &mut Progress,
        outcome: &mut MatrixOutcome,
    ) -> Result<()> {
        let opts = self.env.opts;
        let name = self.topology.name();
        let of_rounds = if opts.rounds > 1 {
            format!(" (round {round} of {})", opts.rounds)
        } else {
            String::new()
        };
        let label = format!("{name} {workload} {threads} threads -> {}{of_rounds}", target.name);
        progress.starting(&label);
        let spec = self.spec(workload, threads, opts.seconds, target);
        if self.left_out == Some(target.name.as_str()) {
            outcome
                .failures
                .push(format!("{label}: not run (Tessera could not load the data, see above)"));
        } else {
            match measure(&spec, target, self.topology, self.env.pinning.as_ref()) {
                Ok(record) => {
                    outcome.records.push(record);
                    write_csv(self.env.out_dir, &outcome.records)?;
                }
                Err(e) => outcome.failures.push(format!("{label}: {e}")),
            }
        }
        progress.finished(f64::from(opts.seconds) + RUN_OVERHEAD_SECS);
        Ok(())
    }

    fn spec<'s>(&'s self, workload: &'s str, threads: u32, seconds: u32, target: &'s Target) -> RunSpec<'s> {
        RunSpec {
            workload,
            threads,
            seconds,
            endpoint: &target.endpoint,
            data: self.data,
        }
    }
}

fn targets_for(
    opts: &BenchOptions,
    deployment: &Deployment,
    tessera: Option<&TesseraProcess>,
    compared: &[(&str, TesseraProcess)],
    relay: Option<&RelayProcess>,
) -> Vec<Target> {
    let mut targets = Vec::new();
    if opts.direct {
        targets.push(Target {
            name: "direct".into(),
            endpoint: deployment.direct.clone(),
            pid: None,
            proxy: false,
        });
    }
    if let Some(t) = tessera {
        targets.push(Target {
            name: "tessera".into(),
            endpoint: t.endpoint.clone(),
            pid: Some(t.pid()),
            proxy: true,
        });
    }
    for (name, t) in compared {
        targets.push(Target {
            name: name.to_string(),
            endpoint: t.endpoint.clone(),
            pid: Some(t.pid()),
            proxy: true,
        });
    }
    if let Some(r) = relay {
        targets.push(Target {
            name: RELAY_TARGET.into(),
            endpoint: r.endpoint.clone(),
            pid: Some(r.pid()),
            proxy: true,
        });
    }
    for ext in &opts.externals {
        targets.push(Target {
            name: ext.name.clone(),
            endpoint: Endpoint {
                host: ext.host.clone(),
                port: ext.port,
                user: ext.user.clone().unwrap_or_else(|| deployment.direct.user.clone()),
                password: ext
                    .password
                    .clone()
                    .unwrap_or_else(|| deployment.direct.password.clone()),
            },
            pid: ext.pid,
            proxy: true,
        });
    }
    targets
}

/// `sysbench oltp_common cleanup` then `prepare`, directly against the primary.
pub fn prepare_data(direct: &Endpoint, data: &DataSet, threads: u32) -> Result<()> {
    for action in ["cleanup", "prepare"] {
        sysbench_data(direct, data, threads, action)?;
    }
    Ok(())
}

/// `sysbench oltp_common <action>` (`prepare` or `cleanup`) against `endpoint`, with up to 16
/// threads (one per table). sysbench 1.0 exits 0 when a thread of a parallel `prepare` dies
/// with FATAL, so its output is checked too.
fn sysbench_data(endpoint: &Endpoint, data: &DataSet, threads: u32, action: &str) -> Result<()> {
    let mut args = vec!["oltp_common".to_string()];
    args.extend(common_args(endpoint, data));
    args.push(format!("--threads={}", threads.clamp(1, 16)));
    args.push(action.to_string());
    let out = Command::new("sysbench")
        .args(&args)
        .output()
        .map_err(|e| BenchError::io("starting sysbench", e))?;
    let output = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || output.contains("FATAL:") {
        return Err(BenchError::Command {
            what: redact(&args),
            code: out.status.code(),
            output: fatal_lines(&output),
        });
    }
    Ok(())
}

/// sysbench's FATAL lines, without repeats (the last lines of `output` if it has none).
fn fatal_lines(output: &str) -> String {
    let mut lines: Vec<&str> = Vec::new();
    for line in output.lines().filter(|l| l.starts_with("FATAL:")) {
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    if lines.is_empty() {
        return tail(output, 20);
    }
    lines.join("\n")
}

fn pin_processes(pin: &Pinning, deployment: &Deployment, targets: &[Target]) -> Result<()> {
    let proxies = targets.iter().filter(|t| t.proxy).filter_map(|t| t.pid);
    for pid in proxies {
        taskset(&pin.proxy_cpus, pid)?;
    }
    for &pid in &deployment.server_pids {
        taskset(&pin.other_cpus, pid)?;
    }
    Ok(())
}

fn taskset(cpus: &str, pid: u32) -> Result<()> {
    let out = Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &pid.to_string()])
        .output()
        .map_err(|e| BenchError::io("running taskset (util-linux)", e))?;
    if out.status.success() {
        return Ok(());
    }
    Err(BenchError::Command {
        what: format!("taskset -a -p -c {cpus} {pid}"),
        code: out.status.code(),
        output: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Runs sysbench once; returns its stdout (stderr appended on failure).
fn run_sysbench(spec: &RunSpec, pinning: Option<&Pinning>) -> Result<String> {
    let args = run_args(spec);
    let mut cmd = match pinning {
        Some(pin) => {
            let mut c = Command::new("taskset");
            c.args(["-c", &pin.other_cpus, "sysbench"]);
            c
        }
        None => Command::new("sysbench"),
    };
    let out = cmd
        .args(&args)
        .output()
        .map_err(|e| BenchError::io("starting sysbench", e))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(BenchError::Command {
            what: redact(&args),
            code: out.status.code(),
            output: tail(&(stdout + &String::from_utf8_lossy(&out.stderr)), 15),
        });
    }
    Ok(stdout)
}

fn measure(spec: &RunSpec, target: &Target, topology: Topology, pinning: Option<&Pinning>) -> Result<RunRecord> {
    let sampler = target.pid.map(|pid| Sampler::start(pid, SAMPLE_EVERY));
    let result = run_sysbench(spec, pinning);
    let samples = sampler.map(Sampler::finish);
    let stats = parse_output(&result?)?;
    let cpu = samples.and_then(|s| summarize(&s, ticks_per_sec(), stats.queries, 0.0));
    Ok(RunRecord {
        topology: topology.name().into(),
        workload: spec.workload.into(),
        threads: spec.threads,
        target: target.name.clone(),
        proxy: target.proxy,
        stats,
        cpu,
        pinned: pinning.is_some(),
    })
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Writes `runs.csv` in `dir`.
pub fn write_csv(dir: &Path, records: &[RunRecord]) -> Result<PathBuf> {
    let path = dir.join("runs.csv");
    std::fs::write(&path, to_csv(records)).map_err(|e| BenchError::io(format!("writing {}", path.display()), e))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_splits_the_cores() {
        assert_eq!(
            Pinning::for_cores(2).unwrap(),
            Pinning {
                proxy_cpus: "1".into(),
                other_cpus: "0".into()
            }
        );
        assert_eq!(Pinning::for_cores(8).unwrap().other_cpus, "0-6");
        assert!(Pinning::for_cores(1).is_err());
    }

    #[test]
    fn the_plan_counts_warm_ups_and_measured_runs() {
        let opts = BenchOptions::quick();
        let mut env = MatrixEnv {
            opts: &opts,
            tessera: None,
            out_dir: Path::new("/tmp"),
            pinning: None,
            relay_bin: None,
        };
        // direct + tessera, 3 workloads x (1 warm-up + 3 thread counts).
        let (steps, secs) = env.plan_for(Topology::Single);
        assert_eq!(steps, 2 * 3 * 4);
        assert_eq!(secs, 6.0 * (3.0 + 2.0) + 18.0 * (15.0 + 2.0));
        // --relay: one more target where the topology has one server, none elsewhere.
        env.relay_bin = Some("tessera-bench".into());
        assert_eq!(env.plan_for(Topology::Single).0, 3 * 3 * 4);
        assert_eq!(env.plan_for(Topology::Replica), (steps, secs));
        assert_eq!(env.plan_for(Topology::Sharded { groups: 2 }), (steps, secs));
    }

    #[test]
    fn sysbench_failures_show_each_fatal_line_once() {
        let output = "sysbench 1.0.20\nInitializing worker threads...\n\
                      FATAL: unable to connect to MySQL server on host '127.0.0.1', port 1, aborting...\n\
                      FATAL: error 2002: Can't connect\n\
                      FATAL: unable to connect to MySQL server on host '127.0.0.1', port 1, aborting...\n";
        assert_eq!(
            fatal_lines(output),
            "FATAL: unable to connect to MySQL server on host '127.0.0.1', port 1, aborting...\n\
             FATAL: error 2002: Can't connect"
        );
        assert_eq!(fatal_lines("a\nb\n"), "a\nb");
    }
}
