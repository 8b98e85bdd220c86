// The process's memory allocator settings, applied once at start, before any thread exists.
//
// UseOneMallocArena: glibc gives each thread that contends for the heap an arena of its own
// (up to 8 per core), and memory freed in one arena is reused only by allocations landing in the
// same one. lagsight allocates a poll's offsets on librdkafka's and the pool's threads, analyses
// them on another pool thread, and frees them on whichever drops the last reference, so each
// arena kept its own high-water mark. One arena lets every thread reuse what any other freed.
// Measured at 1,000,000 group-partitions (back-to-back polls, then a reload to 15 s polls):
// peak RSS 499-556 MB with glibc's default, 444 with two arenas, 378-396 with one; the poll's
// duration and CPU unchanged within run-to-run noise (docs/benchmarks.md#measured). Small
// allocations still go through each thread's cache without the arena's lock.
//
// An operator's MALLOC_ARENA_MAX, or a GLIBC_TUNABLES that sets glibc.malloc.arena_max, wins:
// then nothing is set. Other tunables (images set glibc.pthread.rseq=0, say) do not turn it off.
#pragma once

namespace lagsight::app {

// True when the environment already sets glibc's arena count (MALLOC_ARENA_MAX, or
// glibc.malloc.arena_max in GLIBC_TUNABLES).
bool OperatorChoseArenas();

void UseOneMallocArena();

}  // namespace lagsight::app
