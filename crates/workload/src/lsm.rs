//! A LevelDB-like sorted-table layout for key-value workloads (the
//! `kv_get` scenario step): which 4 KiB blocks of the database file a GET
//! or a SCAN of a key reads. Application side only: the reads it plans go
//! through the kernel model's read path like any pread.
//!
//! The database is LevelDB's level shape after a load: levels 1 to 6, each
//! `level_base` * 10^(level - 1) bytes at most (version_set.cc's
//! MaxBytesForLevel, 10 MiB for level 1), filled from level 1 down, the
//! last level holding the rest. A YCSB load inserts keys in hashed order,
//! so every level covers the whole key space with its share of the keys;
//! which level holds a key is a fixed hash of it. Each level is a run of
//! sorted tables (LevelDB's `max_file_size`, 2 MiB by default), the levels'
//! tables laid end to end in one file. Each table holds data blocks closed
//! as LevelDB's TableBuilder closes them (once their contents reach
//! `block_size`, 4 KiB by default, so a block is a little over it with its
//! restart array and 5-byte trailer, and blocks are not page-aligned: a
//! GET's block read spans two pages, and neighbouring blocks share one),
//! then its index block (one entry per data block), then the footer (48
//! bytes, the table's last bytes). A table is opened on first use by
//! reading the footer and the index block, as `Table::Open` does; opened
//! tables stay in a table cache of `table_cache` entries (LevelDB:
//! `max_open_files` - 10 = 990), least recently used first out.
//!
//! A GET walks the levels from the top (Version::Get): in each it opens the
//! table whose key range holds the key and reads the data block where the
//! key would be (no bloom filter, LevelDB's default), stopping at the level
//! that holds it. A SCAN (a DBIter over the merging iterator) seeks every
//! level, then reads on through each level's blocks of the range. A
//! database that fits `level_base` is one level: keys 0..keys in table
//! order. Left out: level 0's overlapping tables, and the compactions
//! LevelDB runs, reads included (seek compactions).

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
/// LevelDB's kNumLevels less level 0.
pub const MAX_LEVELS: usize = 6;
/// MaxBytesForLevel() of level 1.
pub const LEVEL_BASE: u64 = 10 << 20;
/// Each level holds ten times the one above it.
pub const LEVEL_MULTIPLIER: u64 = 10;

/// Bytes of a data block's contents with `n` records of `record` bytes:
/// the records, one 4-byte restart offset per BLOCK_RESTART_INTERVAL
/// records, and the 4-byte restart count (BlockBuilder's size estimate).
fn block_contents(n: u64, record: u64) -> u64 {
    n * record + n.div_ceil(BLOCK_RESTART_INTERVAL) * 4 + 4
}

/// One level's run of tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Level {
    /// Records in the level.
    pub keys: u64,
    /// The file's table number of its first table.
    pub first_table: u64,
    pub tables: u64,
    /// Keys of this level and the ones above: a key whose hash falls
    /// below it and not below the level above's lives here.
    pub keys_end: u64,
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
    /// Data blocks of a full table.
    pub data_blocks: u64,
    /// Index bytes of a full table.
    pub index_bytes: u64,
    /// Tables of every level.
    pub tables: u64,
    pub nlevels: usize,
    pub levels: [Level; MAX_LEVELS],
}

/// A table's place in the file: its first byte and its data blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableGeom {
    pub table: u64,
    pub start: u64,
    pub blocks: u64,
    full: bool,
}

