//! Packet framing over an async stream: 3-byte length + sequence id, 16 MiB split and join,
//! buffered reads and batched writes (several packets per syscall), write buffers handed to
//! the stream whole ([`SendBuffer`]) and whole results passed from one stream to another.

use crate::error::{ProtocolError, Result};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest payload of one frame; a logical packet of this size or more continues in the next frame.
pub const MAX_FRAME: usize = 0xff_ffff;
const READ_CHUNK: usize = 16 * 1024;
/// What [`PacketStream::peer_closed`] makes room for per read.
const WATCH_READ: usize = 512;
/// Buffers grown beyond this by a large packet are released once empty again.
const SHRINK_ABOVE: usize = 256 * 1024;
/// Whole buffered results at least this long are lent to the client's stream rather than
/// copied into its write buffer ([`PacketStream::pass_buffered_to`]).
const LEND_AT: usize = 4 * 1024;

/// A stream [`PacketStream::flush`] hands its queued packets to. By default they are written
/// (the stream copies them); a stream that sends from buffers it owns takes the whole write
/// buffer instead, and gives back an empty one for the next packets: no copy.
pub trait SendBuffer: AsyncWrite + Unpin {
    /// Ready once every byte of `buf` is the stream's, written or taken to be sent; `buf` is
    /// then empty (its capacity says nothing of the one it had).
    fn poll_send_buffer(&mut self, cx: &mut Context<'_>, buf: &mut BytesMut) -> Poll<std::io::Result<()>> {
        poll_write_buffer(self, cx, buf)
    }

    /// [`SendBuffer::poll_send_buffer`] for bytes lent by another buffer (a part of a read
    /// buffer): taken whole or written, but never kept for reuse, and nothing given back.
    fn poll_send_lent(&mut self, cx: &mut Context<'_>, buf: &mut BytesMut) -> Poll<std::io::Result<()>> {
        poll_write_buffer(self, cx, buf)
    }
}

/// [`SendBuffer::poll_send_buffer`] by writes: the stream copies the bytes, `buf` is consumed.
pub fn poll_write_buffer<W: AsyncWrite + Unpin + ?Sized>(
    stream: &mut W,
    cx: &mut Context<'_>,
    buf: &mut BytesMut,
) -> Poll<std::io::Result<()>> {
    while !buf.is_empty() {
        let n = ready!(Pin::new(&mut *stream).poll_write(cx, buf))?;
        if n == 0 {
            return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
        }
        buf.advance(n);
    }
    Poll::Ready(Ok(()))
}

impl SendBuffer for tokio::net::TcpStream {}
impl SendBuffer for tokio::net::UnixStream {}
impl SendBuffer for tokio::io::DuplexStream {}

/// A MySQL packet connection: owns the stream, a read buffer, a write buffer and the sequence id.
#[derive(Debug)]
pub struct PacketStream<S> {
    stream: S,
    rbuf: BytesMut,
    wbuf: BytesMut,
    /// Bytes lent by another stream's read buffer, queued after what `wbuf` holds
    /// to be sent as they are.
    lent: Option<BytesMut>,
    seq: u8,
    max_packet: usize,
    read_chunk: usize,
}

impl<S: AsyncRead + SendBuffer> PacketStream<S> {
    pub fn new(stream: S) -> Self {
        Self::with_buffer(stream, BytesMut::new())
    }

    /// Wraps a stream whose first bytes were already read into `rbuf`.
    pub fn with_buffer(stream: S, rbuf: BytesMut) -> Self {
        PacketStream {
            stream,
            rbuf,
            wbuf: BytesMut::new(),
            lent: None,
            seq: 0,
            max_packet: 1 << 30,
            read_chunk: READ_CHUNK,
        }
    }

    /// How much to read at least per syscall (small for many idle clients, larger for backends).
    pub fn set_read_chunk(&mut self, bytes: usize) {
        self.read_chunk = bytes.max(64);
    }

    /// Largest logical packet accepted by [`Self::read_packet`].
    pub fn set_max_packet(&mut self, max: usize) {
        self.max_packet = max;
    }

    pub fn seq(&self) -> u8 {
        self.seq
    }

    pub fn set_seq(&mut self, seq: u8) {
        self.seq = seq;
    }

