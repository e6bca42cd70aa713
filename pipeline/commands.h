// The CLI verbs. Each takes the full argv and the index of its first argument (after the verb),
// returns the process exit code: 0 success, 1 failure (bad input, I/O), 2 usage error.
#pragma once

namespace chakraflow {

int run_link_command(int argc, char** argv, int first);
int run_convert_command(int argc, char** argv, int first);
int run_jsonize_command(int argc, char** argv, int first);
int run_synth_command(int argc, char** argv, int first);
int run_tile_command(int argc, char** argv, int first);
int run_run_command(int argc, char** argv, int first);
int run_feed_command(int argc, char** argv, int first);
int run_simulate_command(int argc, char** argv, int first);

// Whether glibc's malloc asks for transparent huge pages in this process (GLIBC_TUNABLES, read at
// start-up only; main re-executes the process with it for big inputs). `--version` and run's
// summary.json say so.
bool malloc_huge_pages();

// A run allocates its big record arrays one after another and frees some before it allocates the
// next (the device events before the output records). glibc gives each block of more than 32 MiB
// its own mapping and unmaps it when it is freed, so the next one comes from fresh pages, which
// the kernel zeroes first: a tenth of a big rank's CPU time, and on a VM the first touch of a page
// costs the hypervisor too. keep_freed_memory takes every block from the heap and keeps what is
// freed there for the next block: a fifth fewer pages zeroed for a 1 GB rank (1,080 MB before,
// 860 MB after), at the same peak. main sets it up for inputs of 128 MiB or more (below, glibc's
// own threshold already reuses what matters, and kept blocks cost up to 10 MB of peak RSS). A
// GLIBC_TUNABLES that sets glibc.malloc.mmap_* or glibc.malloc.trim_threshold is the user's
// choice and is left alone. release_freed_memory gives the free memory back; `run` calls it after
// each rank when ranks run concurrently, where each thread's heap would otherwise keep its own
// rank's peak.
void keep_freed_memory();
void release_freed_memory();
// Whether this process keeps freed blocks (keep_freed_memory ran, or GLIBC_TUNABLES turns glibc's
// mmap off). run's summary.json says so.
bool malloc_keeps_freed_blocks();

}  // namespace chakraflow
