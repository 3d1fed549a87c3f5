// CRC-32 with the reflected polynomial 0xEDB88320 (IEEE 802.3, the one zlib
// and the Linux crc32_le use), as the InfiniBand invariant CRC needs it.
#ifndef RPCRDMA_PLUGIN_CAPTURE_CRC32_H_
#define RPCRDMA_PLUGIN_CAPTURE_CRC32_H_

#include <cstdint>

#include "absl/types/span.h"

namespace rpcrdma::pcap {

// Same contract as zlib's crc32(): pass the previous result to continue a
// running CRC over several pieces; start with 0. Crc32("123456789") is
// 0xCBF43926.
uint32_t Crc32(absl::Span<const uint8_t> data, uint32_t previous = 0);

}  // namespace rpcrdma::pcap

#endif  // RPCRDMA_PLUGIN_CAPTURE_CRC32_H_
