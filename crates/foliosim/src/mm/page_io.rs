//! Swap I/O (mm/page_io.c, Linux 6.18): swap_writeout() and
//! swap_read_folio(). zram is SWP_SYNCHRONOUS_IO: a write compresses the
//! page into zsmalloc memory and completes before returning, a read
//! decompresses in the faulting task; both cost CPU, not I/O wait. A disk
//! swap device goes through the block-device model: writes are
//! asynchronous (the folio stays under writeback, PG_reclaim set by
//! pageout(), and is rotated to the inactive tail on completion as file
//! writeback is), reads complete when the device does. Reads and writes
//! issued under one plug are merged into one request per run of
//! contiguous slots, as the block layer merges the bios of a plugged batch.

use super::folio::{pg, FolioId};
use super::swapfile::SwapOffset;
use super::vmstat::Item;
use super::{Core, PAGE_SIZE};

/// What swap_writeout() did with a folio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwapWrite {
    /// Written and completed (zram): the folio is clean.
    Done,
    /// Under writeback (disk): reclaim keeps it until completion.
    Async,
    /// The device refused it (zram out of memory): the folio stays dirty.
    Failed,
}

impl Core {
    /// swap_writeout() -> swap_writepage(): counts pswpout and pgpgout
    /// per page (count_swpout_vm_event: thp_swpout for a PMD-sized folio,
    /// the size's mTHP swpout); zram compresses page by page on the
    /// reclaimer's CPU (kswapd's or the task's).
    pub fn swap_writeout(&mut self, id: FolioId) -> SwapWrite {
        let off = self.swap.folio_swap(id);
        let f = *self.folios.get(id);
        let (memcg, nr, order) = (f.memcg, f.nr_pages(), f.order());
        if self.swap.zram.is_some() {
            // zram_bio_write(): one page at a time; a failed page fails
            // the bio and the folio stays dirty (the pages already
            // stored stay with their slots).
            for o in off..off + nr as u32 {
                if !self.zram_write(o) {
                    return SwapWrite::Failed;
                }
                self.cpu_or_kswapd(self.cost.zram_compress);
            }
            self.folios.get_mut(id).clear(pg::DIRTY);
            self.count_swpout_vm_event(memcg, order, nr);
            return SwapWrite::Done;
        }
        // swap_writepage_bdev_async(): folio_start_writeback, one bio for
        // the folio, queued in the reclaimer's plug.
        let f = self.folios.get_mut(id);
        f.clear(pg::DIRTY);
        f.set(pg::WRITEBACK);
        self.memcgs[memcg as usize].nr_writeback += nr;
        self.wb.nr_writeback += nr;
        self.swap_write_plug.push((id, off));
        self.count_swpout_vm_event(memcg, order, nr);
        SwapWrite::Async
    }

    /// count_swpout_vm_event().
    fn count_swpout_vm_event(&mut self, memcg: super::memcontrol::MemcgId, order: u32, nr: u64) {
        if order == super::folio::HPAGE_PMD_ORDER {
            self.count(memcg, Item::THP_SWPOUT, 1);
        }
        if order > 0 {
            self.mthp_count(order, super::huge_memory::MthpStat::Swpout);
        }
        self.count(memcg, Item::PSWPOUT, nr);
        self.count(memcg, Item::PGPGOUT, nr * PAGE_SIZE / 1024);
    }

    /// blk_finish_plug() for reclaim's swap writes: one request per run of
    /// contiguous slots; completions go to the writeback queue that
    /// wb_complete() ends (folio_end_writeback).
    pub fn swap_write_unplug(&mut self) {
        if self.swap_write_plug.is_empty() {
            return;
        }
        let mut plug = std::mem::take(&mut self.swap_write_plug);
        let mut i = 0;
        while i < plug.len() {
            let mut pages = self.folios.get(plug[i].0).nr_pages();
            let mut j = i + 1;
            while j < plug.len()
                && plug[j].1 as u64
                    == plug[j - 1].1 as u64 + self.folios.get(plug[j - 1].0).nr_pages()
            {
                pages += self.folios.get(plug[j].0).nr_pages();
                j += 1;
            }
            let done = self.dev.submit(self.now, pages * PAGE_SIZE, true);
            for &(id, _) in &plug[i..j] {
                self.wb.inflight.push_back((id, done));
            }
            i = j;
        }
        plug.clear();
        self.swap_write_plug = plug;
    }

