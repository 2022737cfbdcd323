//! `LOAD DATA LOCAL INFILE` into a sharded table: the client's file is read once, cut into
//! records as MariaDB would cut them (FIELDS TERMINATED/ENCLOSED/ESCAPED BY, LINES TERMINATED
//! BY), and each record goes, unchanged, to the LOAD DATA of the shard its key places it on.
//! The shards load in transactions committed only when every shard succeeded.

use crate::topology::shard_fn::KeyValue;
use tessera_sql::{Lexer, TokenKind};

/// What a LOAD DATA statement says about its file and table.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadSpec {
    pub table: String,
    pub field_term: Vec<u8>,
    pub line_term: Vec<u8>,
    pub enclosed: Option<u8>,
    pub escaped: Option<u8>,
    pub ignore_lines: u64,
    /// The column list (None: the table's columns in order).
    pub columns: Option<Vec<String>>,
    /// The statement the shards run: the client's without its `IGNORE n LINES` (done once,
    /// here).
    pub shard_sql: String,
}

/// A string option's bytes as the session reads strings (`backslash_escapes` false:
/// `NO_BACKSLASH_ESCAPES`, where `'\t'` is a backslash and a `t`).
fn string_value(text: &str, backslash_escapes: bool) -> Vec<u8> {
    tessera_sql::unquote_as(text, backslash_escapes).as_bytes().to_vec()
}

impl LoadSpec {
    /// Reads the options of `LOAD DATA LOCAL INFILE ...`, its strings as the session reads
    /// them (`backslash_escapes`); Err names what is not supported.
    pub fn parse(sql: &str, backslash_escapes: bool) -> Result<LoadSpec, String> {
        let t: Vec<_> = Lexer::with_backslash_escapes(sql, backslash_escapes)
            .filter(|t| t.is_significant())
            .collect();
        let word = |i: usize, w: &str| t.get(i).is_some_and(|x| x.is_word(w));
        if !(word(0, "LOAD") && word(1, "DATA") && word(2, "LOCAL") && word(3, "INFILE")) {
            return Err("LOAD DATA INFILE of a server file into a sharded table (use LOCAL)".into());
        }
        let mut i = 5;
        if word(i, "REPLACE") || word(i, "IGNORE") {
            i += 1;
        }
        if !(word(i, "INTO") && word(i + 1, "TABLE")) {
            return Err("this LOAD DATA form into a sharded table".into());
        }
        i += 2;
        let mut table = tessera_sql::unquote(t.get(i).ok_or("LOAD DATA without a table")?.text).into_owned();
        if t.get(i + 1).is_some_and(|x| x.kind == TokenKind::Dot) {
            table = tessera_sql::unquote(t.get(i + 2).ok_or("LOAD DATA without a table")?.text).into_owned();
            i += 2;
        }
        i += 1;
        let mut spec = LoadSpec {
            table,
            field_term: b"\t".to_vec(),
            line_term: b"\n".to_vec(),
            enclosed: None,
            escaped: Some(b'\\'),
            ignore_lines: 0,
            columns: None,
            shard_sql: sql.to_string(),
        };
        spec.read_options(sql, &t, i, backslash_escapes)?;
        Ok(spec)
    }

