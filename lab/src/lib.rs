//! zmem-lab

pub mod bench;
pub mod corpus;