    /// swap_read_folio() for the folios gathered under the readahead plug
    /// (swap_read_unplug): pswpin and pgpgin per page; zram decompresses
    /// at once, a disk completes each run of contiguous slots as one
    /// request. The folios are uptodate when `folio_io_done` is reached.
    pub fn swap_read_plugged(&mut self) {
        if self.swap.ra.plug.is_empty() {
            return;
        }
        let mut plug = std::mem::take(&mut self.swap.ra.plug);
        let zram = self.swap.zram.is_some();
        let mut i = 0;
        while i < plug.len() {
            let mut j = i + 1;
            if !zram {
                while j < plug.len() && plug[j].1 == plug[j - 1].1 + 1 {
                    j += 1;
                }
            }
            let done = if zram {
                self.cpu(self.cost.zram_decompress);
                self.now
            } else {
                self.dev.submit(self.now, (j - i) as u64 * PAGE_SIZE, false)
            };
            for &(id, _) in &plug[i..j] {
                let f = self.folios.get_mut(id);
                f.set(pg::UPTODATE);
                f.clear(pg::LOCKED);
                let memcg = f.memcg;
                self.swap.set_folio_io_done(id, done);
                self.count(memcg, Item::PSWPIN, 1);
                self.count(memcg, Item::PGPGIN, PAGE_SIZE / 1024);
            }
            i = j;
        }
        plug.clear();
        self.swap.ra.plug = plug;
    }

    /// swap_read_folio() of one folio on the SWP_SYNCHRONOUS_IO path that
    /// bypasses the swap cache (zram): decompressed in the task, page by
    /// page; pswpin per page (count_vm_events(PSWPIN, nr)).
    pub fn swap_read_folio_sync(&mut self, id: FolioId) {
        let f = self.folios.get(id);
        let (memcg, nr, order) = (f.memcg, f.nr_pages(), f.order());
        if self.swap.zram.is_some() {
            self.cpu(self.cost.zram_decompress * nr);
        } else {
            let done = self.dev.submit(self.now, nr * PAGE_SIZE, false);
            self.wait_until(done);
        }
        if order > 0 {
            self.mthp_count(order, super::huge_memory::MthpStat::Swpin);
        }
        self.count(memcg, Item::PSWPIN, nr);
        self.count(memcg, Item::PGPGIN, nr * PAGE_SIZE / 1024);
    }

    /// zram_write(): store one compressed page, growing the zsmalloc pool
    /// from free memory (reclaim may dip below the min watermark for it,
    /// as PF_MEMALLOC allocations do). False when no page is free.
    fn zram_write(&mut self, off: SwapOffset) -> bool {
        let z = self.swap.zram.as_ref().unwrap();
        if z.stored[off as usize] {
            // Rewritten (redirtied in the swap cache): the new copy
            // replaces the old one, the same size in the model.
            return true;
        }
        let need = (z.stored_bytes + z.comp_bytes).div_ceil(PAGE_SIZE) as usize;
        if need > z.pool.len() {
            let Some(frame) = self.folios.alloc() else {
                return false;
            };
            self.folios.get_mut(frame).flags = pg::ZSMALLOC;
            self.count_vm(Item::PGALLOC, 1);
            self.swap.zram.as_mut().unwrap().pool.push(frame);
        }
        let z = self.swap.zram.as_mut().unwrap();
        z.stored_bytes += z.comp_bytes;
        z.stored_pages += 1;
        z.stored[off as usize] = true;
        true
    }

    /// zram_slot_free_notify(): the slot's compressed copy is freed and
    /// zsmalloc gives back pages it no longer needs (the model compacts at
    /// once; zsmalloc does it lazily).
    pub fn zram_slot_free_notify(&mut self, off: SwapOffset) {
        let Some(z) = self.swap.zram.as_mut() else {
            return;
        };
        // A slot freed before its folio was written out holds nothing.
        if !std::mem::take(&mut z.stored[off as usize]) {
            return;
        }
        z.stored_bytes -= z.comp_bytes;
        z.stored_pages -= 1;
        let need = z.stored_bytes.div_ceil(PAGE_SIZE) as usize;
        while z.pool.len() > need {
            let frame = z.pool.pop().unwrap();
            self.folios.free(frame);
            self.vm.add(Item::PGFREE, 1);
        }
    }

    /// Slot bookkeeping for a swap-cache folio under the plug (unused
    /// offsets are not read).
    #[inline]
    pub fn swap_offset_of(&self, id: FolioId) -> SwapOffset {
        self.swap.folio_swap(id)
    }
}
