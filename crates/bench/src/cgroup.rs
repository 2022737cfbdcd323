//! `--cpu-cap`: each MariaDB server the kit starts in a cgroup v1 `cpu` group of its own with a
//! CFS quota (a fraction of one core), removed again when the run ends or fails.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{BenchError, Result};

/// Where the cgroup v1 `cpu` controller is mounted.
pub const CPU_ROOT: &str = "/sys/fs/cgroup/cpu";
/// The CFS period the kit writes; the quota is this times the fraction.
pub const PERIOD_US: u64 = 100_000;
/// Prefix of every cgroup the kit creates (`tessera-bench-<our pid>-<server>`).
pub const PREFIX: &str = "tessera-bench-";

/// The quota in microseconds per [`PERIOD_US`] for `fraction` of one core (at least 1 ms,
/// the kernel's minimum).
pub fn quota_us(fraction: f64) -> u64 {
    ((fraction * PERIOD_US as f64).round() as u64).max(1_000)
}

/// The cgroup name of server `label` for this process.
pub fn group_name(label: &str) -> String {
    format!("{PREFIX}{}-{label}", std::process::id())
}

/// One capped server's cgroup; dropping it moves what is left back to the root and removes it.
#[derive(Debug)]
pub struct CpuCap {
    dir: PathBuf,
    root: PathBuf,
    pub pid: u32,
    pub quota_us: u64,
}

impl CpuCap {
    /// Creates `<root>/<group_name(label)>`, sets period and quota, and moves every thread of
    /// `pid` there (`cgroup.procs` moves the whole thread group; threads started later inherit it).
    pub fn apply(root: &Path, label: &str, pid: u32, fraction: f64) -> Result<CpuCap> {
        let dir = root.join(group_name(label));
        match std::fs::create_dir(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(cap_error(&dir, "creating", e)),
            _ => {}
        }
        let cap = CpuCap {
            dir,
            root: root.to_path_buf(),
            pid,
            quota_us: quota_us(fraction),
        };
        cap.write("cpu.cfs_period_us", &PERIOD_US.to_string())?;
        cap.write("cpu.cfs_quota_us", &cap.quota_us.to_string())?;
        cap.write("cgroup.procs", &pid.to_string())?;
        cap.verify_threads()?;
        Ok(cap)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn write(&self, file: &str, value: &str) -> Result<()> {
        let path = self.dir.join(file);
        std::fs::write(&path, value).map_err(|e| cap_error(&path, "writing", e))
    }

    /// Every thread of the server must be listed in the group's `tasks`.
    fn verify_threads(&self) -> Result<()> {
        let tasks = std::fs::read_to_string(self.dir.join("tasks")).unwrap_or_default();
        let listed: Vec<&str> = tasks.lines().collect();
        let threads = thread_ids(self.pid);
        match threads.iter().find(|t| !listed.contains(&t.as_str())) {
            Some(t) => Err(BenchError::CpuCap(format!(
                "thread {t} of mariadbd {} is not in {}/tasks",
                self.pid,
                self.dir.display()
            ))),
            None => Ok(()),
        }
    }
}

/// The thread ids of `pid` (`/proc/<pid>/task`).
fn thread_ids(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn cap_error(path: &Path, doing: &str, e: std::io::Error) -> BenchError {
    BenchError::CpuCap(format!(
        "{doing} {}: {e} (--cpu-cap needs root and cgroup v1's cpu controller at {CPU_ROOT})",
        path.display()
    ))
}

impl Drop for CpuCap {
    fn drop(&mut self) {
        // Threads still in the group (a server not stopped yet) go back to the root group.
        let tasks = std::fs::read_to_string(self.dir.join("tasks")).unwrap_or_default();
        for tid in tasks.lines() {
            let _ = std::fs::write(self.root.join("tasks"), tid);
        }
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("warning: could not remove cgroup {}", self.dir.display());
    }
}

/// Removes empty `tessera-bench-*` groups left by runs that were killed (their servers are gone).
pub fn reap_stale(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let owner = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        if let Some(pid) = owner {
            let alive = Path::new(&format!("/proc/{pid}")).exists();
            if !alive {
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_is_the_fraction_of_the_period() {
        assert_eq!(quota_us(0.25), 25_000);
        assert_eq!(quota_us(1.5), 150_000);
        assert_eq!(quota_us(0.0001), 1_000);
    }

    #[test]
    fn group_names_carry_our_pid_and_the_server() {
        let name = group_name("g2");
        assert!(name.starts_with(PREFIX), "{name}");
        assert!(name.ends_with(&format!("{}-g2", std::process::id())), "{name}");
    }

    #[test]
    fn a_missing_controller_is_a_cpu_cap_error() {
        let err = CpuCap::apply(Path::new("/nonexistent/cgroup/cpu"), "direct", 1, 0.25).unwrap_err();
        assert!(matches!(err, BenchError::CpuCap(_)), "{err}");
        assert!(err.to_string().contains("--cpu-cap"), "{err}");
    }
}
