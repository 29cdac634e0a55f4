//! zmem-lab: corpora (capture, generate), benchmarks, scoring,
//! recommendation and report.

pub mod bench;
pub mod capture;
pub mod corpus;
pub mod dict;
pub mod fields;
pub mod fsread;
pub mod full;
pub mod machine;
pub mod recommend;
pub mod report;
pub mod score;
pub mod sidecar;
pub mod synth;
pub mod table;
pub mod verdict;
