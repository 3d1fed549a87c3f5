// Classified decode failures. The engine turns a DecodeError into the right
// RDMA_ERROR reply: ERR_VERS / ERR_CHUNK in version one (RFC 8166 §4.5.1,
// §4.5.2), or the matching RDMA2_ERR_* arm in version two (draft -04 §6.2.4).
#ifndef RPCRDMA_PLUGIN_WIRE_DECODE_ERROR_H_
#define RPCRDMA_PLUGIN_WIRE_DECODE_ERROR_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rpcrdma::wire {

enum class DecodeErrorKind {
  kTruncated,            // the header ends inside a field
  kBadVersion,           // rdma_vers is not the version this codec decodes
  kBadProc,              // rdma_proc is not a procedure of this version
  kBadDiscriminant,      // a boolean, enum or union arm out of range
  kTooManyReadSegments,  // read list longer than the configured limit
  kTooManyWriteChunks,   // write list longer than the configured limit
  kTooManySegments,      // a write or reply chunk with too many segments
  kBadLength,            // an opaque or array longer than allowed or than
                         // the message
  kBadPropertyValue,     // a known v2 transport property with a bad value
};

absl::string_view DecodeErrorKindName(DecodeErrorKind kind);

struct DecodeError {
  DecodeErrorKind kind;
  // Offset in the header where the offending item starts.
  size_t offset = 0;
  // Human-readable detail, naming the field.
  std::string message;
  // For kBadVersion: the version the peer sent. For the kTooMany* kinds: the
  // configured limit, which v2 reports back in the error message.
  uint32_t value = 0;

  absl::Status ToStatus() const;
};

// Holds either a decoded value or the classified reason it could not be
// decoded.
template <typename T>
class DecodeResult {
 public:
  DecodeResult(T value) : state_(std::move(value)) {}            // NOLINT
  DecodeResult(DecodeError error) : state_(std::move(error)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T& value() & { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }
  const DecodeError& error() const { return std::get<DecodeError>(state_); }
  absl::Status status() const {
    return ok() ? absl::OkStatus() : error().ToStatus();
  }

 private:
  std::variant<T, DecodeError> state_;
};

}  // namespace rpcrdma::wire

#endif  // RPCRDMA_PLUGIN_WIRE_DECODE_ERROR_H_
