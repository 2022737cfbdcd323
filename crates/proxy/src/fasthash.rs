//! A fast, non-cryptographic hasher for the maps the hot path looks up on every statement.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// Hashes a word at a time (FxHash's multiply-rotate scheme, with a folded multiply at the
/// end). For maps looked up on every statement whose keys are bounded per session or per
/// connection (statement texts, statement ids): SipHash costs more than the lookup needs, and
/// a client crafting colliding keys only slows its own bounded map.
#[derive(Default)]
pub struct FastHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut word = [0u8; 8];
            word.copy_from_slice(w);
            self.add(u64::from_le_bytes(word));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        let folded = u128::from(self.0) * u128::from(SEED);
        (folded as u64) ^ ((folded >> 64) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_tells_similar_texts_apart() {
        use std::hash::BuildHasher;
        let h = BuildHasherDefault::<FastHasher>::default();
        let texts = [
            "SELECT c FROM sbtest1 WHERE id=?",
            "SELECT c FROM sbtest2 WHERE id=?",
            "SELECT c FROM sbtest1 WHERE id=? ",
            "a",
            "a\0",
            "",
            "12345678",
            "123456781",
            "12345687",
        ];
        let hashes: std::collections::HashSet<u64> = texts.iter().map(|t| h.hash_one(t.as_bytes())).collect();
        assert_eq!(hashes.len(), texts.len());
    }

    #[test]
    fn it_tells_nearby_ids_apart() {
        use std::hash::BuildHasher;
        let h = BuildHasherDefault::<FastHasher>::default();
        let hashes: std::collections::HashSet<u64> = (0u32..10_000).map(|id| h.hash_one(id)).collect();
        assert_eq!(hashes.len(), 10_000);
    }
}
