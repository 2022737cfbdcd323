//! The real `tessera` binary as a child process, so a test can kill or abort it and start
//! another: configuration file and log in a temp dir, free ports, extra environment (e.g.
//! `TESSERA_FAILPOINTS`), readiness, exit status, and the admin endpoint's /metrics. A process
//! reads a configuration file, or is a fleet member reading etcd.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Placeholder in a configuration template for the client listener's address.
pub const LISTEN: &str = "@LISTEN@";
/// Placeholder in a configuration template for the admin endpoint's address.
pub const ADMIN: &str = "@ADMIN@";
/// How long a started process may take to accept clients and serve /metrics.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Attempts with new ports when a port picked as free was taken before Tessera bound it.
const PORT_ATTEMPTS: usize = 3;
const POLL: Duration = Duration::from_millis(20);
/// SIGABRT, the signal `std::process::abort` ends a process with.
pub const SIGABRT: i32 = 6;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// How a process gets its configuration.
enum Launch<'a> {
    /// A file written from this template.
    File(&'a str),
    /// A fleet's etcd.
    Member { etcd: &'a str, cluster: &'a str },
}

/// Starts the binary in `dir` with `args`, logging to `dir/tessera.log` (appended).
fn launch_binary(dir: &std::path::Path, args: &[String], env: &[(String, String)]) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("tessera.log"))
        .expect("log file");
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log handle"))
        .stderr(log)
        .spawn()
        .expect("tessera binary starts")
}

