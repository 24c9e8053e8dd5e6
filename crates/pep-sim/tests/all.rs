//! pep-sim's integration tests.
//! One module per file; `cargo test -p pep-sim --test sim <file>::` runs one file's tests.

mod bidirectional;
mod cut;
mod determinism;
mod gschwandtner;
mod johnson;
mod netmodels;
mod ns2_oracle;
mod osada2005;
mod pcap;
mod profiles;
mod rack_tlp;
mod sender_models;
mod shekhar;
mod shikama;
mod tcp_models;
mod tcp_paths;
mod traffic;
