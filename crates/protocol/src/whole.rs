//! A whole result set at the front of a read buffer, recognised without copying it: a client
//! that speaks the backend's dialect (classic EOF packets) can take it byte for byte, and a
//! client with `CLIENT_DEPRECATE_EOF` in one copy that drops the EOF packets.

use crate::codec::Reader;
use crate::flags::{SERVER_MORE_RESULTS_EXISTS, SERVER_STATUS_CURSOR_EXISTS};
use crate::packet::MAX_FRAME;
use crate::response::{EOF_HEADER, ERR_HEADER, LOCAL_INFILE_HEADER, OK_HEADER};

/// One result set, whole in the buffer: column count, definitions, EOF, rows, EOF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WholeResult {
    /// Its bytes, frame headers included, from the buffer's start.
    pub len: usize,
    pub rows: u64,
    /// Of the EOF that ends it.
    pub warnings: u16,
    pub status: u16,
    /// The sequence id after its last packet.
    pub next_seq: u8,
    /// Offset of the EOF that ends the column definitions.
    pub defs_end: usize,
    /// Offset of the EOF that ends the rows.
    pub rows_end: usize,
}

/// Length of a classic EOF frame: a 4-byte header and a 5-byte payload.
const EOF_FRAME: usize = 9;

/// How far a result set at the front of a buffer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    Whole(WholeResult),
    /// Every packet so far fits a whole result, but the buffer ends before its last one.
    Short,
    /// Anything else: see [`whole_result`].
    Other,
}

/// How long a reader waits for the rest of a result set that has begun, in bytes buffered:
/// one that is still short at this size goes on packet by packet.
pub const WAIT_FOR_WHOLE_UP_TO: usize = 64 * 1024;

/// The result set at the front of `buf` when every packet of it is there, in one frame of
/// at most `max_packet` bytes, numbered from `seq` on without a gap, and it is the last
/// result of its command, with rows and no cursor. None otherwise (an OK, an ERR, a partial
/// or continued packet, more results to follow): the caller takes the packet-by-packet road,
/// which deals with each of those.
pub fn whole_result(buf: &[u8], seq: u8, max_packet: usize) -> Option<WholeResult> {
    match scan(buf, seq, max_packet) {
        Scan::Whole(whole) => Some(whole),
        Scan::Short | Scan::Other => None,
    }
}

/// [`whole_result`], telling a result cut short by the buffer's end from anything else.
pub fn scan(buf: &[u8], seq: u8, max_packet: usize) -> Scan {
    match scan_result(buf, seq, max_packet) {
        Ok(whole) => Scan::Whole(whole),
        Err(Stop::Short) => Scan::Short,
        Err(Stop::Other) => Scan::Other,
    }
}

/// Why a scan stopped before a whole result.
enum Stop {
    Short,
    Other,
}

fn scan_result(buf: &[u8], seq: u8, max_packet: usize) -> Result<WholeResult, Stop> {
    let mut frames = Frames {
        buf,
        at: 0,
        seq,
        max_packet,
    };
    // An OK, ERR or file request is known from its first byte, before it is whole.
    if buf
        .get(4)
        .is_some_and(|b| matches!(*b, OK_HEADER | ERR_HEADER | EOF_HEADER | LOCAL_INFILE_HEADER))
    {
        return Err(Stop::Other);
    }
    let first = frames.next_frame()?;
    if first.is_empty() {
        return Err(Stop::Other);
    }
    let columns = Reader::new(first).lenenc_int().map_err(|_| Stop::Other)?;
    for _ in 0..columns {
        frames.next_frame()?;
    }
    let defs_end = frames.at;
    let (_, status) = eof_fields(frames.next_frame()?).ok_or(Stop::Other)?;
    if status & SERVER_STATUS_CURSOR_EXISTS != 0 {
        return Err(Stop::Other);
    }
    let limit = max_packet.min(MAX_FRAME - 1);
    let (eof_at, seq, rows) = walk_rows(buf, frames.at, frames.seq, limit)?;
    frames.at = eof_at;
    frames.seq = seq;
    let rows_end = eof_at;
    let (warnings, status) = eof_fields(frames.next_frame()?).ok_or(Stop::Other)?;
    if status & SERVER_MORE_RESULTS_EXISTS != 0 {
        return Err(Stop::Other);
    }
    Ok(WholeResult {
        len: frames.at,
        rows,
        warnings,
        status,
        next_seq: frames.seq,
        defs_end,
        rows_end,
    })
}

