// stages/et/et_io: the .et record stream. Round trips, the framing example of
// reference/chakra_spec.md §3, gzip detection, and errors that name the record and byte offset.
#include "stages/et/et_io.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "proto/et_def.pb.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

namespace pb = ChakraProtoMsg;
using google::protobuf::util::MessageDifferencer;

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

// A node that sets every field and every kind of attribute value.
pb::Node full_node(uint64_t id) {
  pb::Node n;
  n.set_id(id);
  n.set_name("aten::mm \xc3\xa9");
  n.set_type(pb::COMM_COLL_NODE);
  n.add_ctrl_deps(id - 1);
  n.add_data_deps(id - 1);
  n.add_data_deps(0);
  n.set_start_time_micros(1234567890123ULL);
  n.set_duration_micros(42);
  n.mutable_inputs()->set_values("[[1, 2, 0, 16, 4, 'cuda:0']]");
  n.mutable_inputs()->set_shapes("[[16]]");
  n.mutable_inputs()->set_types("['Tensor(float)']");
  n.mutable_outputs();  // present but empty
  auto add = [&](const char* name) {
    pb::AttributeProto* a = n.add_attr();
    a->set_name(name);
    return a;
  };
  add("d")->set_double_val(-2.5e-7);
  add("f")->set_float_val(0.1f);
  add("i32")->set_int32_val(-7);
  add("i64")->set_int64_val(-(int64_t{1} << 62));
  add("u32")->set_uint32_val(4000000000u);
  add("u64")->set_uint64_val(UINT64_MAX);
  add("s32")->set_sint32_val(-3);
  add("s64")->set_sint64_val(-4);
  add("f32")->set_fixed32_val(5);
  add("f64")->set_fixed64_val(6);
  add("sf32")->set_sfixed32_val(-8);
  add("sf64")->set_sfixed64_val(-9);
  add("b")->set_bool_val(false);
  add("s")->set_string_val("");
  add("by")->set_bytes_val(std::string("\x00\x01\xff", 3));
  auto* il = add("il")->mutable_int64_list();
  il->add_values(1);
  il->add_values(-1);
  add("bl")->mutable_bool_list()->add_values(true);
  add("sl")->mutable_string_list()->add_values("x");
  add("dl")->mutable_double_list();  // empty list message
  pb::AttributeProto* doc = add("with_doc");
  doc->set_doc_string("documented");
  return n;
}

TEST(et_io, RoundTripsEveryFieldPlainAndGzip) {
  testing::TempDir tmp;
  for (const char* name : {"t.et", "t.et.gz"}) {
    const std::string path = tmp.file(name);
    pb::GlobalMetadata md;
    md.set_version("1.0.0");
    md.add_attr()->set_name("schema");
    std::vector<pb::Node> nodes;
    nodes.push_back(pb::Node());  // all default: a 0-length record
    for (uint64_t id = 1; id <= 50; ++id) nodes.push_back(full_node(id));
    {
      auto w = EtWriter::open(path);
      ASSERT_TRUE(w.ok()) << w.status().message();
      w->write(md);
      for (const auto& n : nodes) w->write(n);
      EXPECT_EQ(w->records_written(), nodes.size() + 1);
      ASSERT_TRUE(w->commit().ok());
    }
    auto r = EtReader::open(path);
    ASSERT_TRUE(r.ok()) << r.status().message();
    pb::GlobalMetadata md2;
    ASSERT_TRUE(*r->next(&md2));
    EXPECT_TRUE(MessageDifferencer::Equals(md, md2));
    pb::Node n;
    size_t count = 0;
    while (true) {
      auto more = r->next(&n);
      ASSERT_TRUE(more.ok()) << more.status().message();
      if (!*more) break;
      ASSERT_LT(count, nodes.size());
      EXPECT_TRUE(MessageDifferencer::Equals(n, nodes[count])) << "record " << count + 1;
      ++count;
    }
    EXPECT_EQ(count, nodes.size());
    // Reading again at the end keeps answering "no more".
    EXPECT_FALSE(*r->next(&n));
  }
}