    /// Starts a new command exchange: the next packet written or read has sequence id 0.
    pub fn reset_seq(&mut self) {
        self.seq = 0;
    }

    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    pub fn get_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// The bytes read but not yet taken.
    pub fn buffered(&self) -> &[u8] {
        &self.rbuf
    }

    /// True if complete or partial input is already buffered (no syscall needed to read more).
    pub fn has_buffered_input(&self) -> bool {
        !self.rbuf.is_empty()
    }

    /// Splits the stream from its buffers, e.g. to upgrade to TLS; returns unread input.
    pub fn into_parts(self) -> (S, BytesMut) {
        (self.stream, self.rbuf)
    }

    /// Reads one logical packet (joining continuation frames); returns its first sequence id
    /// and payload. The next packet written continues the sequence.
    pub async fn read_packet_with_seq(&mut self) -> Result<(u8, Bytes)> {
        if let Some(packet) = self.take_buffered_packet() {
            return Ok(packet);
        }
        let (first_seq, len) = self.read_frame_header().await?;
        if len < MAX_FRAME {
            let payload = self.read_frame_payload(len).await?;
            return Ok((first_seq, payload));
        }
        let mut joined = BytesMut::new();
        let mut len = len;
        loop {
            if joined.len() + len > self.max_packet {
                return Err(ProtocolError::PacketTooLarge {
                    size: joined.len() + len,
                    max: self.max_packet,
                });
            }
            joined.extend_from_slice(&self.read_frame_payload(len).await?);
            if len < MAX_FRAME {
                return Ok((first_seq, joined.freeze()));
            }
            len = self.read_frame_header().await?.1;
        }
    }

    /// Moves complete one-frame packets already buffered here into `dst`'s write buffer while
    /// `take` accepts their payload, numbered in `dst`'s sequence; returns how many. Stops,
    /// leaving it unread, at the first packet `take` refuses, at a partial or continued frame,
    /// or when the buffer runs out: no allocation, no syscall. Where both sequences agree (a
    /// forwarded response usually does), the run is copied in one piece, headers and all.
    pub fn copy_buffered_to<D: AsyncRead + SendBuffer>(
        &mut self,
        dst: &mut PacketStream<D>,
        mut take: impl FnMut(&[u8]) -> bool,
    ) -> usize {
        let (end, count, aligned, next) = self.scan_buffered(dst.seq, &mut take);
        if count == 0 {
            return 0;
        }
        dst.settle_lent();
        if aligned {
            dst.wbuf.extend_from_slice(&self.rbuf[..end]);
            dst.seq = dst.seq.wrapping_add(count as u8);
        } else {
            let mut at = 0;
            while at < end {
                let len = frame_len(&self.rbuf[at..]);
                dst.write_packet(&self.rbuf[at + 4..at + 4 + len]);
                at += 4 + len;
            }
        }
        self.seq = next;
        self.rbuf.advance(end);
        count
    }

    /// Waits until some input is buffered (returns at once if there is).
    pub async fn await_input(&mut self) -> Result<()> {
        self.fill(1).await
    }

