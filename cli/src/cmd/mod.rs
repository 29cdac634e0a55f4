//! One file per subcommand: its arguments and a `run` that calls the libraries.

pub mod apply;
pub mod bench;
pub mod capture;
pub mod codecs;
pub mod completions;
pub mod corpus;
pub mod ctl;
pub mod dict;
pub mod doctor;
pub mod exporter;
pub mod lab_run;
pub mod man;
pub mod persist;
pub mod policy;
pub mod recommend;
pub mod serve;
pub mod status;
pub mod trial;
pub mod tune;