/// A running (or exited) `tessera --config` child. Dropping it SIGKILLs the process; its
/// directory is removed unless the thread is panicking (then its path is printed).
pub struct TesseraProcess {
    name: String,
    child: Child,
    exit: Option<ExitStatus>,
    dir: PathBuf,
    /// The client port (127.0.0.1).
    pub port: u16,
    /// The admin endpoint.
    pub admin: SocketAddr,
    /// What it was started with, for [`TesseraProcess::restart`].
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl TesseraProcess {
    /// Writes `template` (with [`LISTEN`] and [`ADMIN`] replaced by free 127.0.0.1 addresses) to
    /// a fresh temp dir, starts the binary with `env` added to its environment, and waits until
    /// it accepts clients and serves /metrics. Panics with the log's tail if it does not.
    pub fn start(name: &str, template: &str, env: &[(&str, &str)]) -> TesseraProcess {
        TesseraProcess::start_with(name, env, &Launch::File(template))
    }

    /// Starts `tessera --etcd URL --cluster CLUSTER` as fleet member `name` on free ports
    /// (given with --listen and --admin-listen), and waits until it serves.
    pub fn start_member(name: &str, etcd: &str, cluster: &str, env: &[(&str, &str)]) -> TesseraProcess {
        TesseraProcess::start_with(name, env, &Launch::Member { etcd, cluster })
    }

    fn start_with(name: &str, env: &[(&str, &str)], launch: &Launch) -> TesseraProcess {
        for _ in 0..PORT_ATTEMPTS {
            let mut process = TesseraProcess::spawn(name, launch, env);
            match process.wait_ready() {
                Ok(()) => return process,
                Err(log) if log.contains("cannot listen") => continue,
                Err(log) => panic!("tessera {name} did not start:\n{log}"),
            }
        }
        panic!("tessera {name}: no free ports after {PORT_ATTEMPTS} attempts");
    }

    fn spawn(name: &str, launch: &Launch, env: &[(&str, &str)]) -> TesseraProcess {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("tessera-proc-{}-{n}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("process dir");
        let port = free_port();
        let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
        let args: Vec<String> = match launch {
            Launch::File(template) => {
                let config = template
                    .replace(LISTEN, &format!("127.0.0.1:{port}"))
                    .replace(ADMIN, &admin.to_string());
                let config_path = dir.join("tessera.toml");
                std::fs::write(&config_path, config).expect("write config");
                vec!["--config".into(), config_path.display().to_string()]
            }
            Launch::Member { etcd, cluster } => [
                "--etcd",
                etcd,
                "--cluster",
                cluster,
                "--name",
                name,
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--admin-listen",
                &admin.to_string(),
            ]
            .map(String::from)
            .to_vec(),
        };
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let child = launch_binary(&dir, &args, &env);
        TesseraProcess {
            name: name.to_string(),
            child,
            exit: None,
            dir,
            port,
            admin,
            args,
            env,
        }
    }

    /// Starts the process again after it exited, on the same ports, configuration and log
    /// (appended), and waits until it serves.
    pub fn restart(&mut self) {
        assert!(self.try_exit().is_some(), "{} still runs", self.name);
        self.child = launch_binary(&self.dir, &self.args, &self.env);
        self.exit = None;
        if let Err(log) = self.wait_ready() {
            panic!("tessera {} did not start again:\n{log}", self.name);
        }
    }

    /// Ok once both listeners answer; Err(log) if the process exited or took too long.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(status) = self.try_exit() {
                return Err(format!("exited with {status}:\n{}", self.log()));
            }
            let client = TcpStream::connect(("127.0.0.1", self.port)).is_ok();
            if client && self.metrics().is_some() {
                return Ok(());
            }
            std::thread::sleep(POLL);
        }
        Err(format!("not ready within {READY_TIMEOUT:?}:\n{}", self.log()))
    }

    /// The name given at start (for messages).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The exit status once the process has exited (reaping it), else None.
    pub fn try_exit(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            self.exit = self.child.try_wait().expect("try_wait");
        }
        self.exit
    }

    /// Waits up to `timeout` for the process to exit by itself.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.try_exit() {
                return Some(status);
            }
            std::thread::sleep(POLL);
        }
        None
    }

    /// Sends SIGABRT (what `std::process::abort` would do) and waits for the exit.
    pub fn abort(&mut self) -> ExitStatus {
        let sent = Command::new("kill")
            .args(["-ABRT", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success() || self.try_exit().is_some(), "kill -ABRT failed");
        self.wait_exit(Duration::from_secs(10)).expect("exits after SIGABRT")
    }

    /// SIGTERM (a graceful shutdown) and wait up to `timeout` for the exit.
    pub fn terminate(&mut self, timeout: Duration) -> Option<ExitStatus> {
        if self.try_exit().is_none() {
            let _ = Command::new("kill")
                .args(["-TERM", &self.child.id().to_string()])
                .status();
        }
        self.wait_exit(timeout)
    }

    /// SIGKILL and wait (no-op once exited).
    pub fn kill(&mut self) {
        if self.try_exit().is_none() {
            let _ = self.child.kill();
            self.exit = Some(self.child.wait().expect("wait"));
        }
    }

    /// The process's log so far (stdout and stderr).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("tessera.log")).unwrap_or_default()
    }

    /// The last `n` lines of the log.
    pub fn log_tail(&self, n: usize) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// The body of GET /metrics, or None when the endpoint does not answer 200.
    pub fn metrics(&self) -> Option<String> {
        let response = http_get(self.admin, "/metrics")?;
        let (head, body) = response.split_once("\r\n\r\n")?;
        head.starts_with("HTTP/1.1 200").then(|| body.to_string())
    }

    /// The value of the sample `key` (a metric name with its labels exactly as exposed, e.g.
    /// `tessera_commits_total{protocol="two_phase"}`), or None if absent or unreachable.
    pub fn metric(&self, key: &str) -> Option<f64> {
        sample(&self.metrics()?, key)
    }
}

impl Drop for TesseraProcess {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!(
                "tessera {} kept its config and log in {}",
                self.name,
                self.dir.display()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// True when `status` says the process was ended by signal `signal`.
pub fn killed_by(status: ExitStatus, signal: i32) -> bool {
    status.signal() == Some(signal)
}

/// The value of sample `key` in Prometheus text `metrics`.
pub fn sample(metrics: &str, key: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?.strip_prefix(' ')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// A 127.0.0.1 port free at this instant.
fn free_port() -> u16 {
    tessera_sandbox::free_port().expect("free port")
}

/// A plain HTTP/1.1 GET; the whole response, or None if the server does not answer.
fn http_get(addr: SocketAddr, path: &str) -> Option<String> {
    let timeout = Duration::from_secs(5);
    let mut tcp = TcpStream::connect_timeout(&addr, timeout).ok()?;
    tcp.set_read_timeout(Some(timeout)).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: tessera\r\nConnection: close\r\n\r\n");
    tcp.write_all(request.as_bytes()).ok()?;
    let mut out = String::new();
    tcp.read_to_string(&mut out).ok()?;
    Some(out)
}