TEST(et_io, ReadsAndWritesTheSpecExampleBytes) {
  // reference/chakra_spec.md §3: a 7-byte GlobalMetadata (version "0.0.4"), a 0-byte Node, an
  // 11-byte Node {id 1, name "n1", COMP_NODE, data_deps [0]} (packed).
  const std::string file = bytes({0x07, 0x0a, 0x05, 0x30, 0x2e, 0x30, 0x2e, 0x34, 0x00, 0x0b, 0x08,
                                  0x01, 0x12, 0x02, 0x6e, 0x31, 0x18, 0x04, 0x2a, 0x01, 0x00});
  testing::TempDir tmp;
  testing::write_text(tmp.file("a.et"), file);
  auto r = EtReader::open(tmp.file("a.et"));
  ASSERT_TRUE(r.ok());
  pb::GlobalMetadata md;
  ASSERT_TRUE(*r->next(&md));
  EXPECT_EQ(md.version(), "0.0.4");
  pb::Node n0, n1;
  EXPECT_EQ(r->offset(), 8u);
  ASSERT_TRUE(*r->next(&n0));
  EXPECT_EQ(n0.id(), 0u);
  EXPECT_EQ(n0.ByteSizeLong(), 0u);
  ASSERT_TRUE(*r->next(&n1));
  EXPECT_EQ(n1.id(), 1u);
  EXPECT_EQ(n1.name(), "n1");
  EXPECT_EQ(n1.type(), pb::COMP_NODE);
  ASSERT_EQ(n1.data_deps_size(), 1);
  EXPECT_EQ(n1.data_deps(0), 0u);
  EXPECT_FALSE(*r->next(&n1));
  EXPECT_EQ(r->record_index(), 3u);

  // Writing the same messages gives the same bytes.
  auto w = EtWriter::open(tmp.file("b.et"));
  ASSERT_TRUE(w.ok());
  w->write(md);
  w->write(n0);
  w->write(n1);
  ASSERT_TRUE(w->commit().ok());
  EXPECT_EQ(testing::read_text(tmp.file("b.et")), file);
}

TEST(et_io, AcceptsUnpackedRepeatedIds) {
  // data_deps = [3, 300] encoded unpacked (field 5, varint): 28 03 28 ac 02.
  const std::string file = bytes({0x00, 0x05, 0x28, 0x03, 0x28, 0xac, 0x02});
  testing::TempDir tmp;
  testing::write_text(tmp.file("u.et"), file);
  auto r = EtReader::open(tmp.file("u.et"));
  ASSERT_TRUE(r.ok());
  pb::GlobalMetadata md;
  pb::Node n;
  ASSERT_TRUE(*r->next(&md));
  ASSERT_TRUE(*r->next(&n));
  ASSERT_EQ(n.data_deps_size(), 2);
  EXPECT_EQ(n.data_deps(0), 3u);
  EXPECT_EQ(n.data_deps(1), 300u);
}

TEST(et_io, DetectsGzipByContentNotName) {
  testing::TempDir tmp;
  pb::Node n = full_node(7);
  {
    auto w = EtWriter::open(tmp.file("x.et.gz"));
    ASSERT_TRUE(w.ok());
    w->write(pb::GlobalMetadata());
    w->write(n);
    ASSERT_TRUE(w->commit().ok());
  }
  std::filesystem::rename(tmp.file("x.et.gz"), tmp.file("renamed.et"));
  const std::string raw = testing::read_text(tmp.file("renamed.et"));  // gunzips
  EXPECT_EQ(static_cast<unsigned char>(raw[0]), 0x00u);  // the metadata record is empty
  auto r = EtReader::open(tmp.file("renamed.et"));
  ASSERT_TRUE(r.ok());
  pb::GlobalMetadata md;
  pb::Node back;
  ASSERT_TRUE(*r->next(&md));
  ASSERT_TRUE(*r->next(&back));
  EXPECT_TRUE(MessageDifferencer::Equals(n, back));
}

TEST(et_io, RecordsLargerThanTheReadBufferStream) {
  testing::TempDir tmp;
  pb::Node big;
  big.set_id(9);
  big.set_name(std::string(3 << 20, 'x'));  // 3 MiB, larger than one read chunk
  {
    auto w = EtWriter::open(tmp.file("big.et.gz"));
    ASSERT_TRUE(w.ok());
    w->write(pb::GlobalMetadata());
    for (int i = 0; i < 3; ++i) w->write(big);
    ASSERT_TRUE(w->commit().ok());
  }
  auto r = EtReader::open(tmp.file("big.et.gz"));
  ASSERT_TRUE(r.ok());
  pb::GlobalMetadata md;
  ASSERT_TRUE(*r->next(&md));
  pb::Node n;
  int count = 0;
  while (*r->next(&n)) {
    EXPECT_EQ(n.name().size(), big.name().size());
    ++count;
  }
  EXPECT_EQ(count, 3);
  EXPECT_EQ(r->max_record_bytes(), big.ByteSizeLong());
}

