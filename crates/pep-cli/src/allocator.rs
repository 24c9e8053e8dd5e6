//! The process's allocator: jemalloc instead of the C library's.
//!
//! A simulation of thousands of flows reads its ports, flows, routes and
//! event heap at random across hundreds of megabytes, and builds them from
//! a scenario in many small allocations. jemalloc keeps blocks of one size
//! together, without a header between each, and hands out large ones
//! page-aligned; measured against glibc's on the 10,000-flow benchmark, the
//! run is 1-8 % faster and the whole process 4-12 %, and building 100,000
//! flows a quarter faster (docs/simulator.md, "Speed"). No result depends
//! on where memory lies.
//!
//! Long runs of many flows go faster still on transparent huge pages
//! (fewer TLB misses), at a one-time cost when the memory is first touched
//! that depends on how fragmented the machine's memory is:
//! `_RJEM_MALLOC_CONF=thp:always,metadata_thp:auto pep sim run ...`.

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
