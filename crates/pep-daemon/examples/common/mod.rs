//! What the packet benches share.

use pep_core::{Duration, Rate};
use pep_daemon::packet::PacketSettings;

/// SAD in an egress queue of 1000 packets at `rate`, fast enough that it
/// drains as the loop runs: the cost of the path, not of a congested queue.
pub fn sad_at(a: &str, b: &str, rate: Rate) -> PacketSettings {
    PacketSettings {
        a: a.into(),
        b: b.into(),
        rate: Some(rate),
        queue: 1000,
        sad: true,
        ack_thin: None,
        max_hold: Duration::from_millis(20),
        ack_regen: None,
        max_flows: 65_536,
        realtime: false,
        watermark: None,
    }
}
