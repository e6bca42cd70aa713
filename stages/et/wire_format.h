// Protobuf wire format, read by hand where decoding a whole message would cost too much (the
// feeder's node scan, the compat layers' lazy nodes). Header-only, internal (not installed).
#pragma once

#include <cstddef>
#include <cstdint>

namespace chakraflow::wire {

// Bytes of `v` as a base-128 varint.
inline size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLen = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5
};

inline bool read_varint(const uint8_t*& p, const uint8_t* end, uint64_t* out) {
  if (p < end && *p < 0x80) {  // the common cases: one or two bytes
    *out = *p++;
    return true;
  }
  if (end - p >= 2 && p[1] < 0x80) {
    *out = (p[0] & 0x7Fu) | (static_cast<uint64_t>(p[1]) << 7);
    p += 2;
    return true;
  }
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p >= end) return false;
    uint8_t b = *p++;
    value |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (b < 0x80) {
      *out = value;
      return true;
    }
  }
  return false;  // more than 10 bytes
}

// Skips one field whose tag was just read. Groups (deprecated, but legal as unknown fields) are
// skipped to their matching end tag.
inline bool skip_field(const uint8_t*& p, const uint8_t* end, uint32_t wire_type, uint32_t field,
                       int depth = 0) {
  uint64_t v;
  switch (wire_type) {
    case kVarint:
      return read_varint(p, end, &v);
    case kFixed64:
      if (end - p < 8) return false;
      p += 8;
      return true;
    case kFixed32:
      if (end - p < 4) return false;
      p += 4;
      return true;
    case kLen:
      if (!read_varint(p, end, &v) || v > static_cast<uint64_t>(end - p)) return false;
      p += v;
      return true;
    case kStartGroup: {
      if (depth > 64) return false;
      while (true) {
        uint64_t tag;
        if (!read_varint(p, end, &tag)) return false;
        auto wt = static_cast<uint32_t>(tag & 7);
        auto f = static_cast<uint32_t>(tag >> 3);
        if (wt == kEndGroup) return f == field;
        if (f == 0 || !skip_field(p, end, wt, f, depth + 1)) return false;
      }
    }
    default:
      return false;
  }
}

}  // namespace chakraflow::wire