impl SstLayout {
    /// The layout of `keys` records of `record` bytes in tables of
    /// `table_size` on levels of `level_base` bytes and ten times more
    /// each, or why it cannot be laid out.
    pub fn new(
        keys: u64,
        record: u64,
        block_size: u64,
        table_size: u64,
        level_base: u64,
    ) -> Result<Self, String> {
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
        let kpt = data_blocks * keys_per_block;
        // A level's byte limit in records: its share of full tables.
        let level_keys = |bytes: u128| (bytes * kpt as u128 / table_size as u128) as u64;
        if level_keys(level_base as u128) == 0 {
            return Err(format!(
                "a level of {level_base} bytes holds no record of {record} bytes"
            ));
        }
        let mut levels = [Level::default(); MAX_LEVELS];
        let mut nlevels = 0;
        let mut left = keys;
        let mut cap = level_base as u128;
        let mut tables = 0;
        while left > 0 {
            let n = if nlevels + 1 == MAX_LEVELS {
                left
            } else {
                level_keys(cap).min(left)
            };
            let t = n.div_ceil(kpt);
            levels[nlevels] = Level {
                keys: n,
                first_table: tables,
                tables: t,
                keys_end: keys - left + n,
            };
            tables += t;
            left -= n;
            nlevels += 1;
            cap *= LEVEL_MULTIPLIER as u128;
        }
        Ok(SstLayout {
            keys,
            block_size,
            block_bytes,
            table_size,
            keys_per_block,
            data_blocks,
            index_bytes: data_blocks * INDEX_ENTRY_BYTES,
            tables,
            nlevels,
            levels,
        })
    }

    /// What LevelDB's block cache charges for one of its data blocks:
    /// the block's contents (Block::size()), not the trailer.
    pub fn block_charge(&self) -> u64 {
        self.block_bytes - BLOCK_TRAILER_BYTES
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
        level_base: u64,
        file: &str,
        file_size: u64,
    ) -> Result<Self, String> {
        let l = SstLayout::new(keys, record, block_size, table_size, level_base)?;
        if l.file_bytes() > file_size {
            return Err(format!(
                "{keys} records of {record} bytes take {} tables of {table_size} bytes ({} bytes); file '{file}' has {file_size}",
                l.tables,
                l.file_bytes()
            ));
        }
        Ok(l)
    }

    /// The level (0 for level 1) that holds `key`.
    pub fn home_level(&self, key: u64) -> usize {
        if self.nlevels == 1 {
            return 0;
        }
        // A fixed hash of the key: which level the load compacted it into.
        let h = crate::access::splitmix64(key) % self.keys;
        self.levels[..self.nlevels]
            .iter()
            .position(|l| h < l.keys_end)
            .expect("the last level ends at keys")
    }

    /// Where `key` sits, or would sit, among level `lv`'s records: its
    /// rank scaled to the level (a level's keys are spread evenly over the
    /// key space).
    pub fn position(&self, lv: usize, key: u64) -> u64 {
        (key as u128 * self.levels[lv].keys as u128 / self.keys as u128) as u64
    }

    /// Level `lv`'s `t`th table.
    pub fn table(&self, lv: usize, t: u64) -> TableGeom {
        let l = &self.levels[lv];
        let kpt = self.keys_per_table();
        let in_table = (l.keys - t * kpt).min(kpt);
        let table = l.first_table + t;
        TableGeom {
            table,
            start: table * self.table_size,
            blocks: in_table.div_ceil(self.keys_per_block),
            full: in_table == kpt,
        }
    }

    /// (table, data block within it) of position `pos` of level `lv`.
    pub fn locate(&self, lv: usize, pos: u64) -> (TableGeom, u64) {
        let kpt = self.keys_per_table();
        (self.table(lv, pos / kpt), (pos % kpt) / self.keys_per_block)
    }

    /// File offset of a table's data block.
    pub fn block_offset(&self, t: &TableGeom, block: u64) -> u64 {
        t.start + block * self.block_bytes
    }

    /// (offset, len) of a table's index block: after its data blocks.
    pub fn index_range(&self, t: &TableGeom) -> (u64, u64) {
        (
            t.start + t.blocks * self.block_bytes,
            t.blocks * INDEX_ENTRY_BYTES,
        )
    }

