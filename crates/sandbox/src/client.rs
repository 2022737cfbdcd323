//! Running SQL through the `mariadb` CLI as root over the unix socket, and the SQL that
//! sets up users and databases (quoting is pure and unit-tested).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::error::{Result, SandboxError};
use crate::tools::tools;

/// Runs `sql` in batch mode (`-N -B`) as root over `socket`; returns stdout.
/// The SQL is fed on stdin, so its size is not limited by the argument length limit.
pub(crate) fn run_sql(server: &str, socket: &Path, sql: &str) -> Result<String> {
    run_batch(server, socket, sql, &["-N", "-B"])
}

/// Like [`run_sql`], but the first line of the output holds the column names (`-B` only),
/// for results read by column name such as `SHOW SLAVE STATUS`.
pub(crate) fn run_sql_with_header(server: &str, socket: &Path, sql: &str) -> Result<String> {
    run_batch(server, socket, sql, &["-B"])
}

fn run_batch(server: &str, socket: &Path, sql: &str, args: &[&str]) -> Result<String> {
    let out = mariadb_cli(socket, args, Some(sql))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    Err(SandboxError::Sql {
        server: server.to_string(),
        sql: sql.to_string(),
        stderr: format!("{} ({})", String::from_utf8_lossy(&out.stderr).trim_end(), out.status),
    })
}

/// True when root can run `select 1` over the socket right now.
pub(crate) fn ping(socket: &Path) -> bool {
    if !socket.exists() {
        return false;
    }
    mariadb_cli(socket, &["-e", "select 1"], None)
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn mariadb_cli(socket: &Path, args: &[&str], stdin_sql: Option<&str>) -> Result<Output> {
    let client = &tools()?.client;
    let mut cmd = Command::new(client);
    cmd.arg("--no-defaults")
        .arg(format!("--socket={}", socket.display()))
        .arg("--user=root")
        .args(args)
        .stdin(if stdin_sql.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let ctx = || format!("running {} on {}", client.display(), socket.display());
    let mut child = cmd.spawn().map_err(|e| SandboxError::io(ctx(), e))?;
    // Write stdin from a thread so a large result cannot deadlock against a large input.
    let writer = match (stdin_sql, child.stdin.take()) {
        (Some(sql), Some(mut stdin)) => {
            let sql = sql.to_string();
            Some(std::thread::spawn(move || stdin.write_all(sql.as_bytes())))
        }
        _ => None,
    };
    let out = child.wait_with_output().map_err(|e| SandboxError::io(ctx(), e))?;
    if let Some(w) = writer {
        // A write error (client exited early) shows up as a failed status; ignore it here.
        let _ = w.join();
    }
    Ok(out)
}

/// Quotes a SQL string literal (single quotes, backslash-escaped).
pub(crate) fn quote_str(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('\'');
    for c in s.chars() {
        match c {
            '\'' => q.push_str("\\'"),
            '\\' => q.push_str("\\\\"),
            '\0' => q.push_str("\\0"),
            _ => q.push(c),
        }
    }
    q.push('\'');
    q
}

/// Quotes an identifier with backticks.
pub(crate) fn quote_ident(s: &str) -> String {
    format!("`{}`", s.replace('`', "``"))
}

/// Hosts each configured user is created for.
pub(crate) const USER_HOSTS: [&str; 3] = ["%", "localhost", "127.0.0.1"];

/// SQL creating the users (all privileges, grant option) and databases.
/// `root` keeps unix_socket as an alternative so the sandbox's own socket access survives.
pub(crate) fn setup_sql(users: &[(String, String)], databases: &[String]) -> String {
    let mut sql = String::new();
    for (name, password) in users {
        let socket_alt = if name == "root" { " OR unix_socket" } else { "" };
        for host in USER_HOSTS {
            let account = format!("{}@{}", quote_str(name), quote_str(host));
            sql.push_str(&format!(
                "CREATE USER IF NOT EXISTS {account};\n\
                 ALTER USER {account} IDENTIFIED VIA mysql_native_password USING PASSWORD({}){socket_alt};\n\
                 GRANT ALL PRIVILEGES ON *.* TO {account} WITH GRANT OPTION;\n",
                quote_str(password)
            ));
        }
    }
    for db in databases {
        sql.push_str(&format!("CREATE DATABASE IF NOT EXISTS {};\n", quote_ident(db)));
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(quote_str("abc"), "'abc'");
        assert_eq!(quote_str("a'b\\c"), r"'a\'b\\c'");
        assert_eq!(quote_ident("db"), "`db`");
        assert_eq!(quote_ident("we`ird"), "`we``ird`");
    }

    #[test]
    fn setup_sql_creates_every_host_and_database() {
        let sql = setup_sql(&[("tessera".into(), "pw'1".into())], &["test".into(), "sbtest".into()]);
        for host in USER_HOSTS {
            assert!(sql.contains(&format!("CREATE USER IF NOT EXISTS 'tessera'@'{host}';")));
            assert!(sql.contains(&format!(
                "GRANT ALL PRIVILEGES ON *.* TO 'tessera'@'{host}' WITH GRANT OPTION;"
            )));
        }
        assert!(sql.contains("USING PASSWORD('pw\\'1');"));
        assert!(!sql.contains("unix_socket"));
        assert!(sql.contains("CREATE DATABASE IF NOT EXISTS `test`;"));
        assert!(sql.contains("CREATE DATABASE IF NOT EXISTS `sbtest`;"));
    }

    #[test]
    fn root_keeps_socket_auth() {
        let sql = setup_sql(&[("root".into(), "pw".into())], &[]);
        assert!(sql.contains("USING PASSWORD('pw') OR unix_socket;"));
    }
}
