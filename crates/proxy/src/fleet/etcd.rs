//! A small etcd v3 client over etcd's JSON gateway (HTTP/1.1 + JSON, `/v3/...`): ranges,
//! puts, compare-and-swap transactions, leases and a watch stream. No gRPC stack: the
//! gateway ships with every etcd v3 server, and the fleet's traffic is a few small requests.

use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// How long one unary request may take (connect, send, answer).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Why an etcd request failed.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error("etcd at {endpoints}: unreachable ({reason})")]
    Unreachable { endpoints: String, reason: String },
    #[error("etcd connection failed mid-request: {0}")]
    Connection(String),
    #[error("etcd answered {status}: {body}")]
    Refused { status: String, body: String },
    #[error("etcd answered something that is not the v3 JSON gateway's: {0}")]
    Malformed(String),
}

/// One key with its value and revisions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kv {
    pub key: String,
    pub value: Vec<u8>,
    pub mod_revision: i64,
    pub create_revision: i64,
    pub lease: i64,
}

/// A client of one etcd cluster (its client URLs, tried in order).
#[derive(Debug, Clone)]
pub struct Etcd {
    endpoints: Vec<String>,
}

/// A condition of a transaction on one key.
#[derive(Debug, Clone)]
pub enum Compare {
    /// The key does not exist.
    Absent(String),
    /// The key was last written at this revision (0: it does not exist).
    ModRevision(String, i64),
}

/// A write of a transaction.
#[derive(Debug, Clone)]
pub enum Op {
    Put { key: String, value: Vec<u8>, lease: i64 },
    Delete(String),
}

impl Etcd {
    /// A client of the etcd at `urls`: `http://host:port` (or `host:port`), comma-separated.
    pub fn new(urls: &str) -> Result<Self, EtcdError> {
        let endpoints: Vec<String> = urls
            .split(',')
            .map(|u| u.trim().trim_start_matches("http://").trim_end_matches('/').to_string())
            .filter(|u| !u.is_empty())
            .collect();
        if endpoints.is_empty() || urls.contains("https://") {
            return Err(EtcdError::Unreachable {
                endpoints: urls.to_string(),
                reason: "give etcd client URLs as http://host:port, comma-separated".into(),
            });
        }
        Ok(Etcd { endpoints })
    }

    /// The endpoints, as given (for messages).
    pub fn endpoints(&self) -> String {
        self.endpoints.join(",")
    }

    /// The keys under `prefix` (or the one key `prefix` when `whole_prefix` is false), and the
    /// store's revision at the time of reading.
    pub async fn range(&self, key: &str, whole_prefix: bool) -> Result<(Vec<Kv>, i64), EtcdError> {
        let mut body = json!({ "key": b64(key.as_bytes()) });
        if whole_prefix {
            body["range_end"] = json!(b64(&prefix_end(key.as_bytes())));
        }
        let answer = self.call("/v3/kv/range", &body).await?;
        let kvs = answer["kvs"]
            .as_array()
            .map(|a| a.iter().map(kv).collect())
            .unwrap_or_else(|| Ok(vec![]))?;
        Ok((kvs, header_revision(&answer)))
    }

    /// Writes `value` at `key` (attached to `lease` unless it is 0).
    pub async fn put(&self, key: &str, value: &[u8], lease: i64) -> Result<(), EtcdError> {
        self.call("/v3/kv/put", &put_body(key, value, lease)).await.map(drop)
    }

    /// Applies `ops` if every compare holds; true when it did.
    pub async fn txn(&self, compares: &[Compare], ops: &[Op]) -> Result<bool, EtcdError> {
        let body = json!({
            "compare": compares.iter().map(compare_body).collect::<Vec<_>>(),
            "success": ops.iter().map(op_body).collect::<Vec<_>>(),
        });
        let answer = self.call("/v3/kv/txn", &body).await?;
        Ok(answer["succeeded"].as_bool().unwrap_or(false))
    }

