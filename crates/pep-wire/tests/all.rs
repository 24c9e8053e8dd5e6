//! pep-wire's integration tests.
//! One module per file; `cargo test -p pep-wire --test wire <file>::` runs one file's tests.

mod common;

mod malformed;
mod proptests;
mod tcpdump;
mod vectors;
