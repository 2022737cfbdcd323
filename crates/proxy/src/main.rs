//! The `tessera` binary: serve, check a configuration, or run a demo / sandbox.

use std::path::PathBuf;
use std::process::ExitCode;
use tessera_proxy::uring::ParkHook;

#[global_allocator]
static ALLOCATOR: tessera_proxy::alloc::MiMalloc = tessera_proxy::alloc::MiMalloc;

const USAGE: &str = "\
usage:
  tessera --config PATH            serve with the configuration file PATH
  tessera --etcd URLS --cluster NAME [--name NAME] [--listen ADDR] [--admin-listen ADDR]
          [--workers N] [--local PATH]
                                   serve as a member of fleet NAME: the shared configuration
                                   comes from etcd (and is followed as it is published); the
                                   options and the --local file set this process's own sockets,
                                   threads and TLS files
  tessera ctl --etcd URLS --cluster NAME COMMAND
                                   publish, rollback, diff, history, show, status
                                   (`tessera ctl --help`)
  tessera check-config PATH        validate a configuration file and exit
  tessera demo [--listen ADDR] [--pool-max N] [--auth-plugin P] [--prepared-cache N] [--env-file PATH]
               [--replicas N]   (default 1)  [--workers N]   (worker threads; default 0, one per core)
                                   sandbox MariaDB primary + replicas + sample schema behind Tessera (127.0.0.1:6033)
  tessera sandbox [--servers N] [--replicas]
                                   start N sandbox MariaDB servers until Ctrl-C (--replicas:
                                   s0 is a primary, the others its GTID replicas)
  tessera status (--admin HOST:PORT | --config PATH)
                                   per server: role, state, reads/writes routed, lag, GTID
  tessera reload (--admin HOST:PORT | --config PATH)
                                   the running Tessera reads its file again (as on SIGHUP):
                                   prints the new generation, or why it was refused
  tessera --version
  tessera --help";

enum Cli {
    Serve(PathBuf),
    Fleet(Box<tessera_proxy::fleet::FleetOptions>),
    Ctl(Vec<String>),
    Check(PathBuf),
    Demo(tessera_proxy::demo::DemoOptions),
    Sandbox(usize, bool),
    Status(String),
    Reload(String),
    Version,
    Help,
}

/// Options each command takes: those followed by a value, then switches.
fn known_options(command: &str) -> (&'static [&'static str], &'static [&'static str]) {
    match command {
        "--config" | "serve" => (&["--config"], &[]),
        "--etcd" => (
            &[
                "--etcd",
                "--cluster",
                "--name",
                "--listen",
                "--admin-listen",
                "--workers",
                "--local",
            ],
            &[],
        ),
        "demo" => (
            &[
                "--listen",
                "--pool-max",
                "--auth-plugin",
                "--prepared-cache",
                "--env-file",
                "--replicas",
                "--workers",
            ],
            &[],
        ),
        "sandbox" => (&["--servers"], &["--replicas"]),
        "status" | "reload" => (&["--admin", "--config"], &[]),
        _ => (&[], &[]),
    }
}

/// Rejects options a command does not know and options missing their value.
fn check_options(command: &str, rest: &[String]) -> Result<(), String> {
    let (with_value, switches) = known_options(command);
    let mut args = rest.iter();
    while let Some(arg) = args.next() {
        if with_value.contains(&arg.as_str()) {
            args.next().ok_or_else(|| format!("{arg} needs a value"))?;
        } else if !switches.contains(&arg.as_str()) {
            return Err(format!("`{command}` does not take `{arg}`"));
        }
    }
    Ok(())
}