    /// A lease of `ttl_s` seconds; its id.
    pub async fn grant(&self, ttl_s: i64) -> Result<i64, EtcdError> {
        let answer = self
            .call("/v3/lease/grant", &json!({ "TTL": ttl_s.to_string() }))
            .await?;
        int(&answer["ID"])
            .filter(|id| *id != 0)
            .ok_or_else(|| malformed(&answer))
    }

    /// Renews a lease; its remaining TTL in seconds (0: it has expired).
    pub async fn keep_alive(&self, lease: i64) -> Result<i64, EtcdError> {
        let answer = self
            .call("/v3/lease/keepalive", &json!({ "ID": lease.to_string() }))
            .await?;
        Ok(int(&answer["result"]["TTL"]).unwrap_or(0))
    }

    /// Ends a lease now (its keys go with it).
    pub async fn revoke(&self, lease: i64) -> Result<(), EtcdError> {
        self.call("/v3/lease/revoke", &json!({ "ID": lease.to_string() }))
            .await
            .map(drop)
    }

    /// Watches the keys under `prefix` from `from_revision` on.
    pub async fn watch(&self, prefix: &str, from_revision: i64) -> Result<Watch, EtcdError> {
        let body = json!({ "create_request": {
            "key": b64(prefix.as_bytes()),
            "range_end": b64(&prefix_end(prefix.as_bytes())),
            "start_revision": from_revision.to_string(),
        }});
        let (stream, endpoint) = self.connect().await?;
        let mut reader = BufReader::new(stream);
        let head = send(&mut reader, &endpoint, "/v3/watch", &body).await?;
        if !head.status.starts_with("200") {
            return Err(EtcdError::Refused {
                status: head.status,
                body: String::new(),
            });
        }
        Ok(Watch {
            reader,
            chunked: head.chunked,
            pending: Vec::new(),
        })
    }

    /// POSTs `body` to `path` on the first endpoint that answers; the answer's JSON.
    async fn call(&self, path: &str, body: &Value) -> Result<Value, EtcdError> {
        let attempt = async {
            let (stream, endpoint) = self.connect().await?;
            let mut reader = BufReader::new(stream);
            let head = send(&mut reader, &endpoint, path, body).await?;
            let text = read_body(&mut reader, &head).await?;
            if !head.status.starts_with("200") {
                return Err(EtcdError::Refused {
                    status: head.status,
                    body: text,
                });
            }
            serde_json::from_str(&text).map_err(|e| EtcdError::Malformed(e.to_string()))
        };
        tokio::time::timeout(REQUEST_TIMEOUT, attempt)
            .await
            .unwrap_or_else(|_| Err(self.unreachable("no answer within 5 s".into())))
    }

    async fn connect(&self) -> Result<(TcpStream, String), EtcdError> {
        let mut last = String::new();
        for endpoint in &self.endpoints {
            match tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(endpoint)).await {
                Ok(Ok(stream)) => return Ok((stream, endpoint.clone())),
                Ok(Err(e)) => last = e.to_string(),
                Err(_) => last = "connect timed out".into(),
            }
        }
        Err(self.unreachable(last))
    }

    fn unreachable(&self, reason: String) -> EtcdError {
        EtcdError::Unreachable {
            endpoints: self.endpoints(),
            reason,
        }
    }
}

/// A watch stream: batches of changed keys, in revision order.
pub struct Watch {
    reader: BufReader<TcpStream>,
    chunked: bool,
    pending: Vec<u8>,
}

/// One change a watch saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub deleted: bool,
    pub kv: Kv,
}

impl Watch {
    /// The next batch of events (None: the stream ended). Batches without events (the
    /// watch's creation, progress notes) are skipped; a canceled or compacted watch ends
    /// with an error.
    pub async fn next(&mut self) -> Result<Option<Vec<Event>>, EtcdError> {
        loop {
            let Some(message) = self.next_message().await? else {
                return Ok(None);
            };
            let result = &message["result"];
            if result["canceled"].as_bool() == Some(true) || message.get("error").is_some() {
                return Err(EtcdError::Refused {
                    status: "watch canceled".into(),
                    body: message.to_string(),
                });
            }
            let Some(events) = result["events"].as_array() else {
                continue;
            };
            let events = events.iter().map(event).collect::<Result<Vec<_>, _>>()?;
            if !events.is_empty() {
                return Ok(Some(events));
            }
        }
    }

