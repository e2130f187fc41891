//! A page-cache index as sparse as the kernel's xarray (lib/xarray.c),
//! with O(1) lookup: a directory with one entry per 64-slot leaf
//! (XA_CHUNK_SHIFT) and leaves created on the first store into their
//! range, as xas_store() creates xa_nodes. Each leaf carries its xa_node
//! counts (workingset.rs's XaNode) beside its slots, so a file costs 4
//! bytes per 64 pages of size plus 528 bytes per leaf it ever populated,
//! instead of 8 bytes per page of size.
//!
//! A leaf whose last entry goes is released (workingset.rs does it when
//! the node's count drops to zero, as xas_store() frees an empty xa_node)
//! and its memory reused by the next leaf created, so the leaves follow
//! the pages and shadows present, not all pages ever touched.

use super::workingset::{XaNode, XA_CHUNK_SHIFT};

/// Slots per leaf (XA_CHUNK_SIZE).
pub const XA_CHUNK_SIZE: usize = 1 << XA_CHUNK_SHIFT;
const XA_CHUNK_MASK: u64 = XA_CHUNK_SIZE as u64 - 1;
/// A directory entry with no leaf.
const NO_LEAF: u32 = u32::MAX;

/// What an absent leaf's node reads as: no entries, never listed.
static EMPTY_NODE: XaNode = XaNode {
    count: 0,
    nr_values: 0,
    on_list: false,
    allocated: false,
    large: false,
    memcg: 0,
    stamp: 0,
};

#[derive(Clone)]
struct Leaf {
    slots: [u64; XA_CHUNK_SIZE],
    node: XaNode,
}

/// Slots `0..len()`, each a u64 that is 0 when empty.
#[derive(Default)]
pub struct XArray {
    /// Leaf number of each 64-slot range, NO_LEAF where none was stored.
    dir: Vec<u32>,
    leaves: Vec<Leaf>,
    /// Released leaves, reused before the pool grows.
    free_leaves: Vec<u32>,
    len: u64,
}

impl XArray {
    pub fn new(len: u64) -> Self {
        let mut x = XArray::default();
        x.grow(len);
        x
    }

    /// Extends the index to `len` slots (new ones empty); never shrinks.
    pub fn grow(&mut self, len: u64) {
        if len > self.len {
            self.len = len;
            let n = len.div_ceil(XA_CHUNK_SIZE as u64) as usize;
            self.dir.resize(n, NO_LEAF);
        }
    }

