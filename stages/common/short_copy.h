#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace chakraflow {

// Copies n bytes, the short pieces of a trace (numbers, names, type lists) with a few moves
// instead of a call to memcpy: a writer makes millions of them on a large rank, and the call and
// its size dispatch cost more than the bytes. Longer ones go to memcpy.
inline void copy_short_or_long(char* to, const char* from, size_t n) {
  if (n >= 8 && n <= 16) {
    uint64_t a, b;
    std::memcpy(&a, from, 8);
    std::memcpy(&b, from + n - 8, 8);
    std::memcpy(to, &a, 8);
    std::memcpy(to + n - 8, &b, 8);
  } else if (n >= 4 && n < 8) {
    uint32_t a, b;
    std::memcpy(&a, from, 4);
    std::memcpy(&b, from + n - 4, 4);
    std::memcpy(to, &a, 4);
    std::memcpy(to + n - 4, &b, 4);
  } else if (n < 4) {
    // Not a loop: the compiler would make it a call to memcpy again.
    if (n > 0) to[0] = from[0];
    if (n > 1) to[1] = from[1];
    if (n > 2) to[2] = from[2];
  } else {
    std::memcpy(to, from, n);
  }
}

}  // namespace chakraflow