    /// The next JSON object of the stream (the gateway writes one per line).
    async fn next_message(&mut self) -> Result<Option<Value>, EtcdError> {
        loop {
            if let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return serde_json::from_slice(&line)
                    .map(Some)
                    .map_err(|e| EtcdError::Malformed(e.to_string()));
            }
            let more = if self.chunked {
                read_chunk(&mut self.reader).await?
            } else {
                let mut buf = vec![0; 4096];
                let n = self.reader.read(&mut buf).await.map_err(io_error)?;
                buf.truncate(n);
                buf
            };
            if more.is_empty() {
                return Ok(None);
            }
            self.pending.extend_from_slice(&more);
        }
    }
}

/// The status line and framing of an HTTP answer.
struct Head {
    status: String,
    chunked: bool,
    length: Option<usize>,
}

async fn send(reader: &mut BufReader<TcpStream>, host: &str, path: &str, body: &Value) -> Result<Head, EtcdError> {
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    reader.get_mut().write_all(request.as_bytes()).await.map_err(io_error)?;
    read_head(reader).await
}

async fn read_head(reader: &mut BufReader<TcpStream>) -> Result<Head, EtcdError> {
    let mut line = String::new();
    reader.read_line(&mut line).await.map_err(io_error)?;
    let status = line
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| line.strip_prefix("HTTP/1.0 "))
        .ok_or_else(|| EtcdError::Malformed(format!("status line {line:?}")))?
        .trim()
        .to_string();
    let mut head = Head {
        status,
        chunked: false,
        length: None,
    };
    loop {
        line.clear();
        if reader.read_line(&mut line).await.map_err(io_error)? == 0 || line == "\r\n" {
            return Ok(head);
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
            head.chunked = true;
        } else if name.eq_ignore_ascii_case("content-length") {
            head.length = value.parse().ok();
        }
    }
}

async fn read_body(reader: &mut BufReader<TcpStream>, head: &Head) -> Result<String, EtcdError> {
    let mut body = Vec::new();
    if head.chunked {
        loop {
            let chunk = read_chunk(reader).await?;
            if chunk.is_empty() {
                break;
            }
            body.extend_from_slice(&chunk);
        }
    } else if let Some(n) = head.length {
        body.resize(n, 0);
        reader.read_exact(&mut body).await.map_err(io_error)?;
    } else {
        reader.read_to_end(&mut body).await.map_err(io_error)?;
    }
    String::from_utf8(body).map_err(|e| EtcdError::Malformed(e.to_string()))
}

/// One chunk of a chunked body (empty: the last one, or the peer closed).
async fn read_chunk(reader: &mut BufReader<TcpStream>) -> Result<Vec<u8>, EtcdError> {
    let mut size_line = String::new();
    if reader.read_line(&mut size_line).await.map_err(io_error)? == 0 {
        return Ok(Vec::new());
    }
    let size_text = size_line.trim().split(';').next().unwrap_or("");
    let size =
        usize::from_str_radix(size_text, 16).map_err(|_| EtcdError::Malformed(format!("chunk size {size_line:?}")))?;
    let mut chunk = vec![0; size + 2];
    reader.read_exact(&mut chunk).await.map_err(io_error)?;
    chunk.truncate(size);
    Ok(chunk)
}

fn io_error(e: std::io::Error) -> EtcdError {
    EtcdError::Connection(e.to_string())
}

fn malformed(answer: &Value) -> EtcdError {
    EtcdError::Malformed(answer.to_string())
}

fn put_body(key: &str, value: &[u8], lease: i64) -> Value {
    let mut body = json!({ "key": b64(key.as_bytes()), "value": b64(value) });
    if lease != 0 {
        body["lease"] = json!(lease.to_string());
    }
    body
}

