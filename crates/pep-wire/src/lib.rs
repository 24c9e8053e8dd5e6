//! Wire layer (being written).
