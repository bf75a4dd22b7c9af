//! Host micro-benchmarks live in `benches/`.
