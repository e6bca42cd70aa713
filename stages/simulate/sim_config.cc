#include "stages/simulate/sim_config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <functional>
#include <map>

#include "stages/common/file_io.h"

namespace chakraflow {
namespace {

// Positions are 0-based in yaml-cpp; messages give them 1-based, as editors do.
std::string where(std::string_view source, const YAML::Mark& mark) {
  if (mark.line < 0) return std::string(source);
  return fmt::format("{}:{}:{}", source, mark.line + 1, mark.column + 1);
}

class ConfigReader {
 public:
  explicit ConfigReader(std::string_view source) : source_(source) {}

  Status error(const YAML::Node& node, std::string_view what) const {
    return Status::errorf("{}: {}", where(source_, node.Mark()), what);
  }

  Status scalar(const YAML::Node& node, std::string_view key, std::string* out) const {
    if (!node.IsScalar()) return error(node, fmt::format("\"{}\" must be a scalar", key));
    *out = node.Scalar();
    return Status();
  }

  Status number(const YAML::Node& node, std::string_view key, double min_exclusive, double* out) {
    std::string text;
    CF_RETURN_IF_ERROR(scalar(node, key, &text));
    double value = 0;
    if (!YAML::convert<double>::decode(node, value) || !std::isfinite(value)) {
      return error(node, fmt::format("\"{}\" must be a number, not \"{}\"", key, text));
    }
    if (!(value > min_exclusive)) {
      return error(node,
                   fmt::format("\"{}\" must be greater than {}, not {}", key, min_exclusive, text));
    }
    *out = value;
    return Status();
  }

  Status non_negative(const YAML::Node& node, std::string_view key, double* out) {
    std::string text;
    CF_RETURN_IF_ERROR(scalar(node, key, &text));
    double value = 0;
    if (!YAML::convert<double>::decode(node, value) || !std::isfinite(value) || value < 0) {
      return error(node, fmt::format("\"{}\" must be a number >= 0, not \"{}\"", key, text));
    }
    *out = value;
    return Status();
  }

  Status boolean(const YAML::Node& node, std::string_view key, bool* out) {
    std::string text;
    CF_RETURN_IF_ERROR(scalar(node, key, &text));
    if (!YAML::convert<bool>::decode(node, *out)) {
      return error(node, fmt::format("\"{}\" must be true or false, not \"{}\"", key, text));
    }
    return Status();
  }

  template <typename E>
  Status choice(const YAML::Node& node, std::string_view key,
                const std::vector<std::pair<const char*, E>>& choices, E* out) {
    std::string text;
    CF_RETURN_IF_ERROR(scalar(node, key, &text));
    std::string allowed;
    for (const auto& [name, value] : choices) {
      if (text == name) {
        *out = value;
        return Status();
      }
      allowed += fmt::format("{}{}", allowed.empty() ? "" : " | ", name);
    }
    return error(node, fmt::format("\"{}\" must be {}, not \"{}\"", key, allowed, text));
  }

  // Calls handlers[key] for every key of the mapping; an unknown key is an error naming it.
  Status mapping(const YAML::Node& node, std::string_view what,
                 const std::map<std::string, std::function<Status(const YAML::Node&)>>& handlers) {
    if (!node.IsMap()) return error(node, fmt::format("{} must be a mapping of keys", what));
    for (const auto& kv : node) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
      auto it = handlers.find(key);
      if (it == handlers.end()) {
        std::string known;
        for (const auto& [name, handler] : handlers) {
          known += fmt::format("{}{}", known.empty() ? "" : ", ", name);
        }
        return error(kv.first,
                     fmt::format("unknown key \"{}\" in {} (known keys: {})", key, what, known));
      }
      CF_RETURN_IF_ERROR(it->second(kv.second));
    }
    return Status();
  }

 private:
  std::string_view source_;
};

}  // namespace

const char* to_string(SimMode mode) {
  return mode == SimMode::kReplay ? "replay" : "model";
}
const char* to_string(CollectiveAlgorithm algorithm) {
  return algorithm == CollectiveAlgorithm::kRing ? "ring" : "tree";
}
const char* to_string(CollectiveReplay replay) {
  return replay == CollectiveReplay::kMin ? "min" : "own";
}

StatusOr<SimConfig> parse_sim_config(std::string_view yaml, std::string_view source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Status::errorf("{}: {}", where(source, e.mark), e.msg);
  }
  SimConfig config;
  if (!root || root.IsNull()) return config;  // an empty file: every default
  ConfigReader r(source);
  NetworkConfig& net = config.network;
  auto network = [&](const YAML::Node& node) {
    return r.mapping(
        node, "network",
        {
            {"bandwidth_gbps",
             [&](const YAML::Node& n) {
               return r.number(n, "bandwidth_gbps", 0, &net.bandwidth_gbps);
             }},
            {"latency_us",
             [&](const YAML::Node& n) { return r.non_negative(n, "latency_us", &net.latency_us); }},
            {"algorithm",
             [&](const YAML::Node& n) {
               return r.choice<CollectiveAlgorithm>(
                   n, "algorithm",
                   {{"ring", CollectiveAlgorithm::kRing}, {"tree", CollectiveAlgorithm::kTree}},
                   &net.algorithm);
             }},
        });
  };
  try {
    CF_RETURN_IF_ERROR(r.mapping(
        root, "the configuration",
        {
            {"mode",
             [&](const YAML::Node& n) {
               return r.choice<SimMode>(n, "mode",
                                        {{"replay", SimMode::kReplay}, {"model", SimMode::kModel}},
                                        &config.mode);
             }},
            {"network", network},
            {"host_gaps",
             [&](const YAML::Node& n) { return r.boolean(n, "host_gaps", &config.host_gaps); }},
            {"rank_skew",
             [&](const YAML::Node& n) { return r.boolean(n, "rank_skew", &config.rank_skew); }},
            {"collective_replay",
             [&](const YAML::Node& n) {
               return r.choice<CollectiveReplay>(
                   n, "collective_replay",
                   {{"min", CollectiveReplay::kMin}, {"own", CollectiveReplay::kOwn}},
                   &config.collective_replay);
             }},
            {"compute_scale",
             [&](const YAML::Node& n) {
               return r.number(n, "compute_scale", 0, &config.compute_scale);
             }},
        }));
  } catch (const YAML::Exception& e) {
    return Status::errorf("{}: {}", where(source, e.mark), e.msg);
  }
  return config;
}

StatusOr<SimConfig> load_sim_config(const std::string& path) {
  CF_ASSIGN_OR_RETURN(std::string text, read_input_file(path));
  return parse_sim_config(text, path);
}

}  // namespace chakraflow
