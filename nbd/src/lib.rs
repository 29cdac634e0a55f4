//! zmem-nbd
