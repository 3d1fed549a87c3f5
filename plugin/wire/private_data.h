// RFC 8797 RDMA-CM private data for RPC-over-RDMA version one.
#ifndef RPCRDMA_PLUGIN_WIRE_PRIVATE_DATA_H_
#define RPCRDMA_PLUGIN_WIRE_PRIVATE_DATA_H_

#include <array>
#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace rpcrdma::wire {

constexpr uint32_t kPrivateDataFormatId = 0xf6ab0e18;  // RFC 8797 §4
constexpr uint8_t kPrivateDataVersion = 1;
constexpr size_t kPrivateDataSize = 8;
constexpr uint32_t kMinInlineSize = 1024;    // RFC 8797 §4.2
constexpr uint32_t kMaxInlineSize = 262144;  // (255 + 1) * 1024

struct PrivateData {
  bool remote_invalidation = false;        // the R bit (§4.1)
  uint32_t send_size = kMinInlineSize;     // octets
  uint32_t receive_size = kMinInlineSize;  // octets

  friend bool operator==(const PrivateData&, const PrivateData&) = default;
};

// Encodes the eight octets of §4. Sizes must be 1024..262144; a size that is
// not a multiple of 1024 is rounded down (§4.2: the encoded value is the
// buffer size divided by 1024, less one), so the peer never overruns it.
absl::StatusOr<std::array<uint8_t, kPrivateDataSize>> EncodePrivateData(
    const PrivateData& data);

// Searches `buffer` for the format identifier at any offset (§5.2), then
// checks the version and that eight octets fit. Returns nullopt when no
// valid private data is present; the caller then uses
// PrivateDataOrDefault (§5.1).
std::optional<PrivateData> FindPrivateData(absl::Span<const uint8_t> buffer);

// §5.1: absent or invalid private data means R clear and 1024-octet sizes.
PrivateData PrivateDataOrDefault(absl::Span<const uint8_t> buffer);

struct InlineThresholds {
  uint32_t send = kMinInlineSize;     // largest message this side may Send
  uint32_t receive = kMinInlineSize;  // largest message it will receive
  bool remote_invalidation = false;   // both peers set R (§4.1)
  friend bool operator==(const InlineThresholds&,
                         const InlineThresholds&) = default;
};

// §4.2: this side's send threshold is min(own send size, peer's receive
// size); its receive threshold is min(own receive size, peer's send size).
InlineThresholds NegotiateInline(const PrivateData& local,
                                 const PrivateData& peer);

}  // namespace rpcrdma::wire

#endif  // RPCRDMA_PLUGIN_WIRE_PRIVATE_DATA_H_
