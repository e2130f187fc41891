//! File systems (fs/): the metadata I/O a file system does beside the file
//! data that `mm` models, one module per file system, named after its
//! kernel files.

pub mod ext4;
