//! TLS for clients and the auth plugins, driven with the real `mariadb` command-line client:
//! mysql_native_password, caching_sha2_password fast path, caching_sha2_password full
//! authentication over TLS, and a native-hash-only account switched to mysql_native_password.

use crate::common;

use std::process::Command;

fn self_signed_cert(dir: &std::path::Path) -> (String, String) {
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    let status = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=tessera-test",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs");
    assert!(
        status.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    (cert.display().to_string(), key.display().to_string())
}

/// Runs the mariadb CLI against Tessera; returns (success, stdout, stderr).
fn cli(port: u16, user: &str, password: &str, extra: &[&str], sql: &str) -> (bool, String, String) {
    let out = Command::new("mariadb")
        .args([
            "-h127.0.0.1",
            &format!("-P{port}"),
            &format!("-u{user}"),
            &format!("-p{password}"),
            "-N",
            "-B",
        ])
        .args(extra)
        .args(["-e", sql])
        .output()
        .expect("mariadb client runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_and_auth_plugins_with_the_mariadb_client() {
    let dir = std::env::temp_dir().join(format!("tessera-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (cert, key) = self_signed_cert(&dir);
    let server = format!("tls_cert = \"{cert}\"\ntls_key = \"{key}\"\ndefault_auth_plugin = \"caching_sha2_password\"");
    let sandbox = tokio::task::spawn_blocking(common::sandbox).await.expect("sandbox");
    let mut config = common::config(sandbox.servers()[0].port(), &server, "");
    config.users.push(tessera_config::UserConfig {
        name: "hashed".into(),
        password: None,
        password_hash: Some("*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19".into()), // PASSWORD('password')
        read_write_split: true,
        read_consistency: "session".into(),
        backend_user: None,
        backend_password: None,
    });
    let proxy = tessera_proxy::server::start(config).await.expect("proxy");
    let port = proxy.addr.port();
    let result = tokio::task::spawn_blocking(move || {
        let tls = ["--ssl", "--ssl-verify-server-cert=0"];
        let (ok, out, err) = cli(
            port,
            "app",
            "app",
            &tls,
            "SHOW STATUS LIKE 'Ssl_cipher'; SELECT 'over tls'",
        );
        assert!(ok, "{err}");
        assert!(out.ends_with("over tls"), "{out}");
        let (ok, out, err) = cli(port, "app", "app", &["--skip-ssl"], "SELECT 'sha2 fast path'");
        assert!(ok && out == "sha2 fast path", "{out} {err}");
        let (ok, out, err) = cli(
            port,
            "hashed",
            "password",
            &["--skip-ssl"],
            "SELECT CURRENT_USER() IS NOT NULL",
        );
        assert!(ok && out == "1", "native hash account via auth switch: {out} {err}");
        let (ok, _, err) = cli(port, "app", "nope", &tls, "SELECT 1");
        assert!(!ok && err.contains("1045"), "{err}");
        let (ok, _, err) = cli(port, "hashed", "nope", &["--skip-ssl"], "SELECT 1");
        assert!(!ok && err.contains("1045"), "{err}");
    })
    .await;
    proxy.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    result.expect("checks pass");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_to_the_backend() {
    let dir = std::env::temp_dir().join(format!("tessera-btls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (cert, key) = self_signed_cert(&dir);
    let opts = tessera_sandbox::SandboxOptions {
        extra_args: vec![format!("--ssl-cert={cert}"), format!("--ssl-key={key}")],
        ..Default::default()
    };
    let sandbox = tokio::task::spawn_blocking(move || tessera_sandbox::Sandbox::start(opts).expect("sandbox with TLS"))
        .await
        .expect("sandbox thread");
    let mut config = common::config(sandbox.servers()[0].port(), "", "");
    config.groups[0].tls = true;
    let proxy = tessera_proxy::server::start(config).await.expect("proxy");
    let mut c = common::Client::connect(proxy.addr.port(), "app", "app", None)
        .await
        .expect("login");
    let rows = c.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'").await.expect("status");
    let cipher = rows[0][1].clone().unwrap_or_default();
    assert!(!cipher.is_empty(), "the backend connection is encrypted: {rows:?}");
    proxy.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
