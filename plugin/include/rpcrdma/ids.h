// Strong identifiers of the public API: a connection of a Server or a
// Channel (ConnectionId) and a call a Channel started (CallId). Each is its
// own type, so that one cannot be passed where the other is meant, nor a
// count or an XID where either is.
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_IDS_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_IDS_H_

#include <compare>
#include <cstdint>
#include <ostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rpcrdma {

// A 64-bit identifier distinguished by `Tag`: made explicitly from its
// value, compared, hashed (absl::Hash, so it keys absl::flat_hash_map),
// printed with operator<< and absl::StrFormat's %d (its value). The
// default-constructed one has value 0, which no library-issued identifier
// has: it means "none".
template <typename Tag>
class Id {
 public:
  constexpr Id() = default;
  constexpr explicit Id(uint64_t value) : value_(value) {}

  constexpr uint64_t value() const { return value_; }

  friend constexpr bool operator==(Id, Id) = default;
  friend constexpr std::strong_ordering operator<=>(Id, Id) = default;

  template <typename H>
  friend H AbslHashValue(H state, Id id) {
    return H::combine(std::move(state), id.value_);
  }
  friend absl::FormatConvertResult<absl::FormatConversionCharSet::kIntegral>
  AbslFormatConvert(Id id, const absl::FormatConversionSpec& /*spec*/,
                    absl::FormatSink* sink) {
    sink->Append(absl::StrCat(id.value_));
    return {true};
  }
  friend std::ostream& operator<<(std::ostream& out, Id id) {
    return out << id.value_;
  }

 private:
  uint64_t value_ = 0;
};

// A connection within the Server or the Channel that owns it, numbered
// from 1 in the order the owner set its connections up: a Server in the
// order it accepted them, a Channel one more per connect (1 for the first,
// 2 after the first reconnect...). The same number names the connection
// in IncomingCall::connection, in the Server's methods, in the version-two
// handlers, in log records (LogRecord::connection) and in metrics
// (ConnectionMetrics::connection). ConnectionId() names none. An id is
// never reused by its owner; it means nothing to another Server or
// Channel.
struct ConnectionIdTag {};
using ConnectionId = Id<ConnectionIdTag>;

// A call a Channel started (Channel::Call, Channel::StartCall), to Cancel
// or Await it; unique within its Channel.
struct CallIdTag {};
using CallId = Id<CallIdTag>;

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_IDS_H_
