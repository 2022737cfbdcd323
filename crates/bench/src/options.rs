//! Command-line options of `tessera-bench`, the `quick` and `full` presets, and their parsing.

use std::path::PathBuf;

use crate::error::{BenchError, Result};
use crate::relay::RELAY_TARGET;
use crate::sysbench::{canonical_workload, Endpoint};
use crate::topology::{Topology, DEFAULT_SHARD_GROUPS};

pub const USAGE: &str = "\
tessera-bench: sysbench and TPC-C, direct MariaDB vs through Tessera (and other proxies), side by side

USAGE: tessera-bench [OPTIONS]
       tessera-bench report DIR      re-render DIR/report.md and charts from DIR/runs.csv
       tessera-bench relay LISTEN_ADDR BACKEND_ADDR
                                     the zero-logic TCP relay that --relay starts (runs until killed)
       tessera-bench leg-floor [THREADS] [SECONDS] [ENGINES]
                                     CPU per request of one socket leg answered from memory (16, 10),
                                     per engine: epoll (default), uring, hybrid, hybrid-sends, spin

Matrix:
  --preset quick|full        quick (default): point_select, read_only, read_write at 4,16,64 threads,
                             15 s runs, single topology. full: all 7 OLTP workloads at 4..128 threads,
                             30 s runs, every topology, and TPC-C.
  --workloads LIST           e.g. point_select,read_only (oltp_ prefix optional)
  --threads LIST             e.g. 4,16,64
  --time SECS                length of each measured run
  --warmup SECS              unmeasured run per workload and target before measuring (default 3)
  --rounds N                 measure every thread count N times, the targets interleaved in each
                             round; the report shows each target's median run (default 1)
  --topology LIST            single, replica, primary-reads, sharded
  --shard-groups N           sharded: N MariaDB groups x 2 shards, sbtest* by id (hash) (default 2)
  --tables N                 sysbench tables (default 4)
  --table-size N             rows per table (default 10000)
  --scale F                  multiply the table size (e.g. 100 for a real run)
Targets (interleaved for every workload and thread count):
  --target NAME=HOST:PORT[,user=U][,password=P][,pid=N]
                             another endpoint in the same table (pid: its process, for CPU figures)
  --no-direct                leave direct MariaDB out
  --no-tessera               leave Tessera out
  --relay                    also measure the floor: a zero-logic TCP relay (`tessera-bench relay`: one
                             thread, one backend connection per client, nothing parsed) that the kit
                             starts in front of the direct server, as target `relay` with its CPU; the
                             report shows every target's ratio to it beside the ratio to direct. Single
                             topology and --mysql only (other topologies note it as left out)
  --leg-floor                also measure the machine's floor of one socket leg (`tessera-bench leg-floor`,
                             16 clients, 5 s, epoll and sends through io_uring) before and after the
                             sysbench matrix; the report's notes give both readings, so that CPU per
                             query can be read against what the machine charges for one leg that day
  --mysql HOST:PORT          use this server instead of a sandbox (single topology only)
  --mysql-user U, --mysql-password P   its account (default root / empty)
  --tessera-bin PATH         the tessera binary (default: next to tessera-bench)
  --compare-bin NAME=PATH    also measure another tessera build (say the previous commit's) as
                             target NAME: the kit starts it beside its Tessera with the same
                             generated config (any topology) and interleaves it with the others
  --tessera-workers N        Tessera's worker_threads (default 1; 0 = one per core)
  --pool-max N               Tessera's pool.max_size (default 64)
  --consistency LEVEL        the client user's read_consistency: global (Tessera's default),
                             session, eventual or strong (what read/write splitting costs)
  --pin                      proxies on the last core, sysbench and MariaDB on the others
  --cpu-cap FRACTION         each MariaDB server the kit starts in a cgroup v1 cpu group of its own,
                             capped at FRACTION of one core (e.g. 0.25) for the measured runs (loads
                             run uncapped); Tessera and the clients are not capped. Needs root.
