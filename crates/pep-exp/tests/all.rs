//! pep-exp's integration tests: the reproductions, shortened.
//! One module per file; `cargo test -p pep-exp --test exp <file>::` runs one file's tests.

mod claim_edges;
mod errors;
mod gschwandtner;
mod johnson;
mod large_records;
mod osada2005;
mod parquet;
mod repeat_base;
mod report_html;
mod reproduce;
mod shard;
mod shekhar;
mod shikama;
mod sweep;
mod verdict_counts;
