//! A bounded cache of prepared statements on one backend connection: SQL text -> backend
//! statement id, least recently used evicted first (the caller closes what is evicted).

use crate::fasthash::FastMap;
use bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How many schema changes (DDL) have gone through this process. A statement prepared before
/// the latest one may describe columns that no longer exist, so a client's PREPARE does not
/// take its metadata from a cache entry older than that ([`BackendStmt::schema_epoch`]).
#[derive(Debug, Default)]
pub struct SchemaChanges(AtomicU64);

impl SchemaChanges {
    /// The count now: recorded with a statement prepared after reading it.
    pub fn current(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// A schema change has completed (counted after its answer, so a PREPARE that read the
    /// count before it can only look older than it is).
    pub fn record(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

/// One statement prepared on a backend connection, with the parameter and column definition
/// packets the backend answered (EOF markers removed), to answer later client prepares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendStmt {
    pub id: u32,
    pub num_params: u16,
    pub num_columns: u16,
    pub metadata: Arc<[Bytes]>,
    /// [`SchemaChanges::current`] when the PREPARE was sent: the metadata describes the
    /// tables as they were after that many schema changes (or later).
    pub schema_epoch: u64,
}

/// Statement text as the client sent it (not necessarily UTF-8).
pub type SqlText = Arc<[u8]>;

#[derive(Debug)]
struct Entry {
    sql: SqlText,
    stmt: BackendStmt,
    last_used: u64,
    /// The parameter types last sent with an execution of this statement, which the server
    /// holds (forgotten when an execution fails); None before one.
    bound_types: Option<Box<[u8]>>,
}

/// What a client statement remembers of its handle on one connection: valid while the cache's
/// generation is the one it saw, and then `slot` still holds `id` (any insertion or removal,
/// which could move a slot, changes the generation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remembered {
    generation: u64,
    id: u32,
    slot: u32,
}

impl Remembered {
    /// The backend statement id.
    pub fn id(&self) -> u32 {
        self.id
    }
}

/// LRU map from statement text to backend handle: the handles in a dense slab, an index by
/// text beside it, so a remembered slot is touched without hashing the text.
#[derive(Debug)]
pub struct StmtCache {
    index: FastMap<SqlText, usize>,
    slots: Vec<Entry>,
    capacity: usize,
    tick: u64,
    /// Changes with every insertion or removal; random at creation, so no two caches share
    /// one. A [`Remembered`] stays valid while it holds.
    generation: u64,
}

impl StmtCache {
    pub fn new(capacity: usize) -> Self {
        StmtCache {
            index: FastMap::default(),
            slots: Vec::new(),
            capacity: capacity.max(1),
            tick: 0,
            generation: rand::random(),
        }
    }

    /// See the field: a remembered handle for this cache is still valid while the generation
    /// is the one it saw.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    fn changed(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    fn touch(&mut self, slot: usize) -> &BackendStmt {
        self.tick += 1;
        let entry = &mut self.slots[slot];
        entry.last_used = self.tick;
        &entry.stmt
    }

    pub fn get(&mut self, sql: &[u8]) -> Option<BackendStmt> {
        let slot = *self.index.get(sql)?;
        Some(self.touch(slot).clone())
    }

    /// The handle `memo` names, if it is still valid here; marked used like [`Self::get`].
    /// (The slot is checked too, so a memo from another cache can never index out of bounds.)
    pub fn recall(&mut self, memo: &Remembered) -> Option<u32> {
        self.remembered_entry(memo)?;
        Some(self.touch(memo.slot as usize).id)
    }

    /// The entry `memo` names, if it is still valid here.
    fn remembered_entry(&mut self, memo: &Remembered) -> Option<&mut Entry> {
        let entry = self.slots.get_mut(memo.slot as usize)?;
        (memo.generation == self.generation && entry.stmt.id == memo.id).then_some(entry)
    }

    /// Whether an execution of the statement `memo` names must carry `types`: not when the
    /// server already holds exactly these (client libraries send types only when they change).
    /// Records them as held; [`Self::forget_types`] undoes that when the execution fails.
    pub fn needs_types(&mut self, memo: &Remembered, types: &[u8]) -> bool {
        let Some(entry) = self.remembered_entry(memo) else {
            return true;
        };
        if entry.bound_types.as_deref() == Some(types) {
            return false;
        }
        entry.bound_types = Some(types.into());
        true
    }

    /// Forgets the types recorded for the statement `memo` names (its execution failed, so
    /// the server may not hold them).
    pub fn forget_types(&mut self, memo: &Remembered) {
        if let Some(entry) = self.remembered_entry(memo) {
            entry.bound_types = None;
        }
    }

    /// Forgets the types recorded for `sql`'s statement (a COM_STMT_RESET went to it).
    pub fn forget_types_of(&mut self, sql: &[u8]) {
        if let Some(&slot) = self.index.get(sql) {
            self.slots[slot].bound_types = None;
        }
    }

    /// What to remember of `sql`'s handle here (see [`Remembered`]), if it is cached; marked
    /// used like [`Self::get`].
    pub fn remember(&mut self, sql: &[u8]) -> Option<Remembered> {
        let slot = *self.index.get(sql)?;
        Some(Remembered {
            generation: self.generation,
            id: self.touch(slot).id,
            slot: u32::try_from(slot).ok()?,
        })
    }

