//! The admin HTTP endpoint: `/metrics` (Prometheus text format), `/health`, `/status`
//! (per server: role, state, routed statements, lag; what `tessera status` prints), and
//! `POST /reload` (the configuration file read again as the next generation; `tessera reload`).

pub mod exposition;

use crate::context::Context;
use crate::error::ProxyError;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Starts the HTTP endpoint if `admin.http_listen` is set; returns the address it bound.
pub async fn spawn_http(ctx: Arc<Context>) -> Result<Option<std::net::SocketAddr>, ProxyError> {
    let addr = ctx.generation().config.admin.http_listen.clone();
    if addr.is_empty() {
        return Ok(None);
    }
    let listener = TcpListener::bind(&addr)
        .await
        .map_err(|e| ProxyError::Config(format!("cannot listen on admin.http_listen {addr}: {e}")))?;
    let bound = listener.local_addr().map_err(|e| ProxyError::Config(e.to_string()))?;
    let mut shutdown = ctx.shutdown.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                r = listener.accept() => if let Ok((tcp, _)) = r { tokio::spawn(answer(ctx.clone(), tcp)); },
                _ = shutdown.changed() => return,
            }
        }
    });
    tracing::info!(%bound, "admin http listening");
    Ok(Some(bound))
}

async fn answer(ctx: Arc<Context>, mut tcp: TcpStream) {
    let Some(head) = read_request_head(&mut tcp).await else {
        return;
    };
    let request = String::from_utf8_lossy(&head);
    let mut words = request.split_whitespace();
    let method = words.next().unwrap_or("GET");
    let path = words.next().unwrap_or("/");
    let (status, body) = match path {
        "/reload" if method == "POST" => match crate::reload::from_file(&ctx) {
            Ok(done) => ("200 OK", format!("{done}\n")),
            Err(e) => {
                tracing::warn!(error = %e, "reload refused; the running configuration goes on");
                (
                    "409 Conflict",
                    format!("reload refused, generation {} goes on: {e}\n", ctx.generation_number()),
                )
            }
        },
        "/reload" => ("405 Method Not Allowed", "POST /reload\n".to_string()),
        "/metrics" => ("200 OK", exposition::render(&ctx)),
        "/status" => ("200 OK", exposition::render_status(&ctx)),
        "/health" => health(&ctx),
        _ => ("404 Not Found", "not found\n".to_string()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tcp.write_all(response.as_bytes()).await;
}

/// `/health`: unhealthy while the process drains (counted: the drain waits for the balancer
/// to have seen it) or while a group's primary is down.
fn health(ctx: &Context) -> (&'static str, String) {
    if ctx.drain.health_checked() {
        ("503 Service Unavailable", "draining\n".to_string())
    } else if ctx.generation().groups.iter().any(|g| g.primary().pool.is_down()) {
        ("503 Service Unavailable", "backend down\n".to_string())
    } else {
        ("200 OK", "ok\n".to_string())
    }
}

/// Reads until the end of the request head (or 4 KiB, or 5 s); None when the peer gave up.
async fn read_request_head(tcp: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 4096 {
        let n = tokio::time::timeout_at(deadline, tcp.read(&mut buf)).await.ok()?.ok()?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    (!head.is_empty()).then_some(head)
}

/// GETs `path` from an admin endpoint (blocking; for `tessera status`). Returns the body.
pub fn fetch(addr: &str, path: &str) -> std::io::Result<String> {
    request(addr, "GET", path)
}

/// POSTs to `path` of an admin endpoint (blocking; `tessera reload`). Returns the body, or
/// an error carrying the body of a refusal.
pub fn post(addr: &str, path: &str) -> std::io::Result<String> {
    request(addr, "POST", path)
}

fn request(addr: &str, method: &str, path: &str) -> std::io::Result<String> {
    use std::io::{Read, Write};

    let timeout = std::time::Duration::from_secs(5);
    let target = std::net::ToSocketAddrs::to_socket_addrs(addr)?
        .next()
        .ok_or_else(|| std::io::Error::other("address does not resolve"))?;
    let mut tcp = std::net::TcpStream::connect_timeout(&target, timeout)?;
    tcp.set_read_timeout(Some(timeout))?;
    let request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    tcp.write_all(request.as_bytes())?;
    let mut response = String::new();
    tcp.read_to_string(&mut response)?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("not an HTTP response"))?;
    if !head.starts_with("HTTP/1.1 200") {
        let status = head.lines().next().unwrap_or("");
        return Err(std::io::Error::other(format!("{status}: {}", body.trim_end())));
    }
    Ok(body.to_string())
}

/// Lines of tab-separated cells, padded into aligned columns.
pub fn align_columns(text: &str) -> String {
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
    let mut widths: Vec<usize> = Vec::new();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            if widths.len() <= i {
                widths.push(0);
            }
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths[i]))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_are_aligned() {
        let t = super::align_columns("a\tbb\tc\nlonger\tx\ty\n");
        assert_eq!(t, "a       bb  c\nlonger  x   y\n");
    }
}