TPC-C (go-tpc):
  --tpcc                     also run TPC-C (direct and through Tessera, then `check` through Tessera);
                             with --topology sharded: database tpcc over --shard-groups groups (default
                             4) x 1 shard, tables by warehouse (mod), item broadcast; direct is one
                             server with all warehouses
  --tpcc-only                run only TPC-C
  --tpcc-warehouses N        (default 2)   --tpcc-time SECS (default 60)   --tpcc-threads N (default 4)
  --tpcc-scaleout            the scale-out measurement: --topology sharded --tpcc-only --cpu-cap 0.25
                             --tpcc-warehouses 8 --tpcc-threads 32 (each can be overridden): one capped
                             server direct vs 4 capped shards through Tessera, side by side
  --go-tpc PATH              the go-tpc binary (default: .tools/bin/go-tpc, then PATH)
Output:
  --out DIR                  results folder (default results/<UTC date-time>)
  --anchors CSV              published figures to show beside ours (e.g. ../shared/anchors/*.csv)
";

/// An endpoint in the tables besides direct MariaDB and Tessera.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalTarget {
    pub name: String,
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<String>,
    pub pid: Option<u32>,
}

/// TPC-C settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TpccOptions {
    pub warehouses: u32,
    pub seconds: u32,
    pub threads: u32,
    pub go_tpc: Option<PathBuf>,
}

/// Everything a run is told on the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchOptions {
    pub preset: String,
    pub workloads: Vec<&'static str>,
    pub threads: Vec<u32>,
    pub seconds: u32,
    pub warmup: u32,
    /// `--rounds`: interleaved repetitions of every measured run (the report takes medians).
    pub rounds: u32,
    pub topologies: Vec<Topology>,
    /// `--shard-groups`: groups of the sharded topology (None: [`DEFAULT_SHARD_GROUPS`]).
    pub shard_groups: Option<u32>,
    pub tables: u32,
    pub table_size: u64,
    pub externals: Vec<ExternalTarget>,
    pub direct: bool,
    pub tessera: bool,
    /// `--relay`: the kit's zero-logic relay as a target where the topology has one server.
    pub relay: bool,
    /// `--leg-floor`: the machine's one-leg floor measured before and after the matrix.
    pub leg_floor: bool,
    pub mysql: Option<Endpoint>,
    pub tessera_bin: Option<PathBuf>,
    /// `--compare-bin`: other Tessera builds measured beside it, as (target name, binary).
    pub compare_bins: Vec<(String, PathBuf)>,
    pub tessera_workers: u32,
    pub pool_max: u32,
    /// The client user's `read_consistency` (None: Tessera's default).
    pub consistency: Option<String>,
    pub pin: bool,
    /// `--cpu-cap`: each started MariaDB server's CPU limit, in cores.
    pub cpu_cap: Option<f64>,
    /// `--tpcc-scaleout` was given (the report names the measurement).
    pub scaleout: bool,
    pub sysbench: bool,
    pub tpcc: Option<TpccOptions>,
    pub out: Option<PathBuf>,
    pub anchors: Vec<PathBuf>,
}

impl BenchOptions {
    /// The `quick` preset (what `make bench` runs).
    pub fn quick() -> BenchOptions {
        BenchOptions {
            preset: "quick".into(),
            workloads: vec!["oltp_point_select", "oltp_read_only", "oltp_read_write"],
            threads: vec![4, 16, 64],
            seconds: 15,
            warmup: 3,
            rounds: 1,
            topologies: vec![Topology::Single],
            shard_groups: None,
            tables: 4,
            table_size: 10_000,
            externals: Vec::new(),
            direct: true,
            tessera: true,
            relay: false,
            leg_floor: false,
            mysql: None,
            tessera_bin: None,
            compare_bins: Vec::new(),
            tessera_workers: 1,
            pool_max: 64,
            consistency: None,
            pin: false,
            cpu_cap: None,
            scaleout: false,
            sysbench: true,
            tpcc: None,
            out: None,
            anchors: Vec::new(),
        }
    }

    /// The `full` preset (what `make bench-full` runs).
    pub fn full() -> BenchOptions {
        BenchOptions {
            preset: "full".into(),
            workloads: crate::sysbench::WORKLOADS.to_vec(),
            threads: vec![4, 8, 16, 32, 64, 128],
            seconds: 30,
            topologies: vec![Topology::Single, Topology::Replica, Topology::PrimaryReads],
            tpcc: Some(TpccOptions::default()),
            ..BenchOptions::quick()
        }
    }
}

impl Default for TpccOptions {
    fn default() -> Self {
        TpccOptions {
            warehouses: 2,
            seconds: 60,
            threads: 4,
            go_tpc: None,
        }
    }
}

/// Parses the arguments after the program name.
pub fn parse(args: &[String]) -> Result<BenchOptions> {
    let preset = preset_of(args)?;
    let mut opts = match preset.as_str() {
        "quick" => BenchOptions::quick(),
        "full" => BenchOptions::full(),
        other => return Err(BenchError::Usage(format!("unknown preset {other:?} (quick or full)"))),
    };
    if args.iter().any(|a| a == "--tpcc-scaleout") {
        scaleout_defaults(&mut opts);
    }
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| BenchError::Usage(format!("{flag} needs a value")))
        };
        apply(&mut opts, flag, &mut value)?;
    }
    validate(&opts)?;
    set_shard_groups(&mut opts);
    Ok(opts)
}

/// Gives every sharded topology the `--shard-groups` count (whatever the order of the flags).
fn set_shard_groups(opts: &mut BenchOptions) {
    let count = opts.shard_groups.unwrap_or(DEFAULT_SHARD_GROUPS);
    for t in &mut opts.topologies {
        if let Topology::Sharded { groups } = t {
            *groups = count;
        }
    }
}

/// `--tpcc-scaleout`'s settings, applied before the other flags so that they override them.
fn scaleout_defaults(opts: &mut BenchOptions) {
    opts.scaleout = true;
    opts.sysbench = false;
    opts.topologies = vec![Topology::Sharded {
        groups: DEFAULT_SHARD_GROUPS,
    }];
    opts.cpu_cap = Some(SCALEOUT_CPU_CAP);
    let t = tpcc_mut(opts);
    t.warehouses = SCALEOUT_WAREHOUSES;
    t.threads = SCALEOUT_THREADS;
}

/// `--tpcc-scaleout` defaults: a quarter core per server, 8 warehouses, 32 go-tpc threads.
pub const SCALEOUT_CPU_CAP: f64 = 0.25;
pub const SCALEOUT_WAREHOUSES: u32 = 8;
pub const SCALEOUT_THREADS: u32 = 32;

fn preset_of(args: &[String]) -> Result<String> {
    match args.iter().position(|a| a == "--preset") {
        Some(i) => args
            .get(i + 1)
            .cloned()
            .ok_or_else(|| BenchError::Usage("--preset needs a value".into())),
        None => Ok("quick".into()),
    }
}

fn apply(opts: &mut BenchOptions, flag: &str, value: &mut dyn FnMut() -> Result<String>) -> Result<()> {
    match flag {
        "--preset" => drop(value()?),
        "--workloads" => opts.workloads = list(&value()?, canonical_workload)?,
        "--threads" => opts.threads = list(&value()?, |t| num(t, "--threads"))?,
        "--time" => opts.seconds = num(&value()?, flag)?,
        "--warmup" => opts.warmup = num(&value()?, flag)?,
        "--rounds" => opts.rounds = num(&value()?, flag)?,
        "--topology" => opts.topologies = list(&value()?, Topology::parse)?,
        "--shard-groups" => opts.shard_groups = Some(num(&value()?, flag)?),
        "--tables" => opts.tables = num(&value()?, flag)?,
        "--table-size" => opts.table_size = num(&value()?, flag)?,
        "--scale" => opts.table_size = scale(opts.table_size, &value()?)?,
        "--target" => opts.externals.push(parse_target(&value()?)?),
        "--no-direct" => opts.direct = false,
        "--no-tessera" => opts.tessera = false,
        "--relay" => opts.relay = true,
        "--leg-floor" => opts.leg_floor = true,
        "--mysql" => opts.mysql = Some(parse_mysql(&value()?, opts.mysql.take())?),
        "--mysql-user" => mysql_mut(opts).user = value()?,
        "--mysql-password" => mysql_mut(opts).password = value()?,
        "--tessera-bin" => opts.tessera_bin = Some(value()?.into()),
        "--compare-bin" => opts.compare_bins.push(parse_compare_bin(&value()?)?),
        "--tessera-workers" => opts.tessera_workers = num(&value()?, flag)?,
        "--pool-max" => opts.pool_max = num(&value()?, flag)?,
        "--consistency" => opts.consistency = Some(consistency(&value()?)?),
        "--pin" => opts.pin = true,
        "--cpu-cap" => opts.cpu_cap = Some(cpu_cap(&value()?)?),
        "--tpcc-scaleout" => {}
        "--tpcc" => drop(tpcc_mut(opts)),
        "--tpcc-only" => {
            tpcc_mut(opts);
            opts.sysbench = false;
        }
        "--tpcc-warehouses" => tpcc_mut(opts).warehouses = num(&value()?, flag)?,
        "--tpcc-time" => tpcc_mut(opts).seconds = num(&value()?, flag)?,
        "--tpcc-threads" => tpcc_mut(opts).threads = num(&value()?, flag)?,
        "--go-tpc" => tpcc_mut(opts).go_tpc = Some(value()?.into()),
        "--out" => opts.out = Some(value()?.into()),
        "--anchors" => opts.anchors.push(value()?.into()),
        other => return Err(BenchError::Usage(format!("unknown option {other:?}"))),
    }
    Ok(())
}

fn tpcc_mut(opts: &mut BenchOptions) -> &mut TpccOptions {
    opts.tpcc.get_or_insert_with(TpccOptions::default)
}

fn mysql_mut(opts: &mut BenchOptions) -> &mut Endpoint {
    opts.mysql.get_or_insert_with(|| Endpoint {
        host: String::new(),
        port: 0,
        user: "root".into(),
        password: String::new(),
    })
}

/// The most groups `--shard-groups` starts (each is a MariaDB server on this machine).
const MAX_SHARD_GROUPS: u32 = 16;

fn validate(opts: &BenchOptions) -> Result<()> {
    let checks = [
        (
            opts.threads.is_empty() || opts.threads.contains(&0),
            "--threads needs counts of at least 1",
        ),
        (opts.workloads.is_empty(), "--workloads is empty"),
        (opts.seconds == 0, "--time must be at least 1 second"),
        (opts.rounds == 0, "--rounds must be at least 1"),
        (
            opts.tables == 0 || opts.table_size == 0,
            "--tables and --table-size must be at least 1",
        ),
        (
            !opts.direct && !opts.tessera && !opts.relay && opts.externals.is_empty(),
            "no target left to measure",
        ),
        (
            opts.relay && opts.externals.iter().any(|t| t.name == RELAY_TARGET),
            "--relay names its target `relay`: give the --target another name",
        ),
        (
            !opts.compare_bins.is_empty() && !opts.tessera,
            "--compare-bin measures beside the kit's Tessera: drop --no-tessera",
        ),
        (
            opts.compare_bins.iter().any(|(n, _)| {
                n == RELAY_TARGET
                    || opts.externals.iter().any(|t| &t.name == n)
                    || opts.compare_bins.iter().filter(|(m, _)| m == n).count() > 1
            }),
            "--compare-bin names must differ from each other, `relay` and the --target names",
        ),
        (
            opts.mysql.as_ref().is_some_and(|m| m.port == 0),
            "--mysql-user/--mysql-password need --mysql HOST:PORT",
        ),
        (
            opts.mysql.is_some() && opts.topologies.iter().any(|t| *t != Topology::Single),
            "--mysql works with --topology single only",
        ),
        (
            opts.shard_groups.is_some_and(|n| !(1..=MAX_SHARD_GROUPS).contains(&n)),
            "--shard-groups must be between 1 and 16",
        ),
        (
            opts.shard_groups.is_some() && !opts.topologies.iter().any(|t| t.is_sharded()),
            "--shard-groups needs --topology sharded",
        ),
        (
            opts.cpu_cap.is_some() && opts.mysql.is_some(),
            "--cpu-cap caps the servers the kit starts; it cannot be combined with --mysql",
        ),
        (
            opts.scaleout && !opts.topologies.iter().any(|t| t.is_sharded()),
            "--tpcc-scaleout measures the sharded topology; leave --topology out or include sharded",
        ),
    ];
    match checks.iter().find(|(bad, _)| *bad) {
        Some((_, why)) => Err(BenchError::Usage(why.to_string())),
        None => Ok(()),
    }
}

fn list<T>(text: &str, one: impl Fn(&str) -> Result<T>) -> Result<Vec<T>> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(one)
        .collect()
}

fn num<T: std::str::FromStr>(text: &str, flag: &str) -> Result<T> {
    text.trim()
        .parse()
        .map_err(|_| BenchError::Usage(format!("{flag}: {text:?} is not a valid number")))
}

/// A read consistency level Tessera knows.
fn consistency(value: &str) -> Result<String> {
    match value {
        "global" | "session" | "eventual" | "strong" => Ok(value.to_string()),
        other => Err(BenchError::Usage(format!(
            "--consistency {other:?}: use global, session, eventual or strong"
        ))),
    }
}

/// A CPU limit in cores: more than 0.01 (the kernel's 1 ms quota per 100 ms) and at most 64.
fn cpu_cap(text: &str) -> Result<f64> {
    let f: f64 = num(text, "--cpu-cap")?;
    if !(0.01..=64.0).contains(&f) {
        return Err(BenchError::Usage(format!(
            "--cpu-cap {text:?}: give the fraction of one core per server, between 0.01 and 64 (e.g. 0.25)"
        )));
    }
    Ok(f)
}

fn scale(table_size: u64, factor: &str) -> Result<u64> {
    let f: f64 = num(factor, "--scale")?;
    if !(f > 0.0 && f.is_finite()) {
        return Err(BenchError::Usage("--scale must be a positive number".into()));
    }
    Ok(((table_size as f64) * f).round().max(1.0) as u64)
}

fn host_port(text: &str, what: &str) -> Result<(String, u16)> {
    let (host, port) = text
        .rsplit_once(':')
        .ok_or_else(|| BenchError::Usage(format!("{what}: {text:?} is not HOST:PORT")))?;
    let port = num(port, what)?;
    if host.is_empty() || port == 0 {
        return Err(BenchError::Usage(format!("{what}: {text:?} is not HOST:PORT")));
    }
    Ok((host.to_string(), port))
}

fn parse_mysql(text: &str, previous: Option<Endpoint>) -> Result<Endpoint> {
    let (host, port) = host_port(text, "--mysql")?;
    let prev = previous.unwrap_or(Endpoint {
        host: String::new(),
        port: 0,
        user: "root".into(),
        password: String::new(),
    });
    Ok(Endpoint { host, port, ..prev })
}

/// `NAME=HOST:PORT[,user=U][,password=P][,pid=N]`
/// `--compare-bin NAME=PATH`: a target name and a tessera binary that exists.
pub fn parse_compare_bin(text: &str) -> Result<(String, PathBuf)> {
    let (name, path) = text
        .split_once('=')
        .ok_or_else(|| BenchError::Usage(format!("--compare-bin {text:?}: expected NAME=PATH")))?;
    let name = name.trim();
    if name.is_empty() || name.contains(['"', '|', ' ', ',']) || ["direct", "tessera"].contains(&name) {
        return Err(BenchError::Usage(format!(
            "--compare-bin: name {name:?} is empty, reserved or has a space, comma, quote or bar"
        )));
    }
    let bin = crate::tessera::locate_binary(Some(std::path::Path::new(path)))?;
    Ok((name.to_string(), bin))
}

pub fn parse_target(text: &str) -> Result<ExternalTarget> {
    let (name, rest) = text
        .split_once('=')
        .ok_or_else(|| BenchError::Usage(format!("--target {text:?}: expected NAME=HOST:PORT")))?;
    let mut parts = rest.split(',');
    let (host, port) = host_port(parts.next().unwrap_or(""), "--target")?;
    let mut target = ExternalTarget {
        name: name.trim().to_string(),
        host,
        port,
        user: None,
        password: None,
        pid: None,
    };
    for part in parts {
        match part.split_once('=') {
            Some(("user", v)) => target.user = Some(v.to_string()),
            Some(("password", v)) => target.password = Some(v.to_string()),
            Some(("pid", v)) => target.pid = Some(num(v, "--target pid")?),
            _ => return Err(BenchError::Usage(format!("--target: unknown part {part:?}"))),
        }
    }
    let bad_name = target.name.is_empty() || target.name.contains(['"', '|', ' ', ',']);
    if bad_name || ["direct", "tessera"].contains(&target.name.as_str()) {
        return Err(BenchError::Usage(format!(
            "--target: name {:?} is empty, reserved or has a space, comma, quote or bar",
            target.name
        )));
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn no_arguments_is_the_quick_preset() {
        let o = parse(&[]).unwrap();
        assert_eq!(o, BenchOptions::quick());
        assert_eq!(o.workloads, ["oltp_point_select", "oltp_read_only", "oltp_read_write"]);
        assert_eq!(o.threads, [4, 16, 64]);
        assert_eq!(o.topologies, [Topology::Single]);
        assert!(o.tpcc.is_none());
    }

    #[test]
    fn full_preset_covers_the_whole_matrix_and_flags_override_it() {
        let o = parse(&args("--threads 8,32 --preset full")).unwrap();
        assert_eq!(o.workloads.len(), 7);
        assert_eq!(o.threads, [8, 32]);
        assert_eq!(o.topologies.len(), 3);
        assert!(o.tpcc.is_some());
    }

    #[test]
    fn targets_parse_with_optional_parts() {
        let t = parse_target("proxysql=127.0.0.1:6034,user=u,password=p,pid=77").unwrap();
        assert_eq!(
            (t.name.as_str(), t.host.as_str(), t.port),
            ("proxysql", "127.0.0.1", 6034)
        );
        assert_eq!(
            (t.user.as_deref(), t.password.as_deref(), t.pid),
            (Some("u"), Some("p"), Some(77))
        );
        assert!(parse_target("x=127.0.0.1").is_err());
        assert!(parse_target("direct=127.0.0.1:1").is_err());
        assert!(parse_target("x=h:1,colour=red").is_err());
        assert!(parse_target("a b=h:1").is_err());
    }

    #[test]
    fn bad_values_are_usage_errors() {
        for bad in [
            "--threads 4,x",
            "--threads 0",
            "--time",
            "--workloads nope",
            "--topology ring",
            "--scale -1",
            "--frobnicate",
            "--no-direct --no-tessera",
            "--mysql-user bob",
            "--mysql 127.0.0.1:3306 --topology replica",
            "--mysql 127.0.0.1:3306 --topology sharded",
            "--shard-groups 3",
            "--topology sharded --shard-groups 0",
            "--topology sharded --shard-groups 17",
            "--topology sharded --shard-groups two",
            "--topology sharded --shard-groups",
            "--cpu-cap",
            "--cpu-cap 0",
            "--cpu-cap -0.5",
            "--cpu-cap quarter",
            "--cpu-cap 0.25 --mysql 127.0.0.1:3306",
            "--tpcc-scaleout --topology single",
        ] {
            let err = parse(&args(bad)).unwrap_err();
            assert!(matches!(err, BenchError::Usage(_)), "{bad}: {err}");
        }
    }

    #[test]
    fn scale_multiplies_the_table_size_and_tpcc_flags_enable_tpcc() {
        let o = parse(&args(
            "--table-size 1000 --scale 2.5 --tpcc-time 30 --mysql 10.0.0.1:3307",
        ))
        .unwrap();
        assert_eq!(o.table_size, 2500);
        assert_eq!(o.tpcc.unwrap().seconds, 30);
        let m = o.mysql.unwrap();
        assert_eq!((m.host.as_str(), m.port, m.user.as_str()), ("10.0.0.1", 3307, "root"));
        let o = parse(&args("--tpcc-only")).unwrap();
        assert!(!o.sysbench && o.tpcc.is_some());
    }

    #[test]
    fn the_leg_floor_is_measured_only_when_asked_for() {
        assert!(!parse(&[]).unwrap().leg_floor);
        assert!(!BenchOptions::full().leg_floor);
        assert!(parse(&args("--leg-floor --relay")).unwrap().leg_floor);
        assert!(USAGE.contains("--leg-floor"));
    }

    #[test]
    fn compare_bins_need_an_existing_binary_a_free_name_and_tessera() {
        let bin = std::env::current_exe().unwrap();
        let arg = |name: &str| format!("--compare-bin {name}={}", bin.display());
        let o = parse(&args(&arg("old"))).unwrap();
        assert_eq!(o.compare_bins, [("old".to_string(), bin.clone())]);
        assert!(parse(&args("--compare-bin old=/nonexistent/tessera")).is_err());
        assert!(parse(&args(&arg("tessera"))).is_err(), "reserved");
        assert!(
            parse(&args(&format!("{} {}", arg("old"), arg("old")))).is_err(),
            "twice"
        );
        assert!(parse(&args(&format!("{} --no-tessera", arg("old")))).is_err());
    }

    #[test]
    fn relay_is_off_unless_asked_for_and_keeps_its_name() {
        assert!(!parse(&[]).unwrap().relay);
        assert!(!BenchOptions::full().relay);
        let o = parse(&args("--relay --no-tessera --mysql 127.0.0.1:3306")).unwrap();
        assert!(o.relay && !o.tessera && o.direct);
        assert_eq!(o.mysql.unwrap().port, 3306);
        // --relay alone is a target: with direct and Tessera left out there is still one to measure.
        let o = parse(&args("--relay --no-direct --no-tessera")).unwrap();
        assert!(o.relay && o.externals.is_empty());
        // Other topologies parse (they note the relay as left out when they run).
        assert!(parse(&args("--relay --topology single,replica")).unwrap().relay);
        // Without --relay, `relay` is an ordinary --target name (a relay started by hand).
        assert_eq!(
            parse(&args("--target relay=127.0.0.1:7000")).unwrap().externals[0].name,
            "relay"
        );
        let err = parse(&args("--relay --target relay=127.0.0.1:7000")).unwrap_err();
        assert!(err.to_string().contains("another name"), "{err}");
        assert!(USAGE.contains("--relay "));
        assert!(USAGE.contains("tessera-bench relay LISTEN_ADDR BACKEND_ADDR"));
        assert!(USAGE.contains("tessera-bench leg-floor [THREADS] [SECONDS]"));
    }

    #[test]
    fn cpu_cap_is_a_fraction_of_a_core() {
        let o = parse(&args("--topology sharded --tpcc-only --cpu-cap 0.3")).unwrap();
        assert_eq!(o.cpu_cap, Some(0.3));
        assert!(!o.scaleout && !o.sysbench);
        assert_eq!(parse(&[]).unwrap().cpu_cap, None);
        assert!(USAGE.contains("--cpu-cap FRACTION"));
    }

    #[test]
    fn scaleout_sets_its_defaults_and_flags_override_them_in_any_order() {
        let o = parse(&args("--tpcc-scaleout")).unwrap();
        assert!(o.scaleout && !o.sysbench);
        assert_eq!(o.topologies, [Topology::Sharded { groups: 2 }]);
        assert_eq!(o.cpu_cap, Some(SCALEOUT_CPU_CAP));
        let t = o.tpcc.unwrap();
        assert_eq!((t.warehouses, t.threads), (SCALEOUT_WAREHOUSES, SCALEOUT_THREADS));
        let o = parse(&args(
            "--cpu-cap 0.2 --tpcc-warehouses 16 --tpcc-scaleout --tpcc-threads 48 --shard-groups 4",
        ))
        .unwrap();
        assert_eq!(o.cpu_cap, Some(0.2));
        assert_eq!(o.shard_groups, Some(4));
        let t = o.tpcc.unwrap();
        assert_eq!((t.warehouses, t.threads, t.seconds), (16, 48, 60));
    }

    #[test]
    fn sharded_topology_takes_the_group_count_in_any_order() {
        let o = parse(&args("--topology sharded")).unwrap();
        assert_eq!(o.topologies, [Topology::Sharded { groups: 2 }]);
        let o = parse(&args("--shard-groups 3 --topology single,sharded")).unwrap();
        assert_eq!(o.topologies, [Topology::Single, Topology::Sharded { groups: 3 }]);
        let o = parse(&args("--topology sharded --shard-groups 1")).unwrap();
        assert_eq!(o.topologies, [Topology::Sharded { groups: 1 }]);
        assert_eq!(o.shard_groups, Some(1));
        assert!(USAGE.contains("--shard-groups"));
        assert!(!BenchOptions::full().topologies.iter().any(|t| t.is_sharded()));
    }
}