    /// Inserts a statement; returns the handle evicted to make room, which must be closed.
    pub fn insert(&mut self, sql: SqlText, stmt: BackendStmt) -> Option<BackendStmt> {
        self.tick += 1;
        self.changed();
        if let Some(&slot) = self.index.get(&sql) {
            let entry = &mut self.slots[slot];
            entry.last_used = self.tick;
            entry.bound_types = None;
            let old = std::mem::replace(&mut entry.stmt, stmt);
            return (old.id != entry.stmt.id).then_some(old);
        }
        let evicted = (self.slots.len() >= self.capacity)
            .then(|| self.evict_oldest())
            .flatten();
        self.index.insert(Arc::clone(&sql), self.slots.len());
        self.slots.push(Entry {
            sql,
            stmt,
            last_used: self.tick,
            bound_types: None,
        });
        evicted
    }

    /// Evicts the least recently used handle if the cache is full; the caller closes it.
    pub fn make_room(&mut self) -> Option<BackendStmt> {
        self.changed();
        (self.slots.len() >= self.capacity)
            .then(|| self.evict_oldest())
            .flatten()
    }

    /// Forgets a statement (e.g. the backend lost it); returns it.
    pub fn remove(&mut self, sql: &[u8]) -> Option<BackendStmt> {
        self.changed();
        let slot = self.index.remove(sql)?;
        Some(self.take_slot(slot))
    }

    /// Removes the entry in `slot`, moving the last entry into it (its index follows).
    fn take_slot(&mut self, slot: usize) -> BackendStmt {
        let entry = self.slots.swap_remove(slot);
        if let Some(moved) = self.slots.get(slot) {
            if let Some(at) = self.index.get_mut(&moved.sql) {
                *at = slot;
            }
        }
        entry.stmt
    }

    fn evict_oldest(&mut self) -> Option<BackendStmt> {
        let (slot, _) = self.slots.iter().enumerate().min_by_key(|(_, e)| e.last_used)?;
        let sql = Arc::clone(&self.slots[slot].sql);
        self.index.remove(&sql);
        Some(self.take_slot(slot))
    }

    pub fn clear(&mut self) {
        self.changed();
        self.index.clear();
        self.slots.clear();
    }

    /// Removes every entry, returning the handles (to be closed on the backend).
    pub fn drain(&mut self) -> Vec<BackendStmt> {
        self.changed();
        self.index.clear();
        self.slots.drain(..).map(|e| e.stmt).collect()
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
            schema_epoch: 0,
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

    #[test]
    fn a_remembered_handle_counts_as_a_use_and_survives_only_its_generation() {
        let k = |s: &str| -> SqlText { Arc::from(s.as_bytes()) };
        let mut c = StmtCache::new(2);
        c.insert(k("a"), stmt(1));
        c.insert(k("b"), stmt(2));
        let a = c.remember(b"a").expect("cached");
        assert_eq!(c.recall(&a), Some(1));
        // "a" was used last through its memo, so "b" is the one evicted.
        assert_eq!(c.insert(k("c"), stmt(3)), Some(stmt(2)));
        assert_eq!(c.recall(&a), None, "the insertion moved the generation");
        let a = c.remember(b"a").expect("still cached");
        let cc = c.remember(b"c").expect("cached");
        assert_eq!((c.recall(&a), c.recall(&cc)), (Some(1), Some(3)));
        // Removing "a" moves "c" into its slot; the index follows it.
        assert_eq!(c.remove(b"a"), Some(stmt(1)));
        assert_eq!(c.get(b"c"), Some(stmt(3)));
        assert_eq!(c.remember(b"c").map(|r| r.slot), Some(0));
        assert_eq!(c.remember(b"a"), None);
        // A memo of another cache whose generation happens to match names no slot here.
        let stranger = Remembered {
            generation: c.generation(),
            id: 3,
            slot: 7,
        };
        assert_eq!(c.recall(&stranger), None);
    }

    #[test]
    fn parameter_types_are_needed_until_held_and_again_after_a_change_or_a_failure() {
        let k = |s: &str| -> SqlText { Arc::from(s.as_bytes()) };
        let (int, text) = (Bytes::from_static(&[8, 0]), Bytes::from_static(&[0xfd, 0]));
        let mut c = StmtCache::new(2);
        c.insert(k("a"), stmt(1));
        let a = c.remember(b"a").expect("cached");
        assert!(c.needs_types(&a, &int), "nothing held yet");
        assert!(!c.needs_types(&a, &int), "held");
        assert!(
            !c.needs_types(&a, &Bytes::copy_from_slice(&[8, 0])),
            "equal bytes elsewhere"
        );
        assert!(c.needs_types(&a, &text), "changed");
        assert!(c.needs_types(&a, &int), "changed back");
        c.forget_types(&a);
        assert!(c.needs_types(&a, &int), "forgotten after a failure");
        c.forget_types_of(b"a");
        assert!(c.needs_types(&a, &int), "forgotten after a reset");
        // A re-prepared statement (new handle) holds nothing; a stale memo always sends.
        c.insert(k("a"), stmt(2));
        assert!(c.needs_types(&a, &int), "stale memo");
        let a = c.remember(b"a").expect("cached");
        assert!(c.needs_types(&a, &int), "the new handle holds nothing");
        assert!(!c.needs_types(&a, &int));
    }
}
