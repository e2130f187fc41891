//! A LevelDB-like sorted-table layout for key-value workloads (the
//! `kv_get` scenario step): which 4 KiB blocks of the database file a GET
//! or a SCAN of a key reads. Application side only: the reads it plans go
//! through the kernel model's read path like any pread.
//!
//! The database is one compacted level of sorted tables (LevelDB's
//! `max_file_size`, 2 MiB by default), laid end to end in one file. Each
//! table holds data blocks closed as LevelDB's TableBuilder closes them
//! (once their contents reach `block_size`, 4 KiB by default, so a block is
//! a little over it with its restart array and 5-byte trailer, and blocks
//! are not page-aligned: a GET's block read spans two pages, and
//! neighbouring blocks share one), then its index block (one entry per
//! data block), then the
//! footer (48 bytes, the table's last bytes). A table is opened on first
//! use by reading the footer and the index block, as `Table::Open` does;
//! opened tables stay in a table cache of `table_cache` entries (LevelDB:
//! `max_open_files` - 10 = 990), least recently used first out. Keys are
//! the record numbers 0..keys, in table order.

/// Bytes of one index block entry: a shortened separator key (YCSB's
/// "user" plus up to 20 digits) with its 8-byte sequence tag, a varint
/// block handle, the entry's three varint lengths and the 4-byte restart
/// point LevelDB keeps for every index entry (restart interval 1).
pub const INDEX_ENTRY_BYTES: u64 = 45;
/// LevelDB's table footer: two block handles padded to 40 bytes plus the
/// 8-byte magic number.
pub const FOOTER_BYTES: u64 = 48;
/// A block's trailer on disk: compression type and CRC32C.
pub const BLOCK_TRAILER_BYTES: u64 = 5;
/// LevelDB's block_restart_interval: a restart point every 16 records.
pub const BLOCK_RESTART_INTERVAL: u64 = 16;

/// Bytes of a data block's contents with `n` records of `record` bytes:
/// the records, one 4-byte restart offset per BLOCK_RESTART_INTERVAL
/// records, and the 4-byte restart count (BlockBuilder's size estimate).
fn block_contents(n: u64, record: u64) -> u64 {
    n * record + n.div_ceil(BLOCK_RESTART_INTERVAL) * 4 + 4
}

/// Where records live. Copyable: a step in progress carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SstLayout {
    pub keys: u64,
    pub block_size: u64,
    /// A data block's bytes on disk (contents and trailer): the stride of
    /// data blocks in a table and the length of a block read.
    pub block_bytes: u64,
    pub table_size: u64,
    pub keys_per_block: u64,
    pub data_blocks: u64,
    pub index_bytes: u64,
    pub tables: u64,
}

impl SstLayout {
    /// The layout of `keys` records of `record` bytes in tables of
    /// `table_size`, or why it cannot be laid out.
    pub fn new(keys: u64, record: u64, block_size: u64, table_size: u64) -> Result<Self, String> {
        if keys == 0 || record == 0 || block_size == 0 {
            return Err("keys, record size and block size must be > 0".into());
        }
        if record > block_size {
            return Err(format!(
                "a record of {record} bytes does not fit a {block_size}-byte block"
            ));
        }
        // TableBuilder::Add() flushes the block once its estimated size
        // reaches block_size, so the record that crosses it stays in.
        let mut keys_per_block = 1;
        while block_contents(keys_per_block, record) < block_size {
            keys_per_block += 1;
        }
        let block_bytes = block_contents(keys_per_block, record) + BLOCK_TRAILER_BYTES;
        // The index and footer take the table's tail; what is left holds
        // data blocks (each index entry costs INDEX_ENTRY_BYTES).
        let room = table_size.saturating_sub(FOOTER_BYTES);
        let data_blocks = room / (block_bytes + INDEX_ENTRY_BYTES);
        if data_blocks == 0 {
            return Err(format!(
                "a table of {table_size} bytes holds no {block_size}-byte data block"
            ));
        }
        let index_bytes = data_blocks * INDEX_ENTRY_BYTES;
        let per_table = data_blocks * keys_per_block;
        Ok(SstLayout {
            keys,
            block_size,
            block_bytes,
            table_size,
            keys_per_block,
            data_blocks,
            index_bytes,
            tables: keys.div_ceil(per_table),
        })
    }

    pub fn keys_per_table(&self) -> u64 {
        self.data_blocks * self.keys_per_block
    }

    /// Bytes of file the tables need.
    pub fn file_bytes(&self) -> u64 {
        self.tables * self.table_size
    }

