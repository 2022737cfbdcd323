//! Cleaning up after processes that died without dropping their sandbox (killed test
//! binaries, timeouts): their mariadbd children keep running, holding memory and ports.
//!
//! Only default base dirs (`<tmp>/tessera-sandbox-<pid>-<n>`) whose owner pid is gone are
//! touched: servers whose command line names that dir are SIGKILLed, and the dir is removed
//! unless it carries the keep marker (written for `keep_on_drop`).

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

/// Prefix of default base dir names.
pub(crate) const BASE_PREFIX: &str = "tessera-sandbox-";
/// File in a base dir that asks the reaper to leave the dir itself alone.
pub(crate) const KEEP_MARKER: &str = "tessera-keep";

/// Best effort; never fails.
pub(crate) fn reap_stale(tmp: &Path) {
    let Ok(entries) = fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name.to_str().and_then(owner_pid) else {
            continue;
        };
        if owner == std::process::id() || process_alive(owner) {
            continue;
        }
        let dir = entry.path();
        if !dir.is_dir() {
            continue;
        }
        tracing::info!(dir = %dir.display(), owner, "cleaning up a sandbox left by a dead process");
        kill_servers_in(&dir);
        if !dir.join(KEEP_MARKER).exists() {
            let _ = fs::remove_dir_all(&dir);
        }
    }
}

/// Parses `tessera-sandbox-<pid>-<n>` and returns the pid.
pub(crate) fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(BASE_PREFIX)?;
    let (pid, n) = rest.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(n) {
        return None;
    }
    pid.parse().ok()
}

fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// SIGKILLs every live mariadbd running on a sub dir of `dir`.
fn kill_servers_in(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = running_server_pid(&entry.path()) else {
            continue;
        };
        if let Ok(p) = libc::pid_t::try_from(pid) {
            // SAFETY: kill(2) on a pid verified to be a mariadbd of this data dir.
            unsafe { libc::kill(p, libc::SIGKILL) };
            wait_gone(pid, Duration::from_secs(5));
        }
    }
}

/// The pid of a live mariadbd serving `datadir`: its pid file names a process whose
/// command line has `--datadir=<datadir>` (guards against pid reuse).
pub(crate) fn running_server_pid(datadir: &Path) -> Option<u32> {
    let pid_file = datadir.join(crate::args::PID_FILE);
    let pid = fs::read_to_string(pid_file).ok()?.trim().parse::<u32>().ok()?;
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    if is_zombie(&stat) {
        return None;
    }
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let needle = format!("--datadir={}\0", datadir.display());
    String::from_utf8_lossy(&cmdline).contains(&needle).then_some(pid)
}

/// Waits until `pid` is gone or a zombie (we are not its parent, so cannot reap it).
fn wait_gone(pid: u32, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        match fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return,
            Ok(stat) if is_zombie(&stat) => return,
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// `/proc/<pid>/stat` state field is after the `)` that closes the command name.
fn is_zombie(stat: &str) -> bool {
    stat.rsplit_once(')')
        .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_owner_pid() {
        assert_eq!(owner_pid("tessera-sandbox-1234-0"), Some(1234));
        assert_eq!(owner_pid("tessera-sandbox-1234-17"), Some(1234));
        assert_eq!(owner_pid("tessera-sandbox-template-10.11.19-MariaDB"), None);
        assert_eq!(owner_pid("tessera-sandbox-12-x"), None);
        assert_eq!(owner_pid("tessera-sandbox-12"), None);
        assert_eq!(owner_pid("other-1-2"), None);
    }

    #[test]
    fn zombie_state() {
        assert!(is_zombie("123 (mariadbd) Z 1 2 3"));
        assert!(!is_zombie("123 (my (odd) name) S 1 2 3"));
    }

    #[test]
    fn own_process_is_alive() {
        assert!(process_alive(std::process::id()));
    }
}
