//! Server processes the kit starts itself (Tessera, the relay): output to a log file, ready once
//! the log shows the bound address and a connect succeeds, stopped and reaped when dropped.

use std::fs::File;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{BenchError, Result};

const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause between two readiness checks (each is a log read and a connect).
const POLL_EVERY: Duration = Duration::from_millis(20);
/// Tries of a start whose port was taken between choosing it and binding it.
const PORT_ATTEMPTS: u32 = 5;

/// A running child process; SIGTERM (then SIGKILL after a while) and reaped when dropped.
pub struct ServerProcess {
    child: Child,
    log_path: PathBuf,
}

impl ServerProcess {
    /// Starts `cmd` with stdin closed and stdout and stderr into a new file at `log_path`.
    pub fn spawn(cmd: &mut Command, log_path: &Path) -> Result<ServerProcess> {
        let log = File::create(log_path).map_err(|e| BenchError::io(format!("creating {}", log_path.display()), e))?;
        let log2 = log.try_clone().map_err(|e| BenchError::io("log file", e))?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| BenchError::io(format!("starting {}", cmd.get_program().to_string_lossy()), e))?;
        Ok(ServerProcess {
            child,
            log_path: log_path.to_path_buf(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the process wrote so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Waits until the log contains `marker` (proof that this process bound the port, not some
    /// other one) and `addr` accepts a connection, for at most `timeout`. The error says why not:
    /// the process exited (with its log) or the time ran out.
    pub fn wait_ready(&mut self, addr: &str, marker: &str, timeout: Duration) -> std::result::Result<(), String> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("exited at start ({status}):\n{}", self.log()));
            }
            if self.log().contains(marker) && TcpStream::connect(addr).is_ok() {
                return Ok(());
            }
            std::thread::sleep(POLL_EVERY);
        }
        Err(format!("not accepting on {addr} after {timeout:?}"))
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // SAFETY: kill(2) with a pid we own and a valid signal number.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(POLL_EVERY);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `start` (which picks a free port and starts a server on it) again, up to a few times,
/// while it fails because another process took that port between choosing and binding it.
pub fn on_free_port<T>(mut start: impl FnMut() -> Result<T>) -> Result<T> {
    let mut attempt = 1;
    loop {
        match start() {
            Err(e) if e.to_string().contains("Address already in use") && attempt < PORT_ATTEMPTS => attempt += 1,
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_clash_means_another_try_and_other_errors_do_not() {
        let mut calls = 0;
        let started = on_free_port(|| {
            calls += 1;
            match calls {
                1 => Err(BenchError::Relay("Address already in use (os error 98)".into())),
                _ => Ok(calls),
            }
        });
        assert_eq!(started.unwrap(), 2);
        let mut calls = 0;
        let failed: Result<()> = on_free_port(|| {
            calls += 1;
            Err(BenchError::Relay("no such backend".into()))
        });
        assert!(failed.is_err());
        assert_eq!(calls, 1);
        let mut calls = 0;
        let clashing: Result<()> = on_free_port(|| {
            calls += 1;
            Err(BenchError::Relay("Address already in use".into()))
        });
        assert!(clashing.is_err());
        assert_eq!(calls, PORT_ATTEMPTS);
    }

    #[test]
    fn a_process_that_exits_at_start_is_reported_with_its_log() {
        let dir = std::env::temp_dir().join(format!("tessera-bench-child-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo cannot bind; exit 3"]);
        let mut process = ServerProcess::spawn(&mut cmd, &dir.join("exits.log")).unwrap();
        let err = process
            .wait_ready("127.0.0.1:1", "listening", Duration::from_secs(10))
            .unwrap_err();
        assert!(
            err.starts_with("exited at start") && err.contains("cannot bind"),
            "{err}"
        );
        drop(process);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
