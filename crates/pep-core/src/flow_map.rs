//! The map the per-flow machines (SAD, ACK thinning, ACK regeneration, the
//! local queue) keep their flows in, looked up once per packet.
//!
//! A SwissTable hash map (hashbrown) with FxHash (rustc-hash), a hasher with
//! no seed: it needs no OS randomness (std's `RandomState` asks the OS for a
//! key) and lays the same flows out the same way on every run, so iterating a
//! map is deterministic too. The price: a sender who chooses many flow keys
//! that collide under FxHash makes lookups slower; every map here is bounded
//! by its machine's `max_flows` (or the flows the driver admits), which
//! bounds that cost.

/// A per-flow hash map with a fixed hasher; build it with `FlowMap::default()`.
pub type FlowMap<K, V> = hashbrown::HashMap<K, V, rustc_hash::FxBuildHasher>;
