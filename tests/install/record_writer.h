// Writing .et records by hand, as a simulator's own tools would (no chakraflow writer is
// installed): a base-128 varint length, then the message's bytes. For the install test programs.
#pragma once

#include <cstdint>
#include <string>

#include <google/protobuf/message_lite.h>

inline void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

inline void put_record(std::string& out, const google::protobuf::MessageLite& message) {
  const std::string bytes = message.SerializeAsString();
  put_varint(out, bytes.size());
  out += bytes;
}