    /// The layout of `keys` records in a file of `file_size` bytes (the
    /// kv_get step's check, the same in the model and on the host).
    pub fn in_file(
        keys: u64,
        record: u64,
        block_size: u64,
        table_size: u64,
        file: &str,
        file_size: u64,
    ) -> Result<Self, String> {
        let l = SstLayout::new(keys, record, block_size, table_size)?;
        if l.file_bytes() > file_size {
            return Err(format!(
                "{keys} records of {record} bytes take {} tables of {table_size} bytes ({} bytes); file '{file}' has {file_size}",
                l.tables,
                l.file_bytes()
            ));
        }
        Ok(l)
    }

    /// (table, data block within it) of a key.
    pub fn locate(&self, key: u64) -> (u64, u64) {
        let kpt = self.keys_per_table();
        (key / kpt, (key % kpt) / self.keys_per_block)
    }

    /// File offset of a table's data block.
    pub fn block_offset(&self, table: u64, block: u64) -> u64 {
        table * self.table_size + block * self.block_bytes
    }

    /// (offset, len) of a table's index block.
    pub fn index_range(&self, table: u64) -> (u64, u64) {
        (
            table * self.table_size + self.data_blocks * self.block_bytes,
            self.index_bytes,
        )
    }

    /// (offset, len) of a table's footer: its last bytes.
    pub fn footer_range(&self, table: u64) -> (u64, u64) {
        ((table + 1) * self.table_size - FOOTER_BYTES, FOOTER_BYTES)
    }
}

/// One pread a GET or SCAN makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvRead {
    Footer { off: u64, len: u64 },
    Index { off: u64, len: u64 },
    Data { off: u64, len: u64 },
}

impl KvRead {
    pub fn range(self) -> (u64, u64) {
        match self {
            KvRead::Footer { off, len }
            | KvRead::Index { off, len }
            | KvRead::Data { off, len } => (off, len),
        }
    }
}

/// LevelDB's TableCache: which tables are open. Capacity is fixed at
/// creation; lookups and inserts allocate nothing.
#[derive(Clone, Debug)]
pub struct TableCache {
    /// Most recently used last.
    open: Vec<u64>,
    cap: usize,
}

