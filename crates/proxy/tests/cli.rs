//! The `tessera` binary's own commands: check-config (valid and invalid files) and --version.

use std::process::Command;

fn tessera(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .output()
        .expect("tessera runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn check_config_accepts_good_and_names_key_and_fix_for_bad() {
    let dir = std::env::temp_dir().join(format!("tessera-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let good = dir.join("good.toml");
    std::fs::write(
        &good,
        "[[users]]\nname = \"app\"\npassword = \"x\"\n[[groups]]\nname = \"g\"\nuser = \"u\"\nprimary = { address = \"127.0.0.1:3306\" }\n",
    )
    .expect("write");
    let (ok, text) = tessera(&["check-config", good.to_str().expect("path")]);
    assert!(ok && text.contains("ok"), "{text}");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[pool]\nmax_size = 0\n[[users]]\nname = \"app\"\n[[groups]]\nname = \"g\"\nuser = \"u\"\nprimary = { address = \"x:1\" }\n")
        .expect("write");
    let (ok, text) = tessera(&["check-config", bad.to_str().expect("path")]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("bad.toml") && text.contains("pool.max_size") && text.contains("fix:"),
        "{text}"
    );
    let (ok, text) = tessera(&["check-config", "/nonexistent.toml"]);
    assert!(!ok && text.contains("cannot read"), "{text}");
    let (ok, text) = tessera(&["frobnicate"]);
    assert!(!ok && text.contains("usage"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_and_unknown_options() {
    let (ok, text) = tessera(&["--help"]);
    assert!(
        ok && text.contains("usage") && text.contains("tessera sandbox"),
        "{text}"
    );
    let (ok, text) = tessera(&["sandbox", "--help"]);
    assert!(ok && text.contains("usage"), "{text}");
    let (ok, text) = tessera(&["sandbox", "--servrs", "3"]);
    assert!(!ok && text.contains("`sandbox` does not take `--servrs`"), "{text}");
    let (ok, text) = tessera(&["demo", "--replicas"]);
    assert!(!ok && text.contains("--replicas needs a value"), "{text}");
    let (ok, text) = tessera(&["status", "--admin", "127.0.0.1:1", "extra"]);
    assert!(!ok && text.contains("does not take `extra`"), "{text}");
}

#[test]
fn version() {
    let (ok, text) = tessera(&["--version"]);
    assert!(ok && text.starts_with("tessera "), "{text}");
}