    /// (offset, len) of a table's footer: its last bytes (a full table's
    /// are the end of its `table_size`, a level's last, shorter table's
    /// follow its index).
    pub fn footer_range(&self, t: &TableGeom) -> (u64, u64) {
        let end = if t.full {
            t.start + self.table_size
        } else {
            let (io, il) = self.index_range(t);
            io + il + FOOTER_BYTES
        };
        (end - FOOTER_BYTES, FOOTER_BYTES)
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

/// LevelDB's default block cache (DBImpl's SanitizeOptions: an 8 MiB
/// LRU cache when Options::block_cache is unset).
pub const BLOCK_CACHE_BYTES: u64 = 8 << 20;

const NO_SLOT: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct BlockSlot {
    key: u64,
    charge: u64,
    prev: u32,
    next: u32,
}

/// LevelDB's block cache: the data blocks a Table's BlockReader read
/// with pread() (heap-allocated, so cachable), kept in user memory and
/// charged their contents' size; a hit reads nothing from the file. One
/// LRU over the whole capacity (LevelDB shards it 16 ways by the key's
/// hash, which acts as one LRU once each shard holds many blocks).
/// Lookups allocate nothing once the cache has filled.
#[derive(Clone, Debug)]
pub struct BlockCache {
    cap: u64,
    used: u64,
    map: std::collections::HashMap<u64, u32>,
    slots: Vec<BlockSlot>,
    free: Vec<u32>,
    /// Least recently used end.
    lru: u32,
    /// Most recently used end.
    mru: u32,
}

impl BlockCache {
    /// `cap` bytes; 0 caches nothing (ReadOptions::fill_cache false).
    pub fn new(cap: u64) -> Self {
        BlockCache {
            cap,
            used: 0,
            map: std::collections::HashMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            lru: NO_SLOT,
            mru: NO_SLOT,
        }
    }

    pub fn capacity(&self) -> u64 {
        self.cap
    }

    /// Blocks held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    fn unlink(&mut self, i: u32) {
        let BlockSlot { prev, next, .. } = self.slots[i as usize];
        match prev {
            NO_SLOT => self.lru = next,
            p => self.slots[p as usize].next = next,
        }
        match next {
            NO_SLOT => self.mru = prev,
            n => self.slots[n as usize].prev = prev,
        }
    }

    fn push_mru(&mut self, i: u32) {
        self.slots[i as usize].prev = self.mru;
        self.slots[i as usize].next = NO_SLOT;
        match self.mru {
            NO_SLOT => self.lru = i,
            m => self.slots[m as usize].next = i,
        }
        self.mru = i;
    }

    /// Looks the block at file offset `key` up: true on a hit (made most
    /// recently used). On a miss the caller reads the block and inserts it
    /// with `insert`.
    pub fn lookup(&mut self, key: u64) -> bool {
        match self.map.get(&key) {
            Some(&i) => {
                self.unlink(i);
                self.push_mru(i);
                true
            }
            None => false,
        }
    }

    /// Inserts a block just read, charged `charge` bytes, evicting least
    /// recently used blocks while over capacity (LRUCache::Insert: a block
    /// larger than the whole cache is not kept).
    pub fn insert(&mut self, key: u64, charge: u64) {
        if self.cap == 0 || charge > self.cap || self.map.contains_key(&key) {
            return;
        }
        while self.used + charge > self.cap && self.lru != NO_SLOT {
            let old = self.lru;
            self.unlink(old);
            let s = self.slots[old as usize];
            self.map.remove(&s.key);
            self.free.push(old);
            self.used -= s.charge;
        }
        let slot = BlockSlot {
            key,
            charge,
            prev: NO_SLOT,
            next: NO_SLOT,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        self.push_mru(i);
        self.map.insert(key, i);
        self.used += charge;
    }
}

/// Reads of `n` consecutive positions of level `lv` from `pos` (wrapping
/// to the level's first record): each table the run enters is looked up
/// in the table cache (footer and index read when it is not open), then
/// each data block. `after_seek`: a SCAN's seek read the first block and
/// left its table open, so the run reads on from the next one.
fn read_level(
    l: &SstLayout,
    cache: &mut TableCache,
    lv: usize,
    mut pos: u64,
    n: u64,
    after_seek: bool,
    read: &mut impl FnMut(KvRead),
) {
    let lk = l.levels[lv].keys;
    let mut left = n.max(1);
    let mut open = None;
    let mut seen = after_seek;
    while left > 0 {
        let (t, b) = l.locate(lv, pos);
        if seen {
            seen = false;
            open = Some(t.table);
        } else {
            if open != Some(t.table) {
                open = Some(t.table);
                if !cache.get(t.table) {
                    let (off, len) = l.footer_range(&t);
                    read(KvRead::Footer { off, len });
                    let (off, len) = l.index_range(&t);
                    read(KvRead::Index { off, len });
                }
            }
            read(KvRead::Data {
                off: l.block_offset(&t, b),
                len: l.block_bytes,
            });
        }
        // Records left in this block from `pos`, then on to the next block.
        let in_block = l.keys_per_block - (pos % l.keys_per_table()) % l.keys_per_block;
        let took = in_block.min(lk - pos).min(left);
        left -= took;
        pos += took;
        if pos >= lk {
            pos = 0;
        }
    }
}

/// The reads of a lookup of `records` consecutive records from `key`
/// (1: a GET, more: a SCAN's iterator), in the order LevelDB makes them,
/// passed to `read` one by one. A GET: each level from the top until the
/// one holding the key, each the table (footer and index block when the
/// table cache does not hold it) and the key's data block. A SCAN: the
/// seek reads every level's first block, then each level's run of the
/// range's records (a level holds its share of them) is read on, crossing
/// into the next tables; a merging iterator interleaves the levels' blocks
/// by key, the same reads in another order. Keys past the last wrap to 0
/// (YCSB's scans stop at the end; a wrapped scan keeps the length).
pub fn plan(
    l: &SstLayout,
    cache: &mut TableCache,
    key: u64,
    records: u64,
    mut read: impl FnMut(KvRead),
) {
    let key = key % l.keys;
    if records <= 1 {
        let home = l.home_level(key);
        for lv in 0..=home {
            read_level(l, cache, lv, l.position(lv, key), 1, false, &mut read);
        }
        return;
    }
    let records = records.min(l.keys);
    // Level lv's records of [key, key + records): its positions from the
    // key's to the end key's, counted past its end when the range wraps.
    let span = |lv: usize| {
        let lk = l.levels[lv].keys;
        let start = l.position(lv, key);
        let end = if key + records <= l.keys {
            l.position(lv, key + records)
        } else {
            lk + l.position(lv, key + records - l.keys)
        };
        (start, (end - start).clamp(1, lk))
    };
    for lv in 0..l.nlevels {
        read_level(l, cache, lv, span(lv).0, 1, false, &mut read);
    }
    for lv in 0..l.nlevels {
        let (start, n) = span(lv);
        read_level(l, cache, lv, start, n, true, &mut read);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A level base no test database reaches: one level.
    const ONE_LEVEL: u64 = 1 << 40;

    fn layout() -> SstLayout {
        // 1 KiB records, 4 KiB blocks, 2 MiB tables: 4 records make a
        // block's contents reach 4096 (4096 + 4 + 4 = 4104 bytes, 4109
        // with the trailer); 504 blocks (504 * (4109 + 45) + 48 <= 2 MiB
        // < 505 * (4109 + 45) + 48).
        SstLayout::new(10_000, 1024, 4096, 2 << 20, ONE_LEVEL).unwrap()
    }

    #[test]
    fn in_file_refuses_a_file_too_small_for_the_tables() {
        let l = layout();
        let need = l.file_bytes();
        assert_eq!(
            SstLayout::in_file(10_000, 1024, 4096, 2 << 20, ONE_LEVEL, "db", need)
                .unwrap()
                .tables,
            l.tables
        );
        let e =
            SstLayout::in_file(10_000, 1024, 4096, 2 << 20, ONE_LEVEL, "db", need - 1).unwrap_err();
        assert_eq!(
            e,
            format!(
                "10000 records of 1024 bytes take {} tables of 2097152 bytes ({need} bytes); file 'db' has {}",
                l.tables,
                need - 1
            )
        );
        assert!(SstLayout::in_file(0, 1024, 4096, 2 << 20, ONE_LEVEL, "db", need).is_err());
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
        let (io, il) = l.index_range(&l.table(0, 1));
        let (fo, _) = l.footer_range(&l.table(0, 1));
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
        let l = SstLayout::new(1 << 20, 227, 4096, 2 << 20, ONE_LEVEL).unwrap();
        assert_eq!(l.keys_per_block, 18);
        assert_eq!(l.block_bytes, 4098 + BLOCK_TRAILER_BYTES);
        // Block 1 starts 7 bytes into page 1 and ends in page 2.
        let off = l.block_offset(&l.table(0, 0), 1);
        assert_eq!(off, 4103);
        assert_eq!((off / 4096, (off + l.block_bytes - 1) / 4096), (1, 2));
        // A record as large as the block makes a block of one.
        assert_eq!(
            SstLayout::new(10, 4096, 4096, 2 << 20, ONE_LEVEL)
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
    fn block_cache_keeps_the_most_recent_blocks_its_bytes_hold() {
        // Three 4,098-byte blocks fit 12,300 bytes, a fourth does not.
        let mut c = BlockCache::new(12_300);
        for b in 0..3 {
            assert!(!c.lookup(b * 4103));
            c.insert(b * 4103, 4098);
        }
        assert_eq!(c.len(), 3);
        assert!(c.lookup(0)); // now the most recent
        c.insert(3 * 4103, 4098); // evicts block 1, the least recent
        assert_eq!(c.len(), 3);
        assert!(!c.lookup(4103));
        assert!(c.lookup(0) && c.lookup(2 * 4103) && c.lookup(3 * 4103));
        // Inserting a block it holds changes nothing.
        c.insert(0, 4098);
        assert_eq!(c.len(), 3);
        // Freed slots are reused: no growth past what the bytes hold.
        for b in 10..100 {
            c.insert(b * 4103, 4098);
        }
        assert_eq!(c.len(), 3);
        assert!(c.slots.len() <= 4);
        // A cache of 0 bytes, or smaller than a block, keeps nothing.
        for cap in [0, 4097] {
            let mut c = BlockCache::new(cap);
            c.insert(0, 4098);
            assert!(c.is_empty() && !c.lookup(0));
        }
    }

    #[test]
    fn block_charge_is_the_contents_without_the_trailer() {
        let l = layout();
        assert_eq!(l.block_charge() + BLOCK_TRAILER_BYTES, l.block_bytes);
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
        assert!(SstLayout::new(10, 8192, 4096, 2 << 20, ONE_LEVEL).is_err());
        assert!(SstLayout::new(10, 1024, 4096, 4096, ONE_LEVEL).is_err());
        assert!(SstLayout::new(0, 1024, 4096, 2 << 20, ONE_LEVEL).is_err());
        // Level 1 must hold a record.
        assert_eq!(
            SstLayout::new(10, 1024, 4096, 2 << 20, 100).unwrap_err(),
            "a level of 100 bytes holds no record of 1024 bytes"
        );
    }

    /// 227-byte records in 2 MiB tables (9,090 a table) on 64 KiB levels:
    /// level 1 holds 284 records, level 2 2,840, level 3 28,406.
    fn levels() -> SstLayout {
        SstLayout::new(100_000, 227, 4096, 2 << 20, 64 << 10).unwrap()
    }

    #[test]
    fn levels_fill_from_the_top_ten_times_larger_each() {
        let l = levels();
        assert_eq!(l.keys_per_table(), 9090);
        let keys: Vec<u64> = l.levels[..l.nlevels].iter().map(|v| v.keys).collect();
        // 64 KiB of 2 MiB tables: 9090 / 32 records; x10 each.
        assert_eq!(keys, vec![284, 2840, 28406, 100_000 - 284 - 2840 - 28406]);
        let tables: Vec<u64> = l.levels[..l.nlevels].iter().map(|v| v.tables).collect();
        assert_eq!(tables, vec![1, 1, 4, 8]);
        assert_eq!(l.tables, 14);
        assert_eq!(l.levels[3].first_table, 6);
        assert_eq!(l.levels[3].keys_end, 100_000);
        // A level's last table is short: its footer follows its index.
        let t = l.table(0, 0);
        assert_eq!(t.blocks, 284u64.div_ceil(18));
        let (io, il) = l.index_range(&t);
        assert_eq!(l.footer_range(&t), (io + il, FOOTER_BYTES));
        assert_eq!(l.table(1, 0).start, l.table_size);
        // Past six levels the last takes the rest.
        let deep = SstLayout::new(1 << 20, 227, 4096, 2 << 20, 4096).unwrap();
        assert_eq!(deep.nlevels, MAX_LEVELS);
        let sum: u64 = deep.levels.iter().map(|v| v.keys).sum();
        assert_eq!(sum, 1 << 20);
    }

    #[test]
    fn keys_live_in_levels_by_their_share() {
        let l = levels();
        let mut n = [0u64; MAX_LEVELS];
        for k in 0..l.keys {
            n[l.home_level(k)] += 1;
        }
        for lv in 0..l.nlevels {
            let want = l.levels[lv].keys as f64;
            assert!(
                (n[lv] as f64 - want).abs() <= want * 0.1 + 30.0,
                "level {lv}: {} keys, share {want}",
                n[lv]
            );
        }
        // Every level's positions stay inside it.
        for lv in 0..l.nlevels {
            assert!(l.position(lv, l.keys - 1) < l.levels[lv].keys);
        }
    }

    #[test]
    fn get_walks_levels_down_to_the_key_s_own() {
        let l = levels();
        let key = (0..l.keys).find(|&k| l.home_level(k) == 2).unwrap();
        let mut c = TableCache::new(990);
        let mut v = Vec::new();
        plan(&l, &mut c, key, 1, |r| v.push(r));
        // Levels 1 to 3: each table opened (footer, index), one block each.
        let data: Vec<u64> = v
            .iter()
            .filter_map(|r| match r {
                KvRead::Data { off, .. } => Some(off / l.table_size),
                _ => None,
            })
            .collect();
        let tables: Vec<u64> = (0..3)
            .map(|lv| l.locate(lv, l.position(lv, key)).0.table)
            .collect();
        assert_eq!(data, tables);
        assert_eq!(v.len(), 9);
        // A key of level 1 reads level 1 only, its table now open.
        let top = (0..l.keys).find(|&k| l.home_level(k) == 0).unwrap();
        v.clear();
        plan(&l, &mut c, top, 1, |r| v.push(r));
        assert_eq!(v.len(), 1);
    }

    #[test]
    fn scan_seeks_every_level_then_reads_each_level_s_share() {
        let l = levels();
        let mut c = TableCache::new(990);
        let mut v = Vec::new();
        let (key, records) = (50_000, 18 * 100);
        plan(&l, &mut c, key, records, |r| v.push(r));
        let data: Vec<u64> = v
            .iter()
            .filter_map(|r| match r {
                KvRead::Data { off, .. } => Some(*off),
                _ => None,
            })
            .collect();
        // The seek: one block of each level, from the top.
        for lv in 0..l.nlevels {
            let (t, b) = l.locate(lv, l.position(lv, key));
            assert_eq!(data[lv], l.block_offset(&t, b));
        }
        // Then each level's records of the range: about its share of 100
        // blocks (level 4: 68%), at least the block the seek read.
        let share = |lv: usize| records * l.levels[lv].keys / l.keys;
        let blocks: u64 = (0..l.nlevels).map(|lv| share(lv).div_ceil(18).max(1)).sum();
        let n = data.len() as u64;
        assert!(
            n >= blocks && n <= blocks + 2 * l.nlevels as u64,
            "{n} reads, {blocks} blocks"
        );
        // One level: the seek and the run are the old single-table walk.
        let one = layout();
        let mut a = Vec::new();
        plan(&one, &mut TableCache::new(4), 2015, 2012, |r| a.push(r));
        assert_eq!(
            a.iter()
                .filter(|r| matches!(r, KvRead::Data { .. }))
                .count(),
            504
        );
    }
}
