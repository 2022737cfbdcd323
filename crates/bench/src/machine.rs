//! Facts about the machine and the programs measured, for the top of the report.

use std::process::Command;

/// What the report says about where it was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineInfo {
    pub cores: usize,
    pub cpu_model: String,
    pub memory_gib: f64,
    pub kernel: String,
}

impl MachineInfo {
    pub fn read() -> MachineInfo {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        MachineInfo {
            cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            cpu_model: cpu_model(&cpuinfo).unwrap_or_else(|| "unknown CPU".into()),
            memory_gib: mem_total_kb(&meminfo).unwrap_or(0) as f64 / (1024.0 * 1024.0),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
        }
    }

    /// `2 cores (AMD EPYC ...), 23.5 GiB, Linux 6.1.0`
    pub fn summary(&self) -> String {
        format!(
            "{} cores ({}), {:.1} GiB, Linux {}",
            self.cores, self.cpu_model, self.memory_gib, self.kernel
        )
    }
}

fn cpu_model(cpuinfo: &str) -> Option<String> {
    let line = cpuinfo.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

fn mem_total_kb(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// First line a program prints for `args` (e.g. its version), or "not found".
pub fn program_version(program: &str, args: &[&str]) -> String {
    match Command::new(program).args(args).output() {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
            text.lines()
                .find(|l| !l.trim().is_empty() && !l.contains("maxprocs"))
                .unwrap_or("")
                .trim()
                .to_string()
        }
        Err(_) => "not found".into(),
    }
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) for `secs` since the Unix epoch.
pub fn utc_timestamp(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Now, as [`utc_timestamp`].
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    utc_timestamp(secs)
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(utc_timestamp(0), "1970-01-01 00:00:00");
        assert_eq!(utc_timestamp(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(utc_timestamp(1_795_262_399), "2026-11-21 11:59:59");
    }

    #[test]
    fn proc_files_are_read() {
        let cpuinfo = "processor\t: 0\nmodel name\t: Fancy CPU @ 3GHz\n";
        assert_eq!(cpu_model(cpuinfo).as_deref(), Some("Fancy CPU @ 3GHz"));
        assert_eq!(mem_total_kb("MemTotal:       24576000 kB\n"), Some(24_576_000));
        let m = MachineInfo::read();
        assert!(m.cores >= 1);
        assert!(m.summary().contains("cores"));
    }
}
