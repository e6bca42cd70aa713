// Status / StatusOr: how a stage reports a fatal problem. A message names the file, the place (byte
// offset, event index or node id) and the stage, so that the user can find the bad input.
// Value types; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace chakraflow {

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  static Status error(std::string message) { return Status(std::move(message)); }
  template <typename... Args>
  static Status errorf(fmt::format_string<Args...> format, Args&&... args) {
    return Status(fmt::format(format, std::forward<Args>(args)...));
  }
  bool ok() const { return !message_.has_value(); }
  const std::string& message() const {
    static const std::string kOk = "OK";
    return message_ ? *message_ : kOk;
  }
  // Prepends context ("while linking rank 3: ...").
  Status with_context(std::string_view context) const {
    if (ok()) return *this;
    return Status(fmt::format("{}: {}", context, *message_));
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  StatusOr(Status status) : value_(std::move(status)) {}  // NOLINT: must be an error
  bool ok() const { return std::holds_alternative<T>(value_); }
  Status status() const { return ok() ? Status() : std::get<Status>(value_); }
  T& value() & { return std::get<T>(value_); }
  const T& value() const& { return std::get<T>(value_); }
  T&& value() && { return std::get<T>(std::move(value_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> value_;
};

}  // namespace chakraflow

#define CF_RETURN_IF_ERROR(expr)              \
  do {                                        \
    ::chakraflow::Status cf_status_ = (expr); \
    if (!cf_status_.ok()) return cf_status_;  \
  } while (0)

#define CF_CONCAT_INNER(a, b) a##b
#define CF_CONCAT(a, b) CF_CONCAT_INNER(a, b)
#define CF_ASSIGN_OR_RETURN(lhs, expr) \
  CF_ASSIGN_OR_RETURN_IMPL(CF_CONCAT(cf_statusor_, __LINE__), lhs, expr)
#define CF_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
