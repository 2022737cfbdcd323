//! One stream type for both sides of the proxy: plain TCP, or TLS as a server (clients) or as a
//! client (backends).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

/// A TCP connection, possibly wrapped in TLS.
#[derive(Debug)]
pub enum Stream {
    Tcp(TcpStream),
    /// TCP sending through the process's io_uring (`server.io` = "auto" where the kernel allows io_uring, or "uring").
    Uring(crate::uring::UringTcp),
    /// A unix-domain socket to a backend on the same host.
    Unix(UnixStream),
    ServerTls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
    ClientTls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
    /// An in-memory pipe: a fake backend or client in unit tests.
    Memory(tokio::io::DuplexStream),
}

impl Stream {
    /// A plain TCP stream, sending through `ring` when there is one.
    pub fn tcp(tcp: TcpStream, ring: Option<&std::sync::Arc<crate::uring::Ring>>) -> Stream {
        match ring {
            Some(ring) => Stream::Uring(crate::uring::UringTcp::new(tcp, ring.clone())),
            None => Stream::Tcp(tcp),
        }
    }

    /// The plain TCP stream under this one, for a TLS handshake, once every byte written has
    /// been sent.
    pub async fn into_plain_tcp(self) -> Option<TcpStream> {
        match self {
            Stream::Tcp(tcp) => Some(tcp),
            Stream::Uring(u) => u.into_tcp().await.ok(),
            _ => None,
        }
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Stream::ServerTls(_) | Stream::ClientTls(_))
    }

    /// TLS or a local unix socket: safe for a cleartext password (as MySQL treats them).
    pub fn is_secure(&self) -> bool {
        self.is_tls() || matches!(self, Stream::Unix(_))
    }

    /// True if the peer closed the socket or sent something while we expected silence
    /// (an idle backend connection that was killed, for example). Never blocks.
    pub fn peer_closed_or_chatty(&self) -> bool {
        let mut byte = [0u8; 1];
        let read = match self {
            Stream::Tcp(s) => s.try_read(&mut byte),
            Stream::Uring(s) => s.tcp().and_then(|s| s.try_read(&mut byte)),
            Stream::Unix(s) => s.try_read(&mut byte),
            Stream::ServerTls(s) => s.get_ref().0.try_read(&mut byte),
            Stream::ClientTls(s) => s.get_ref().0.try_read(&mut byte),
            Stream::Memory(_) => return false,
        };
        !matches!(read, Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    /// Writes without waiting, best effort (e.g. COM_QUIT when closing a plain connection).
    pub fn try_write_now(&self, bytes: &[u8]) {
        let _ = match self {
            Stream::Tcp(s) => s.try_write(bytes),
            Stream::Unix(s) => s.try_write(bytes),
            Stream::Uring(s) => s.try_write_now(bytes),
            _ => Ok(0),
        };
    }
}

macro_rules! delegate {
    ($self:ident, $s:ident => $e:expr) => {
        match $self.get_mut() {
            Stream::Tcp($s) => $e,
            Stream::Uring($s) => $e,
            Stream::Unix($s) => $e,
            Stream::ServerTls($s) => $e,
            Stream::ClientTls($s) => $e,
            Stream::Memory($s) => $e,
        }
    };
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        delegate!(self, s => Pin::new(s).poll_read(cx, buf))
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        delegate!(self, s => Pin::new(s).poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, s => Pin::new(s).poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, s => Pin::new(s).poll_shutdown(cx))
    }
}

impl tessera_protocol::packet::SendBuffer for Stream {
    /// Through io_uring the buffer itself is sent (no copy); other streams write it.
    #[inline]
    fn poll_send_buffer(&mut self, cx: &mut Context<'_>, buf: &mut bytes::BytesMut) -> Poll<io::Result<()>> {
        match self {
            Stream::Uring(s) => s.poll_send_buffer(cx, buf),
            other => tessera_protocol::packet::poll_write_buffer(other, cx, buf),
        }
    }

    #[inline]
    fn poll_send_lent(&mut self, cx: &mut Context<'_>, buf: &mut bytes::BytesMut) -> Poll<io::Result<()>> {
        match self {
            Stream::Uring(s) => s.poll_send_lent(cx, buf),
            other => tessera_protocol::packet::poll_write_buffer(other, cx, buf),
        }
    }
}