    #[inline]
    pub fn len(&self) -> u64 {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot at `index` (0 when its leaf was never created).
    #[inline]
    pub fn get(&self, index: u64) -> u64 {
        debug_assert!(index < self.len);
        match self.dir[(index >> XA_CHUNK_SHIFT) as usize] {
            NO_LEAF => 0,
            l => self.leaves[l as usize].slots[(index & XA_CHUNK_MASK) as usize],
        }
    }

    /// The slot at `index` when its leaf exists and `index` is in range
    /// (for a prefetch: no leaf is created).
    #[inline]
    pub fn slot_ref(&self, index: u64) -> Option<&u64> {
        if index >= self.len {
            return None;
        }
        match self.dir[(index >> XA_CHUNK_SHIFT) as usize] {
            NO_LEAF => None,
            l => Some(&self.leaves[l as usize].slots[(index & XA_CHUNK_MASK) as usize]),
        }
    }

    /// The slot at `index` and its leaf's node, when the leaf exists (for
    /// a prefetch: no leaf is created).
    #[inline]
    pub fn entry_ref(&self, index: u64) -> Option<(&u64, &XaNode)> {
        if index >= self.len {
            return None;
        }
        match self.dir[(index >> XA_CHUNK_SHIFT) as usize] {
            NO_LEAF => None,
            l => {
                let leaf = &self.leaves[l as usize];
                Some((&leaf.slots[(index & XA_CHUNK_MASK) as usize], &leaf.node))
            }
        }
    }

    /// The leaf of node `ni`, created if absent.
    #[inline]
    fn leaf_mut(&mut self, ni: usize) -> &mut Leaf {
        let mut l = self.dir[ni];
        if l == NO_LEAF {
            l = self.new_leaf(ni);
        }
        &mut self.leaves[l as usize]
    }

    #[cold]
    fn new_leaf(&mut self, ni: usize) -> u32 {
        if let Some(l) = self.free_leaves.pop() {
            // Released empty, with a cleared node.
            self.dir[ni] = l;
            return l;
        }
        let l = self.leaves.len() as u32;
        assert!(l != NO_LEAF, "xarray: too many leaves");
        self.leaves.push(Leaf {
            slots: [0; XA_CHUNK_SIZE],
            node: EMPTY_NODE,
        });
        self.dir[ni] = l;
        l
    }

    /// The slot at `index` and its leaf's node, for a store (the leaf is
    /// created if absent).
    #[inline]
    pub fn entry(&mut self, index: u64) -> (&mut u64, &mut XaNode) {
        debug_assert!(index < self.len);
        let leaf = self.leaf_mut((index >> XA_CHUNK_SHIFT) as usize);
        (
            &mut leaf.slots[(index & XA_CHUNK_MASK) as usize],
            &mut leaf.node,
        )
    }

    /// Node `ni`'s counts (all zero for an absent leaf).
    #[inline]
    pub fn node(&self, ni: usize) -> &XaNode {
        match self.dir[ni] {
            NO_LEAF => &EMPTY_NODE,
            l => &self.leaves[l as usize].node,
        }
    }

    /// Node `ni`'s counts, for an update (the leaf is created if absent).
    #[inline]
    pub fn node_mut(&mut self, ni: usize) -> &mut XaNode {
        &mut self.leaf_mut(ni).node
    }

    /// Releases node `ni`'s leaf, whose slots must all be empty; its node
    /// then reads as all zero again.
    pub fn remove_leaf(&mut self, ni: usize) {
        let l = self.dir[ni];
        if l == NO_LEAF {
            return;
        }
        let leaf = &mut self.leaves[l as usize];
        debug_assert!(
            leaf.slots.iter().all(|&v| v == 0),
            "xarray: releasing a leaf in use"
        );
        leaf.node = EMPTY_NODE;
        self.dir[ni] = NO_LEAF;
        self.free_leaves.push(l);
    }

    /// Node `ni`'s slots and counts together (the leaf is created if absent).
    pub fn leaf(&mut self, ni: usize) -> (&mut [u64; XA_CHUNK_SIZE], &mut XaNode) {
        let leaf = self.leaf_mut(ni);
        (&mut leaf.slots, &mut leaf.node)
    }

    /// Nodes whose leaf exists, in index order, with their node number.
    pub fn nodes(&self) -> impl Iterator<Item = (usize, &XaNode)> + '_ {
        self.dir
            .iter()
            .enumerate()
            .filter(|&(_, &l)| l != NO_LEAF)
            .map(|(ni, &l)| (ni, &self.leaves[l as usize].node))
    }

