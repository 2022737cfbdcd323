//! Authentication scrambles: mysql_native_password and caching_sha2_password, both the client
//! side (answering a server's challenge) and the server side (verifying a client's answer).

use rand::RngCore;
use sha1::{Digest, Sha1};
use sha2::Sha256;

pub const NATIVE_PASSWORD: &str = "mysql_native_password";
pub const CACHING_SHA2_PASSWORD: &str = "caching_sha2_password";
pub const CLEAR_PASSWORD: &str = "mysql_clear_password";

/// caching_sha2_password: the server accepted the fast-path scramble.
pub const SHA2_FAST_AUTH_OK: u8 = 3;
/// caching_sha2_password: the server asks for the full password (TLS or RSA).
pub const SHA2_PERFORM_FULL_AUTH: u8 = 4;
/// caching_sha2_password: the client asks for the server's RSA public key.
pub const SHA2_REQUEST_PUBLIC_KEY: u8 = 2;

/// 20 random printable bytes (no NUL, no '$'), as servers send in the handshake.
pub fn new_scramble() -> [u8; 20] {
    let mut s = [0u8; 20];
    rand::thread_rng().fill_bytes(&mut s);
    for b in &mut s {
        *b = 0x21 + (*b % 0x5e);
        if *b == b'$' {
            *b = b'#';
        }
    }
    s
}

fn sha1(parts: &[&[u8]]) -> [u8; 20] {
    let mut h = Sha1::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

fn xor_in_place(a: &mut [u8], b: &[u8]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x ^= y;
    }
}

/// The stored form of a native password: SHA1(SHA1(password)), as in mysql.user ("*HEX").
pub fn native_password_hash(password: &[u8]) -> [u8; 20] {
    sha1(&[&sha1(&[password])])
}

/// Parses "*" + 40 hex digits (MySQL's PASSWORD() output) into the double-SHA1 hash.
pub fn parse_native_hash(text: &str) -> Option<[u8; 20]> {
    let hex = text.strip_prefix('*').unwrap_or(text);
    if hex.len() != 40 {
        return None;
    }
    let mut out = [0u8; 20];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Client side of mysql_native_password: SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw))).
pub fn native_scramble(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = sha1(&[password]);
    let stage2 = sha1(&[&stage1]);
    let mut out = sha1(&[trim_scramble(scramble), &stage2]);
    xor_in_place(&mut out, &stage1);
    out.to_vec()
}

/// Server side of mysql_native_password, with only the stored double-SHA1 hash.
pub fn verify_native(stored_hash: &[u8; 20], scramble: &[u8], response: &[u8]) -> bool {
    if response.len() != 20 {
        return false;
    }
    let mut stage1 = sha1(&[trim_scramble(scramble), stored_hash]);
    xor_in_place(&mut stage1, response);
    constant_time_eq(&sha1(&[&stage1]), stored_hash)
}

/// Client side of caching_sha2_password fast path:
/// SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) + scramble).
pub fn sha2_scramble(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = sha256(&[password]);
    let stage2 = sha256(&[&stage1]);
    let mut out = sha256(&[&stage2, trim_scramble(scramble)]);
    xor_in_place(&mut out, &stage1);
    out.to_vec()
}

/// Server side of caching_sha2_password fast path, with the plaintext password known.
pub fn verify_sha2(password: &[u8], scramble: &[u8], response: &[u8]) -> bool {
    if password.is_empty() {
        return response.is_empty();
    }
    constant_time_eq(&sha2_scramble(password, scramble), response)
}

/// Scrambles are 20 bytes; some peers append a NUL.
fn trim_scramble(scramble: &[u8]) -> &[u8] {
    match scramble.len() {
        21 if scramble[20] == 0 => &scramble[..20],
        _ => scramble,
    }
}

/// Compares without an early exit so timing reveals nothing about the secret.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_roundtrip_and_known_hash() {
        // PASSWORD('tessera') in MySQL/MariaDB.
        let hash = native_password_hash(b"tessera");
        let text: String = hash.iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(parse_native_hash(&format!("*{text}")), Some(hash));
        let s = new_scramble();
        assert!(verify_native(&hash, &s, &native_scramble(b"tessera", &s)));
        assert!(!verify_native(&hash, &s, &native_scramble(b"wrong", &s)));
        assert!(!verify_native(&hash, &s, b"short"));
    }

    #[test]
    fn known_native_vector() {
        // Known answer: PASSWORD('password') = *2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19
        let h = parse_native_hash("*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19").unwrap();
        assert_eq!(h, native_password_hash(b"password"));
    }

    #[test]
    fn sha2_roundtrip() {
        let s = new_scramble();
        let r = sha2_scramble(b"secret", &s);
        assert_eq!(r.len(), 32);
        assert!(verify_sha2(b"secret", &s, &r));
        assert!(!verify_sha2(b"other", &s, &r));
        assert!(verify_sha2(b"", &s, b""));
    }

    #[test]
    fn scramble_is_printable_without_nul() {
        for _ in 0..100 {
            assert!(new_scramble().iter().all(|&b| (0x21..0x7f).contains(&b) && b != b'$'));
        }
    }
}
