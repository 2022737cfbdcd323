//! One etcd server (v3 API, Debian's `etcd-server`) with its own data dir on free ports, for
//! the fleet's tests, the benchmark kit and the cluster demo: [`EtcdServer`]. It can be
//! stopped and started again on the same ports and data, as an outage and its end.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Result, SandboxError};
use crate::ports::free_port;

/// How long etcd may take to answer after a start.
const ETCD_START_TIMEOUT: Duration = Duration::from_secs(30);

/// A local single-member etcd cluster. Dropping it kills the process and removes its dir.
#[derive(Debug)]
pub struct EtcdServer {
    dir: PathBuf,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
}

impl EtcdServer {
    /// Starts etcd in a fresh temp dir on free ports and waits until it answers.
    pub fn start() -> Result<EtcdServer> {
        let dir = std::env::temp_dir().join(format!("tessera-etcd-{}-{}", std::process::id(), free_port()?));
        std::fs::create_dir_all(&dir).map_err(|e| SandboxError::io(format!("creating {}", dir.display()), e))?;
        let mut etcd = EtcdServer {
            dir,
            client_port: free_port()?,
            peer_port: free_port()?,
            child: None,
        };
        etcd.restart()?;
        Ok(etcd)
    }

    /// `http://127.0.0.1:PORT`, what clients are given.
    pub fn client_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// Its directory (data and log).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Starts it again (same ports, same data) after [`EtcdServer::stop`], and waits until
    /// it answers.
    pub fn restart(&mut self) -> Result<()> {
        let program = crate::tools::find_program("etcd")?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("etcd.log"))
            .map_err(|e| SandboxError::io("opening etcd.log", e))?;
        let client = self.client_url();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let child = Command::new(&program)
            .arg("--name=sandbox")
            .arg(format!("--data-dir={}", self.dir.join("data").display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=sandbox={peer}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| SandboxError::io("etcd.log", e))?)
            .stderr(log)
            .spawn()
            .map_err(|e| SandboxError::io(format!("starting {}", program.display()), e))?;
        self.child = Some(child);
        self.wait_ready()
    }

    fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + ETCD_START_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(SandboxError::Command {
                    command: "etcd".into(),
                    status: status.to_string(),
                    stderr: self.log_tail(),
                });
            }
            if answers(self.client_port) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(SandboxError::Command {
            command: "etcd".into(),
            status: format!("not answering after {} s", ETCD_START_TIMEOUT.as_secs()),
            stderr: self.log_tail(),
        })
    }

    /// Ends the process (SIGKILL: an outage, as abrupt as a crash) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether the process is running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(Child::try_wait), Some(Ok(None)))
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

/// Whether etcd's gateway answers a range on `port` with 200.
fn answers(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut tcp) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(2)));
    let body = r#"{"key":"AA=="}"#;
    let request = format!(
        "POST /v3/kv/range HTTP/1.1\r\nHost: etcd\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut answer = String::new();
    tcp.write_all(request.as_bytes()).is_ok()
        && tcp.read_to_string(&mut answer).is_ok()
        && answer.starts_with("HTTP/1.1 200")
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.stop();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