    /// Indices in `start..end` that lie in an existing leaf, ascending:
    /// every index there that can hold an entry, skipping the ranges that
    /// never held one (walks over a huge, sparsely used file stay cheap).
    pub fn populated(&self, start: u64, end: u64) -> impl Iterator<Item = u64> + '_ {
        let end = end.min(self.len);
        let first = (start >> XA_CHUNK_SHIFT) as usize;
        let last = if start < end {
            ((end - 1) >> XA_CHUNK_SHIFT) as usize + 1
        } else {
            first
        };
        self.dir[first.min(self.dir.len())..last.max(first).min(self.dir.len())]
            .iter()
            .enumerate()
            .filter(|&(_, &l)| l != NO_LEAF)
            .flat_map(move |(i, _)| {
                let base = ((first + i) as u64) << XA_CHUNK_SHIFT;
                base.max(start)..(base + XA_CHUNK_SIZE as u64).min(end)
            })
    }

    /// The first index in `index..end` that lies in an existing leaf, for
    /// loops that change slots as they go (`populated` borrows the index).
    #[inline]
    pub fn next_populated(&self, index: u64, end: u64) -> Option<u64> {
        let end = end.min(self.len);
        if index >= end {
            return None;
        }
        let first = (index >> XA_CHUNK_SHIFT) as usize;
        // Walks spend most steps inside a leaf.
        if self.dir[first] != NO_LEAF {
            return Some(index);
        }
        let last = ((end - 1) >> XA_CHUNK_SHIFT) as usize;
        let ni = first + self.dir[first..=last].iter().position(|&l| l != NO_LEAF)?;
        Some(index.max((ni as u64) << XA_CHUNK_SHIFT))
    }

    /// Leaves in use.
    pub fn nr_leaves(&self) -> usize {
        self.leaves.len() - self.free_leaves.len()
    }

    /// Bytes held: the directory and the leaves (reserved capacity).
    pub fn mem_footprint(&self) -> usize {
        self.dir.capacity() * std::mem::size_of::<u32>()
            + self.leaves.capacity() * std::mem::size_of::<Leaf>()
            + self.free_leaves.capacity() * std::mem::size_of::<u32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_of_untouched_ranges_is_empty_and_allocates_nothing() {
        let x = XArray::new(1 << 30);
        assert_eq!(x.len(), 1 << 30);
        assert_eq!(x.get(0), 0);
        assert_eq!(x.get((1 << 30) - 1), 0);
        assert_eq!(x.node(12345).count, 0);
        assert_eq!(x.nr_leaves(), 0);
        assert_eq!(x.populated(0, 1 << 30).count(), 0);
        // The directory: 4 bytes per 64 slots, nothing per slot.
        assert_eq!(x.mem_footprint(), (1 << 24) * 4);
    }

    #[test]
    fn store_lookup_remove_across_chunk_boundaries() {
        let mut x = XArray::new(1000);
        // 63/64 straddle the first boundary, 127/128 the second, 999 is
        // the last slot of a partial leaf.
        for (i, &idx) in [63u64, 64, 127, 128, 999].iter().enumerate() {
            let (slot, node) = x.entry(idx);
            *slot = 100 + i as u64;
            node.count += 1;
        }
        assert_eq!(x.nr_leaves(), 4, "leaves 0, 1, 2 and 15");
        for (i, &idx) in [63u64, 64, 127, 128, 999].iter().enumerate() {
            assert_eq!(x.get(idx), 100 + i as u64, "slot {idx}");
        }
        for idx in [0u64, 62, 65, 126, 129, 191, 192, 998] {
            assert_eq!(x.get(idx), 0, "slot {idx}");
        }
        assert_eq!(x.node(0).count, 1);
        assert_eq!(x.node(1).count, 2);
        assert_eq!(x.node(2).count, 1);
        assert_eq!(x.node(3).count, 0);
        assert_eq!(x.node(15).count, 1);
        // Clearing a slot keeps the leaf; storing again uses it.
        *x.entry(64).0 = 0;
        assert_eq!(x.get(64), 0);
        *x.entry(65).0 = 7;
        assert_eq!(x.get(65), 7);
        assert_eq!(x.nr_leaves(), 4);
    }

    #[test]
    fn released_leaves_read_empty_and_are_reused() {
        let mut x = XArray::new(64 * 100);
        for ni in [3usize, 7] {
            let (slot, node) = x.entry((ni as u64) << XA_CHUNK_SHIFT);
            *slot = 1;
            node.count = 1;
            node.stamp = 9;
        }
        let fp = x.mem_footprint();
        *x.entry(3 << XA_CHUNK_SHIFT).0 = 0;
        x.remove_leaf(3);
        assert_eq!(x.nr_leaves(), 1);
        assert_eq!(
            (x.node(3).count, x.node(3).stamp),
            (0, 0),
            "reads as never created"
        );
        assert_eq!(
            x.populated(0, u64::MAX).count(),
            64,
            "only leaf 7 is walked"
        );
        // A new leaf takes the released one's memory.
        let (slot, node) = x.entry(50 << XA_CHUNK_SHIFT);
        assert_eq!(
            (*slot, node.count, node.stamp),
            (0, 0, 0),
            "handed out clean"
        );
        *slot = 5;
        assert_eq!(x.nr_leaves(), 2);
        // Only the free list's own small buffer was added, not a leaf.
        let grown = x.mem_footprint() - fp;
        assert!(grown < std::mem::size_of::<Leaf>(), "grew {grown} bytes");
        assert_eq!(x.get(50 << XA_CHUNK_SHIFT), 5);
        assert_eq!(x.get(7 << XA_CHUNK_SHIFT), 1);
        assert_eq!(x.get(3 << XA_CHUNK_SHIFT), 0);
    }

    #[test]
    fn iteration_is_in_index_order_and_bounded() {
        let mut x = XArray::new(64 * 10 + 5);
        // Leaves created out of order: iteration follows the index.
        for idx in [64 * 10 + 4, 64 * 3, 5] {
            *x.entry(idx).0 = idx + 1;
        }
        let nodes: Vec<usize> = x.nodes().map(|(ni, _)| ni).collect();
        assert_eq!(nodes, vec![0, 3, 10]);
        let all: Vec<u64> = x.populated(0, u64::MAX).collect();
        let want: Vec<u64> = (0..64).chain(192..256).chain(640..645).collect();
        assert_eq!(all, want, "every slot of each leaf, none past len");
        // A window starting and ending inside leaves.
        let win: Vec<u64> = x.populated(60, 200).collect();
        let want: Vec<u64> = (60..64).chain(192..200).collect();
        assert_eq!(win, want);
        assert_eq!(x.populated(64, 192).count(), 0, "leaves 1 and 2 absent");
        assert_eq!(x.populated(300, 300).count(), 0);
        let stored: Vec<u64> = x
            .populated(0, u64::MAX)
            .filter(|&i| x.get(i) != 0)
            .collect();
        assert_eq!(stored, vec![5, 64 * 3, 64 * 10 + 4]);
    }

    #[test]
    fn next_populated_skips_absent_leaves() {
        let mut x = XArray::new(64 * 8);
        *x.entry(64 * 2 + 10).0 = 1;
        *x.entry(64 * 5).0 = 1;
        assert_eq!(x.next_populated(0, u64::MAX), Some(128), "start of leaf 2");
        assert_eq!(x.next_populated(130, u64::MAX), Some(130), "inside leaf 2");
        assert_eq!(x.next_populated(192, u64::MAX), Some(320));
        assert_eq!(x.next_populated(192, 320), None, "end is exclusive");
        assert_eq!(x.next_populated(384, u64::MAX), None);
        assert_eq!(x.next_populated(600, 700), None, "past len");
        // A loop over it visits what `populated` yields.
        let (mut seen, mut next) = (vec![], 100);
        while let Some(i) = x.next_populated(next, 330) {
            seen.push(i);
            next = i + 1;
        }
        assert_eq!(seen, x.populated(100, 330).collect::<Vec<_>>());
        assert_eq!(seen.len(), 64 + 10);
    }

    #[test]
    fn grow_keeps_entries_and_extends_empty() {
        let mut x = XArray::new(10);
        *x.entry(9).0 = 3;
        x.grow(5);
        assert_eq!(x.len(), 10, "grow never shrinks");
        x.grow(200);
        assert_eq!(x.len(), 200);
        assert_eq!(x.get(9), 3);
        assert_eq!(x.get(199), 0);
        *x.entry(199).0 = 4;
        assert_eq!(x.get(199), 4);
        assert_eq!(x.nodes().count(), 2);
    }
}
