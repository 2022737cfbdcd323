//! Statement understanding: cheap classification of SQL text without building an AST.
