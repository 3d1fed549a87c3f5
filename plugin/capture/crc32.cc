#include "plugin/capture/crc32.h"

#include <zlib.h>

namespace rpcrdma::pcap {

// zlib's crc32 is this CRC (reflected 0xEDB88320, pre- and post-inverted),
// table-driven and word-at-a-time, so the ICRC need not carry its own table.
uint32_t Crc32(absl::Span<const uint8_t> data, uint32_t previous) {
  return static_cast<uint32_t>(
      crc32_z(previous, data.empty() ? Z_NULL : data.data(), data.size()));
}

}  // namespace rpcrdma::pcap
