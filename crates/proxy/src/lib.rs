//! The Tessera proxy library.
