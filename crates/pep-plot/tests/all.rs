//! pep-plot's integration tests.
//! One module per file; `cargo test -p pep-plot --test plot <file>::` runs one file's tests.

mod common;

mod render;
mod tidy;
