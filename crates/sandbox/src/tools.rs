//! Locating the MariaDB programs (server, client, install-db) and the server version.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::error::{Result, SandboxError};

/// Absolute paths of the MariaDB programs we drive, plus the server version string.
#[derive(Debug, Clone)]
pub(crate) struct Tools {
    pub mariadbd: PathBuf,
    pub client: PathBuf,
    pub install_db: PathBuf,
    pub version: String,
}

static TOOLS: OnceLock<Tools> = OnceLock::new();

/// Finds the programs once per process. Env overrides: `TESSERA_MARIADBD`,
/// `TESSERA_MARIADB`, `TESSERA_MARIADB_INSTALL_DB`.
pub(crate) fn tools() -> Result<&'static Tools> {
    if let Some(t) = TOOLS.get() {
        return Ok(t);
    }
    let mariadbd = locate("TESSERA_MARIADBD", &["mariadbd", "mysqld"])?;
    let client = locate("TESSERA_MARIADB", &["mariadb", "mysql"])?;
    let install_db = locate(
        "TESSERA_MARIADB_INSTALL_DB",
        &["mariadb-install-db", "mysql_install_db"],
    )?;
    let version = server_version(&mariadbd)?;
    Ok(TOOLS.get_or_init(|| Tools {
        mariadbd,
        client,
        install_db,
        version,
    }))
}

/// A program other than MariaDB's (etcd, haproxy), from PATH or the usual system dirs;
/// `TESSERA_<NAME>` overrides it.
pub(crate) fn find_program(name: &str) -> Result<PathBuf> {
    locate(&format!("TESSERA_{}", name.to_ascii_uppercase()), &[name])
}

fn locate(env_var: &str, names: &[&str]) -> Result<PathBuf> {
    if let Some(p) = std::env::var_os(env_var) {
        return Ok(PathBuf::from(p));
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for extra in ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"] {
        dirs.push(PathBuf::from(extra));
    }
    names
        .iter()
        .flat_map(|n| dirs.iter().map(move |d| d.join(n)))
        .find(|p| is_executable(p))
        .ok_or_else(|| SandboxError::ToolNotFound(names[0].to_string()))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn server_version(mariadbd: &Path) -> Result<String> {
    let out = Command::new(mariadbd)
        .arg("--version")
        .output()
        .map_err(|e| SandboxError::io(format!("running {} --version", mariadbd.display()), e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    parse_version(&text).ok_or_else(|| SandboxError::Command {
        command: format!("{} --version", mariadbd.display()),
        status: out.status.to_string(),
        stderr: format!("cannot parse version from {text:?}"),
    })
}

/// Extracts the word after `Ver` and keeps only file-name-safe characters.
pub(crate) fn parse_version(text: &str) -> Option<String> {
    let mut words = text.split_whitespace();
    words.find(|w| *w == "Ver")?;
    let raw = words.next()?;
    let clean: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || ".-_+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    (!clean.is_empty()).then_some(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_debian_version_line() {
        let line = "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)\n";
        assert_eq!(parse_version(line).as_deref(), Some("10.11.19-MariaDB-0+deb12u1"));
    }

    #[test]
    fn sanitizes_and_rejects() {
        assert_eq!(parse_version("x Ver 1/2 y").as_deref(), Some("1_2"));
        assert_eq!(parse_version("no version here"), None);
        assert_eq!(parse_version("Ver"), None);
    }
}
