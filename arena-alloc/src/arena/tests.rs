//! Unit tests of the arena layer (one file, so that no file below `mod.rs` imports the
//! entry points above it). Each test uses arenas no other test of this binary touches.

use super::free_pages::{decommit_free, pick};
use super::loan::{LEND_RESERVE, lend};
use super::state::{ARENAS, ArenaState};
use super::upkeep::{give_back, list_insert, look_idle, retire_empty, take_returned};
use super::{alloc_small, free, install_page, small_owner_class, small_snapshot, take_chain};
use crate::class::{SMALL_MAX, class_of};
use crate::config::MAX_HEAP_COUNT;
use crate::page::{self, PAGE_SIZE, Page};
use core::ptr;

/// The blocks of a chain from `take_chain`: follows the links from `first` for
/// `count` blocks; with `last` null the chain must end in a null link there.
fn chain(first: *mut u8, last: *mut u8, count: u32) -> Vec<*mut u8> {
    let mut out = vec![first];
    while out.len() < count as usize {
        // SAFETY: the chain's blocks are free blocks linked through their first word.
        out.push(unsafe { out[out.len() - 1].cast::<*mut u8>().read() });
    }
    if last.is_null() {
        // SAFETY: as above.
        assert!(unsafe { out[out.len() - 1].cast::<*mut u8>().read() }.is_null());
    } else {
        assert_eq!(out[out.len() - 1], last);
    }
    out
}

#[test]
#[cfg_attr(miri, ignore = "mmap")]
fn take_chain_takes_a_short_free_list_whole_and_cuts_a_long_one() {
    // An arena no other test of this binary uses; a class of 64-byte blocks.
    let idx = MAX_HEAP_COUNT - 7;
    let class = crate::class::class_of(64);
    let blocks: Vec<*mut u8> = (0..40).map(|_| alloc_small(idx, class)).collect();
    assert!(blocks.iter().all(|p| !p.is_null()));
    // Ten blocks back: the page's free list holds ten.
    for &p in &blocks[..10] {
        // SAFETY: each block is live and freed once.
        unsafe { free(p, idx) };
    }
    // At most 9 taken whole: the list is cut after 3 blocks (no null end yet).
    let (f, l, k) = take_chain(idx, class, 3, 9, false);
    assert!(k == 3 && !l.is_null());
    let cut = chain(f, l, k);
    // At most 7 taken whole: the 7 left are, in one piece, ending in null.
    let (f, l, k) = take_chain(idx, class, 3, 7, false);
    assert!(k == 7 && l.is_null());
    let whole = chain(f, l, k);
    let mut got: Vec<_> = cut.iter().chain(&whole).copied().collect();
    got.sort_unstable();
    got.dedup();
    let mut want = blocks[..10].to_vec();
    want.sort_unstable();
    assert_eq!(got, want, "the ten freed blocks, each once");
    // The free list is empty now: the next chain comes from the bump pointer.
    let (f, l, k) = take_chain(idx, class, 3, 7, false);
    assert!(k == 3 && !l.is_null() && !blocks.contains(&f));
    let bumped = chain(f, l, k);
    for &p in blocks[10..].iter().chain(&got).chain(&bumped) {
        // SAFETY: every block is live (allocated or taken above) and freed once.
        unsafe { free(p, idx) };
    }
}

/// Dirty free pages of `st`, and whether they all come before the clean ones.
fn dirty_free_pages(st: &ArenaState) -> (u32, bool) {
    let (mut dirty, mut ordered, mut seen_clean) = (0, true, false);
    let mut p = st.free_pages;
    while !p.is_null() {
        // SAFETY: the caller holds the lock; listed pages are free descriptors.
        let d = unsafe { (*p).dirty } != 0;
        if d {
            dirty += 1;
            ordered &= !seen_clean;
        }
        seen_clean |= !d;
        // SAFETY: as above.
        p = unsafe { (*p).next };
    }
    (dirty, ordered)
}