impl TableCache {
    pub fn new(cap: usize) -> Self {
        TableCache {
            open: Vec::with_capacity(cap.max(1)),
            cap: cap.max(1),
        }
    }

    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Looks `table` up, opening it (evicting the least recently used
    /// table when full). True when it was already open.
    pub fn get(&mut self, table: u64) -> bool {
        if let Some(i) = self.open.iter().rposition(|&t| t == table) {
            let t = self.open.remove(i);
            self.open.push(t);
            return true;
        }
        if self.open.len() == self.cap {
            self.open.remove(0);
        }
        self.open.push(table);
        false
    }
}

/// The reads of a lookup of `records` consecutive records from `key`
/// (1: a GET, more: a SCAN's iterator), in the order LevelDB makes them,
/// passed to `read` one by one: for each table the lookup enters, its
/// footer and index block when the table cache does not hold it, then
/// each data block the records span. Keys past the last wrap to 0
/// (YCSB's scans stop at the end; a wrapped scan keeps the length).
pub fn plan(
    l: &SstLayout,
    cache: &mut TableCache,
    key: u64,
    records: u64,
    mut read: impl FnMut(KvRead),
) {
    let mut key = key % l.keys;
    let mut left = records.max(1);
    let mut cur_table = u64::MAX;
    while left > 0 {
        let (t, b) = l.locate(key);
        if t != cur_table {
            cur_table = t;
            if !cache.get(t) {
                let (off, len) = l.footer_range(t);
                read(KvRead::Footer { off, len });
                let (off, len) = l.index_range(t);
                read(KvRead::Index { off, len });
            }
        }
        read(KvRead::Data {
            off: l.block_offset(t, b),
            len: l.block_bytes,
        });
        // Records left in this block from `key`, then on to the next block.
        let in_block = l.keys_per_block - (key % l.keys_per_table()) % l.keys_per_block;
        let in_block = in_block.min(l.keys - key);
        let took = in_block.min(left);
        left -= took;
        key += took;
        if key >= l.keys {
            key = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> SstLayout {
        // 1 KiB records, 4 KiB blocks, 2 MiB tables: 4 records make a
        // block's contents reach 4096 (4096 + 4 + 4 = 4104 bytes, 4109
        // with the trailer); 504 blocks (504 * (4109 + 45) + 48 <= 2 MiB
        // < 505 * (4109 + 45) + 48).
        SstLayout::new(10_000, 1024, 4096, 2 << 20).unwrap()
    }

    #[test]
    fn in_file_refuses_a_file_too_small_for_the_tables() {
        let l = layout();
        let need = l.file_bytes();
        assert_eq!(
            SstLayout::in_file(10_000, 1024, 4096, 2 << 20, "db", need)
                .unwrap()
                .tables,
            l.tables
        );
        let e = SstLayout::in_file(10_000, 1024, 4096, 2 << 20, "db", need - 1).unwrap_err();
        assert_eq!(
            e,
            format!(
                "10000 records of 1024 bytes take {} tables of 2097152 bytes ({need} bytes); file 'db' has {}",
                l.tables,
                need - 1
            )
        );
        assert!(SstLayout::in_file(0, 1024, 4096, 2 << 20, "db", need).is_err());
    }

    #[test]
    fn layout_fills_tables_with_index_and_footer() {
        let l = layout();
        assert_eq!(l.keys_per_block, 4);
        assert_eq!(l.block_bytes, 4109);
        assert_eq!(l.data_blocks, 504);
        assert!(l.data_blocks * l.block_bytes + l.index_bytes + FOOTER_BYTES <= l.table_size);
        assert!(
            (l.data_blocks + 1) * (l.block_bytes + INDEX_ENTRY_BYTES) + FOOTER_BYTES > l.table_size
        );
        assert_eq!(l.tables, 10_000u64.div_ceil(2016));
        // The index sits after the data and ends before the footer.
        let (io, il) = l.index_range(1);
        let (fo, _) = l.footer_range(1);
        assert_eq!(io, l.table_size + 504 * 4109);
        assert!(io + il <= fo);
        assert_eq!(fo + FOOTER_BYTES, 2 * l.table_size);
    }

    #[test]
    fn get_opens_a_table_once_then_reads_one_block() {
        let l = layout();
        let mut c = TableCache::new(2);
        let mut v = Vec::new();
        // Key 9 of table 1: its third block.
        plan(&l, &mut c, 2016 + 9, 1, |r| v.push(r));
        assert_eq!(
            v,
            vec![
                KvRead::Footer {
                    off: 2 * l.table_size - 48,
                    len: 48
                },
                KvRead::Index {
                    off: l.table_size + 504 * 4109,
                    len: 504 * 45
                },
                KvRead::Data {
                    off: l.table_size + 2 * 4109,
                    len: 4109
                },
            ]
        );
        v.clear();
        plan(&l, &mut c, 2016 + 10, 1, |r| v.push(r));
        assert_eq!(v.len(), 1, "the table is open: only the data block");
    }

    #[test]
    fn blocks_close_past_block_size_and_straddle_pages() {
        // YCSB's 227-byte records: 18 make 4086 + 12 = 4098 >= 4096.
        let l = SstLayout::new(1 << 20, 227, 4096, 2 << 20).unwrap();
        assert_eq!(l.keys_per_block, 18);
        assert_eq!(l.block_bytes, 4098 + BLOCK_TRAILER_BYTES);
        // Block 1 starts 7 bytes into page 1 and ends in page 2.
        let off = l.block_offset(0, 1);
        assert_eq!(off, 4103);
        assert_eq!((off / 4096, (off + l.block_bytes - 1) / 4096), (1, 2));
        // A record as large as the block makes a block of one.
        assert_eq!(
            SstLayout::new(10, 4096, 4096, 2 << 20)
                .unwrap()
                .keys_per_block,
            1
        );
    }

    #[test]
    fn table_cache_evicts_least_recently_used() {
        let mut c = TableCache::new(2);
        assert!(!c.get(1));
        assert!(!c.get(2));
        assert!(c.get(1));
        assert!(!c.get(3)); // evicts 2, not the just-used 1
        assert!(c.get(1));
        assert!(!c.get(2));
    }

    #[test]
    fn scan_spans_blocks_and_tables() {
        let l = layout();
        let mut c = TableCache::new(990);
        let mut data = 0;
        let mut opens = 0;
        // From the last record of table 0: 1 record there, 2011 in table 1
        // (503 blocks, the last partly).
        plan(&l, &mut c, 2015, 2012, |r| match r {
            KvRead::Data { .. } => data += 1,
            KvRead::Footer { .. } => opens += 1,
            KvRead::Index { .. } => {}
        });
        assert_eq!(opens, 2);
        assert_eq!(data, 1 + 503);
    }

    #[test]
    fn refuses_impossible_layouts() {
        assert!(SstLayout::new(10, 8192, 4096, 2 << 20).is_err());
        assert!(SstLayout::new(10, 1024, 4096, 4096).is_err());
        assert!(SstLayout::new(0, 1024, 4096, 2 << 20).is_err());
    }
}
