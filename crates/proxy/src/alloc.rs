//! The process's allocator: mimalloc, entered through its plain `malloc` whenever a block's
//! natural alignment is enough; and [`in_heap`], how a command's future reaches the heap.
//!
//! The `mimalloc` crate sends every allocation through `mi_malloc_aligned`. For blocks above
//! 1 KiB (a session's command future is 1.8 KiB) that takes mimalloc's generic aligned
//! path, which over-allocates and adjusts: about 130 instructions per allocation where
//! `mi_malloc` takes about 20 (callgrind, oltp_read_only; docs/benchmarks.md). mimalloc
//! aligns every block to at least the smaller of its size and 16 bytes, so only layouts that
//! ask for more go through the aligned entry points.

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;
use libmimalloc_sys as ffi;

/// The alignment mimalloc gives every block of at least this size (`MI_MAX_ALIGN_SIZE`).
const NATURAL_ALIGN: usize = 16;

/// mimalloc as the global allocator (`#[global_allocator]` in the binary).
pub struct MiMalloc;

/// True when a plain allocation of `size` bytes is aligned enough for `align`.
fn natural(size: usize, align: usize) -> bool {
    align <= NATURAL_ALIGN && align <= size
}

// SAFETY: every entry point returns mimalloc blocks of at least the layout's size, aligned to
// the layout's alignment (`natural` decides when the plain entry points already are), and every
// block is freed by mimalloc.
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: plain FFI calls into mimalloc with a size and a power-of-two alignment.
        unsafe {
            if natural(layout.size(), layout.align()) {
                ffi::mi_malloc(layout.size()).cast()
            } else {
                ffi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe {
            if natural(layout.size(), layout.align()) {
                ffi::mi_zalloc(layout.size()).cast()
            } else {
                ffi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from one of this allocator's mimalloc calls.
        unsafe { ffi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator; the new block keeps the layout's alignment.
        unsafe {
            if natural(new_size, layout.align()) {
                ffi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                ffi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

/// A future written straight into its heap block, pinned. `Box::pin(f)` builds the future on
/// the stack and copies all of its bytes, the size of its largest state (a session's command
/// future is 1.8 KiB), into cold memory once per statement; built through a closure into the
/// block itself, only the few fields an unstarted future holds are written. Measured with
/// callgrind (docs/benchmarks.md): a quarter fewer L1 data write misses and 1.5-3% fewer
/// instructions per point select and read_only statement.
pub fn in_heap<F: core::future::Future>(make: impl FnOnce() -> F) -> core::pin::Pin<Box<F>> {
    Box::into_pin(Box::write(Box::new_uninit(), make()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allocates, grows, shrinks and frees blocks of every size up to 8 KiB at every alignment
    /// up to 64, holding many at once so blocks come from partly used pages, and checks each
    /// address honours its layout and keeps its bytes.
    #[test]
    fn every_block_is_aligned_as_its_layout_asks() {
        let a = MiMalloc;
        for align in [1usize, 2, 4, 8, 16, 32, 64] {
            let mut held = Vec::new();
            for size in (align..=8192).step_by(8) {
                let layout = Layout::from_size_align(size, align).expect("layout");
                // SAFETY: non-zero size; each block is checked and freed below with its layout.
                unsafe {
                    let p = if size % 3 == 0 {
                        a.alloc_zeroed(layout)
                    } else {
                        a.alloc(layout)
                    };
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    p.write_bytes(0xA5, size);
                    let grown = a.realloc(p, layout, size * 2);
                    assert_eq!(grown as usize % align, 0, "grown {size} align {align}");
                    assert!((0..size).all(|i| *grown.add(i) == 0xA5));
                    held.push((grown, Layout::from_size_align(size * 2, align).expect("layout")));
                }
            }
            for (p, layout) in held {
                // SAFETY: allocated above with this layout.
                unsafe { a.dealloc(p, layout) };
            }
        }
    }

    #[test]
    fn zeroed_blocks_are_zero() {
        let a = MiMalloc;
        let layout = Layout::from_size_align(1440, 8).expect("layout");
        // SAFETY: non-zero size, freed with its layout.
        unsafe {
            let dirty = a.alloc(layout);
            dirty.write_bytes(0xFF, 1440);
            a.dealloc(dirty, layout);
            let p = a.alloc_zeroed(layout);
            assert!((0..1440).all(|i| *p.add(i) == 0));
            a.dealloc(p, layout);
        }
    }

    #[tokio::test]
    async fn futures_built_in_the_heap_run_to_their_answer() {
        let mut seen = Vec::new();
        let big = [7u8; 4096];
        let answer = in_heap(|| async {
            tokio::task::yield_now().await;
            seen.push(big[4095]);
            big.iter().map(|b| u32::from(*b)).sum::<u32>()
        })
        .await;
        assert_eq!((answer, seen), (7 * 4096, vec![7]));
    }
}