/// Arena `idx` fills `pages` pages of class `class` (blocks of `SMALL_MAX` bytes) and
/// frees every page's first block, then the rest: each page but the last empties below
/// the head of its list and becomes a free page, resident.
fn fill_and_free(idx: usize, class: usize, pages: usize) {
    let per_page = PAGE_SIZE / SMALL_MAX;
    let blocks: Vec<*mut u8> = (0..pages * per_page)
        .map(|_| {
            let p = alloc_small(idx, class);
            assert!(!p.is_null());
            // SAFETY: a fresh block of SMALL_MAX bytes.
            unsafe { p.write_bytes(0xa5, SMALL_MAX) };
            p
        })
        .collect();
    for k in 0..per_page {
        for &p in blocks.iter().skip(k).step_by(per_page) {
            // SAFETY: each block is live and freed once.
            unsafe { free(p, idx) };
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "mmap")]
fn an_idle_arena_retires_its_empty_pages_and_trim_decommits_them() {
    // An arena no other test of this binary uses.
    let idx = MAX_HEAP_COUNT - 1;
    let big = class_of(SMALL_MAX);
    let pages = 6;
    fill_and_free(idx, big, pages);
    let a = &ARENAS[idx];
    let st = a.acquire();
    let (dirty, ordered) = dirty_free_pages(st);
    assert!(dirty as usize >= pages - 1 && st.dirty_free == dirty && ordered);
    assert!(
        !st.classes[big].is_null(),
        "the emptied head page stays listed"
    );
    // The first look only marks the arena; the second finds it idle, and its empty
    // head page becomes a free page too.
    // SAFETY: the lock is held.
    assert!(!unsafe { look_idle(st) });
    assert!(!st.classes[big].is_null());
    // SAFETY: as above.
    assert!(unsafe { look_idle(st) });
    assert!(st.classes[big].is_null());
    let (all, ordered) = dirty_free_pages(st);
    assert!(all == dirty + 1 && st.dirty_free == all && ordered);
    // `malloc_trim`'s part: every dirty free page decommitted, once.
    // SAFETY: as above.
    assert!(unsafe { decommit_free(st) });
    assert_eq!((dirty_free_pages(st).0, st.dirty_free), (0, 0));
    // SAFETY: as above.
    assert!(!unsafe { decommit_free(st) });
    a.lock.unlock();
    // An arena that hands out a block is busy at the next look.
    let p = alloc_small(idx, big);
    assert!(!p.is_null());
    let st = a.acquire();
    // SAFETY: the lock is held.
    assert!(!unsafe { look_idle(st) });
    a.lock.unlock();
    // SAFETY: `p` is live and freed once.
    unsafe { free(p, idx) };
}

#[test]
#[cfg_attr(miri, ignore = "mmap")]
fn a_page_that_changes_class_gives_back_what_the_old_one_touched_and_pick_prefers_its_class() {
    // An arena no other test of this binary uses.
    let idx = MAX_HEAP_COUNT - 8;
    let a = &ARENAS[idx];
    let (big, small) = (class_of(SMALL_MAX), class_of(64));
    let retire = || {
        let st = a.acquire();
        // SAFETY: the lock is held.
        unsafe { retire_empty(st) };
        a.lock.unlock();
    };
    // First use: a whole page of SMALL_MAX blocks, every byte written.
    let blocks: Vec<*mut u8> = (0..PAGE_SIZE / SMALL_MAX)
        .map(|_| alloc_small(idx, big))
        .collect();
    let page_start = blocks[0].map_addr(|x| x & !(PAGE_SIZE - 1));
    for &p in &blocks {
        assert!(!p.is_null() && p.map_addr(|x| x & !(PAGE_SIZE - 1)) == page_start);
        // SAFETY: a fresh block of SMALL_MAX bytes.
        unsafe { p.write_bytes(0xa5, SMALL_MAX) };
    }
    for &p in &blocks {
        // SAFETY: each block is live and freed once.
        unsafe { free(p, idx) };
    }
    retire();
    let far = page_start.wrapping_add(PAGE_SIZE / 2 + 8);
    // Second use, same class: one block, the first half. Freed, the page keeps what
    // the first use touched (the same class is likely to reach it again).
    let p = alloc_small(idx, big);
    assert_eq!(p, page_start, "the resident page is formatted again");
    // SAFETY: `p` is a live block; freed once.
    unsafe { free(p, idx) };
    retire();
    // SAFETY: the page is free and stays mapped; nobody uses its memory.
    let far_byte = unsafe { far.read_volatile() };
    assert_eq!(
        far_byte, 0xa5,
        "a page that keeps its class keeps its memory"
    );
    // Third use, another class: one 64-byte block. Freed, the page keeps its first OS
    // page; the rest is decommitted (reads zero again).
    let p = alloc_small(idx, small);
    assert_eq!(p, page_start, "the resident page is formatted again");
    // SAFETY: `p` is a live block; freed once.
    unsafe { free(p, idx) };
    retire();
    // SAFETY: as above.
    let far_byte = unsafe { far.read_volatile() };
    assert_eq!(far_byte, 0, "the other class's bytes were released");
    let near = page_start.wrapping_add(24);
    // SAFETY: as above.
    assert_eq!(unsafe { near.read_volatile() }, 0xa5);
    // A page that last held `big` is picked for `big` even below a page of another
    // class at the head of the free list.
    let b = alloc_small(idx, big);
    let q = alloc_small(idx, small);
    // SAFETY: live blocks, freed once.
    unsafe { free(b, idx) };
    retire();
    // SAFETY: as above.
    unsafe { free(q, idx) };
    retire();
    let st = a.acquire();
    let head = st.free_pages;
    // SAFETY: the lock is held; the head is a free descriptor.
    assert_eq!(unsafe { (*head).class } as usize, small);
    // SAFETY: as above.
    let picked = unsafe { pick(head, big) };
    // SAFETY: as above.
    assert!(picked != head && unsafe { (*picked).class } as usize == big);
    a.lock.unlock();
}

/// Arena `owner` fills `pages` pages of `class` and frees them: its dirty free pages.
fn resident_free_pages(owner: usize, class: usize, pages: usize) -> u32 {
    fill_and_free(owner, class, pages);
    let st = ARENAS[owner].acquire();
    let dirty = st.dirty_free;
    ARENAS[owner].lock.unlock();
    dirty
}

fn lent_bit(page: *mut Page) -> bool {
    let seg = page::segment_of_page(page);
    // SAFETY: test-only read; no other thread uses these arenas.
    unsafe { (*seg).lent & (1 << page::page_index(page)) != 0 }
}

#[test]
#[cfg_attr(miri, ignore = "mmap")]
fn a_lent_page_serves_the_borrower_and_goes_back_to_its_owner_once_empty() {
    // Arenas no other test of this binary uses.
    let (owner, borrower) = (MAX_HEAP_COUNT - 3, MAX_HEAP_COUNT - 4);
    let big = class_of(SMALL_MAX);
    let dirty = resident_free_pages(owner, big, 6);
    assert!(dirty >= 5, "{dirty} resident free pages");
    let owner_bytes = small_snapshot(owner).unwrap().bytes_in_use;
    let borrower_bytes = small_snapshot(borrower).unwrap().bytes_in_use;

    let (o, b) = (&ARENAS[owner], &ARENAS[borrower]);
    let st = b.acquire();
    // SAFETY: the borrower's lock is held; the page goes into its list at once.
    let page = unsafe { lend(owner, borrower, big) };
    assert!(!page.is_null());
    // SAFETY: as above.
    unsafe { list_insert(st, page) };
    // SAFETY: test-only reads of a page held by the locked borrower.
    assert_eq!(unsafe { (*page).holder } as usize, borrower);
    let seg = page::segment_of_page(page);
    // SAFETY: as above; `owner` never changes.
    let seg_owner = unsafe { (*seg).owner } as usize;
    assert_eq!(seg_owner, owner);
    assert!(lent_bit(page));
    // SAFETY: the borrower's lock is held and the page is free.
    unsafe { install_page(st, page, big) };
    b.lock.unlock();

    // Its blocks are the borrower's: they count there, not with the owner, and a free
    // from any thread goes to the borrower.
    let p = alloc_small(borrower, big);
    // SAFETY: as above.
    assert_eq!(p.addr() & !(PAGE_SIZE - 1), unsafe { (*page).start }.addr());
    // SAFETY: `p` is a live small block.
    assert_eq!(unsafe { small_owner_class(p) }, Some((borrower, big)));
    assert_eq!(
        small_snapshot(borrower).unwrap().bytes_in_use,
        borrower_bytes + SMALL_MAX
    );
    assert_eq!(small_snapshot(owner).unwrap().bytes_in_use, owner_bytes);
    // SAFETY: `p` is live and freed once (as a free from the owner's CPU).
    unsafe { free(p, owner) };

    // Empty, it still heads the borrower's class list; retired, it goes back.
    let st = b.acquire();
    assert!(!st.borrowed.is_null());
    // SAFETY: the borrower's lock is held.
    unsafe { retire_empty(st) };
    assert!(st.borrowed.is_null() && st.classes[big].is_null());
    b.lock.unlock();
    // SAFETY: test-only read; the page is free on the owner's returned stack.
    assert_eq!(unsafe { (*page).holder } as usize, owner);
    let st = o.acquire();
    let before = st.dirty_free;
    // SAFETY: the owner's lock is held.
    unsafe { take_returned(o, st) };
    assert_eq!(st.dirty_free, before + 1, "the page came back resident");
    assert!(!lent_bit(page));
    o.lock.unlock();
}

#[test]
#[cfg_attr(miri, ignore = "mmap")]
fn a_busy_arena_keeps_free_pages_dirty_an_idle_one_lends_them_all() {
    let (owner, borrower) = (MAX_HEAP_COUNT - 5, MAX_HEAP_COUNT - 6);
    let big = class_of(SMALL_MAX);
    let dirty = resident_free_pages(owner, big, 7);
    assert!(dirty > LEND_RESERVE + 1, "{dirty} resident free pages");
    let (o, b) = (&ARENAS[owner], &ARENAS[borrower]);
    let st = b.acquire();
    // Lends to the locked borrower until the owner has nothing to spare; `busy`: the
    // owner hands out a block between looks.
    let lend_all = |st: &mut ArenaState, busy: bool, lent: &mut Vec<*mut Page>| loop {
        // SAFETY: the borrower's lock is held; the page goes into its list at once.
        let page = unsafe { lend(owner, borrower, big) };
        if page.is_null() {
            break;
        }
        // SAFETY: as above.
        unsafe { list_insert(st, page) };
        lent.push(page);
        if busy {
            let so = o.acquire();
            so.allocs += 1;
            o.lock.unlock();
        }
    };
    let mut lent = Vec::new();
    // Busy at every look: it lends down to LEND_RESERVE.
    lend_all(st, true, &mut lent);
    assert_eq!(lent.len() as u32, dirty - LEND_RESERVE);
    // Idle (nothing handed out since the last look): the rest, and its empty head
    // page, retired at that look.
    lend_all(st, false, &mut lent);
    assert_eq!(lent.len() as u32, dirty + 1);
    assert!(lent.iter().all(|&p| lent_bit(p)));
    let so = o.acquire();
    assert_eq!((so.dirty_free, so.classes[big]), (0, ptr::null_mut()));
    o.lock.unlock();
    // Given back unused (as if emptied): all resident at the owner again.
    for &page in &lent {
        // SAFETY: the borrower's lock is held; the page is free, only in its list.
        unsafe { give_back(st, page) };
    }
    assert!(st.borrowed.is_null());
    b.lock.unlock();
    let so = o.acquire();
    // SAFETY: the owner's lock is held.
    unsafe { take_returned(o, so) };
    assert_eq!(so.dirty_free, dirty + 1);
    o.lock.unlock();
    assert!(lent.iter().all(|&p| !lent_bit(p)));
}

#[test]
#[cfg_attr(miri, ignore = "mmap")]
fn an_empty_head_is_retired_when_a_full_page_takes_its_place() {
    // An arena no other test of this binary uses; two blocks per page.
    let idx = MAX_HEAP_COUNT - 9;
    let big = class_of(SMALL_MAX);
    let a = &ARENAS[idx];
    let blocks: Vec<*mut u8> = (0..4).map(|_| alloc_small(idx, big)).collect();
    let page_of = |p: *mut u8| page::page_of(page::segment_of(p), p);
    let (pa, pb) = (page_of(blocks[0]), page_of(blocks[2]));
    assert!(pa != pb && page_of(blocks[1]) == pa && page_of(blocks[3]) == pb);
    let before = {
        let st = a.acquire();
        let d = st.dirty_free;
        a.lock.unlock();
        d
    };
    // Page A empties while it heads its list: it stays there.
    for &p in &blocks[..2] {
        // SAFETY: live blocks, freed once.
        unsafe { free(p, idx) };
    }
    // Page B gets a free block and takes the head: A must not stay listed below it.
    // SAFETY: as above.
    unsafe { free(blocks[2], idx) };
    let st = a.acquire();
    assert_eq!(st.classes[big], pb);
    // SAFETY: the lock is held; `pb` is listed.
    let next = unsafe { (*pb).next };
    assert!(next.is_null(), "the empty page stayed listed");
    // SAFETY: as above; `pa` is a free page now.
    assert_eq!(unsafe { (*pa).state }, page::PAGE_FREE);
    assert_eq!(
        st.dirty_free,
        before + 1,
        "the emptied page is a resident free page"
    );
    a.lock.unlock();
    // SAFETY: live block, freed once.
    unsafe { free(blocks[3], idx) };
}
