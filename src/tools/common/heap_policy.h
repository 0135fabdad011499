// The heap policy of the long-running processes that move preprocessing material: the party
// and dealer daemons, and mpcache-bench, which stands in for them in one process. Called
// first thing in main() (it sets process-wide allocator options; library code never does).
#pragma once

#include <malloc.h>

namespace mpcache::tools {

// Freed memory, however large, stays in the heap for the next allocation instead of going
// back to the OS. By default glibc serves every block above its mmap threshold (at most
// 32 MiB) with a fresh mmap and unmaps it on free, so each of the dealer's answers (hundreds
// of MB of corrections a request on a 7B model, several buffers on each side of the link)
// landed in fresh pages that the kernel first faulted in and zeroed: on the 7B malicious
// daemons run that was ~27 s of kernel time in the dealer and ~35 s in party 2 over three
// positions. Here: no mmap-served blocks, and the top of the heap returned to the OS only
// beyond 1 GiB free.
//
// `one_arena`: every thread allocates from the one main heap. The daemons want it: the dealer
// makes batches on whichever connection's thread asks first and on its worker threads, and
// with per-thread arenas its kernel time went back up (35 s instead of 6.6 s on the run
// above). mpcache-bench does not: its three parties are threads of one process allocating at
// once, and one arena for all halved its semi-honest ops.
inline void UseReusingHeap(bool one_arena) {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  if (one_arena) mallopt(M_ARENA_MAX, 1);
}

}  // namespace mpcache::tools
