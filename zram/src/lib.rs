//! zmem-zram
