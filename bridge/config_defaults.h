// The bridge's transport configuration: what a TransportConfig leaves unset
// gets the behaviour of the Thrift socket it replaces.
#ifndef RPCRDMA_BRIDGE_CONFIG_DEFAULTS_H_
#define RPCRDMA_BRIDGE_CONFIG_DEFAULTS_H_

#include <thrift/TConfiguration.h>

#include <cstdint>
#include <memory>

#include "bridge/client_core.h"
#include "bridge/responder_core.h"
#include "rpcrdma/config.pb.h"

namespace rpcrdma::thrift::internal {

// A TSocket has no request deadline and no idle timeout. And a transport
// header of 32 segments (limits.max_header_segments): a 64 MiB binary is 8
// segments of Soft-RoCE's 8 MiB.
config::TransportConfig ClientTransportConfig(config::TransportConfig config);
// The same, except that a server keeps the transport's idle disconnect
// and handshake limit, and calls up to the MaxMessageSize
// (limits.max_call_size, at most its 256 MiB bound).
config::TransportConfig ServerTransportConfig(
    config::TransportConfig config, apache::thrift::TConfiguration& limits);

// Thresholds for a connection whose inline thresholds are `send` (calls)
// and `reply_inline` (the largest reduced reply arriving inline), with
// `header_segments` segments in a transport header
// (limits.max_header_segments) of at most `max_segment_size` octets each.
ClientLimits MakeClientLimits(uint32_t bulk_threshold, uint32_t send,
                              uint32_t reply_inline, uint32_t header_segments,
                              uint32_t max_segment_size, bool borrow,
                              apache::thrift::TConfiguration& limits);
// limits.max_header_segments of `config`, or its default.
uint32_t HeaderSegments(const config::TransportConfig& config);
ResponderLimits MakeResponderLimits(uint32_t bulk_threshold,
                                    apache::thrift::TConfiguration& limits);

std::shared_ptr<apache::thrift::TConfiguration> OrDefault(
    std::shared_ptr<apache::thrift::TConfiguration> config);

}  // namespace rpcrdma::thrift::internal

#endif  // RPCRDMA_BRIDGE_CONFIG_DEFAULTS_H_