fn compare_body(c: &Compare) -> Value {
    match c {
        Compare::Absent(key) => json!({ "key": b64(key.as_bytes()), "target": "CREATE", "create_revision": "0" }),
        Compare::ModRevision(key, rev) => {
            json!({ "key": b64(key.as_bytes()), "target": "MOD", "mod_revision": rev.to_string() })
        }
    }
}

fn op_body(op: &Op) -> Value {
    match op {
        Op::Put { key, value, lease } => json!({ "request_put": put_body(key, value, *lease) }),
        Op::Delete(key) => json!({ "request_delete_range": { "key": b64(key.as_bytes()) } }),
    }
}

fn kv(v: &Value) -> Result<Kv, EtcdError> {
    let text = |name: &str| unb64(v[name].as_str().unwrap_or("")).ok_or_else(|| malformed(v));
    Ok(Kv {
        key: String::from_utf8(text("key")?).map_err(|_| malformed(v))?,
        value: text("value")?,
        mod_revision: int(&v["mod_revision"]).unwrap_or(0),
        create_revision: int(&v["create_revision"]).unwrap_or(0),
        lease: int(&v["lease"]).unwrap_or(0),
    })
}

fn event(v: &Value) -> Result<Event, EtcdError> {
    Ok(Event {
        deleted: v["type"].as_str() == Some("DELETE"),
        kv: kv(&v["kv"])?,
    })
}

fn header_revision(answer: &Value) -> i64 {
    int(&answer["header"]["revision"]).unwrap_or(0)
}

/// The gateway writes 64-bit integers as JSON strings (and leaves zeros out).
fn int(v: &Value) -> Option<i64> {
    v.as_str().and_then(|s| s.parse().ok()).or_else(|| v.as_i64())
}

/// The key just past every key starting with `prefix` (etcd's `range_end` for a prefix).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (the gateway's encoding of bytes).
pub fn b64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (padding optional); None on a byte outside the alphabet.
pub fn unb64(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u32> = text
        .trim_end_matches('=')
        .bytes()
        .map(|c| B64.iter().position(|d| *d == c).map(|p| p as u32))
        .collect::<Option<_>>()?;
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for group in digits.chunks(4) {
        let n = group.iter().enumerate().fold(0u32, |n, (i, d)| n | (d << (18 - 6 * i)));
        for i in 0..group.len().saturating_sub(1) {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_every_length_and_matches_the_standard_alphabet() {
        assert_eq!(b64(b""), "");
        assert_eq!(b64(b"f"), "Zg==");
        assert_eq!(b64(b"fo"), "Zm8=");
        assert_eq!(b64(b"foo"), "Zm9v");
        assert_eq!(b64(b"foob"), "Zm9vYg==");
        assert_eq!(b64(&[0xfb, 0xff]), "+/8=");
        for len in 0..40u8 {
            let bytes: Vec<u8> = (0..len).map(|i| i.wrapping_mul(37).wrapping_add(200)).collect();
            assert_eq!(unb64(&b64(&bytes)).as_deref(), Some(&bytes[..]), "length {len}");
        }
        assert_eq!(unb64("Zm9v!"), None);
    }

    #[test]
    fn a_prefix_ends_past_its_last_byte() {
        assert_eq!(prefix_end(b"/a/"), b"/a0".to_vec());
        assert_eq!(prefix_end(&[b'a', 0xff]), b"b".to_vec());
        assert_eq!(prefix_end(&[0xff]), vec![0]);
    }

    #[test]
    fn urls_lose_their_scheme_and_https_is_refused() {
        let e = Etcd::new("http://127.0.0.1:2379/, 10.0.0.2:2379").expect("urls");
        assert_eq!(e.endpoints(), "127.0.0.1:2379,10.0.0.2:2379");
        assert!(Etcd::new("https://127.0.0.1:2379").is_err());
        assert!(Etcd::new(" , ").is_err());
    }
}
