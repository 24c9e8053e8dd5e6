//! What the packet benches share.

use pep_core::Rate;
use pep_daemon::packet::PacketSettings;

/// SAD in an egress queue of 1000 packets at `rate`, fast enough that it
/// drains as the loop runs: the cost of the path, not of a congested queue.
pub fn sad_at(a: &str, b: &str, rate: Rate) -> PacketSettings {
    PacketSettings {
        rate: Some(rate),
        queue: 1000,
        sad: true,
        ..PacketSettings::new(a, b)
    }
}
