//! The daemon's root tests in the lab, each `#[ignore = "needs root"]` (as root
//! add `-- --include-ignored`; without root they then fail saying why).
//! They share one lock (`common::root_test`), so one runs at a time. `load` (it
//! measures the process's memory) and `packet` (no root) are binaries of their own.
//! One module per file; `cargo test -p pep-daemon --test root <file>::` runs one file's tests.

mod common;

mod dead_clients;
mod dscp;
mod fair_share;
mod fast_open;
mod intercept;
mod lab;
mod memory_budget;
mod ops;
mod package;
mod packet_root;
mod packet_watermark_root;
mod paths;
mod prometheus;
mod rate_cap;
mod shape;
mod systemd_notify;
mod tunnel;
mod tunnel_localq;
mod tunnel_lossy;
mod tunnel_open;
mod tunnel_shared;
mod turnover;
mod upgrade;
mod upgrade_tunnel;
