//! Shared helpers of the sandbox integration tests.

use std::process::Command;

use tessera_sandbox::Server;

/// Logs in over TCP with the `mariadb` CLI, as a client of the proxy would.
pub fn tcp_query(server: &Server, user: &str, password: &str, sql: &str) -> Result<String, String> {
    let out = Command::new("mariadb")
        .arg("--no-defaults")
        .arg(format!("-h{}", server.host()))
        .arg(format!("-P{}", server.port()))
        .arg(format!("-u{user}"))
        .arg(format!("-p{password}"))
        .args(["-N", "-B", "-e", sql])
        .output()
        .map_err(|e| format!("running mariadb: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}