/// How a client takes a result set, where that differs from the server's framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Framing {
    /// `CLIENT_DEPRECATE_EOF`: no EOF after the definitions, and the end is an OK packet with
    /// the EOF header (written by the caller).
    pub deprecate_eof: bool,
    /// `MARIADB_CLIENT_CACHE_METADATA`: the column count carries this "metadata follows"
    /// flag, and false leaves the definitions out.
    pub metadata_follows: Option<bool>,
}

impl Framing {
    /// The server's own framing: frames go as they are.
    pub fn is_servers(&self) -> bool {
        !self.deprecate_eof && self.metadata_follows.is_none()
    }
}

/// The column definitions of `whole` (at the front of `frames`), frame headers included.
pub fn definitions<'f>(frames: &'f [u8], whole: &WholeResult) -> &'f [u8] {
    let count_end = 4 + crate::packet::frame_len(frames);
    &frames[count_end..whole.defs_end]
}

/// The frames of `whole` (at the front of `frames`, numbered as the server sent them) as a
/// client with `framing` takes them, renumbered in order. Without `deprecate_eof` up to and
/// including the final EOF, and the sequence id after it is returned; with it up to the last
/// row, and the returned sequence id is the end packet's, which the caller writes.
pub fn append_framed(frames: &[u8], whole: &WholeResult, framing: Framing, out: &mut bytes::BytesMut) -> u8 {
    let count_end = 4 + crate::packet::frame_len(frames);
    let mut seq = frames[3];
    match framing.metadata_follows {
        None => out.extend_from_slice(&frames[..count_end]),
        Some(follows) => {
            let len = count_end - 4 + 1;
            out.extend_from_slice(&(len as u32).to_le_bytes()[..3]);
            out.extend_from_slice(&[seq]);
            out.extend_from_slice(&frames[4..count_end]);
            out.extend_from_slice(&[u8::from(follows)]);
        }
    }
    seq = seq.wrapping_add(1);
    if framing.metadata_follows != Some(false) {
        let eof_seq = frames[whole.defs_end + 3];
        seq = append_renumbered(&frames[count_end..whole.defs_end], seq, eof_seq, out);
    }
    if framing.deprecate_eof {
        let end_seq = frames[whole.rows_end + 3];
        append_renumbered(&frames[whole.defs_end + EOF_FRAME..whole.rows_end], seq, end_seq, out)
    } else {
        append_renumbered(&frames[whole.defs_end..whole.len], seq, whole.next_seq, out)
    }
}

/// Appends whole frames, renumbered from `seq` on where they are not numbered so; `next_as_sent`
/// is the sequence id that followed them as the server sent them. Returns the sequence id
/// after them.
fn append_renumbered(frames: &[u8], seq: u8, next_as_sent: u8, out: &mut bytes::BytesMut) -> u8 {
    if frames.len() < 4 {
        return seq;
    }
    let shift = seq.wrapping_sub(frames[3]);
    let at = out.len();
    out.extend_from_slice(frames);
    if shift != 0 {
        shift_sequence(&mut out[at..], shift);
    }
    next_as_sent.wrapping_add(shift)
}