fn parse_args(args: &[String]) -> Result<Cli, String> {
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if args.first().map(String::as_str) == Some("ctl") {
        return Ok(Cli::Ctl(args[1..].to_vec()));
    }
    if args.iter().any(|a| matches!(a.as_str(), "--help" | "-h" | "help")) {
        return Ok(Cli::Help);
    }
    match args.first().map(String::as_str) {
        Some(command @ ("--config" | "--etcd" | "serve" | "demo" | "sandbox" | "status" | "reload")) => {
            let rest = if command.starts_with("--") { args } else { &args[1..] };
            check_options(command, rest)?;
        }
        Some("check-config") if args.len() > 2 => return Err("check-config takes one PATH".into()),
        _ => {}
    }
    match args.first().map(String::as_str) {
        Some("--config") | Some("serve") => flag("--config")
            .map(|p| Cli::Serve(p.into()))
            .ok_or_else(|| "missing --config PATH".into()),
        Some("--etcd") => fleet_options(&flag).map(|o| Cli::Fleet(Box::new(o))),
        Some("check-config") => args
            .get(1)
            .map(|p| Cli::Check(p.into()))
            .ok_or_else(|| "missing PATH".into()),
        Some("demo") => demo_options(&flag).map(Cli::Demo),
        Some("sandbox") => {
            let n = flag("--servers").unwrap_or_else(|| "1".into());
            let replicas = args.iter().any(|a| a == "--replicas");
            n.parse()
                .map(|n| Cli::Sandbox(n, replicas))
                .map_err(|_| format!("--servers: `{n}` is not a number"))
        }
        Some("status") => status_address(&flag).map(Cli::Status),
        Some("reload") => status_address(&flag).map(Cli::Reload),
        Some("--version") | Some("-V") => Ok(Cli::Version),
        _ => Err("unknown command".into()),
    }
}

/// The admin address `tessera status` asks: `--admin`, or `admin.http_listen` of `--config`.
fn status_address(flag: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    if let Some(addr) = flag("--admin") {
        return Ok(addr);
    }
    let path = flag("--config").ok_or("status and reload need --admin HOST:PORT or --config PATH")?;
    let config = tessera_config::load_file(std::path::Path::new(&path)).map_err(|e| e.to_string())?;
    match config.admin.http_listen.as_str() {
        "" => Err(format!(
            "{path}: admin.http_listen is not set; status and reload are served there"
        )),
        addr => Ok(addr.to_string()),
    }
}

/// A fleet member's options: etcd, its cluster and name, and its per-process settings.
fn fleet_options(flag: &dyn Fn(&str) -> Option<String>) -> Result<tessera_proxy::fleet::FleetOptions, String> {
    use tessera_config::fleet::LocalSettings;
    let mut local = match flag("--local") {
        Some(path) => {
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
            LocalSettings::parse(&text, &path).map_err(|e| e.to_string())?
        }
        None => LocalSettings::default(),
    };
    if let Some(addr) = flag("--listen") {
        local.set("server", "listen", toml::Value::String(addr));
    }
    if let Some(addr) = flag("--admin-listen") {
        local.set("admin", "http_listen", toml::Value::String(addr));
    }
    if let Some(n) = flag("--workers") {
        let n: i64 = n.parse().map_err(|_| format!("--workers: `{n}` is not a number"))?;
        local.set("server", "worker_threads", toml::Value::Integer(n));
    }
    Ok(tessera_proxy::fleet::FleetOptions {
        etcd: flag("--etcd").ok_or("missing --etcd URLS")?,
        cluster: flag("--cluster").ok_or("--etcd needs --cluster NAME")?,
        name: flag("--name"),
        local,
    })
}

