#include "stages/common/prefault.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace chakraflow {

void prefault_for_writing(const void* begin, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  if (bytes == 0) return;
  static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto from = reinterpret_cast<uintptr_t>(begin) / page * page;
  const auto to = (reinterpret_cast<uintptr_t>(begin) + bytes + page - 1) / page * page;
  // Fails (EINVAL) on kernels before 5.14: the pages then fault in as they are written.
  ::madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE);
#else
  (void)begin;
  (void)bytes;
#endif
}

}  // namespace chakraflow
