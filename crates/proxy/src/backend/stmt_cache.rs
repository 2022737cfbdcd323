//! A bounded cache of prepared statements on one backend connection: SQL text -> backend
//! statement id, least recently used evicted first (the caller closes what is evicted).

use crate::fasthash::FastMap;
use bytes::Bytes;
use std::sync::Arc;

/// One statement prepared on a backend connection, with the parameter and column definition
/// packets the backend answered (EOF markers removed), to answer later client prepares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendStmt {
    pub id: u32,
    pub num_params: u16,
    pub num_columns: u16,
    pub metadata: Arc<[Bytes]>,
}

/// Statement text as the client sent it (not necessarily UTF-8).
pub type SqlText = Arc<[u8]>;

#[derive(Debug)]
struct Entry {
    stmt: BackendStmt,
    last_used: u64,
}

/// LRU map from statement text to backend handle.
#[derive(Debug)]
pub struct StmtCache {
    entries: FastMap<SqlText, Entry>,
    capacity: usize,
    tick: u64,
    /// Changes with every insertion or removal; random at creation, so no two caches share
    /// one. A (generation, id) pair a client statement remembers stays valid while it holds.
    generation: u64,
}

impl StmtCache {
    pub fn new(capacity: usize) -> Self {
        StmtCache {
            entries: FastMap::default(),
            capacity: capacity.max(1),
            tick: 0,
            generation: rand::random(),
        }
    }

    /// See the field: the handle a client statement remembered for this cache is still valid
    /// while the generation is the one it saw.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    fn changed(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&mut self, sql: &[u8]) -> Option<BackendStmt> {
        self.tick += 1;
        let tick = self.tick;
        self.entries.get_mut(sql).map(|e| {
            e.last_used = tick;
            e.stmt.clone()
        })
    }

    /// Inserts a statement; returns the handle evicted to make room, which must be closed.
    pub fn insert(&mut self, sql: SqlText, stmt: BackendStmt) -> Option<BackendStmt> {
        self.tick += 1;
        self.changed();
        let evicted = if self.entries.len() >= self.capacity && !self.entries.contains_key(&sql) {
            self.evict_oldest()
        } else {
            None
        };
        let id = stmt.id;
        if let Some(old) = self.entries.insert(
            sql,
            Entry {
                stmt,
                last_used: self.tick,
            },
        ) {
            return Some(old.stmt).filter(|o| o.id != id).or(evicted);
        }
        evicted
    }

    /// Evicts the least recently used handle if the cache is full; the caller closes it.
    pub fn make_room(&mut self) -> Option<BackendStmt> {
        self.changed();
        (self.entries.len() >= self.capacity)
            .then(|| self.evict_oldest())
            .flatten()
    }

    /// Forgets a statement (e.g. the backend lost it); returns it.
    pub fn remove(&mut self, sql: &[u8]) -> Option<BackendStmt> {
        self.changed();
        self.entries.remove(sql).map(|e| e.stmt)
    }

    fn evict_oldest(&mut self) -> Option<BackendStmt> {
        let key = self
            .entries
            .iter()
            .min_by_key(|(_, e)| e.last_used)
            .map(|(k, _)| k.clone())?;
        self.entries.remove(&key).map(|e| e.stmt)
    }

    pub fn clear(&mut self) {
        self.changed();
        self.entries.clear();
    }

    /// Removes every entry, returning the handles (to be closed on the backend).
    pub fn drain(&mut self) -> Vec<BackendStmt> {
        self.changed();
        self.entries.drain().map(|(_, e)| e.stmt).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stmt(id: u32) -> BackendStmt {
        BackendStmt {
            id,
            num_params: 0,
            num_columns: 0,
            metadata: Arc::from(Vec::new()),
        }
    }

    #[test]
    fn evicts_least_recently_used() {
        let mut c = StmtCache::new(2);
        let k = |s: &str| -> SqlText { Arc::from(s.as_bytes()) };
        assert_eq!(c.insert(k("a"), stmt(1)), None);
        assert_eq!(c.insert(k("b"), stmt(2)), None);
        assert_eq!(c.get("a".as_bytes()), Some(stmt(1)));
        assert_eq!(c.insert(k("c"), stmt(3)), Some(stmt(2)));
        assert_eq!(c.len(), 2);
        assert_eq!(c.get("b".as_bytes()), None);
        assert_eq!(
            c.insert(k("a"), stmt(4)),
            Some(stmt(1)),
            "replacing returns the old handle"
        );
    }

    #[test]
    fn every_change_of_the_mapping_moves_the_generation() {
        let k = |s: &str| -> SqlText { Arc::from(s.as_bytes()) };
        let mut c = StmtCache::new(1);
        let other = StmtCache::new(1);
        assert_ne!(c.generation(), other.generation(), "caches start apart");
        let mut seen = vec![c.generation()];
        let mut changed = |c: &StmtCache| {
            assert!(!seen.contains(&c.generation()));
            seen.push(c.generation());
        };
        c.insert(k("a"), stmt(1));
        changed(&c);
        let before = c.generation();
        assert_eq!(c.get(b"a"), Some(stmt(1)));
        assert_eq!(c.generation(), before, "a lookup changes nothing");
        c.insert(k("b"), stmt(2));
        changed(&c);
        c.make_room();
        changed(&c);
        c.remove(b"b");
        changed(&c);
        c.clear();
        changed(&c);
        c.drain();
        changed(&c);
    }
}
