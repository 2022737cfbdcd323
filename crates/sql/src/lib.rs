//! Statement understanding: cheap classification of SQL text without building an AST.
//!
//! Everything here is lexer-based: [`classify`](fn@classify) walks the tokens of a query once (plus a
//! few tokens of look-ahead) and does not allocate for the common statement kinds.
//!
//! ```
//! use tessera_sql::{classify, Flags, RouteHint, StatementKind};
//!
//! let c = classify("/*+ tessera:primary */ SELECT c FROM sbtest1 WHERE id=? FOR UPDATE");
//! assert_eq!(c.kind, StatementKind::Select);
//! assert!(c.flags.contains(Flags::LOCKING_READ | Flags::HAS_PLACEHOLDER));
//! assert_eq!(c.hint, Some(RouteHint::Primary));
//!
//! assert_eq!(tessera_sql::assigned_user_variables("SET @a = 1, @`B` := @c"), ["a", "b"]);
//! assert_eq!(tessera_sql::split_statements("SELECT ';'; COMMIT"), ["SELECT ';'", "COMMIT"]);
//! ```

pub mod classify;
mod flags;
pub mod found_rows;
pub mod get_diagnostics;
mod keyword;
pub mod lexer;
pub mod parse_modes;
mod pure;
pub mod qualifiers;
pub mod quote;
mod scan;
pub mod select_items;
pub mod set_scope;
pub mod split;
mod stored_calls;
pub mod txn_end;
pub mod uservars;

pub use classify::{classify, classify_with, Classification, RouteHint, SetKind, StatementKind};
pub use flags::Flags;
pub use found_rows::{found_rows_effect, FoundRowsEffect};
pub use lexer::{
    escape_reading, is_plain_words, quoted_end, starts_with_keyword, unquote, unquote_as, EscapeReading, Lexer, Token,
    TokenKind,
};
pub use parse_modes::reads_alike;
pub use qualifiers::drop_database_qualifier;
pub use set_scope::{scope_session_targets, sets_next_transaction};
pub use split::{
    ends_in_parenthesis, set_assignments, split_statements, split_statements_with, statement_set_assignments,
    statement_set_parts, StatementSetParts,
};
pub use txn_end::{completion_type_level, end_options, EndOptions};
pub use uservars::{
    assigned_user_variables, assigned_user_variables_with, references_user_variables, references_user_variables_with,
    user_var_name,
};
pub mod fingerprint;
pub mod template;
pub use fingerprint::{fingerprint, Fingerprint};
pub use sqlparser;
pub use template::{Edit, SqlTemplate};
pub mod analyze;
