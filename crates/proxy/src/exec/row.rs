//! Decoded rows for merges: values from text and binary result rows, their order, and encoding back.
