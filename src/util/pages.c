/* pages.c — memory that is read in long streams, in huge pages.
 *
 * A decode step reads every weight once, from end to end: a stream of
 * hundreds of megabytes. In 4 KiB pages that stream crosses a page every
 * 64 cache lines, and at each crossing the hardware prefetcher, which
 * does not follow a stream from one page to the next, starts over, and
 * the TLB misses. In 2 MiB pages it does neither. On the 2-vCPU Zen 4
 * machines here (transparent huge pages in "madvise" mode), mamba-130m's
 * F16 decode went from 83-93 to 102-124 tokens/s, and its 77 MB
 * embedding product from 2.5 to 1.6 ms (docs/executor.md, "Weights in
 * huge pages"). A kernel without transparent huge pages ignores the advice:
 * the memory is then ordinary pages. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, madvise */
#include "util.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

enum { HUGE_PAGE = 2 << 20, PIECE = 32 << 20 };

/* P's LEN bytes (page-aligned) advised into huge pages and faulted in,
 * PIECE at a time. Faulting huge pages one by one from inside a read (a
 * checkpoint's pread) took 3.1 s for mamba-370m's 1.45 GB; populated
 * first, 0.13-0.28 s, and the read then 0.24 s (in 4 KiB pages, 0.99 s
 * in all). But a huge page may first need the kernel to compact memory
 * (transparent huge pages' "defrag" in "madvise" mode does it in the
 * faulting call), and on a virtual machine, memory the guest has never
 * touched faults on the host too (70-110 ms per 32 MiB here, against
 * 3-5 ms once touched): 1.45 s on one run, 14 s on another. So the
 * advice ends (the rest is ordinary pages; 4 KiB pages populate at about
 * 3 GB/s) once the time spent exceeds GRACE_SECONDS plus a second per GB
 * done: the stall stays within about 1 s per GB. Kernels without the advice
 * (before 5.14 for populating) fault the pages as they are first
 * written. */
#define GRACE_SECONDS 0.1
#define SECONDS_PER_BYTE 1e-9
static void populate(char *p, size_t len) {
  bool huge = true;
#ifdef MADV_HUGEPAGE
  madvise(p, len, MADV_HUGEPAGE);
#endif
  double t0 = now_seconds();
  for (size_t off = 0; off < len; off += PIECE) {
    size_t n = len - off < PIECE ? len - off : PIECE;
#ifdef MADV_POPULATE_WRITE
    madvise(p + off, n, MADV_POPULATE_WRITE);
#endif
    double spent = now_seconds() - t0;
    if (huge && off + n < len &&
        spent > GRACE_SECONDS + SECONDS_PER_BYTE * (double)(off + n)) {
      huge = false;
#ifdef MADV_NOHUGEPAGE
      madvise(p + off + n, len - off - n, MADV_NOHUGEPAGE);
#endif
    }
  }
}

void *map_huge(size_t len) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (len == 0 || len > SIZE_MAX - HUGE_PAGE - page)
    return NULL;
  size_t keep = (len + page - 1) / page * page, span = keep + HUGE_PAGE;
  char *area = mmap(NULL, span, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED)
    return NULL;
  /* Aligned to a huge page: only a whole aligned 2 MiB range can be one. */
  char *at = (char *)(((uintptr_t)area + HUGE_PAGE - 1) &
                      ~(uintptr_t)(HUGE_PAGE - 1));
  if (at > area)
    munmap(area, (size_t)(at - area));
  if (at + keep < area + span)
    munmap(at + keep, (size_t)(area + span - (at + keep)));
  populate(at, keep);
  return at;
}

void *xmap_huge(size_t len) {
  void *p = map_huge(len ? len : 1);
  if (!p)
    out_of_memory(len);
  return p;
}

void unmap_huge(void *p, size_t len) {
  if (p)
    munmap(p, len);
}
