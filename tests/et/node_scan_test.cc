// stages/et/node_scan: a Node's top-level fields and dependencies read from its bytes, packed and
// unpacked lists, varints of every length, and located errors.
#include "stages/et/node_scan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "proto/et_def.pb.h"

namespace chakraflow {
namespace {

using ::testing::HasSubstr;

std::vector<NodeId> ids(std::initializer_list<NodeId> v) {
  return v;
}

TEST(NodeScan, ReadsPackedAndUnpackedDependencies) {
  // id 9, name "x", ctrl_deps unpacked [4, 5], data_deps packed [300, 2], duration 7.
  const std::string raw = {0x08, 0x09, 0x12, 0x01, 'x',  0x20,
                           0x04, 0x20, 0x05, 0x2a, 0x03, static_cast<char>(0xac),
                           0x02, 0x02, 0x38, 0x07};
  NodeHeader h;
  std::vector<NodeId> data, ctrl;
  ASSERT_TRUE(scan_node(raw, &h, &data, &ctrl).ok());
  EXPECT_EQ(h.id, 9u);
  EXPECT_EQ(h.duration_micros, 7u);
  EXPECT_EQ(data, ids({300, 2}));
  EXPECT_EQ(ctrl, ids({4, 5}));
  // A length running past the record is an error, located.
  Status bad = scan_node(raw.substr(0, 11), &h, &data, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.message(), HasSubstr("longer than the record"));
}

TEST(NodeScan, DecodesVarintsOfEveryLength) {
  std::vector<uint64_t> values;
  for (int bits = 0; bits <= 64; ++bits) {
    const uint64_t v = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    values.push_back(v);
    values.push_back(v + 1);
    values.push_back(v / 3);
  }
  for (size_t tail = 0; tail < 12; ++tail) {  // values near the end of the record, too
    ChakraProtoMsg::Node node;
    node.set_id(values[tail * 5]);
    for (uint64_t v : values) node.add_data_deps(v);
    node.set_name(std::string(tail, 'x'));  // name is written after the deps: vary the tail
    NodeHeader h;
    std::vector<NodeId> data;
    ASSERT_TRUE(scan_node(node.SerializeAsString(), &h, &data, nullptr).ok());
    EXPECT_EQ(h.id, values[tail * 5]);
    EXPECT_EQ(data, values);
  }
}

}  // namespace
}  // namespace chakraflow
