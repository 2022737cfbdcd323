//! One mariadbd process with its own data dir, socket and TCP port: [`Server`].

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::args::{server_args, ServerSpec, CONSOLE_LOG, SOCKET_FILE};
use crate::client::{ping, run_sql, run_sql_with_header};
use crate::error::{Result, SandboxError};
use crate::ports::free_port;
use crate::tools::tools;

/// How long a start may take before it is declared failed.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a graceful stop may take before SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest unix socket path we accept (`sun_path` is 108 bytes including the NUL).
pub const MAX_SOCKET_PATH: usize = 107;
/// Attempts at binding a port (new ports on first start, the same port on restart).
const PORT_ATTEMPTS: usize = 3;
const POLL: Duration = Duration::from_millis(50);
const LOG_TAIL_LINES: usize = 30;

static SERVER_COUNTER: AtomicU32 = AtomicU32::new(0);

/// A local MariaDB server owned by a [`crate::Sandbox`].
#[derive(Debug)]
pub struct Server {
    name: String,
    spec: ServerSpec,
    child: Option<Child>,
    last_exit: Option<ExitStatus>,
}

/// Server ids unique within the process and unlikely to clash across processes.
fn next_server_id() -> u32 {
    let n = SERVER_COUNTER.fetch_add(1, Ordering::Relaxed) & 0xFFF;
    ((std::process::id() & 0x3_FFFF) << 12 | n) + 1
}

impl Server {
    /// Describes a server in `datadir` (not created or started yet; port chosen at start).
    pub(crate) fn new(name: String, datadir: PathBuf, binlog: bool, extra_args: Vec<String>) -> Result<Server> {
        let socket = datadir.join(SOCKET_FILE);
        let len = socket.as_os_str().len();
        if len > MAX_SOCKET_PATH {
            return Err(SandboxError::SocketPathTooLong {
                path: socket,
                len,
                max: MAX_SOCKET_PATH,
            });
        }
        let spec = ServerSpec {
            datadir,
            socket,
            port: 0,
            server_id: next_server_id(),
            binlog,
            replica: false,
            extra_args,
        };
        Ok(Server {
            name,
            spec,
            child: None,
            last_exit: None,
        })
    }

    /// Turns this (not yet started) server into a replica: binary log on, `--read-only`,
    /// relay log in the data dir. Replication itself is configured by SQL after the start.
    pub(crate) fn into_replica(mut self) -> Server {
        self.spec.binlog = true;
        self.spec.replica = true;
        self
    }

    /// Whether the sandbox runs this server as a replica of `s0` (`replication` option).
    pub fn is_replica(&self) -> bool {
        self.spec.replica
    }

    /// `"s0"`, `"s1"`, ...
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Always `"127.0.0.1"`.
    pub fn host(&self) -> &str {
        "127.0.0.1"
    }

    /// The TCP port (0 before the first start).
    pub fn port(&self) -> u16 {
        self.spec.port
    }

    /// The unix socket root connects through.
    pub fn socket(&self) -> &Path {
        &self.spec.socket
    }

    /// The server's data dir.
    pub fn datadir(&self) -> &Path {
        &self.spec.datadir
    }

    /// The server's error log (appended to across restarts).
    pub fn error_log(&self) -> PathBuf {
        self.spec.error_log()
    }

    /// The `--server-id` this server runs with.
    pub fn server_id(&self) -> u32 {
        self.spec.server_id
    }

    /// Pid of the mariadbd process we hold, if any (it may have exited: see `is_running`).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is alive; reaps it if it has exited.
    pub fn is_running(&mut self) -> bool {
        let Some(child) = self.child.as_mut() else {
            return false;
        };
        match child.try_wait() {
            Ok(None) => true,
            Ok(Some(status)) => {
                tracing::debug!(server = %self.name, %status, "mariadbd exited");
                self.child = None;
                self.last_exit = Some(status);
                false
            }
            Err(_) => true,
        }
    }

