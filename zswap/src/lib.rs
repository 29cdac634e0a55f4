//! zmem-zswap