    /// Resolves once the peer has closed the connection (or it failed), while the other side
    /// works on a command. What the peer sends meanwhile (a pipelined command, COM_QUIT) is
    /// kept in the read buffer for later reads; once `limit` bytes wait there, reading stops
    /// and this stays pending. Cancel-safe: nothing read is lost when it is dropped.
    pub async fn peer_closed(&mut self, limit: usize) {
        while self.rbuf.len() < limit {
            // Room for a small packet: usually the read buffer's spare tail, so no allocation
            // (the command being answered may still hold the rest of the buffer).
            self.rbuf.reserve(WATCH_READ.min(limit - self.rbuf.len()));
            match self.stream.read_buf(&mut self.rbuf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
        std::future::pending::<()>().await
    }

    /// Waits for input, and for the rest of a result set that has begun while fewer than
    /// `limit` bytes are buffered: the whole result set at the front of the read buffer,
    /// numbered in `seq`'s sequence, or None when what is there is something else (see
    /// [`crate::whole::whole_result`]) or still short at `limit`.
    pub async fn await_whole_result(&mut self, seq: u8, limit: usize) -> Result<Option<crate::whole::WholeResult>> {
        use crate::whole::Scan;
        self.fill(1).await?;
        loop {
            match crate::whole::scan(&self.rbuf, seq, self.max_packet) {
                Scan::Whole(whole) => return Ok(Some(whole)),
                Scan::Short if self.rbuf.len() < limit => self.fill(self.rbuf.len() + 1).await?,
                Scan::Short | Scan::Other => return Ok(None),
            }
        }
    }

    /// Moves the first `whole.len` buffered bytes, a whole result numbered in `dst`'s sequence,
    /// to `dst` as they are: a large one is lent (sent from this buffer's memory, no copy),
    /// a small one copied in one piece.
    pub fn pass_buffered_to<D: AsyncRead + SendBuffer>(
        &mut self,
        dst: &mut PacketStream<D>,
        whole: &crate::whole::WholeResult,
    ) {
        let len = whole.len.min(self.rbuf.len());
        if len >= LEND_AT && dst.pending_write() == 0 {
            dst.lent = Some(self.rbuf.split_to(len));
        } else {
            dst.settle_lent();
            dst.wbuf.extend_from_slice(&self.rbuf[..len]);
            self.rbuf.advance(len);
        }
        self.seq = whole.next_seq;
        dst.seq = whole.next_seq;
    }

    /// Moves the first `whole.len` buffered bytes, a whole result numbered in `dst`'s sequence,
    /// to `dst`, a client with MariaDB's cached metadata that takes classic EOF packets: the
    /// column count with its "metadata follows" byte, the definitions only when `follows`.
    /// Without them, the frames after them are renumbered where they lie and the new column
    /// count is written over the definitions' last bytes; with them, the column count goes
    /// first on its own. Either way the rest is lent when large, as by [`Self::pass_buffered_to`].
    pub fn pass_buffered_cached<D: AsyncRead + SendBuffer>(
        &mut self,
        dst: &mut PacketStream<D>,
        whole: &crate::whole::WholeResult,
        follows: bool,
    ) {
        if !follows {
            let len = whole.len.min(self.rbuf.len());
            if let Some((start, next)) = crate::whole::drop_definitions_in_place(&mut self.rbuf[..len], whole) {
                self.rbuf.advance(start);
                self.lend_or_copy(dst, len - start, next);
                return;
            }
        }
        match crate::whole::count_with_follows(&self.rbuf, follows) {
            Some((count, len)) => {
                let count_end = 4 + frame_len(&self.rbuf);
                dst.settle_lent();
                dst.wbuf.extend_from_slice(&count[..len]);
                self.rbuf.advance(count_end);
                self.lend_or_copy(dst, whole.len - count_end, whole.next_seq);
            }
            None => {
                // Not a bare column count: copied with the general framing.
                let framing = crate::whole::Framing {
                    deprecate_eof: false,
                    metadata_follows: Some(follows),
                };
                self.pass_buffered_framed(dst, whole, framing, 0);
            }
        }
    }

    /// Moves the first `len` buffered bytes (whole frames, numbered in `dst`'s sequence up to
    /// `next_seq`) behind what `dst` holds queued: lent when large and nothing is lent there
    /// already, else copied.
    fn lend_or_copy<D: AsyncRead + SendBuffer>(&mut self, dst: &mut PacketStream<D>, len: usize, next_seq: u8) {
        let len = len.min(self.rbuf.len());
        if len >= LEND_AT && dst.lent.is_none() {
            dst.lent = Some(self.rbuf.split_to(len));
        } else {
            dst.settle_lent();
            dst.wbuf.extend_from_slice(&self.rbuf[..len]);
            self.rbuf.advance(len);
        }
        self.seq = next_seq;
        dst.seq = next_seq;
    }

    /// Moves the first `whole.len` buffered bytes, a whole result numbered in `dst`'s sequence,
    /// to `dst`, a client that takes it with `framing` (see [`PacketStream::write_framed`]).
    pub fn pass_buffered_framed<D: AsyncRead + SendBuffer>(
        &mut self,
        dst: &mut PacketStream<D>,
        whole: &crate::whole::WholeResult,
        framing: crate::whole::Framing,
        capabilities: u32,
    ) {
        let len = whole.len.min(self.rbuf.len());
        dst.write_framed(&self.rbuf[..len], whole, framing, capabilities);
        self.rbuf.advance(len);
        self.seq = whole.next_seq;
    }

    /// Writes a whole result (its frames as the backend sent them: classic EOF packets, no
    /// "metadata follows" byte) for a client that takes it with `framing`
    /// ([`crate::whole::append_framed`]); with `CLIENT_DEPRECATE_EOF` the end is an OK packet
    /// with the EOF header, carrying the final EOF's warnings and status.
    pub fn write_framed(
        &mut self,
        frames: &[u8],
        whole: &crate::whole::WholeResult,
        framing: crate::whole::Framing,
        capabilities: u32,
    ) {
        self.settle_lent();
        self.seq = crate::whole::append_framed(frames, whole, framing, &mut self.wbuf);
        if framing.deprecate_eof {
            let (warnings, status) = (whole.warnings, whole.status);
            self.write_with(|b| crate::response::encode_result_end(b, warnings, status, capabilities));
        }
    }

    /// Moves lent bytes into the write buffer, before anything written after them.
    #[inline]
    fn settle_lent(&mut self) {
        if self.lent.is_some() {
            self.take_lent_in();
        }
    }

    #[cold]
    fn take_lent_in(&mut self) {
        if let Some(lent) = self.lent.take() {
            self.wbuf.extend_from_slice(&lent);
        }
    }

    /// The buffered run `take` accepts: its byte length, its packet count, whether its
    /// sequence numbers start at `seq`, and the sequence number after it.
    fn scan_buffered(&self, seq: u8, take: &mut impl FnMut(&[u8]) -> bool) -> (usize, usize, bool, u8) {
        let (mut end, mut count, mut aligned, mut next) = (0, 0, true, self.seq);
        let mut want = seq;
        while self.rbuf.len() - end >= 4 {
            let len = frame_len(&self.rbuf[end..]);
            if len >= MAX_FRAME || len > self.max_packet || self.rbuf.len() - end < 4 + len {
                break;
            }
            if !take(&self.rbuf[end + 4..end + 4 + len]) {
                break;
            }
            aligned &= self.rbuf[end + 3] == want;
            want = want.wrapping_add(1);
            next = self.rbuf[end + 3].wrapping_add(1);
            end += 4 + len;
            count += 1;
        }
        (end, count, aligned, next)
    }

    /// The next packet's payload when it is already whole in the read buffer (one frame, within
    /// the size limit): no waiting, no syscall. None leaves the buffer as it was.
    pub fn read_buffered_packet(&mut self) -> Option<Bytes> {
        self.take_buffered_packet().map(|(_, payload)| payload)
    }

    /// Reads one logical packet and returns its payload.
    pub async fn read_packet(&mut self) -> Result<Bytes> {
        Ok(self.read_packet_with_seq().await?.1)
    }

    /// A one-frame packet already whole in the buffer, taken without the reading machinery
    /// (most packets of a response arrive with the one before them). None when it is not
    /// whole, is continued, or is larger than allowed (the slow path reports that).
    fn take_buffered_packet(&mut self) -> Option<(u8, Bytes)> {
        let (len, seq) = frame_header(self.rbuf.get(..4)?);
        if len >= MAX_FRAME || len > self.max_packet || self.rbuf.len() < 4 + len {
            return None;
        }
        self.rbuf.advance(4);
        self.seq = seq.wrapping_add(1);
        Some((seq, self.rbuf.split_to(len).freeze()))
    }

    async fn read_frame_header(&mut self) -> Result<(u8, usize)> {
        self.fill(4).await?;
        let (len, seq) = frame_header(&self.rbuf[..4]);
        if len > self.max_packet {
            return Err(ProtocolError::PacketTooLarge {
                size: len,
                max: self.max_packet,
            });
        }
        self.rbuf.advance(4);
        self.seq = seq.wrapping_add(1);
        Ok((seq, len))
    }

    async fn read_frame_payload(&mut self, len: usize) -> Result<Bytes> {
        self.fill(len).await?;
        Ok(self.rbuf.split_to(len).freeze())
    }

    async fn fill(&mut self, want: usize) -> Result<()> {
        while self.rbuf.len() < want {
            if self.rbuf.is_empty() && self.rbuf.capacity() > SHRINK_ABOVE {
                self.rbuf = BytesMut::new();
            }
            let need = (want - self.rbuf.len()).max(self.read_chunk);
            self.rbuf.reserve(need);
            let n = self.stream.read_buf(&mut self.rbuf).await?;
            if n == 0 {
                return Err(ProtocolError::Closed);
            }
        }
        Ok(())
    }

    /// Queues one logical packet (split into frames as needed) with the next sequence ids.
    pub fn write_packet(&mut self, payload: &[u8]) {
        self.settle_lent();
        let mut rest = payload;
        loop {
            let n = rest.len().min(MAX_FRAME);
            self.wbuf.reserve(4 + n);
            self.wbuf.put_uint_le(n as u64, 3);
            self.wbuf.put_u8(self.seq);
            self.seq = self.seq.wrapping_add(1);
            self.wbuf.put_slice(&rest[..n]);
            rest = &rest[n..];
            if n < MAX_FRAME {
                return;
            }
        }
    }

    /// Queues a packet built by `build` directly in the write buffer (no intermediate copy).
    pub fn write_with(&mut self, build: impl FnOnce(&mut BytesMut)) {
        self.settle_lent();
        let start = self.wbuf.len();
        self.wbuf.put_slice(&[0, 0, 0, 0]);
        build(&mut self.wbuf);
        let len = self.wbuf.len() - start - 4;
        if len < MAX_FRAME {
            let hdr = (len as u32).to_le_bytes();
            self.wbuf[start..start + 3].copy_from_slice(&hdr[..3]);
            self.wbuf[start + 3] = self.seq;
            self.seq = self.seq.wrapping_add(1);
        } else {
            let payload = self.wbuf.split_off(start + 4);
            self.wbuf.truncate(start);
            self.write_packet(&payload);
        }
    }

    /// Takes the first `len` buffered bytes (whole frames the caller recognised, e.g. with
    /// [`Self::await_whole_result`]) in one piece.
    pub fn take_buffered(&mut self, len: usize) -> BytesMut {
        let len = len.min(self.rbuf.len());
        self.rbuf.split_to(len)
    }

    /// Queues frames already numbered in this stream's sequence (a whole result read
    /// elsewhere) as they are; `next_seq` is the sequence id after them.
    pub fn write_frames(&mut self, frames: &[u8], next_seq: u8) {
        self.settle_lent();
        self.wbuf.extend_from_slice(frames);
        self.seq = next_seq;
    }

    /// Drops the queued bytes from `at` on (the last packets queued, found unneeded before
    /// the flush). False, and nothing dropped, when `at` is past the queued bytes or they
    /// include a lent buffer.
    pub fn unqueue_from(&mut self, at: usize) -> bool {
        if self.lent.is_some() || at > self.wbuf.len() {
            return false;
        }
        self.wbuf.truncate(at);
        true
    }

    /// Bytes queued but not yet flushed.
    pub fn pending_write(&self) -> usize {
        self.wbuf.len() + self.lent.as_ref().map_or(0, BytesMut::len)
    }

    /// Writes every queued packet to the stream.
    pub async fn flush(&mut self) -> Result<()> {
        // Lent bytes are the last queued: anything written after them took them in first
        // (`settle_lent`), so the write buffer holds what goes before them.
        if !self.wbuf.is_empty() {
            let shrink = self.wbuf.capacity() > SHRINK_ABOVE;
            let (stream, wbuf) = (&mut self.stream, &mut self.wbuf);
            std::future::poll_fn(|cx| stream.poll_send_buffer(cx, wbuf)).await?;
            if shrink {
                self.wbuf = BytesMut::new();
            } else {
                self.wbuf.clear();
            }
        }
        if let Some(lent) = self.lent.as_mut() {
            let stream = &mut self.stream;
            std::future::poll_fn(|cx| stream.poll_send_lent(cx, lent)).await?;
            self.lent = None;
        }
        self.stream.flush().await?;
        Ok(())
    }

    /// Queues `payload` as one packet and flushes.
    pub async fn send(&mut self, payload: &[u8]) -> Result<()> {
        self.write_packet(payload);
        self.flush().await
    }
}

/// The payload length in a frame header (the first three bytes of `frame`).
pub fn frame_len(frame: &[u8]) -> usize {
    usize::from(frame[0]) | usize::from(frame[1]) << 8 | usize::from(frame[2]) << 16
}

/// A frame header's payload length (3 bytes, little-endian) and sequence id.
fn frame_header(header: &[u8]) -> (usize, u8) {
    (frame_len(header), header[3])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `packets` from a fresh writer whose sequence starts at `from`; returns the reader.
    async fn buffered(packets: &[&[u8]], from: u8) -> PacketStream<tokio::io::DuplexStream> {
        let (a, b) = tokio::io::duplex(1 << 16);
        let mut w = PacketStream::new(a);
        w.set_seq(from);
        for p in packets {
            w.write_packet(p);
        }
        w.flush().await.unwrap();
        let mut r = PacketStream::new(b);
        r.fill(1).await.unwrap();
        while r.rbuf.len() < packets.iter().map(|p| p.len() + 4).sum::<usize>() {
            let want = r.rbuf.len() + 1;
            r.fill(want).await.unwrap();
        }
        r
    }

    /// A whole result: column count, one definition, EOF, `rows` rows of `width` bytes, EOF.
    fn whole(rows: usize, width: usize) -> Vec<Vec<u8>> {
        let mut packets = vec![vec![1], b"\x03def".to_vec(), b"\xfe\0\0\x02\0".to_vec()];
        packets.extend((0..rows).map(|_| vec![b'r'; width]));
        packets.push(b"\xfe\0\0\x02\0".to_vec());
        packets
    }

    /// A large whole result is lent to the destination (not copied into its write buffer) and
    /// a small one copied; either way what is written after it goes after it, and the
    /// destination's peer reads the result byte for byte, then the rest.
    #[tokio::test]
    async fn whole_results_pass_lent_when_large_copied_when_small_and_in_order() {
        for (rows, lent) in [(200, true), (2, false)] {
            let packets = whole(rows, 40);
            let refs: Vec<&[u8]> = packets.iter().map(Vec::as_slice).collect();
            let mut r = buffered(&refs, 1).await;
            let total = r.rbuf.len();
            let (c, d) = tokio::io::duplex(1 << 20);
            let mut dst = PacketStream::new(c);
            dst.set_seq(1);
            let whole = crate::whole::whole_result(&r.rbuf, 1, r.max_packet).expect("whole");
            assert_eq!((whole.len, whole.rows), (total, rows as u64));
            r.pass_buffered_to(&mut dst, &whole);
            assert_eq!(dst.lent.is_some(), lent, "{rows} rows");
            assert_eq!((dst.pending_write(), r.rbuf.len()), (total, 0));
            assert_eq!((dst.seq, r.seq), (whole.next_seq, whole.next_seq));
            dst.write_packet(b"next");
            assert!(dst.lent.is_none(), "a write after lent bytes takes them in first");
            dst.flush().await.unwrap();
            let mut peer = PacketStream::new(d);
            for (i, want) in packets.iter().chain([&b"next".to_vec()]).enumerate() {
                let (seq, got) = peer.read_packet_with_seq().await.unwrap();
                assert_eq!((seq as usize, &got[..]), (i + 1, &want[..]), "{rows} rows, packet {i}");
            }
        }
    }

    /// For a client with cached metadata a whole result goes with the "metadata follows" byte,
    /// its definitions only when they follow; a large one is still lent, and the peer reads
    /// the frames in order, as `append_framed` would have copied them.
    #[tokio::test]
    async fn cached_metadata_results_pass_lent_with_or_without_definitions() {
        for (rows, follows) in [(200, false), (200, true), (2, false), (2, true), (300, false)] {
            let packets = whole(rows, 40);
            let refs: Vec<&[u8]> = packets.iter().map(Vec::as_slice).collect();
            let mut r = buffered(&refs, 1).await;
            let whole = crate::whole::whole_result(&r.rbuf, 1, r.max_packet).expect("whole");
            let framing = crate::whole::Framing {
                deprecate_eof: false,
                metadata_follows: Some(follows),
            };
            let mut want = BytesMut::new();
            let want_next = crate::whole::append_framed(&r.rbuf, &whole, framing, &mut want);
            let (c, d) = tokio::io::duplex(1 << 20);
            let mut dst = PacketStream::new(c);
            dst.set_seq(1);
            r.pass_buffered_cached(&mut dst, &whole, follows);
            assert_eq!(dst.lent.is_some(), rows >= 200, "{rows} rows");
            assert_eq!(
                (dst.seq, r.rbuf.len()),
                (want_next, 0),
                "{rows} rows, follows {follows}"
            );
            dst.write_packet(b"next");
            dst.flush().await.unwrap();
            drop(dst);
            let mut got = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut { d }, &mut got)
                .await
                .unwrap();
            let next_frame = [4, 0, 0, want_next, b'n', b'e', b'x', b't'];
            assert_eq!(&got[..got.len() - 8], &want[..], "{rows} rows, follows {follows}");
            assert_eq!(&got[got.len() - 8..], &next_frame[..]);
        }
    }

    /// A result set whose end has not arrived yet is waited for (up to the limit), then taken
    /// whole; one still short at the limit, or anything else, is left to the packet road.
    #[tokio::test]
    async fn a_result_that_has_begun_is_awaited_whole_up_to_the_limit() {
        let packets = whole(100, 40);
        let (mut w, b) = tokio::io::duplex(1 << 20);
        let mut frames = PacketStream::new(tokio::io::duplex(64).0);
        frames.set_seq(1);
        for p in &packets {
            frames.write_packet(p);
        }
        let bytes = frames.wbuf.split().freeze();
        let half = bytes.len() / 2;
        w.write_all(&bytes[..half]).await.unwrap();
        let mut r = PacketStream::new(b);
        {
            let mut waiting = std::pin::pin!(r.await_whole_result(1, 1 << 20));
            let polled =
                std::future::poll_fn(|cx| std::task::Poll::Ready(std::future::Future::poll(waiting.as_mut(), cx)))
                    .await;
            assert!(polled.is_pending(), "half a result is waited for");
            w.write_all(&bytes[half..]).await.unwrap();
            let whole = waiting.await.unwrap().expect("whole once the rest came");
            assert_eq!((whole.len, whole.rows), (bytes.len(), 100));
        }
        // Still short at the limit: the packet road, with nothing consumed.
        let (mut w, b) = tokio::io::duplex(1 << 20);
        w.write_all(&bytes[..half]).await.unwrap();
        let mut r = PacketStream::new(b);
        assert_eq!(r.await_whole_result(1, 64).await.unwrap(), None);
        assert_eq!(&r.read_packet().await.unwrap()[..], &[1]);
        // An OK is not waited on.
        let mut ok = buffered(&[b"\0\0\0\x02\0\0\0"], 1).await;
        assert_eq!(ok.await_whole_result(1, 1 << 20).await.unwrap(), None);
    }

    /// Lent bytes flushed alone go out as they are, and the stream is empty afterwards.
    #[tokio::test]
    async fn lent_bytes_flushed_alone_go_out_whole() {
        let packets = whole(300, 30);
        let refs: Vec<&[u8]> = packets.iter().map(Vec::as_slice).collect();
        let mut r = buffered(&refs, 1).await;
        let sent = r.rbuf.to_vec();
        let (c, mut d) = tokio::io::duplex(1 << 20);
        let mut dst = PacketStream::new(c);
        dst.set_seq(1);
        let whole = crate::whole::whole_result(&r.rbuf, 1, r.max_packet).expect("whole");
        r.pass_buffered_to(&mut dst, &whole);
        dst.flush().await.unwrap();
        assert_eq!(dst.pending_write(), 0);
        let mut got = vec![0; sent.len()];
        d.read_exact(&mut got).await.unwrap();
        assert!(got == sent, "bytes differ");
    }

    #[tokio::test]
    async fn buffered_rows_move_to_another_stream_in_its_sequence() {
        for (from, dst_seq) in [(3u8, 3u8), (3, 7), (254, 254)] {
            let mut r = buffered(&[b"row1", b"row2", b"\xfeend"], from).await;
            let (c, d) = tokio::io::duplex(1 << 16);
            let mut dst = PacketStream::new(c);
            dst.set_seq(dst_seq);
            let moved = r.copy_buffered_to(&mut dst, |p| p[0] != 0xfe);
            assert_eq!(moved, 2, "from {from} to {dst_seq}");
            assert_eq!(dst.seq, dst_seq.wrapping_add(2));
            assert_eq!(r.seq(), from.wrapping_add(2));
            assert_eq!(&r.read_packet().await.unwrap()[..], b"\xfeend");
            dst.flush().await.unwrap();
            let mut out = PacketStream::new(d);
            for (i, want) in [&b"row1"[..], b"row2"].into_iter().enumerate() {
                let (seq, p) = out.read_packet_with_seq().await.unwrap();
                assert_eq!((seq, &p[..]), (dst_seq.wrapping_add(i as u8), want));
            }
        }
    }

    #[tokio::test]
    async fn buffered_packets_are_copied_until_refused_or_incomplete() {
        let (a, b) = tokio::io::duplex(1 << 16);
        let mut w = PacketStream::new(a);
        let mut r = PacketStream::new(b);
        for p in [&b"row1"[..], b"row2", b"\xfeend", b"after"] {
            w.write_packet(p);
        }
        w.flush().await.unwrap();
        assert_eq!(&r.read_packet().await.unwrap()[..], b"row1");
        let (c, _d) = tokio::io::duplex(1 << 16);
        let mut dst = PacketStream::new(c);
        let mut seen = Vec::new();
        let copied = r.copy_buffered_to(&mut dst, |p| {
            let row = p[0] != 0xfe;
            if row {
                seen.push(p.to_vec());
            }
            row
        });
        assert_eq!((copied, seen), (1, vec![b"row2".to_vec()]));
        assert_eq!(r.seq(), 2);
        assert_eq!(&r.read_packet().await.unwrap()[..], b"\xfeend");
        // A frame whose payload has not arrived whole is left for read_packet.
        w.get_mut().write_all(&[10, 0, 0, 4, b'x']).await.unwrap();
        w.get_mut().flush().await.unwrap();
        assert_eq!(&r.read_packet().await.unwrap()[..], b"after");
        assert_eq!(r.copy_buffered_to(&mut dst, |_| true), 0);
    }

    #[tokio::test]
    async fn roundtrip_small_and_split_packets() {
        let (a, b) = tokio::io::duplex(1 << 20);
        let mut w = PacketStream::new(a);
        let mut r = PacketStream::new(b);
        let big = vec![7u8; MAX_FRAME * 2 + 10];
        let exact = vec![1u8; MAX_FRAME];
        let writer = tokio::spawn(async move {
            w.send(b"hello").await.unwrap();
            w.send(&big).await.unwrap();
            w.send(&exact).await.unwrap();
            w
        });
        assert_eq!(&r.read_packet().await.unwrap()[..], b"hello");
        let got = r.read_packet().await.unwrap();
        assert_eq!(got.len(), MAX_FRAME * 2 + 10);
        let got = r.read_packet().await.unwrap();
        assert_eq!(got.len(), MAX_FRAME);
        assert_eq!(r.seq(), 6, "1 + 3 + 2 frames used seqs 0..=5");
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn oversize_and_truncated_packets_are_errors() {
        let (mut a, b) = tokio::io::duplex(1024);
        let mut r = PacketStream::new(b);
        r.set_max_packet(10);
        a.write_all(&[20, 0, 0, 0]).await.unwrap();
        assert!(matches!(
            r.read_packet().await,
            Err(ProtocolError::PacketTooLarge { .. })
        ));
        let (mut a, b) = tokio::io::duplex(1024);
        let mut r = PacketStream::new(b);
        a.write_all(&[5, 0, 0, 0, 1, 2]).await.unwrap();
        drop(a);
        assert!(r.read_packet().await.unwrap_err().is_disconnect());
    }

    #[tokio::test]
    async fn write_with_fills_header() {
        let (a, b) = tokio::io::duplex(1024);
        let mut w = PacketStream::new(a);
        let mut r = PacketStream::new(b);
        w.set_seq(3);
        w.write_with(|b| b.put_slice(b"abc"));
        w.flush().await.unwrap();
        let (seq, p) = r.read_packet_with_seq().await.unwrap();
        assert_eq!((seq, &p[..]), (3, &b"abc"[..]));
    }
}