/// Column definition payloads framed as a result set numbers them (from 2, after the column
/// count): the form [`definitions`] returns, which a client with cached metadata holds.
pub fn frame_definitions<'p>(payloads: impl IntoIterator<Item = &'p [u8]>) -> bytes::BytesMut {
    let mut out = bytes::BytesMut::new();
    let mut seq = 2u8;
    for def in payloads {
        out.extend_from_slice(&(def.len() as u32).to_le_bytes()[..3]);
        out.extend_from_slice(&[seq]);
        out.extend_from_slice(def);
        seq = seq.wrapping_add(1);
    }
    out
}

/// A column count frame with the "metadata follows" byte after it: at most a 4-byte header,
/// a 9-byte count and the flag. None when the frame at the front of `frames` is not a bare
/// column count.
pub fn count_with_follows(frames: &[u8], follows: bool) -> Option<([u8; 14], usize)> {
    let payload = crate::packet::frame_len(frames);
    if payload > 9 {
        return None;
    }
    let mut count = [0u8; 14];
    count[..3].copy_from_slice(&((payload + 1) as u32).to_le_bytes()[..3]);
    count[3] = frames[3];
    count[4..4 + payload].copy_from_slice(&frames[4..4 + payload]);
    count[4 + payload] = u8::from(follows);
    Some((count, payload + 5))
}

/// For a client with cached metadata that takes classic EOF packets and holds the
/// definitions: rewrites `whole` where it lies in `frames` (numbered as the server sent
/// them) into the column count with "metadata follows" 0, written over the definitions' last
/// bytes, and the frames after the definitions renumbered. Returns where the rewritten result
/// starts and the sequence id after it; None (nothing changed) when the column count is not
/// a bare one or the definitions leave no room.
pub fn drop_definitions_in_place(frames: &mut [u8], whole: &WholeResult) -> Option<(usize, u8)> {
    let count_end = 4 + crate::packet::frame_len(frames);
    if whole.defs_end < count_end + 1 {
        return None;
    }
    let seq = frames[3];
    let start = if count_end == 5 {
        // The usual one-byte count, written with fixed-size stores.
        let start = whole.defs_end - 6;
        let counted = [2, 0, 0, seq, frames[4], 0];
        frames[start..start + 6].copy_from_slice(&counted);
        start
    } else {
        let (count, len) = count_with_follows(frames, false)?;
        let start = whole.defs_end - len;
        frames[start..whole.defs_end].copy_from_slice(&count[..len]);
        start
    };
    let shift = seq.wrapping_add(1).wrapping_sub(frames[whole.defs_end + 3]);
    shift_sequence(&mut frames[whole.defs_end..whole.len], shift);
    Some((start, whole.next_seq.wrapping_add(shift)))
}

/// Adds `shift` to the sequence id of every whole frame in `frames` (the hot loop of a
/// result's renumbering: one header word read and one byte written per frame).
fn shift_sequence(frames: &mut [u8], shift: u8) {
    let mut at = 0;
    while let Some(header) = frames.get_mut(at..at + 4) {
        let word = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        header[3] = header[3].wrapping_add(shift);
        at += 4 + (word & 0x00ff_ffff) as usize;
    }
}

/// Walks the row packets from `at` (sequence `seq`, each at most `limit` bytes) to the EOF
/// that ends them: its offset and sequence id, and the rows before it. Short when a packet
/// is not whole in `buf`; Other on an ERR or a packet out of sequence or above the limit.
/// The hot loop of [`whole_result`] (a range read's hundred rows): one header word and one
/// first byte per row.
fn walk_rows(buf: &[u8], mut at: usize, mut seq: u8, limit: usize) -> Result<(usize, u8, u64), Stop> {
    let mut rows = 0u64;
    loop {
        let Some(header) = buf.get(at..at + 4) else {
            return Err(Stop::Short);
        };
        let word = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        let len = (word & 0x00ff_ffff) as usize;
        if len > limit || (word >> 24) as u8 != seq {
            return Err(Stop::Other);
        }
        // A row's first byte is a length, NULL (0xFB) or a binary row's 0x00; 0xFE opens an
        // EOF when the packet is short, 0xFF an ERR (known from its first byte on).
        if len > 0 && buf.get(at + 4).is_some_and(|&b| b >= EOF_HEADER) {
            if buf[at + 4] == ERR_HEADER {
                return Err(Stop::Other);
            }
            if len < 9 {
                return Ok((at, seq, rows));
            }
        }
        let end = at + 4 + len;
        if end > buf.len() {
            return Err(Stop::Short);
        }
        rows += 1;
        at = end;
        seq = seq.wrapping_add(1);
    }
}

