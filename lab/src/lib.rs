//! zmem-lab