    fn read_options(
        &mut self,
        sql: &str,
        t: &[tessera_sql::Token<'_>],
        mut i: usize,
        escapes: bool,
    ) -> Result<(), String> {
        let word = |i: usize, w: &str| t.get(i).is_some_and(|x| x.is_word(w));
        let text = |i: usize| t.get(i).map(|x| x.text).unwrap_or("");
        while i < t.len() {
            if word(i, "CHARACTER") && word(i + 1, "SET") {
                i += 3;
            } else if word(i, "FIELDS") || word(i, "COLUMNS") || word(i, "LINES") {
                i += 1;
            } else if word(i, "TERMINATED") && word(i + 1, "BY") {
                let lines = (0..i)
                    .rev()
                    .find(|&k| word(k, "LINES") || word(k, "FIELDS") || word(k, "COLUMNS"));
                let v = string_value(text(i + 2), escapes);
                if lines.is_some_and(|k| word(k, "LINES")) {
                    self.line_term = v;
                } else {
                    self.field_term = v;
                }
                i += 3;
            } else if word(i, "OPTIONALLY") {
                i += 1;
            } else if word(i, "ENCLOSED") && word(i + 1, "BY") {
                self.enclosed = string_value(text(i + 2), escapes).first().copied();
                i += 3;
            } else if word(i, "ESCAPED") && word(i + 1, "BY") {
                self.escaped = string_value(text(i + 2), escapes).first().copied();
                i += 3;
            } else if word(i, "STARTING") {
                return Err("LOAD DATA with LINES STARTING BY into a sharded table".into());
            } else if word(i, "IGNORE") && (word(i + 2, "LINES") || word(i + 2, "ROWS")) {
                self.ignore_lines = text(i + 1).parse().map_err(|_| "IGNORE n LINES with a bad n")?;
                let (start, end) = (t[i].offset, t[i + 2].end());
                self.shard_sql = format!("{}{}", &sql[..start], &sql[end..]);
                return self.read_columns(sql, t, i + 3);
            } else if t[i].kind == TokenKind::LParen || word(i, "SET") {
                return self.read_columns(sql, t, i);
            } else {
                return Err(format!("LOAD DATA option {} into a sharded table", t[i].text));
            }
        }
        if self.field_term.is_empty() || self.line_term.is_empty() {
            return Err("LOAD DATA with empty terminators into a sharded table".into());
        }
        Ok(())
    }

    fn read_columns(&mut self, _sql: &str, t: &[tessera_sql::Token<'_>], mut i: usize) -> Result<(), String> {
        if t.get(i).is_some_and(|x| x.kind == TokenKind::LParen) {
            let mut cols = Vec::new();
            i += 1;
            while let Some(x) = t.get(i) {
                match x.kind {
                    TokenKind::RParen => break,
                    TokenKind::Comma => {}
                    _ => cols.push(tessera_sql::unquote(x.text).into_owned()),
                }
                i += 1;
            }
            self.columns = Some(cols);
        }
        Ok(())
    }
}

/// Cuts a file's bytes into records (terminators, enclosures and escapes as MariaDB reads
/// them) and reads one field of each.
#[derive(Debug)]
pub struct RecordSplitter<'s> {
    spec: &'s LoadSpec,
    key_field: usize,
    carry: Vec<u8>,
}

/// One record: its bytes (with its line terminator) and its key field (None: NULL).
pub type Record = (Vec<u8>, Option<Vec<u8>>);

impl<'s> RecordSplitter<'s> {
    pub fn new(spec: &'s LoadSpec, key_field: usize) -> Self {
        RecordSplitter {
            spec,
            key_field,
            carry: Vec::new(),
        }
    }

    /// Adds file bytes; returns the records they complete.
    pub fn feed(&mut self, data: &[u8]) -> Vec<Record> {
        self.carry.extend_from_slice(data);
        let mut out = Vec::new();
        let mut start = 0;
        while let Some((len, key)) = self.scan(&self.carry[start..], false) {
            out.push((self.carry[start..start + len].to_vec(), key));
            start += len;
        }
        self.carry.drain(..start);
        out
    }

    /// The last record, when the file does not end with a line terminator (one is added).
    pub fn finish(&mut self) -> Option<Record> {
        if self.carry.is_empty() {
            return None;
        }
        let rest = std::mem::take(&mut self.carry);
        let (_, key) = self.scan(&rest, true).unwrap_or((rest.len(), None));
        let mut bytes = rest;
        bytes.extend_from_slice(&self.spec.line_term);
        Some((bytes, key))
    }

