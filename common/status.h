#pragma once
// Status and Result<T>: errors from the outside world (peers, disk, network, config, CUDA,
// NCCL) travel as values with context; no exception crosses a thread or module boundary.
// Thread model: plain values, no shared state.

#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>

namespace ddp {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // caller passed something wrong (names what)
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,  // call made in the wrong state (misuse)
  kOutOfRange,
  kTimeout,             // a deadline passed
  kAborted,             // the communicator / operation was aborted
  kUnavailable,         // peer or server unreachable, connection closed
  kDataLoss,            // corrupt file, checksum mismatch
  kInternal,            // transport error, invariant broken in a dependency
  kUnimplemented,       // capability not present in this build (e.g. CUDA off)
  kPermissionDenied,    // a resource that belongs to another (job, user) or may not be used
  kResourceExhausted,   // memory (or another finite resource) not available
};

const char* statusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool isOk() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const = delete;  // be explicit: isOk()
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy with `context` prepended: "context: message".
  Status withContext(const std::string& context) const;
  // "Timeout: allreduce seq 4 ..." ("OK" when ok).
  std::string toString() const;

  bool operator==(const Status& other) const = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

std::ostream& operator<<(std::ostream& os, const Status& status);

inline Status invalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status notFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status alreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
inline Status failedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status outOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status timeoutError(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
inline Status abortedError(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
inline Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status dataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status internalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status permissionDenied(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }
inline Status resourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }

// Result<T>: a T or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}              // NOLINT(implicit)
  Result(Status status) : v_(std::move(status)) {        // NOLINT(implicit)
    if (std::get<Status>(v_).isOk()) {
      v_ = Status(StatusCode::kInternal, "Result constructed from an ok Status without a value");
    }
  }

  bool isOk() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return isOk() ? kOkStatus : std::get<Status>(v_);
  }
  // Precondition: isOk(). Aborts with the status otherwise (an invariant, not an error path).
  T& value() & { check(); return std::get<T>(v_); }
  const T& value() const& { check(); return std::get<T>(v_); }
  T&& value() && { check(); return std::get<T>(std::move(v_)); }
  T valueOr(T fallback) const { return isOk() ? std::get<T>(v_) : fallback; }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void check() const {
    if (!isOk()) {
      std::cerr << "FATAL: Result::value() on error: " << std::get<Status>(v_) << std::endl;
      std::abort();
    }
  }
  std::variant<T, Status> v_;
};

}  // namespace ddp

#define DDP_CONCAT_INNER_(a, b) a##b
#define DDP_CONCAT_(a, b) DDP_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function if `expr` is not ok.
#define DDP_RETURN_IF_ERROR(expr)                  \
  do {                                             \
    ::ddp::Status _ddp_st = (expr);                \
    if (!_ddp_st.isOk()) return _ddp_st;           \
  } while (0)

// DDP_ASSIGN_OR_RETURN(auto x, resultExpr);
#define DDP_ASSIGN_OR_RETURN(lhs, expr)                                  \
  auto DDP_CONCAT_(_ddp_res_, __LINE__) = (expr);                        \
  if (!DDP_CONCAT_(_ddp_res_, __LINE__).isOk())                          \
    return DDP_CONCAT_(_ddp_res_, __LINE__).status();                    \
  lhs = std::move(DDP_CONCAT_(_ddp_res_, __LINE__)).value()

// Invariants only (never for errors from the outside world).
#define DDP_CHECK(cond)                                                                 \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::cerr << "FATAL " << __FILE__ << ":" << __LINE__ << ": CHECK(" #cond ") failed" \
                << std::endl;                                                           \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)
