// Golden tests on the newest traces (../shared/data/pt211_h200: PyTorch 2.11 on an H200): with
// --compat chakra, `link` writes Chakra 1.0.0's ET+ (every node, every key in its order, every
// number with Python's type and value, float noise included) and `convert` writes its .et byte for
// byte, from our ET+ and from Chakra's.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstring>

#include "pipeline/rank_graph.h"
#include "tests/testing/test_util.h"

namespace chakraflow {
namespace {

namespace fs = std::filesystem;
using testing::shared_data_dir;

std::vector<std::string> reference_pairs() {
  std::vector<std::string> c = {"gpt2_eager", "ddp_1rank_capture_script",
                                "fsdp_1rank_capture_script"};
  for (int r = 0; r < 4; ++r) c.push_back("gloo_4rank/rank" + std::to_string(r));
  return c;
}

// Whether two JSON values are the same Python value: same types (an int is not a float: 4 and
// 4.0 differ), same doubles bit for bit, objects with the same keys in the same order. On a
// difference, `where` says where.
bool same_python_value(simdjson::dom::element a, simdjson::dom::element b, std::string* where) {
  using T = simdjson::dom::element_type;
  auto is_int = [](T t) { return t == T::INT64 || t == T::UINT64; };
  if (a.type() != b.type() && !(is_int(a.type()) && is_int(b.type()))) {
    *where = simdjson::to_string(a) + " vs " + simdjson::to_string(b) + " (types)";
    return false;
  }
  switch (a.type()) {
    case T::OBJECT: {
      auto oa = a.get_object().value(), ob = b.get_object().value();
      if (oa.size() != ob.size()) {
        *where = "key counts " + std::to_string(oa.size()) + " vs " + std::to_string(ob.size());
        return false;
      }
      auto ib = ob.begin();
      for (auto [key, value] : oa) {
        const auto kb = (*ib).key;
        if (key != kb) {
          *where = "key " + std::string(key) + " vs " + std::string(kb);
          return false;
        }
        if (!same_python_value(value, (*ib).value, where)) {
          *where = std::string(key) + ": " + *where;
          return false;
        }
        ++ib;
      }
      return true;
    }
    case T::ARRAY: {
      auto xa = a.get_array().value(), xb = b.get_array().value();
      if (xa.size() != xb.size()) {
        *where = "array sizes differ";
        return false;
      }
      for (size_t i = 0; i < xa.size(); ++i) {
        if (!same_python_value(xa.at(i).value(), xb.at(i).value(), where)) return false;
      }
      return true;
    }
    case T::DOUBLE: {
      const double x = a.get_double().value(), y = b.get_double().value();
      if (std::memcmp(&x, &y, sizeof x) != 0) {
        *where = simdjson::to_string(a) + " vs " + simdjson::to_string(b);
        return false;
      }
      return true;
    }
    default:
      if (simdjson::to_string(a) != simdjson::to_string(b)) {
        *where = simdjson::to_string(a) + " vs " + simdjson::to_string(b);
        return false;
      }
      return true;
  }
}

class Pt211Chakra : public ::testing::TestWithParam<std::string> {
 protected:
  fs::path dir() const { return shared_data_dir() / "pt211_h200" / GetParam(); }
};

TEST_P(Pt211Chakra, LinkWritesChakrasEtPlusAndConvertItsEt) {
  CF_REQUIRE_SHARED_DATA("pt211_h200/" + GetParam() + "/reference");
  testing::TempDir tmp;
  RankJob job;
  job.host_path = (dir() / "host_et.json.gz").string();
  job.device_path = (dir() / "kineto.json.gz").string();
  job.et_plus_path = tmp.file("et_plus.json");
  job.link.compat = Compat::kChakra;
  const RankJobResult linked = run_link_job(job);
  ASSERT_TRUE(linked.status.ok()) << linked.status.message();

  const std::string ours_text = testing::read_text(tmp.file("et_plus.json"));
  const std::string ref_text =
      testing::read_text((dir() / "reference/et_plus.chakra.json.gz").string());
  simdjson::dom::parser p1, p2;
  simdjson::dom::element ours, ref;
  ASSERT_EQ(p1.parse(ours_text).get(ours), simdjson::SUCCESS);
  ASSERT_EQ(p2.parse(ref_text).get(ref), simdjson::SUCCESS);
  auto on = ours["nodes"].get_array().value();
  auto rn = ref["nodes"].get_array().value();
  ASSERT_EQ(on.size(), rn.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < rn.size(); ++i) {
    std::string where;
    if (!same_python_value(on.at(i).value(), rn.at(i).value(), &where) && ++mismatches <= 5) {
      ADD_FAILURE() << "node #" << i << ": " << where;
    }
  }
  EXPECT_EQ(mismatches, 0u);
  std::string where;
  EXPECT_TRUE(same_python_value(ours, ref, &where)) << where;

  // convert --compat chakra, of our ET+ and of Chakra's: Chakra's .et, byte for byte.
  const std::string ref_et = testing::read_text((dir() / "reference/chakra.et.gz").string());
  for (const std::string& input :
       {tmp.file("et_plus.json"), (dir() / "reference/et_plus.chakra.json.gz").string()}) {
    const std::string out = tmp.file("out.et");
    const int rc =
        testing::run_command(std::string(CHAKRAFLOW_BINARY) + " convert --compat chakra --input " +
                             input + " --output " + out);
    ASSERT_EQ(rc, 0) << input;
    EXPECT_TRUE(testing::read_text(out) == ref_et) << input << ": not Chakra's .et";
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, Pt211Chakra, ::testing::ValuesIn(reference_pairs()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) {
                             if (c == '/') c = '_';
                           }
                           return s;
                         });

}  // namespace
}  // namespace chakraflow
