//! Connection phase packets: HandshakeV10, HandshakeResponse41, SSLRequest, AuthSwitchRequest
//! and AuthMoreData, in both directions.

use crate::codec::{put_lenenc_bytes, put_null_terminated, Reader};
use crate::error::{ProtocolError, Result};
use crate::flags::*;
use bytes::{BufMut, BytesMut};

/// The server's greeting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeV10 {
    pub server_version: String,
    pub connection_id: u32,
    pub scramble: Vec<u8>,
    pub capabilities: u32,
    pub charset: u8,
    pub status: u16,
    pub auth_plugin: String,
    /// MariaDB's extended capabilities (the upper 32 bits), in the last 4 reserved bytes;
    /// MariaDB servers signal themselves by not setting CLIENT_MYSQL (CLIENT_LONG_PASSWORD).
    pub extended_capabilities: u32,
}

impl HandshakeV10 {
    pub fn encode(&self, out: &mut BytesMut) {
        out.put_u8(10);
        put_null_terminated(out, self.server_version.as_bytes());
        out.put_u32_le(self.connection_id);
        out.put_slice(&self.scramble[..8]);
        out.put_u8(0);
        out.put_u16_le(self.capabilities as u16);
        out.put_u8(self.charset);
        out.put_u16_le(self.status);
        out.put_u16_le((self.capabilities >> 16) as u16);
        out.put_u8(21);
        out.put_slice(&[0u8; 6]);
        out.put_u32_le(self.extended_capabilities);
        out.put_slice(&self.scramble[8..]);
        out.put_u8(0);
        put_null_terminated(out, self.auth_plugin.as_bytes());
    }

    pub fn parse(payload: &[u8]) -> Result<Self> {
        let mut r = Reader::new(payload);
        if r.u8()? != 10 {
            return Err(ProtocolError::Malformed("unsupported handshake protocol version"));
        }
        let server_version = String::from_utf8_lossy(r.null_terminated()?).into_owned();
        let connection_id = r.u32()?;
        let mut scramble = r.take(8)?.to_vec();
        r.skip(1)?;
        let mut capabilities = u32::from(r.u16()?);
        let charset = r.u8()?;
        let status = r.u16()?;
        capabilities |= u32::from(r.u16()?) << 16;
        let auth_len = usize::from(r.u8()?);
        r.skip(6)?;
        let extended_capabilities = r.u32()?;
        if capabilities & CLIENT_SECURE_CONNECTION != 0 {
            let n = auth_len.saturating_sub(8).max(13);
            let part2 = r.take(n.min(r.remaining()))?;
            scramble.extend_from_slice(part2.strip_suffix(&[0]).unwrap_or(part2));
        }
        let auth_plugin = if capabilities & CLIENT_PLUGIN_AUTH != 0 {
            String::from_utf8_lossy(r.null_terminated_or_eof()).into_owned()
        } else {
            crate::auth::NATIVE_PASSWORD.to_string()
        };
        Ok(HandshakeV10 {
            server_version,
            connection_id,
            scramble,
            capabilities,
            charset,
            status,
            auth_plugin,
            extended_capabilities,
        })
    }
}

/// The client's answer to the greeting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HandshakeResponse {
    pub capabilities: u32,
    pub max_packet: u32,
    pub charset: u8,
    pub username: String,
    pub auth_response: Vec<u8>,
    pub database: Option<String>,
    pub auth_plugin: Option<String>,
    pub attributes: Vec<(String, String)>,
    /// MariaDB extended capabilities, in the last 4 bytes of the filler.
    pub extended_capabilities: u32,
}

/// An SSLRequest is a truncated HandshakeResponse41 with CLIENT_SSL set.
pub fn is_ssl_request(payload: &[u8]) -> bool {
    payload.len() == 32 && Reader::new(payload).u32().is_ok_and(|c| c & CLIENT_SSL != 0)
}