    /// The length of the record at the start of `buf` and its key field; None when `buf`
    /// holds no complete record (unless `at_end`).
    fn scan(&self, buf: &[u8], at_end: bool) -> Option<(usize, Option<Vec<u8>>)> {
        let (ft, lt) = (&self.spec.field_term[..], &self.spec.line_term[..]);
        let mut pos = 0;
        let mut field = 0;
        let mut key = None;
        loop {
            let start = pos;
            if let Some(e) = self.spec.enclosed.filter(|e| buf.get(pos) == Some(e)) {
                pos = self.skip_enclosed(buf, pos + 1, e)?;
            }
            loop {
                if pos >= buf.len() {
                    if !at_end {
                        return None;
                    }
                    if field == self.key_field {
                        key = Some(self.decode(&buf[start..pos]));
                    }
                    return Some((pos, key.flatten()));
                }
                if self.spec.escaped == Some(buf[pos]) {
                    pos += 2;
                    continue;
                }
                if buf[pos..].starts_with(lt) || buf[pos..].starts_with(ft) {
                    break;
                }
                pos += 1;
            }
            if field == self.key_field {
                key = Some(self.decode(&buf[start..pos]));
            }
            if buf[pos..].starts_with(lt) {
                return Some((pos + lt.len(), key.flatten()));
            }
            pos += ft.len();
            field += 1;
        }
    }

    /// Past an enclosed value (from just after its opening quote): a doubled quote or an
    /// escaped one stays inside.
    fn skip_enclosed(&self, buf: &[u8], mut pos: usize, e: u8) -> Option<usize> {
        loop {
            let c = *buf.get(pos)?;
            if self.spec.escaped == Some(c) {
                pos += 2;
            } else if c == e {
                if buf.get(pos + 1) == Some(&e) {
                    pos += 2;
                } else {
                    return Some(pos + 1);
                }
            } else {
                pos += 1;
            }
        }
    }

