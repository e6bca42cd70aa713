#include "stages/link/link_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace chakraflow {
namespace {

// The whole text as a finite number.
bool parse_number(std::string_view text, double* out) {
  const std::string s(text);
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace

const std::vector<std::string>& link_option_names() {
  static const std::vector<std::string> names = {
      "mode",       "compat",         "format",           "gap_threshold_us",
      "annotation", "min_match_rate", "profiler_overhead"};
  return names;
}

Status set_link_option(LinkOptions& options, std::string_view name, std::string_view value) {
  const bool flag = name.substr(0, 2) == "--";
  std::string key(flag ? name.substr(2) : name);
  for (char& c : key) c = c == '-' ? '_' : c;
  const std::string v(value);
  // The option as the caller spells it: --gap-threshold-us (a flag), 'gap_threshold_us' (a key).
  const std::string opt = flag ? std::string(name) : fmt::format("'{}'", name);
  if (key == "mode") {
    if (v == "auto") {
      options.mode = MatchMode::kAuto;
    } else if (v == "rf_id") {
      options.mode = MatchMode::kRfId;
    } else if (v == "sequence") {
      options.mode = MatchMode::kSequence;
    } else {
      return Status::errorf("{}: unknown mode '{}' (auto, rf_id, sequence)", opt, v);
    }
  } else if (key == "compat") {
    if (v == "default") {
      options.compat = Compat::kDefault;
    } else if (v == "chakra") {
      options.compat = Compat::kChakra;
    } else {
      return Status::errorf("{}: unknown value '{}' (default, chakra)", opt, v);
    }
  } else if (key == "format") {
    if (v == "chakra") {
      options.format = OutputFormat::kChakra;
    } else if (v == "legacy") {
      options.format = OutputFormat::kLegacy;
    } else {
      return Status::errorf("{}: unknown value '{}' (chakra, legacy)", opt, v);
    }
  } else if (key == "gap_threshold_us") {
    double us = 0;
    // 1e12 us (11.6 days) keeps the threshold in nanoseconds far inside int64.
    if (!parse_number(v, &us) || us < 0 || us > 1e12) {
      return Status::errorf("{} must be between 0 and 1e12", opt);
    }
    options.gap_threshold = static_cast<TimeNs>(us * 1000.0 + 0.5);
  } else if (key == "annotation") {
    options.annotation = v;
  } else if (key == "min_match_rate") {
    double percent = 0;
    if (!parse_number(v, &percent) || percent < 0 || percent > 100) {
      return Status::errorf("{} is a percentage (0-100)", opt);
    }
    options.min_match_rate = percent / 100.0;
  } else if (key == "profiler_overhead") {
    if (v == "auto") {
      options.profiler_overhead = LinkOptions::Overhead::kAuto;
    } else if (v == "off") {
      options.profiler_overhead = LinkOptions::Overhead::kOff;
    } else if (v == "default") {
      options.profiler_overhead = LinkOptions::Overhead::kDefault;
    } else {
      return Status::errorf("{}: unknown value '{}' (auto, off, default)", opt, v);
    }
  } else {
    return Status::errorf("{}: not a link option", opt);
  }
  return Status();
}

void set_timing_trace(LinkOptions& options) {
  options.mode = MatchMode::kSequence;
  options.other_process = true;
  options.recorded_with = RecordedWith::kKineto;
}

ProfilerCosts LinkOptions::profiler_costs() const {
  if (compat == Compat::kChakra || profiler_overhead == Overhead::kOff) return {};
  if (step_time && step_time->calibration)
    return costs_from(*step_time->calibration, recorded_with);
  if (profiler_overhead == Overhead::kDefault)
    return costs_from(kDefaultCalibration, recorded_with);
  return {};
}

}  // namespace chakraflow
