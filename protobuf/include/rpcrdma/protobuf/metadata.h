// Call metadata: key/value pairs a client sends with a call and a server
// sends back with its reply (trailing metadata), as gRPC's. Keys are at
// most kMaxMetadataKey octets, values kMaxMetadataValue, and a message
// carries at most kMaxMetadataEntries pairs (protobuf/README.md, "Call and
// reply bodies").
#ifndef RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_METADATA_H_
#define RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_METADATA_H_

#include <cstdint>
#include <map>
#include <string>

namespace rpcrdma::protobuf {

using Metadata = std::multimap<std::string, std::string>;

inline constexpr uint32_t kMaxMetadataKey = 256;
inline constexpr uint32_t kMaxMetadataValue = 8192;
inline constexpr uint32_t kMaxMetadataEntries = 64;

}  // namespace rpcrdma::protobuf

#endif  // RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_METADATA_H_