TEST(et_io, ErrorsNameTheFileRecordAndOffset) {
  testing::TempDir tmp;
  struct Case {
    std::string bytes;
    std::string expect;
  };
  const std::vector<Case> cases = {
      // Metadata ok, then a node announcing 16 bytes with 2 left.
      {bytes({0x00, 0x10, 0x08, 0x01}),
       "record #1 at byte 1: truncated: 16 bytes announced, 2 left"},
      // A length varint cut short.
      {bytes({0x00, 0x80}), "record #1 at byte 1: truncated length prefix"},
      // A length that cannot be a record.
      {bytes({0x00, 0xff, 0xff, 0xff, 0xff, 0x0f}), "length 4294967295 is too large"},
      // Bytes that are not a Node (field 1 with a length-delimited wire type that overruns).
      {bytes({0x00, 0x02, 0x0a, 0x05}),
       "record #1 at byte 1 (2 bytes) does not parse as ChakraProtoMsg.Node"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = tmp.file("bad" + std::to_string(i) + ".et");
    testing::write_text(path, cases[i].bytes);
    auto r = EtReader::open(path);
    ASSERT_TRUE(r.ok());
    pb::GlobalMetadata md;
    ASSERT_TRUE(*r->next(&md)) << i;
    pb::Node n;
    auto more = r->next(&n);
    ASSERT_FALSE(more.ok()) << "case " << i << " read fine";
    EXPECT_NE(more.status().message().find(path), std::string::npos) << more.status().message();
    EXPECT_NE(more.status().message().find(cases[i].expect), std::string::npos)
        << more.status().message();
  }
  // Opening: a missing file, a directory.
  EXPECT_NE(EtReader::open(tmp.file("missing.et")).status().message().find("cannot open"),
            std::string::npos);
  EXPECT_NE(EtReader::open(tmp.path().string()).status().message().find("directory"),
            std::string::npos);
  // An empty file is a clean end of stream.
  testing::write_text(tmp.file("empty.et"), "");
  auto r = EtReader::open(tmp.file("empty.et"));
  ASSERT_TRUE(r.ok());
  pb::GlobalMetadata md;
  auto more = r->next(&md);
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(*more);
}

TEST(et_io, TruncatedGzipIsAnError) {
  testing::TempDir tmp;
  {
    auto w = EtWriter::open(tmp.file("t.et.gz"));
    ASSERT_TRUE(w.ok());
    w->write(pb::GlobalMetadata());
    for (uint64_t id = 1; id < 2000; ++id) w->write(full_node(id));
    ASSERT_TRUE(w->commit().ok());
  }
  std::string gz = testing::read_text(tmp.file("t.et.gz"));  // gunzipped content
  std::string compressed;
  {
    FILE* f = std::fopen(tmp.file("t.et.gz").c_str(), "rb");
    ASSERT_NE(f, nullptr);
    char buf[4096];
    size_t k;
    while ((k = std::fread(buf, 1, sizeof(buf), f)) > 0) compressed.append(buf, k);
    std::fclose(f);
  }
  testing::write_text(tmp.file("cut.et.gz"), compressed.substr(0, compressed.size() / 2));
  auto r = EtReader::open(tmp.file("cut.et.gz"));
  ASSERT_TRUE(r.ok());
  pb::GlobalMetadata md;
  pb::Node n;
  Status last;
  ASSERT_TRUE(*r->next(&md));
  while (true) {
    auto more = r->next(&n);
    if (!more.ok()) {
      last = more.status();
      break;
    }
    ASSERT_TRUE(*more) << "a truncated gzip file ended cleanly";
  }
  EXPECT_NE(last.message().find("cut.et.gz"), std::string::npos) << last.message();
  EXPECT_FALSE(gz.empty());
}

}  // namespace
}  // namespace chakraflow