fn demo_options(flag: &dyn Fn(&str) -> Option<String>) -> Result<tessera_proxy::demo::DemoOptions, String> {
    let mut o = tessera_proxy::demo::DemoOptions::default();
    let number = |name: &str, default: usize| -> Result<usize, String> {
        flag(name).map_or(Ok(default), |v| {
            v.parse().map_err(|_| format!("{name}: `{v}` is not a number"))
        })
    };
    o.pool_max = number("--pool-max", o.pool_max)?;
    o.prepared_cache_size = number("--prepared-cache", o.prepared_cache_size)?;
    o.listen = flag("--listen").unwrap_or(o.listen);
    o.auth_plugin = flag("--auth-plugin").unwrap_or(o.auth_plugin);
    o.env_file = flag("--env-file");
    o.replicas = number("--replicas", o.replicas)?;
    o.workers = number("--workers", o.workers)?;
    Ok(o)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cli = match parse_args(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tessera: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    init_logging();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tessera: {e}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only on a terminal: a log file or a journal gets plain text.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .init();
}

/// The runtime for `workers` threads (0: one per core; 1: a current_thread runtime, no work
/// stealing or cross-thread wake-ups at all), and the hook its threads' park calls to submit
/// the io_uring's sends of the turn.
fn runtime(workers: usize) -> Result<(tokio::runtime::Runtime, ParkHook), String> {
    tessera_proxy::uring::runtime_with_park(workers).map_err(|e| e.to_string())
}

/// Serves as a fleet member: the configuration from etcd, then followed.
fn serve_fleet(opts: tessera_proxy::fleet::FleetOptions) -> Result<(), String> {
    use tessera_proxy::fleet::{follow, Fleet};
    let fleet = Fleet::new(opts).map_err(|e| e.to_string())?;
    let (first, _) = runtime(1)?;
    let start = first.block_on(fleet.start()).map_err(|e| e.to_string())?;
    drop(first);
    let (rt, park) = runtime(start.config.server.worker_threads)?;
    rt.block_on(async {
        let config = start.config.clone();
        let running = tessera_proxy::server::start_with_park(config, Some(park))
            .await
            .map_err(|e| e.to_string())?;
        let member = follow::join(fleet, &running, start).await.map_err(|e| e.to_string())?;
        // SIGHUP is caught (not left to end the process); it says there is no file to read.
        tessera_proxy::reload::on_sighup(running.ctx.clone());
        tessera_proxy::server::wait_for_signal().await;
        tracing::info!("shutting down: draining sessions");
        member.update(|m| m.state = "draining".into()).await;
        running.shutdown().await;
        member.leave().await;
        Ok(())
    })
}

/// `tessera ctl`: its output, and a failure exit when it did not do what was asked.
fn ctl(args: &[String]) -> Result<(), String> {
    use tessera_proxy::fleet::ctl;
    if args.is_empty() || args.iter().any(|a| matches!(a.as_str(), "--help" | "-h" | "help")) {
        println!("{}", ctl::USAGE);
        return Ok(());
    }
    let (rt, _) = runtime(1)?;
    let outcome = rt.block_on(ctl::run(args)).map_err(|e| e.to_string())?;
    print!("{}", outcome.text);
    if outcome.ok {
        Ok(())
    } else {
        Err("not every live proxy runs it (see above)".into())
    }
}

fn run(cli: Cli) -> Result<(), String> {
    match cli {
        Cli::Version => {
            println!("tessera {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Cli::Help => {
            println!("{USAGE}");
            Ok(())
        }
        Cli::Check(path) => {
            tessera_config::load_file(&path).map_err(|e| e.to_string())?;
            println!("{}: ok", path.display());
            Ok(())
        }
        Cli::Serve(path) => {
            let config = tessera_config::load_file(&path).map_err(|e| e.to_string())?;
            let (rt, park) = runtime(config.server.worker_threads)?;
            rt.block_on(async {
                let running = tessera_proxy::server::start_with_park(config, Some(park))
                    .await
                    .map_err(|e| e.to_string())?;
                let _ = running.ctx.config_path.set(path);
                tessera_proxy::reload::on_sighup(running.ctx.clone());
                tessera_proxy::server::wait_for_signal().await;
                tracing::info!("shutting down: draining sessions");
                running.shutdown().await;
                Ok(())
            })
        }
        Cli::Fleet(opts) => serve_fleet(*opts),
        Cli::Ctl(args) => ctl(&args),
        Cli::Demo(opts) => {
            let (rt, park) = runtime(opts.workers)?;
            rt.block_on(tessera_proxy::demo::run_demo(opts, Some(park)))
                .map_err(|e| e.to_string())
        }
        Cli::Sandbox(n, replicas) => {
            let (rt, _) = runtime(0)?;
            rt.block_on(tessera_proxy::demo::run_sandbox(n, replicas))
                .map_err(|e| e.to_string())
        }
        Cli::Reload(addr) => {
            let done = tessera_proxy::admin::post(&addr, "/reload").map_err(|e| format!("{addr}: {e}"))?;
            print!("{done}");
            Ok(())
        }
        Cli::Status(addr) => {
            let table = tessera_proxy::admin::fetch(&addr, "/status").map_err(|e| format!("{addr}: {e}"))?;
            print!("{}", tessera_proxy::admin::align_columns(&table));
            Ok(())
        }
    }
}
