//! The admin HTTP endpoint: `/metrics` (Prometheus text format) and `/health`.

use crate::context::Context;
use crate::error::ProxyError;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Starts the HTTP endpoint if `admin.http_listen` is set; returns the address it bound.
pub async fn spawn_http(ctx: Arc<Context>) -> Result<Option<std::net::SocketAddr>, ProxyError> {
    let addr = ctx.config.admin.http_listen.clone();
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
    let mut buf = vec![0u8; 2048];
    let n = match tokio::time::timeout(std::time::Duration::from_secs(5), tcp.read(&mut buf)).await {
        Ok(Ok(n)) => n,
        _ => return,
    };
    let request = String::from_utf8_lossy(&buf[..n]);
    let path = request.split_whitespace().nth(1).unwrap_or("/");
    let (status, body) = match path {
        "/metrics" => ("200 OK", crate::metrics::render(&ctx)),
        "/health" if ctx.groups.iter().all(|g| !g.primary.is_down()) => ("200 OK", "ok\n".to_string()),
        "/health" => ("503 Service Unavailable", "backend down\n".to_string()),
        _ => ("404 Not Found", "not found\n".to_string()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tcp.write_all(response.as_bytes()).await;
}
