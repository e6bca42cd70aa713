#include "stages/convert/comm_groups.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>

#include "proto/et_def.pb.h"
#include "stages/convert/comm_attributes.h"
#include "stages/convert/convert_model.h"
#include "stages/convert/pytorch_converter.h"
#include "stages/et/et_io.h"
#include "stages/et/node_record.h"

namespace chakraflow {
namespace {

bool is_decimal(const std::string& s) {
  return !s.empty() && s.size() < 10 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

bool parse_group_list(const std::string& values, int name_offset,
                      std::map<std::string, std::vector<int>>* out) {
  std::string_view text(values);
  if (text.size() >= 4 && text.substr(0, 2) == "['" && text.substr(text.size() - 2) == "']") {
    text = text.substr(2, text.size() - 4);
  }
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::array groups;
  if (parser.parse(padded).get_array().get(groups)) return false;
  for (simdjson::dom::element g : groups) {
    simdjson::dom::object obj;
    if (g.get_object().get(obj)) return false;
    std::string name;
    std::string_view name_text;
    int64_t name_int = 0;
    if (!obj["pg_name"].get_string().get(name_text)) {
      name.assign(name_text);
    } else if (!obj["pg_name"].get_int64().get(name_int)) {
      name = std::to_string(name_int);
    } else {
      return false;
    }
    std::vector<int> ranks;
    simdjson::dom::array rank_list;
    if (!obj["ranks"].get_array().get(rank_list)) {
      for (simdjson::dom::element r : rank_list) {
        int64_t v = 0;
        if (r.get_int64().get(v) || v < 0 || v > INT32_MAX) return false;
        ranks.push_back(static_cast<int>(v));
      }
    }
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    (*out)[offset_group_name(name, name_offset)] = std::move(ranks);
  }
  return true;
}

std::string offset_group_name(const std::string& name, int offset) {
  if (offset == 0 || !is_decimal(name)) return name;
  int64_t v = 0;
  std::from_chars(name.data(), name.data() + name.size(), v);
  return std::to_string(v + offset);
}

StatusOr<RankCommGroups> scan_comm_groups(const std::string& et_path, int rank, int name_offset) {
  RankCommGroups out;
  out.rank = rank;
  CF_ASSIGN_OR_RETURN(EtReader reader, EtReader::open(et_path));
  std::string_view raw;
  NodeRecord record;
  ChakraProtoMsg::AttributeProto attr;
  bool first = true;
  while (true) {
    const uint64_t index = reader.record_index();
    const uint64_t offset = reader.offset();
    CF_ASSIGN_OR_RETURN(bool more, reader.next_raw(&raw));
    if (!more) break;
    if (first) {
      first = false;
      if (!first_record_is_node(raw)) continue;
    }
    Status decoded = NodeRecord::decode(std::string(raw), &record);
    if (!decoded.ok()) {
      return Status::errorf("{}: record #{} at byte {}: {}", et_path, index, offset,
                            decoded.message());
    }
    const int32_t type = record.type();
    if (type == ChakraProtoMsg::METADATA_NODE ||
        record.name().find("process_group:init") != std::string_view::npos) {
      const std::string values = record.io_field(8, 1, std::string());
      if (!values.empty() && !parse_group_list(values, name_offset, &out.declared)) {
        ++out.unreadable_metadata;
      }
    } else if (type == ChakraProtoMsg::COMM_COLL_NODE || type == ChakraProtoMsg::COMM_SEND_NODE ||
               type == ChakraProtoMsg::COMM_RECV_NODE) {
      const int i = record.find_attr("pg_name");
      std::string pg_name;
      if (i >= 0 && record.parse_attr(static_cast<size_t>(i), &attr) && attr.has_string_val()) {
        pg_name = attr.string_val();
      }
      if (!pg_name.empty()) out.used.insert(pg_name);
      if (is_cpu_collective_name(record.name())) {
        ChakraProtoMsg::Node node;
        CF_RETURN_IF_ERROR(record.parse(&node));
        CpuCollective& c = out.cpu_collectives.emplace_back();
        c.node_id = node.id();
        c.type = type;
        c.start_us = node.start_time_micros();
        c.duration_us = node.duration_micros();
        c.pg_name = std::move(pg_name);
        for (const auto& a : node.attr()) {
          if (a.name() == "comm_type") c.comm_type = static_cast<int32_t>(a.int64_val());
          if (a.name() == "comm_size") c.comm_size = a.int64_val();
        }
      }
    }
  }
  return out;
}

namespace {

bool is_comm_type(ChakraNodeType type) {
  return type == ChakraNodeType::kCommColl || type == ChakraNodeType::kCommSend ||
         type == ChakraNodeType::kCommRecv;
}

// A record comm_groups_of reads: one that declares groups (metadata, process_group:init) or
// communicates. A node named process_group:init is of kind kMetadata (convert_model.h), written
// as a compute node with --metadata-node compute: its kind says so without reading its name
// again (long after the parse, a cache miss a node).
bool declares_groups(const EtPlusTrace& trace, const ChakraNodeRecord& rec) {
  return rec.type == ChakraNodeType::kMetadata || trace.nodes[rec.source].kind == OpKind::kMetadata;
}
bool declares_or_uses_groups(const EtPlusTrace& trace, const ChakraNodeRecord& rec) {
  return is_comm_type(rec.type) || declares_groups(trace, rec);
}

// Records per range of the search for them on the workers.
constexpr size_t kGroupSearchRange = 32768;

}  // namespace

StatusOr<RankCommGroups> comm_groups_of(const EtPlusTrace& trace, const ChakraTrace& chakra,
                                        int name_offset, const OrderedBatches* workers) {
  // The few records that matter, found in ranges (a pass over every record), then read in order.
  const size_t n = chakra.nodes.size();
  const OrderedBatches& run = batches_or_in_turn(workers);
  const size_t per_range = run.range_size(kGroupSearchRange);
  std::vector<std::vector<uint32_t>> found(range_count(n, per_range));
  for_each_range(run, n, per_range, [&](size_t r, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      if (declares_or_uses_groups(trace, chakra.nodes[i])) {
        found[r].push_back(static_cast<uint32_t>(i));
      }
    }
  });
  RankCommGroups out;
  RenderedIo io;
  for (const std::vector<uint32_t>& range : found) {
    for (uint32_t i : range) {
      const ChakraNodeRecord& rec = chakra.nodes[i];
      const EtPlusNode& src = trace.nodes[rec.source];
      if (declares_groups(trace, rec)) {
        CF_RETURN_IF_ERROR(render_io(trace, src, io));
        const std::string values(io.io[kInValues]);
        if (!values.empty() && !parse_group_list(values, name_offset, &out.declared)) {
          ++out.unreadable_metadata;
        }
      } else {
        const CommAttrs* c = chakra.comm_of(rec);
        if (c != nullptr && !c->pg_name.empty()) out.used.insert(std::string(c->pg_name));
        if (rec.has(ChakraNodeRecord::kOffThread)) {
          CpuCollective& cc = out.cpu_collectives.emplace_back();
          cc.node_id = src.id;
          cc.type = static_cast<int32_t>(rec.type);
          cc.start_us = rec.has(ChakraNodeRecord::kHasStart) ? rec.start_time_micros : 0;
          cc.duration_us = rec.duration_micros;
          if (c != nullptr) {
            cc.pg_name = std::string(c->pg_name);
            if (rec.type == ChakraNodeType::kCommColl && c->comm_type) {
              cc.comm_type = static_cast<int32_t>(*c->comm_type);
            }
            cc.comm_size = c->comm_size.value_or(0);
          }
        }
      }
    }
  }
  return out;
}

CommGroups build_comm_groups(const std::vector<RankCommGroups>& ranks,
                             const std::vector<int>& world, int name_offset) {
  CommGroups out;
  std::map<std::string, std::vector<int>> declared;
  for (const RankCommGroups& r : ranks) {
    for (const auto& [name, members] : r.declared) {
      const std::vector<int>& m = members.empty() ? world : members;
      auto [it, inserted] = declared.emplace(name, m);
      if (!inserted && it->second != m) {
        ++out.disagreements;
        std::vector<int> merged;
        std::set_union(it->second.begin(), it->second.end(), m.begin(), m.end(),
                       std::back_inserter(merged));
        it->second = std::move(merged);
      }
    }
  }
  std::map<std::string, std::vector<int>> users;
  for (const RankCommGroups& r : ranks) {
    for (const std::string& name : r.used) users[name].push_back(r.rank);
  }
  out.groups = declared;
  for (auto& [name, members] : users) {
    if (out.groups.count(name)) continue;
    std::sort(members.begin(), members.end());
    out.groups[name] = members;
    ++out.inferred;
  }
  if (out.groups.empty() && !world.empty()) {
    out.groups[offset_group_name("0", name_offset)] = world;
    out.default_world = true;
  }
  return out;
}

std::string comm_groups_json(const CommGroups& groups) {
  std::vector<const std::pair<const std::string, std::vector<int>>*> order;
  for (const auto& g : groups.groups) order.push_back(&g);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    const bool na = is_decimal(a->first), nb = is_decimal(b->first);
    if (na != nb) return na;
    if (na && a->first.size() != b->first.size()) return a->first.size() < b->first.size();
    return a->first < b->first;
  });
  std::string out = "{";
  bool first = true;
  for (const auto* g : order) {
    out += first ? "\n  \"" : ",\n  \"";
    first = false;
    for (char c : g->first) {  // JSON string escaping of the name
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
        out += buf;
      } else {
        out += c;
      }
    }
    out += "\": [";
    for (size_t i = 0; i < g->second.size(); ++i) {
      if (i) out += ", ";
      out += std::to_string(g->second[i]);
    }
    out += "]";
  }
  out += first ? "}\n" : "\n}\n";
  return out;
}

}  // namespace chakraflow
