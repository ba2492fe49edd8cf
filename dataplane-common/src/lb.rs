//! Load balancing (being written).
