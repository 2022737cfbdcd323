//! An HAProxy (Debian's `haproxy`) in front of Tessera processes, for the fleet's tests, the
//! benchmark kit and the cluster demo: [`HaProxy`] runs the repository's
//! `deploy/haproxy/haproxy.cfg` with its own ports ([`render`]) in a temp dir, and reads
//! each server's state from the admin socket.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Result, SandboxError};
use crate::ports::free_port;

const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The configuration shipped in the repository (`deploy/haproxy/haproxy.cfg`).
pub const SHIPPED_CONFIG: &str = include_str!("../../../deploy/haproxy/haproxy.cfg");

/// A proxy behind the balancer: its client port and its admin (health) port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backend {
    pub port: u16,
    pub admin_port: u16,
}

/// `template` (HAProxy configuration text) for this run: the `bind` line on 127.0.0.1:`port`,
/// one `server tesseraN` line per backend (in place of the template's), and the stats socket
/// at `socket`. Everything else is kept as written.
pub fn render(template: &str, port: u16, backends: &[Backend], socket: &Path) -> String {
    let mut out = String::new();
    let mut servers_written = false;
    for line in template.lines() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        if trimmed.starts_with("bind ") {
            out.push_str(&format!("{indent}bind 127.0.0.1:{port}\n"));
        } else if trimmed.starts_with("stats socket ") {
            out.push_str(&format!(
                "{indent}stats socket {} mode 600 level admin\n",
                socket.display()
            ));
        } else if trimmed.starts_with("server ") {
            if !servers_written {
                for (i, b) in backends.iter().enumerate() {
                    out.push_str(&format!(
                        "{indent}server tessera{} 127.0.0.1:{} check port {}\n",
                        i + 1,
                        b.port,
                        b.admin_port
                    ));
                }
                servers_written = true;
            }
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// A running HAProxy. Dropping it kills the process and removes its dir.
#[derive(Debug)]
pub struct HaProxy {
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl HaProxy {
    /// Starts HAProxy with `template` rendered for `backends` on a free port; returns once it
    /// accepts connections (its servers' checks may still be running: see
    /// [`HaProxy::wait_until`]).
    pub fn start(template: &str, backends: &[Backend]) -> Result<HaProxy> {
        let port = free_port()?;
        let dir = std::env::temp_dir().join(format!("tessera-haproxy-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| SandboxError::io(format!("creating {}", dir.display()), e))?;
        let config = render(template, port, backends, &dir.join("admin.sock"));
        std::fs::write(dir.join("haproxy.cfg"), config).map_err(|e| SandboxError::io("writing haproxy.cfg", e))?;
        let program = crate::tools::find_program("haproxy")?;
        let log = std::fs::File::create(dir.join("haproxy.log")).map_err(|e| SandboxError::io("haproxy.log", e))?;
        let child = Command::new(&program)
            .arg("-db")
            .arg("-f")
            .arg(dir.join("haproxy.cfg"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| SandboxError::io("haproxy.log", e))?)
            .stderr(log)
            .spawn()
            .map_err(|e| SandboxError::io(format!("starting {}", program.display()), e))?;
        let mut haproxy = HaProxy {
            dir,
            port,
            child: Some(child),
        };
        haproxy.wait_listening()?;
        Ok(haproxy)
    }

    /// The client port (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its directory (configuration, log, admin socket).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn wait_listening(&mut self) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(SandboxError::Command {
                    command: "haproxy".into(),
                    status: status.to_string(),
                    stderr: std::fs::read_to_string(self.dir.join("haproxy.log")).unwrap_or_default(),
                });
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() && self.admin("show info").is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(SandboxError::Command {
            command: "haproxy".into(),
            status: format!("not listening after {} s", START_TIMEOUT.as_secs()),
            stderr: std::fs::read_to_string(self.dir.join("haproxy.log")).unwrap_or_default(),
        })
    }

    /// One command on the admin socket (`show servers state`, `disable server ...`): its answer.
    pub fn admin(&self, command: &str) -> Result<String> {
        let socket = self.dir.join("admin.sock");
        let mut stream = UnixStream::connect(&socket).map_err(|e| SandboxError::io("haproxy admin socket", e))?;
        stream
            .write_all(format!("{command}\n").as_bytes())
            .map_err(|e| SandboxError::io("haproxy admin socket", e))?;
        let mut answer = String::new();
        stream
            .read_to_string(&mut answer)
            .map_err(|e| SandboxError::io("haproxy admin socket", e))?;
        Ok(answer)
    }

    /// Whether each server (tessera1, tessera2, ... in order) is up now, as the checks say.
    pub fn servers_up(&self) -> Result<Vec<bool>> {
        // `show servers state`: a version line, a header, then one line per server whose 6th
        // field is srv_op_state (2: running).
        let state = self.admin("show servers state tessera")?;
        Ok(state
            .lines()
            .filter(|l| !l.starts_with('#') && l.split_whitespace().count() > 6)
            .map(|l| l.split_whitespace().nth(5) == Some("2"))
            .collect())
    }

    /// Waits (up to `timeout`) until the servers' states are `wanted`.
    pub fn wait_until(&self, wanted: &[bool], timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            seen = self.servers_up()?;
            if seen == wanted {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(SandboxError::Command {
            command: "haproxy".into(),
            status: format!("servers up {seen:?}, never {wanted:?} within {timeout:?}"),
            stderr: String::new(),
        })
    }

    /// Ends the process and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for HaProxy {
    fn drop(&mut self) {
        self.stop();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_configuration_is_rendered_with_the_runs_ports_and_nothing_else_changed() {
        let template = SHIPPED_CONFIG;
        let backends = [
            Backend {
                port: 7001,
                admin_port: 8001,
            },
            Backend {
                port: 7002,
                admin_port: 8002,
            },
        ];
        let text = render(template, 7000, &backends, Path::new("/tmp/x.sock"));
        assert!(text.contains("    bind 127.0.0.1:7000\n"), "{text}");
        assert!(
            text.contains("    server tessera1 127.0.0.1:7001 check port 8001\n"),
            "{text}"
        );
        assert!(
            text.contains("    server tessera2 127.0.0.1:7002 check port 8002\n"),
            "{text}"
        );
        assert!(!text.contains("tessera3"), "{text}");
        assert!(text.contains("stats socket /tmp/x.sock mode 600 level admin"), "{text}");
        assert!(text.contains("option httpchk GET /health"), "{text}");
        let servers = text.lines().filter(|l| l.trim_start().starts_with("server "));
        assert_eq!(servers.count(), 2, "{text}");
    }
}