impl HandshakeResponse {
    pub fn parse(payload: &[u8]) -> Result<Self> {
        let mut r = Reader::new(payload);
        let capabilities = r.u32()?;
        if capabilities & CLIENT_PROTOCOL_41 == 0 {
            return Err(ProtocolError::Malformed("client does not support protocol 4.1"));
        }
        let max_packet = r.u32()?;
        let charset = r.u8()?;
        r.skip(19)?;
        let extended_capabilities = r.u32()?;
        let username = lossy(r.null_terminated()?);
        let auth_response = if capabilities & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
            r.lenenc_bytes()?.to_vec()
        } else if capabilities & CLIENT_SECURE_CONNECTION != 0 {
            let n = usize::from(r.u8()?);
            r.take(n)?.to_vec()
        } else {
            r.null_terminated()?.to_vec()
        };
        let database = if capabilities & CLIENT_CONNECT_WITH_DB != 0 && !r.is_empty() {
            Some(lossy(r.null_terminated_or_eof())).filter(|d| !d.is_empty())
        } else {
            None
        };
        let auth_plugin = if capabilities & CLIENT_PLUGIN_AUTH != 0 && !r.is_empty() {
            Some(lossy(r.null_terminated_or_eof()))
        } else {
            None
        };
        let attributes = if capabilities & CLIENT_CONNECT_ATTRS != 0 && !r.is_empty() {
            parse_attributes(&mut r)?
        } else {
            Vec::new()
        };
        Ok(HandshakeResponse {
            capabilities,
            max_packet,
            charset,
            username,
            auth_response,
            database,
            auth_plugin,
            attributes,
            extended_capabilities,
        })
    }

    pub fn encode(&self, out: &mut BytesMut) {
        self.encode_ssl_request(out);
        put_null_terminated(out, self.username.as_bytes());
        if self.capabilities & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
            put_lenenc_bytes(out, &self.auth_response);
        } else {
            out.put_u8(self.auth_response.len() as u8);
            out.put_slice(&self.auth_response);
        }
        if self.capabilities & CLIENT_CONNECT_WITH_DB != 0 {
            put_null_terminated(out, self.database.as_deref().unwrap_or("").as_bytes());
        }
        if self.capabilities & CLIENT_PLUGIN_AUTH != 0 {
            put_null_terminated(out, self.auth_plugin.as_deref().unwrap_or("").as_bytes());
        }
        if self.capabilities & CLIENT_CONNECT_ATTRS != 0 {
            let mut attrs = BytesMut::new();
            for (k, v) in &self.attributes {
                put_lenenc_bytes(&mut attrs, k.as_bytes());
                put_lenenc_bytes(&mut attrs, v.as_bytes());
            }
            put_lenenc_bytes(out, &attrs);
        }
    }

    /// The first 32 bytes, which alone form an SSLRequest.
    pub fn encode_ssl_request(&self, out: &mut BytesMut) {
        out.put_u32_le(self.capabilities);
        out.put_u32_le(self.max_packet);
        out.put_u8(self.charset);
        out.put_slice(&[0u8; 19]);
        out.put_u32_le(self.extended_capabilities);
    }
}

fn parse_attributes(r: &mut Reader<'_>) -> Result<Vec<(String, String)>> {
    let block = r.lenenc_bytes()?;
    let mut a = Reader::new(block);
    let mut out = Vec::new();
    while !a.is_empty() {
        let k = lossy(a.lenenc_bytes()?);
        let v = lossy(a.lenenc_bytes()?);
        out.push((k, v));
    }
    Ok(out)
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// AuthSwitchRequest: 0xFE, plugin name, plugin data.
pub fn encode_auth_switch(out: &mut BytesMut, plugin: &str, data: &[u8]) {
    out.put_u8(0xfe);
    put_null_terminated(out, plugin.as_bytes());
    out.put_slice(data);
    out.put_u8(0);
}

/// Parses an AuthSwitchRequest into (plugin, data without trailing NUL).
pub fn parse_auth_switch(payload: &[u8]) -> Result<(String, Vec<u8>)> {
    let mut r = Reader::new(payload);
    if r.u8()? != 0xfe {
        return Err(ProtocolError::Malformed("not an auth switch request"));
    }
    let plugin = lossy(r.null_terminated_or_eof());
    let data = r.rest();
    Ok((plugin, data.strip_suffix(&[0]).unwrap_or(data).to_vec()))
}

/// AuthMoreData: 0x01 followed by plugin-specific bytes.
pub fn encode_auth_more_data(out: &mut BytesMut, data: &[u8]) {
    out.put_u8(0x01);
    out.put_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_roundtrip() {
        let h = HandshakeV10 {
            server_version: "5.5.5-10.11.0-MariaDB-tessera".into(),
            connection_id: 42,
            scramble: crate::auth::new_scramble().to_vec(),
            capabilities: PROXY_CAPABILITIES,
            charset: 45,
            status: SERVER_STATUS_AUTOCOMMIT,
            auth_plugin: "mysql_native_password".into(),
            extended_capabilities: MARIADB_CLIENT_EXTENDED_METADATA,
        };
        let mut b = BytesMut::new();
        h.encode(&mut b);
        assert_eq!(HandshakeV10::parse(&b).unwrap(), h);
    }

    #[test]
    fn response_roundtrip_and_ssl() {
        let resp = HandshakeResponse {
            capabilities: PROXY_CAPABILITIES,
            max_packet: 1 << 24,
            charset: 45,
            username: "app".into(),
            auth_response: vec![1; 20],
            database: Some("test".into()),
            auth_plugin: Some("mysql_native_password".into()),
            attributes: vec![("_client_name".into(), "x".into())],
            extended_capabilities: MARIADB_CLIENT_EXTENDED_METADATA,
        };
        let mut b = BytesMut::new();
        resp.encode(&mut b);
        assert_eq!(HandshakeResponse::parse(&b).unwrap(), resp);
        let mut s = BytesMut::new();
        let ssl = HandshakeResponse {
            capabilities: resp.capabilities | CLIENT_SSL,
            ..resp
        };
        ssl.encode_ssl_request(&mut s);
        assert!(is_ssl_request(&s));
        for cut in 0..b.len() {
            let _ = HandshakeResponse::parse(&b[..cut]);
        }
    }

    #[test]
    fn auth_switch_roundtrip() {
        let mut b = BytesMut::new();
        encode_auth_switch(&mut b, "mysql_native_password", b"01234567890123456789");
        let (p, d) = parse_auth_switch(&b).unwrap();
        assert_eq!(
            (p.as_str(), d.as_slice()),
            ("mysql_native_password", &b"01234567890123456789"[..])
        );
    }
}