/// (warnings, status) of a classic 5-byte EOF packet.
fn eof_fields(p: &[u8]) -> Option<(u16, u16)> {
    if p.len() != 5 || p[0] != EOF_HEADER {
        return None;
    }
    Some((u16::from_le_bytes([p[1], p[2]]), u16::from_le_bytes([p[3], p[4]])))
}

/// The complete one-frame packets at the front of a buffer, in sequence.
struct Frames<'a> {
    buf: &'a [u8],
    at: usize,
    seq: u8,
    max_packet: usize,
}

impl<'a> Frames<'a> {
    /// The next packet: Short when it is not whole in the buffer, Other when it is out of
    /// sequence, continued in another frame or above the limit.
    fn next_frame(&mut self) -> Result<&'a [u8], Stop> {
        let header = self.buf.get(self.at..self.at + 4).ok_or(Stop::Short)?;
        let len = crate::packet::frame_len(header);
        if len >= MAX_FRAME || len > self.max_packet || header[3] != self.seq {
            return Err(Stop::Other);
        }
        let payload = self.buf.get(self.at + 4..self.at + 4 + len).ok_or(Stop::Short)?;
        self.at += 4 + len;
        self.seq = self.seq.wrapping_add(1);
        Ok(payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(out: &mut Vec<u8>, seq: &mut u8, payload: &[u8]) {
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
        out.push(*seq);
        out.extend_from_slice(payload);
        *seq = seq.wrapping_add(1);
    }

    fn eof(status: u16) -> Vec<u8> {
        let mut p = vec![EOF_HEADER, 1, 0];
        p.extend_from_slice(&status.to_le_bytes());
        p
    }

    /// A two-column result of `rows` rows numbered from `seq`, ending with `end_status`.
    fn result(seq: u8, rows: usize, end_status: u16) -> Vec<u8> {
        let (mut out, mut s) = (Vec::new(), seq);
        frame(&mut out, &mut s, &[2]);
        frame(&mut out, &mut s, b"\x03defcolumn one");
        frame(&mut out, &mut s, b"\x03defcolumn two");
        frame(&mut out, &mut s, &eof(2));
        for i in 0..rows {
            frame(&mut out, &mut s, format!("\x01{}\x02ab", i % 10).as_bytes());
        }
        frame(&mut out, &mut s, &eof(end_status));
        out
    }

    #[test]
    fn a_whole_result_is_measured_and_counted() {
        let mut buf = result(1, 300, 0x22);
        let len = buf.len();
        buf.extend_from_slice(b"\x05\x00\x00\x01next"); // the next response may follow
        let whole = whole_result(&buf, 1, 1 << 24).expect("whole");
        assert_eq!(
            whole,
            WholeResult {
                len,
                rows: 300,
                warnings: 1,
                status: 0x22,
                next_seq: (1 + 4 + 300 + 1) as u8,
                defs_end: result(1, 0, 0).len() - 2 * EOF_FRAME,
                rows_end: len - EOF_FRAME,
            }
        );
        let empty = result(1, 0, 2);
        assert_eq!(
            whole_result(&empty, 1, 1 << 24).map(|w| (w.len, w.rows)),
            Some((empty.len(), 0))
        );
    }

    const WITHOUT_EOFS: Framing = Framing {
        deprecate_eof: true,
        metadata_follows: None,
    };

    #[test]
    fn without_eofs_the_definitions_stay_and_the_rows_move_one_down() {
        let buf = result(1, 3, 0x22);
        let whole = whole_result(&buf, 1, 1 << 24).expect("whole");
        let mut out = bytes::BytesMut::new();
        let end_seq = append_framed(&buf, &whole, WITHOUT_EOFS, &mut out);
        let (mut want, mut s) = (Vec::new(), 1);
        frame(&mut want, &mut s, &[2]);
        frame(&mut want, &mut s, b"\x03defcolumn one");
        frame(&mut want, &mut s, b"\x03defcolumn two");
        for i in 0..3 {
            frame(&mut want, &mut s, format!("\x01{i}\x02ab").as_bytes());
        }
        assert_eq!(&out[..], &want[..]);
        assert_eq!(end_seq, s, "the end packet follows the last row");
        // Sequence ids wrap: a result whose rows cross 255 -> 0.
        let long = result(200, 100, 2);
        let whole = whole_result(&long, 200, 1 << 24).expect("whole");
        let mut out = bytes::BytesMut::new();
        let end_seq = append_framed(&long, &whole, WITHOUT_EOFS, &mut out);
        assert_eq!(end_seq, 200u8.wrapping_add(3 + 100));
        let (mut at, mut expect) = (0, 200u8);
        while at < out.len() {
            assert_eq!(out[at + 3], expect, "frame at {at}");
            expect = expect.wrapping_add(1);
            at += 4 + usize::from(out[at]);
        }
    }

    /// The frames a client with MARIADB_CLIENT_CACHE_METADATA gets: the column count with a
    /// "metadata follows" byte, the definitions only when it says so, then the rest in order.
    #[test]
    fn cached_metadata_adds_the_follows_byte_and_may_drop_the_definitions() {
        let buf = result(1, 3, 0x22);
        let whole = whole_result(&buf, 1, 1 << 24).expect("whole");
        assert_eq!(definitions(&buf, &whole), &buf[5..whole.defs_end]);
        for (deprecate_eof, follows) in [(false, true), (false, false), (true, true), (true, false)] {
            let framing = Framing {
                deprecate_eof,
                metadata_follows: Some(follows),
            };
            let mut out = bytes::BytesMut::new();
            let next = append_framed(&buf, &whole, framing, &mut out);
            let (mut want, mut s) = (Vec::new(), 1);
            frame(&mut want, &mut s, &[2, u8::from(follows)]);
            if follows {
                frame(&mut want, &mut s, b"\x03defcolumn one");
                frame(&mut want, &mut s, b"\x03defcolumn two");
            }
            if !deprecate_eof {
                frame(&mut want, &mut s, &eof(2));
            }
            for i in 0..3 {
                frame(&mut want, &mut s, format!("\x01{i}\x02ab").as_bytes());
            }
            if !deprecate_eof {
                frame(&mut want, &mut s, &eof(0x22));
            }
            assert_eq!(&out[..], &want[..], "{framing:?}");
            assert_eq!(next, s, "{framing:?}");
        }
        // Dropped definitions across the wrap of the sequence ids.
        let long = result(250, 20, 2);
        let whole = whole_result(&long, 250, 1 << 24).expect("whole");
        let mut out = bytes::BytesMut::new();
        let framing = Framing {
            deprecate_eof: false,
            metadata_follows: Some(false),
        };
        let next = append_framed(&long, &whole, framing, &mut out);
        let (mut at, mut expect) = (0, 250u8);
        while at < out.len() {
            assert_eq!(out[at + 3], expect, "frame at {at}");
            expect = expect.wrapping_add(1);
            at += 4 + usize::from(out[at]);
        }
        assert_eq!(next, expect);
        assert_eq!(next, 250u8.wrapping_add(1 + 1 + 20 + 1));
    }

    #[test]
    fn a_result_cut_by_the_buffers_end_is_short_and_anything_else_is_not() {
        let full = result(1, 5, 2);
        for cut in 1..full.len() {
            assert_eq!(scan(&full[..cut], 1, 1 << 24), Scan::Short, "cut at {cut}");
        }
        assert!(matches!(scan(&full, 1, 1 << 24), Scan::Whole(_)));
        assert_eq!(scan(&full, 2, 1 << 24), Scan::Other, "another sequence");
        assert_eq!(scan(&full, 1, 10), Scan::Other, "a packet above the limit");
        let more = result(1, 5, SERVER_MORE_RESULTS_EXISTS);
        assert_eq!(scan(&more, 1, 1 << 24), Scan::Other, "more results follow");
        let (mut error, mut s) = (Vec::new(), 1);
        frame(&mut error, &mut s, &[1]);
        frame(&mut error, &mut s, b"\x03def");
        frame(&mut error, &mut s, &eof(2));
        frame(&mut error, &mut s, b"\xff\x15\x04#HY000oops");
        assert_eq!(scan(&error, 1, 1 << 24), Scan::Other, "an error among the rows");
        assert_eq!(
            scan(&error[..error.len() - 3], 1, 1 << 24),
            Scan::Other,
            "an error, cut"
        );
        let (mut ok, mut s) = (Vec::new(), 1);
        frame(&mut ok, &mut s, &[0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(scan(&ok[..5], 1, 1 << 24), Scan::Other, "an OK, cut");
    }

    #[test]
    fn rows_led_by_null_or_a_long_0xfe_packet_are_rows() {
        let (mut buf, mut s) = (Vec::new(), 3);
        frame(&mut buf, &mut s, &[1]);
        frame(&mut buf, &mut s, b"\x03def");
        frame(&mut buf, &mut s, &eof(2));
        frame(&mut buf, &mut s, b"\xfb");
        frame(&mut buf, &mut s, b"\xfe\x01\x00\x00\x00\x00\x00\x00\x00x");
        frame(&mut buf, &mut s, b"");
        frame(&mut buf, &mut s, &eof(0x22));
        let whole = whole_result(&buf, 3, 1 << 24).expect("whole");
        assert_eq!(
            (whole.len, whole.rows, whole.status, whole.next_seq),
            (buf.len(), 3, 0x22, s)
        );
    }

    #[test]
    fn anything_but_a_whole_last_result_in_sequence_is_left_to_the_packet_road() {
        let full = result(1, 5, 2);
        for cut in 0..full.len() {
            assert_eq!(whole_result(&full[..cut], 1, 1 << 24), None, "cut at {cut}");
        }
        assert_eq!(whole_result(&full, 2, 1 << 24), None, "another sequence");
        assert_eq!(
            whole_result(&result(1, 5, SERVER_MORE_RESULTS_EXISTS), 1, 1 << 24),
            None
        );
        assert_eq!(whole_result(&full, 1, 10), None, "a packet above the limit");
        let (mut cursor, mut s) = (Vec::new(), 1);
        frame(&mut cursor, &mut s, &[1]);
        frame(&mut cursor, &mut s, b"\x03def");
        frame(&mut cursor, &mut s, &eof(SERVER_STATUS_CURSOR_EXISTS));
        frame(&mut cursor, &mut s, &eof(2));
        assert_eq!(whole_result(&cursor, 1, 1 << 24), None, "a cursor");
        let (mut error, mut s) = (Vec::new(), 1);
        frame(&mut error, &mut s, &[1]);
        frame(&mut error, &mut s, b"\x03def");
        frame(&mut error, &mut s, &eof(2));
        frame(&mut error, &mut s, b"\x01a");
        frame(&mut error, &mut s, b"\xff\x15\x04#HY000oops");
        assert_eq!(whole_result(&error, 1, 1 << 24), None, "an error among the rows");
        for first in [
            &[0u8, 0, 0, 2, 0, 0, 0][..],
            b"\xff\x15\x04#HY000no",
            b"\xfbfile",
            &eof(2),
        ] {
            let (mut p, mut s) = (Vec::new(), 1);
            frame(&mut p, &mut s, first);
            assert_eq!(whole_result(&p, 1, 1 << 24), None, "{first:?}");
        }
    }
}
