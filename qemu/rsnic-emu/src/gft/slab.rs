// SPDX-License-Identifier: GPL-2.0

//! A growable array of plain values in memory the kernel is asked to
//! back with 2 MiB pages (`MADV_HUGEPAGE`): the flow table's index and
//! flow lines. A lookup of a table bigger than the TLB's reach reads a
//! random line each time; with 4 KiB pages each of those also walks the
//! page tables, which cost more than the line itself (the engine bench
//! with 1M flows read uniformly: 6.53 -> 7.75 Mpps with the table in huge
//! pages, 2026-12-01). Mappings are anonymous and untouched until
//! written: capacity costs address space, not memory.

use std::marker::PhantomData;
use std::mem::{align_of, size_of};

use memmap2::{Advice, MmapMut, MmapOptions};

/// Where the kernel can use 2 MiB pages at all, sizes are rounded to one.
const HUGE_PAGE: usize = 2 << 20;

/// The array. `T: Copy`: elements have no destructor to run.
pub struct HugeVec<T: Copy> {
    map: Option<MmapMut>,
    len: usize,
    cap: usize,
    _elements: PhantomData<T>,
}

impl<T: Copy> HugeVec<T> {
    /// An empty array (no mapping yet).
    pub fn new() -> Self {
        const { assert!(size_of::<T>() > 0 && align_of::<T>() <= 4096) };
        Self {
            map: None,
            len: 0,
            cap: 0,
            _elements: PhantomData,
        }
    }

    /// `len` copies of `value`.
    pub fn from_elem(value: T, len: usize) -> Self {
        let mut v = Self::new();
        v.reserve_exact(len);
        for _ in 0..len {
            v.push(value);
        }
        v
    }

    /// Elements held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Appends `value`, moving the array to a mapping twice as big when
    /// it is full.
    pub fn push(&mut self, value: T) {
        if self.len == self.cap {
            self.reserve_exact((self.cap * 2).max(HUGE_PAGE / size_of::<T>()));
        }
        // SAFETY: `len < cap` and the mapping holds `cap` elements of `T`,
        // aligned (a mapping starts on a page, `T`'s alignment is at most
        // a page's), so the place is in bounds; it is written, not read,
        // so it needs no valid value before.
        unsafe { self.as_mut_ptr().add(self.len).write(value) };
        self.len += 1;
    }

    /// Makes room for `cap` elements in all (no less than held).
    fn reserve_exact(&mut self, cap: usize) {
        if cap <= self.cap {
            return;
        }
        let bytes = cap
            .checked_mul(size_of::<T>())
            .and_then(|b| b.checked_next_multiple_of(HUGE_PAGE))
            .expect("a table that fits the address space");
        let mut map = MmapOptions::new()
            .len(bytes)
            .map_anon()
            .expect("anonymous memory for the flow table");
        // Only advice: without huge pages the table is slower, not wrong.
        let _ = map.advise(Advice::HugePage);
        let held = self.len;
        let old = self.as_mut_ptr();
        // SAFETY: the old mapping holds `held` elements written by `push`
        // (none and a dangling pointer when there is no mapping); the new
        // one, another mapping, has room for them, aligned for `T`.
        unsafe { std::ptr::copy_nonoverlapping(old, map.as_mut_ptr().cast::<T>(), held) };
        self.map = Some(map);
        self.cap = bytes / size_of::<T>();
    }

    fn as_mut_ptr(&mut self) -> *mut T {
        self.map
            .as_mut()
            .map_or(std::ptr::NonNull::dangling().as_ptr(), |m| {
                m.as_mut_ptr().cast()
            })
    }
}

impl<T: Copy> Default for HugeVec<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy> std::ops::Deref for HugeVec<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        let ptr = self
            .map
            .as_ref()
            .map_or(std::ptr::NonNull::dangling().as_ptr(), |m| {
                m.as_ptr().cast_mut().cast()
            });
        // SAFETY: the first `len` elements were written by `push` (or
        // copied from a mapping where they were) and the mapping, aligned
        // for `T`, outlives the borrow of `self`; with no mapping `len` is
        // 0 and a dangling, aligned pointer makes an empty slice.
        unsafe { std::slice::from_raw_parts(ptr, self.len) }
    }
}

impl<T: Copy> std::ops::DerefMut for HugeVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        let len = self.len;
        let ptr = self.as_mut_ptr();
        // SAFETY: as for `deref`, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    }
}

impl<T: Copy + std::fmt::Debug> std::fmt::Debug for HugeVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HugeVec")
            .field("len", &self.len)
            .field("cap", &self.cap)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_it_held_across_growth() {
        let mut v = HugeVec::<[u64; 8]>::new();
        assert_eq!(v.len(), 0);
        let n = 3 * HUGE_PAGE / 64 + 5;
        for i in 0..n {
            v.push([i as u64; 8]);
        }
        assert_eq!(v.len(), n);
        assert!(v.iter().enumerate().all(|(i, e)| e[7] == i as u64));
        v[3][0] = 99;
        assert_eq!(v[3], [99, 3, 3, 3, 3, 3, 3, 3]);
        let w = HugeVec::from_elem(7u32, 10);
        assert_eq!(&w[..], &[7; 10]);
        assert_eq!(HugeVec::<u32>::new().iter().count(), 0);
    }
}