    /// Runs SQL as root over the socket with `mariadb -N -B`; returns stdout.
    pub fn sql(&self, sql: &str) -> Result<String> {
        run_sql(&self.name, &self.spec.socket, sql)
    }

    /// Like [`Server::sql`], with the column names as the first output line.
    pub(crate) fn sql_with_header(&self, sql: &str) -> Result<String> {
        run_sql_with_header(&self.name, &self.spec.socket, sql)
    }

    /// SIGKILL and wait for the exit. No-op when not running.
    pub fn kill(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        // Fails only if it already exited; wait() below reaps it either way.
        let _ = child.kill();
        let status = child
            .wait()
            .map_err(|e| SandboxError::io(format!("waiting for server {}", self.name), e))?;
        self.last_exit = Some(status);
        Ok(())
    }

    /// SIGTERM, wait up to [`STOP_TIMEOUT`], then SIGKILL. No-op when not running.
    pub fn stop(&mut self) -> Result<()> {
        self.signal_term();
        self.wait_exit(Instant::now() + STOP_TIMEOUT)
    }

    /// (Re)starts on the same port and data dir and waits until root can connect.
    pub fn start(&mut self) -> Result<()> {
        if self.is_running() {
            return Err(SandboxError::AlreadyRunning {
                server: self.name.clone(),
                pid: self.pid().unwrap_or(0),
            });
        }
        if self.spec.port == 0 {
            return self.start_on_free_port();
        }
        let mut last = None;
        for attempt in 0..PORT_ATTEMPTS {
            match self.launch_once() {
                Err(e @ SandboxError::PortInUse { .. }) => {
                    tracing::warn!(server = %self.name, port = self.spec.port, attempt, "port busy on restart");
                    last = Some(e);
                    std::thread::sleep(Duration::from_millis(500));
                }
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| self.port_in_use(String::new())))
    }

    /// First start: picks a free port, and a new one if mariadbd finds it taken.
    pub(crate) fn start_on_free_port(&mut self) -> Result<()> {
        let mut last = None;
        for attempt in 0..PORT_ATTEMPTS {
            self.spec.port = free_port()?;
            match self.launch_once() {
                Err(e @ SandboxError::PortInUse { .. }) => {
                    tracing::warn!(server = %self.name, port = self.spec.port, attempt, "port taken, retrying with another");
                    last = Some(e);
                }
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| self.port_in_use(String::new())))
    }

    fn port_in_use(&self, log_tail: String) -> SandboxError {
        SandboxError::PortInUse {
            server: self.name.clone(),
            port: self.spec.port,
            log_tail,
        }
    }

    /// Spawns mariadbd once and waits until it answers or fails.
    fn launch_once(&mut self) -> Result<()> {
        let log_offset = fs::metadata(self.spec.error_log()).map_or(0, |m| m.len());
        self.spawn()?;
        self.wait_ready(log_offset)
    }