    /// A field's value: None for NULL (`\N`, or an unenclosed `NULL` with ENCLOSED BY).
    fn decode(&self, raw: &[u8]) -> Option<Vec<u8>> {
        let esc = self.spec.escaped;
        if esc.is_some_and(|e| raw == [e, b'N']) || (self.spec.enclosed.is_some() && raw == b"NULL") {
            return None;
        }
        let (inner, enclosed) = match self.spec.enclosed {
            Some(e) if raw.len() >= 2 && raw[0] == e && raw[raw.len() - 1] == e => (&raw[1..raw.len() - 1], Some(e)),
            _ => (raw, None),
        };
        let mut out = Vec::with_capacity(inner.len());
        let mut i = 0;
        while i < inner.len() {
            let c = inner[i];
            if esc == Some(c) && i + 1 < inner.len() {
                out.push(match inner[i + 1] {
                    b'0' => 0,
                    b'b' => 8,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'Z' => 26,
                    other => other,
                });
                i += 2;
            } else if enclosed == Some(c) && inner.get(i + 1) == Some(&c) {
                out.push(c);
                i += 2;
            } else {
                out.push(c);
                i += 1;
            }
        }
        Some(out)
    }
}

/// A key field as a shard-key value (text; the shard function reads it for its key type).
pub fn key_value(field: Option<Vec<u8>>) -> KeyValue {
    match field {
        None => KeyValue::Null,
        Some(b) => match String::from_utf8(b) {
            Ok(s) => KeyValue::Str(s),
            Err(e) => KeyValue::Bytes(e.into_bytes()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_read() {
        let s = LoadSpec::parse(
            "LOAD DATA LOCAL INFILE '/tmp/x.csv' INTO TABLE shop.orders FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n' IGNORE 1 LINES (id, customer_id, @v) SET note = @v",
            true,
        )
        .unwrap();
        assert_eq!(s.table, "orders");
        assert_eq!(s.field_term, b",");
        assert_eq!(s.line_term, b"\r\n");
        assert_eq!(s.enclosed, Some(b'"'));
        assert_eq!(s.ignore_lines, 1);
        assert_eq!(
            s.columns.as_deref(),
            Some(&["id".to_string(), "customer_id".into(), "@v".into()][..])
        );
        assert!(!s.shard_sql.contains("IGNORE 1"), "{}", s.shard_sql);
        assert!(LoadSpec::parse("LOAD DATA INFILE '/x' INTO TABLE t", true).is_err());
    }

    #[test]
    fn options_follow_no_backslash_escapes() {
        let sql = r"LOAD DATA LOCAL INFILE 'C:\data\x.csv' INTO TABLE t FIELDS TERMINATED BY '\t' ESCAPED BY '\'";
        let s = LoadSpec::parse(sql, false).unwrap();
        assert_eq!(s.field_term, br"\t", "a backslash and a t");
        assert_eq!(s.escaped, Some(b'\\'));
        assert_eq!(file_name(sql, false).as_deref(), Some(&br"C:\data\x.csv"[..]));
        let default = r"LOAD DATA LOCAL INFILE 'C:\\data' INTO TABLE t FIELDS TERMINATED BY '\t'";
        assert_eq!(LoadSpec::parse(default, true).unwrap().field_term, b"\t");
        assert_eq!(file_name(default, true).as_deref(), Some(&br"C:\data"[..]));
    }

    #[test]
    fn records_split_like_mariadb_reads_them() {
        let spec = LoadSpec::parse(
            "LOAD DATA LOCAL INFILE 'f' INTO TABLE t FIELDS TERMINATED BY ',' ENCLOSED BY '\"'",
            true,
        )
        .unwrap();
        let mut s = RecordSplitter::new(&spec, 1);
        let mut got = s.feed(b"1,\"a,\nb\",x\n2,\\N,y\n3,\"q\"\"");
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].1.as_deref(), Some(&b"a,\nb"[..]));
        assert_eq!(got[1].1, None);
        got = s.feed(b"r\",z");
        assert!(got.is_empty());
        let last = s.finish().unwrap();
        assert_eq!(last.1.as_deref(), Some(&b"q\"r"[..]));
        assert!(last.0.ends_with(b"z\n"));
    }
}

/// The numbers of a LOAD DATA's OK message (`Records: 3  Deleted: 0  Skipped: 0  Warnings: 0`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LoadCounts {
    /// Rows the shards reported changed (the OK packets' affected rows).
    pub affected: u64,
    pub records: u64,
    pub deleted: u64,
    pub skipped: u64,
    pub warnings: u64,
}

impl LoadCounts {
    pub fn parse(info: &[u8]) -> LoadCounts {
        let text = String::from_utf8_lossy(info);
        let read = |label: &str| -> u64 {
            text.split(label)
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        LoadCounts {
            affected: 0,
            records: read("Records:"),
            deleted: read("Deleted:"),
            skipped: read("Skipped:"),
            warnings: read("Warnings:"),
        }
    }

    pub fn add(&mut self, other: LoadCounts) {
        self.affected += other.affected;
        self.records += other.records;
        self.deleted += other.deleted;
        self.skipped += other.skipped;
        self.warnings += other.warnings;
    }

    pub fn message(&self) -> String {
        format!(
            "Records: {}  Deleted: {}  Skipped: {}  Warnings: {}",
            self.records, self.deleted, self.skipped, self.warnings
        )
    }
}

/// The file name a LOAD DATA LOCAL statement names, read as the session reads strings.
pub fn file_name(sql: &str, backslash_escapes: bool) -> Option<Vec<u8>> {
    let t: Vec<_> = Lexer::with_backslash_escapes(sql, backslash_escapes)
        .filter(|t| t.is_significant())
        .collect();
    let at = t.iter().position(|x| x.is_word("INFILE"))?;
    t.get(at + 1)
        .filter(|x| x.kind == TokenKind::String)
        .map(|x| string_value(x.text, backslash_escapes))
}
