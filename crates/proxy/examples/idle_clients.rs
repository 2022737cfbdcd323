//! Opens N client connections to Tessera, logs each in, keeps them idle, and prints the proxy's
//! resident memory (pass its pid). Used to measure per-connection memory:
//! `cargo run --release --example idle_clients -- PORT COUNT PID`

#[path = "support/login.rs"]
mod support;

fn rss_kb(pid: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(port), Some(count), Some(pid)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("usage: idle_clients PORT COUNT PROXY_PID");
        std::process::exit(2);
    };
    let port: u16 = port.parse().expect("port");
    let count: usize = count.parse().expect("count");
    let before = rss_kb(pid);
    let mut held = Vec::with_capacity(count);
    for i in 0..count {
        match support::login(port, ("app", "app"), None, 0).await {
            Ok(io) => held.push(io),
            Err(e) => {
                eprintln!("connection {i}: {e}");
                break;
            }
        }
    }
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let after = rss_kb(pid);
    println!(
        "clients={} proxy_rss_before_kb={before} proxy_rss_after_kb={after} per_client_bytes={}",
        held.len(),
        (after.saturating_sub(before) * 1024) / held.len().max(1) as u64
    );
}
