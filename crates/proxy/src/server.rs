//! The client listener: connection limit, one task per client, and graceful shutdown (stop
//! accepting, let running statements finish up to a deadline, then close).

use crate::context::Context;
use crate::error::ProxyError;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tessera_config::Config;
use tessera_protocol::response::ErrPacket;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

/// A started proxy: its address, shared context and the switch that stops it.
pub struct Running {
    pub addr: SocketAddr,
    /// Where /metrics and /health are served, when enabled.
    pub admin_addr: Option<SocketAddr>,
    pub ctx: Arc<Context>,
    shutdown: watch::Sender<bool>,
    accept_task: tokio::task::JoinHandle<()>,
}

/// Binds the listener and starts accepting clients and maintaining pools.
pub async fn start(config: Config) -> Result<Running, ProxyError> {
    start_with_park(config, None).await
}

/// [`start`] on a runtime from [`crate::uring::runtime_with_park`], whose park hook then
/// submits the io_uring's sends of each turn.
pub async fn start_with_park(config: Config, park: Option<crate::uring::ParkHook>) -> Result<Running, ProxyError> {
    let (tx, rx) = watch::channel(false);
    let listen = config.server.listen.clone();
    let ctx = Arc::new(Context::new(Arc::new(config), rx.clone(), park.as_ref())?);
    let listener = TcpListener::bind(&listen)
        .await
        .map_err(|e| ProxyError::Config(format!("cannot listen on {listen}: {e}")))?;
    let addr = listener.local_addr().map_err(|e| ProxyError::Config(e.to_string()))?;
    let gen = ctx.generation();
    for pool in gen.pools() {
        pool.start_upkeep(rx.clone());
    }
    for g in &gen.groups {
        // Learn the backend's version and capabilities early (for the greeting); a backend
        // that is down is simply retried later.
        let pool = g.primary().pool.clone();
        tokio::spawn(async move { drop(pool.checkout(crate::pool::Flavour::default(), false).await) });
    }
    crate::monitor::spawn(&ctx);
    crate::context::spawn_recovery(&ctx);
    let admin_addr = crate::admin::spawn_http(ctx.clone()).await?;
    let accept_task = tokio::spawn(accept_loop(ctx.clone(), listener, rx));
    tracing::info!(%addr, "tessera listening");
    Ok(Running {
        addr,
        admin_addr,
        ctx,
        shutdown: tx,
        accept_task,
    })
}

async fn accept_loop(ctx: Arc<Context>, listener: TcpListener, mut shutdown: watch::Receiver<bool>) {
    let limit = Arc::new(Semaphore::new(ctx.generation().config.server.max_connections));
    loop {
        let (tcp, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.changed() => return,
        };
        match limit.clone().try_acquire_owned() {
            Ok(permit) => {
                let ctx = ctx.clone();
                tokio::spawn(async move {
                    crate::session::serve(ctx, tcp, peer.ip().to_string()).await;
                    drop(permit);
                });
            }
            Err(_) => {
                tokio::spawn(refuse(tcp, ProxyError::TooManyConnections.to_err_packet()));
            }
        }
    }
}

/// Answers a connection we cannot take with an ERR packet instead of a greeting.
async fn refuse(mut tcp: TcpStream, err: ErrPacket) {
    let mut payload = bytes::BytesMut::new();
    err.encode(&mut payload);
    let mut frame = (payload.len() as u32).to_le_bytes().to_vec();
    frame[3] = 0;
    frame.extend_from_slice(&payload);
    let _ = tcp.write_all(&frame).await;
}

impl Running {
    /// Stops accepting, waits for sessions to finish (up to the shutdown timeout), then returns.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.accept_task.await;
        self.ctx.sessions.kill_all();
        let deadline = tokio::time::Instant::now() + self.ctx.generation().config.server.shutdown_timeout();
        while self.ctx.metrics.client_connections.load(Ordering::Relaxed) > 0 {
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(
                    sessions = self.ctx.metrics.client_connections.load(Ordering::Relaxed),
                    "shutdown deadline reached; closing remaining sessions"
                );
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        tracing::info!("all sessions closed; bye");
    }
}

/// Waits for SIGTERM or Ctrl-C.
pub async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
