//! One initialized data dir per MariaDB version, shared by every sandbox on the machine
//! and copied (sparsely, so it is cheap) for each server.
//!
//! Creation is safe against concurrent threads (a mutex) and processes (an advisory
//! `flock` plus build-in-a-temp-dir-then-rename: if the rename loses, the winner's is used).

use std::fs::{self, File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::args::INNODB_LOG_FILE_SIZE;
use crate::error::{Result, SandboxError};
use crate::tools::tools;

/// Marker written into a finished template; a dir without it is not trusted.
const MARKER: &str = "tessera-template.ok";
/// Set to `1` to skip the template and run mariadb-install-db for every server.
pub const NO_TEMPLATE_ENV: &str = "TESSERA_SANDBOX_NO_TEMPLATE";

static LOCAL_LOCK: Mutex<()> = Mutex::new(());
static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Creates `dest` as a fresh, initialized (but never started) data dir.
pub(crate) fn prepare_datadir(dest: &Path) -> Result<()> {
    if std::env::var(NO_TEMPLATE_ENV).is_ok_and(|v| v == "1") {
        return install_db(dest);
    }
    let template = ensure_template()?;
    run(Command::new("cp")
        .arg("-a")
        .arg("--sparse=always")
        .arg(&template)
        .arg(dest))
}

/// Path of this MariaDB version's template (without creating it).
pub fn template_path() -> Result<PathBuf> {
    let version = &tools()?.version;
    Ok(std::env::temp_dir().join(format!("tessera-sandbox-template-{version}")))
}

/// Returns the template dir, building it first if no process has yet.
pub(crate) fn ensure_template() -> Result<PathBuf> {
    let path = template_path()?;
    if path.join(MARKER).is_file() {
        return Ok(path);
    }
    let _local = LOCAL_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let _file_lock = FileLock::acquire(&with_suffix(&path, ".lock"))?;
    if path.join(MARKER).is_file() {
        return Ok(path);
    }
    if path.exists() {
        discard_broken(&path)?;
    }
    build_template(&path)?;
    Ok(path)
}

fn build_template(path: &Path) -> Result<()> {
    let started = std::time::Instant::now();
    let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let tag = format!(".tmp-{}-{n}", std::process::id());
    let raw = with_suffix(path, &format!("{tag}-raw"));
    let tmp = with_suffix(path, &tag);
    let result = install_db(&raw)
        // Rewriting makes the zero-filled redo log sparse: later copies are then ~10 MB.
        .and_then(|()| run(Command::new("cp").args(["-a", "--sparse=always"]).arg(&raw).arg(&tmp)))
        .and_then(|()| {
            fs::write(tmp.join(MARKER), b"ok\n")
                .map_err(|e| SandboxError::io(format!("writing marker in {}", tmp.display()), e))
        });
    let _ = fs::remove_dir_all(&raw);
    if let Err(e) = result {
        let _ = fs::remove_dir_all(&tmp);
        return Err(e);
    }
    match fs::rename(&tmp, path) {
        Ok(()) => {
            tracing::info!(path = %path.display(), elapsed = ?started.elapsed(), "created MariaDB template data dir");
            Ok(())
        }
        // Another process won the race: use its template.
        Err(_) if path.join(MARKER).is_file() => {
            let _ = fs::remove_dir_all(&tmp);
            Ok(())
        }
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp);
            Err(SandboxError::io(
                format!("moving the template into place at {}", path.display()),
                e,
            ))
        }
    }
}

/// Runs mariadb-install-db into `dest` (which must not exist yet).
fn install_db(dest: &Path) -> Result<()> {
    let t = tools()?;
    run(Command::new(&t.install_db)
        .arg("--no-defaults")
        .arg("--user=root")
        .arg(format!("--datadir={}", dest.display()))
        .arg("--auth-root-authentication-method=socket")
        .arg("--skip-test-db")
        .arg(format!("--innodb-log-file-size={INNODB_LOG_FILE_SIZE}")))
}

/// Moves an unfinished or foreign dir out of the way and deletes it.
fn discard_broken(path: &Path) -> Result<()> {
    let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let aside = with_suffix(path, &format!(".broken-{}-{n}", std::process::id()));
    tracing::warn!(path = %path.display(), "template dir has no marker; rebuilding");
    fs::rename(path, &aside).map_err(|e| SandboxError::io(format!("moving aside {}", path.display()), e))?;
    let _ = fs::remove_dir_all(&aside);
    Ok(())
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Runs a command, turning a failure into [`SandboxError::Command`] with its output.
pub(crate) fn run(cmd: &mut Command) -> Result<()> {
    let desc = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| SandboxError::io(format!("running {desc}"), e))?;
    if out.status.success() {
        return Ok(());
    }
    Err(SandboxError::Command {
        command: desc,
        status: out.status.to_string(),
        stderr: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        ),
    })
}

/// An exclusive advisory lock on a file, released when dropped (or when the process dies).
struct FileLock {
    _file: File,
}

impl FileLock {
    fn acquire(path: &Path) -> Result<FileLock> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| SandboxError::io(format!("opening lock file {}", path.display()), e))?;
        loop {
            // SAFETY: flock on a valid, owned file descriptor.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            if rc == 0 {
                return Ok(FileLock { _file: file });
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(SandboxError::io(format!("locking {}", path.display()), err));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffix_is_appended_to_the_last_component() {
        assert_eq!(
            with_suffix(Path::new("/tmp/tpl-1.2"), ".lock"),
            PathBuf::from("/tmp/tpl-1.2.lock")
        );
    }

    #[test]
    fn run_reports_failures() {
        assert!(run(&mut Command::new("true")).is_ok());
        let err = run(Command::new("sh").args(["-c", "echo boom >&2; exit 3"])).unwrap_err();
        match err {
            SandboxError::Command { stderr, .. } => assert!(stderr.contains("boom")),
            other => panic!("unexpected {other:?}"),
        }
    }
}
