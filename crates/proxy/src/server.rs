//! The client listener: connection limit, one task per client, and graceful shutdown (health
//! unhealthy, the balancer's checks seen, stop accepting, sessions end between transactions
//! up to a deadline, then close; see [`crate::drain`]).

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
    stop_accepting: watch::Sender<bool>,
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
    let listener = bind(&listen, ctx.generation().config.server.reuse_port)
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
    let (stop_accepting, accepting) = watch::channel(false);
    let accept_task = tokio::spawn(accept_loop(ctx.clone(), listener, accepting));
    tracing::info!(%addr, "tessera listening");
    Ok(Running {
        addr,
        admin_addr,
        ctx,
        shutdown: tx,
        stop_accepting,
        accept_task,
    })
}

/// The client listener, sharing its port with other processes when `reuse_port`.
async fn bind(listen: &str, reuse_port: bool) -> std::io::Result<TcpListener> {
    if !reuse_port {
        return TcpListener::bind(listen).await;
    }
    let addr = tokio::net::lookup_host(listen)
        .await?
        .next()
        .ok_or_else(|| std::io::Error::other("the address does not resolve"))?;
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.set_reuseport(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
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
    /// Drains, then returns: `/health` turns unhealthy, new clients are still taken until the
    /// balancer has seen that, then the listener closes and each session ends at its first
    /// moment outside a transaction. Sessions still open after `server.shutdown_timeout_ms`
    /// are closed once their running statement has answered.
    pub async fn shutdown(self) {
        let server = self.ctx.generation().config.server.clone();
        let drain = &self.ctx.drain;
        drain.begin();
        let noticed = drain.wait_for_balancer(server.drain_checks, server.drain_wait()).await;
        tracing::info!(
            balancer_noticed = noticed,
            health_checks = drain.unhealthy_answers(),
            "draining: the listener closes"
        );
        let _ = self.stop_accepting.send(true);
        let _ = self.accept_task.await;
        self.ctx.sessions.drain_all();
        let sessions = || self.ctx.metrics.client_connections.load(Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + server.shutdown_timeout();
        if !drain.wait_until(|| sessions() == 0, deadline).await {
            tracing::warn!(
                sessions = sessions(),
                "shutdown deadline reached; closing the sessions left once their statement answers"
            );
            self.ctx.sessions.kill_all();
            let grace = tokio::time::Instant::now() + std::time::Duration::from_secs(1);
            drain.wait_until(|| sessions() == 0, grace).await;
        }
        let _ = self.shutdown.send(true);
        tracing::info!(sessions = sessions(), "drained; bye");
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
