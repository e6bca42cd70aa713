#include "stages/convert/convert_options.h"

#include <gtest/gtest.h>

namespace chakraflow {
namespace {

TEST(ConvertOptions, EveryNameInBothSpellings) {
  ConvertOptions o;
  ASSERT_TRUE(set_convert_option(o, "compat", "chakra").ok());
  EXPECT_EQ(o.compat, Compat::kChakra);
  ASSERT_TRUE(set_convert_option(o, "--metadata-node", "compute").ok());
  EXPECT_TRUE(o.metadata_as_compute);
  ASSERT_TRUE(set_convert_option(o, "renumber_groups", "true").ok());
  EXPECT_EQ(o.pg_name_offset, 1);
  ASSERT_TRUE(set_convert_option(o, "--keep-optimizer-step-duration", "true").ok());
  EXPECT_FALSE(o.zero_optimizer_step);
  ASSERT_TRUE(set_convert_option(o, "compat", "default").ok());
  EXPECT_EQ(o.compat, Compat::kDefault);
}

TEST(ConvertOptions, BadValuesAndNamesAreErrorsNamingTheOption) {
  ConvertOptions o;
  Status s = set_convert_option(o, "--compat", "sideways");
  EXPECT_EQ(s.message(), "--compat: unknown value 'sideways' (default, chakra)");
  s = set_convert_option(o, "metadata_node", "drop");
  EXPECT_EQ(s.message(), "metadata_node: unknown value 'drop' (keep, compute)");
  EXPECT_FALSE(set_convert_option(o, "renumber_groups", "yes").ok());
  EXPECT_NE(set_convert_option(o, "window", "3").message().find("not a converter option"),
            std::string::npos);
  EXPECT_EQ(o.compat, Compat::kDefault);  // a failed call changes nothing
  EXPECT_FALSE(o.metadata_as_compute);
}

}  // namespace
}  // namespace chakraflow