    fn spawn(&mut self) -> Result<()> {
        let mariadbd = &tools()?.mariadbd;
        let tmpdir = self.spec.tmpdir();
        std::fs::create_dir_all(&tmpdir).map_err(|e| SandboxError::io(format!("creating {}", tmpdir.display()), e))?;
        let console_path = self.spec.datadir.join(CONSOLE_LOG);
        let console = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&console_path)
            .map_err(|e| SandboxError::io(format!("opening {}", console_path.display()), e))?;
        let console2 = console
            .try_clone()
            .map_err(|e| SandboxError::io(format!("duplicating {}", console_path.display()), e))?;
        let child = Command::new(mariadbd)
            .args(server_args(&self.spec))
            .stdin(Stdio::null())
            .stdout(console)
            .stderr(console2)
            .spawn()
            .map_err(|e| SandboxError::io(format!("spawning {}", mariadbd.display()), e))?;
        tracing::debug!(server = %self.name, pid = child.id(), port = self.spec.port, "spawned mariadbd");
        self.child = Some(child);
        Ok(())
    }

    fn wait_ready(&mut self, log_offset: u64) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if !self.is_running() {
                return Err(self.classify_early_exit(log_offset));
            }
            if ping(&self.spec.socket) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let _ = self.kill();
                return Err(SandboxError::StartTimeout {
                    server: self.name.clone(),
                    secs: START_TIMEOUT.as_secs(),
                    log_tail: self.log_tail(log_offset),
                });
            }
            std::thread::sleep(POLL);
        }
    }

    fn classify_early_exit(&self, log_offset: u64) -> SandboxError {
        let log = read_from(&self.spec.error_log(), log_offset);
        let tail = tail_lines(&log, LOG_TAIL_LINES);
        if is_port_conflict(&log) {
            return self.port_in_use(tail);
        }
        SandboxError::ExitedDuringStart {
            server: self.name.clone(),
            status: self
                .last_exit
                .map_or_else(|| "unknown status".to_string(), |s| s.to_string()),
            log_tail: tail,
        }
    }

    /// The last lines of the error log written since `offset`.
    fn log_tail(&self, offset: u64) -> String {
        tail_lines(&read_from(&self.spec.error_log(), offset), LOG_TAIL_LINES)
    }

    /// Sends SIGTERM if running (used for parallel shutdown of a whole sandbox).
    pub(crate) fn signal_term(&mut self) {
        if !self.is_running() {
            return;
        }
        if let Some(pid) = self.pid().and_then(|p| libc::pid_t::try_from(p).ok()) {
            // SAFETY: plain kill(2) on our own, not yet reaped, child.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
    }

    /// Waits for the exit until `deadline`, then SIGKILLs.
    pub(crate) fn wait_exit(&mut self, deadline: Instant) -> Result<()> {
        while self.is_running() {
            if Instant::now() >= deadline {
                tracing::warn!(server = %self.name, "mariadbd ignored SIGTERM; sending SIGKILL");
                return self.kill();
            }
            std::thread::sleep(POLL);
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The sandbox stops servers gracefully before this; this is only a safety net.
        let _ = self.kill();
    }
}

/// True when the error log shows that the TCP port could not be bound.
pub(crate) fn is_port_conflict(log: &str) -> bool {
    log.contains("Address already in use")
        || log.contains("Bind on TCP/IP port")
        || log.contains("another server running on port")
}

fn read_from(path: &Path, offset: u64) -> String {
    let mut buf = Vec::new();
    let read = File::open(path).and_then(|mut f| {
        f.seek(SeekFrom::Start(offset))?;
        f.read_to_end(&mut buf)
    });
    match read {
        Ok(_) => String::from_utf8_lossy(&buf).into_owned(),
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// The last `n` lines of `text`.
pub(crate) fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_last_lines() {
        assert_eq!(tail_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail_lines("a", 5), "a");
        assert_eq!(tail_lines("", 3), "");
    }

    #[test]
    fn detects_port_conflicts() {
        let log = "2024 [ERROR] Can't start server: Bind on TCP/IP port. Got error: 98: Address already in use\n";
        assert!(is_port_conflict(log));
        assert!(!is_port_conflict("[ERROR] InnoDB: File ./ib_logfile0 was not found"));
    }

    #[test]
    fn long_socket_paths_are_rejected() {
        let long = PathBuf::from(format!("/tmp/{}", "x".repeat(120)));
        let err = Server::new("s0".into(), long, false, Vec::new()).unwrap_err();
        assert!(matches!(err, SandboxError::SocketPathTooLong { .. }));
    }

    #[test]
    fn server_ids_differ() {
        let a = Server::new("s0".into(), "/tmp/a".into(), false, Vec::new()).unwrap();
        let b = Server::new("s1".into(), "/tmp/b".into(), false, Vec::new()).unwrap();
        assert_ne!(a.server_id(), b.server_id());
        assert_eq!(a.port(), 0);
        assert_eq!(a.socket(), Path::new("/tmp/a/mysql.sock"));
    }
}
