#include "bridge/config_defaults.h"

#include <algorithm>
#include <utility>

namespace rpcrdma::thrift::internal {
namespace {

// The largest limits.max_call_size the configuration accepts.
constexpr uint64_t kMaxCallSizeBound = uint64_t{256} << 20;
// Room for the RPC headers and the bridge's framing around a message.
constexpr uint64_t kCallOverhead = 64 << 10;
// RPC-over-RDMA's transport header with its chunk lists, kept free of an
// inline threshold for a reply's (RFC 8166 §4.2).
constexpr uint32_t kTransportHeaderRoom = 512;
// The configuration's default and the bridge's (its largest: 32 segments,
// 28 + 32 x 24 = 796 octets, still fit the smallest inline threshold).
constexpr uint32_t kConfigHeaderSegments = 8;
constexpr uint32_t kBridgeHeaderSegments = 32;

}  // namespace

config::TransportConfig ClientTransportConfig(config::TransportConfig config) {
  if (!config.timeouts().has_request_deadline_ms()) {
    config.mutable_timeouts()->set_request_deadline_ms(0);
  }
  if (!config.timeouts().has_idle_ms()) {
    config.mutable_timeouts()->set_idle_ms(0);
  }
  if (!config.limits().has_max_header_segments()) {
    config.mutable_limits()->set_max_header_segments(kBridgeHeaderSegments);
  }
  return config;
}

uint32_t HeaderSegments(const config::TransportConfig& config) {
  return config.limits().has_max_header_segments()
             ? config.limits().max_header_segments()
             : kConfigHeaderSegments;
}

config::TransportConfig ServerTransportConfig(
    config::TransportConfig config, apache::thrift::TConfiguration& limits) {
  const bool idle_set = config.timeouts().has_idle_ms();
  config = ClientTransportConfig(std::move(config));
  // A server keeps the transport's idle disconnect (and its handshake
  // limit): RDMA has no keepalives, and a peer that connects and goes
  // silent would otherwise hold its connection, and the thread of a
  // TThreadPoolServer waiting for its next call, for ever.
  if (!idle_set) config.mutable_timeouts()->clear_idle_ms();
  if (!config.limits().has_max_call_size()) {
    const uint64_t wanted =
        static_cast<uint64_t>(std::max(limits.getMaxMessageSize(), 0)) +
        kCallOverhead;
    config.mutable_limits()->set_max_call_size(
        static_cast<uint32_t>(std::min(wanted, kMaxCallSizeBound)));
  }
  return config;
}

ClientLimits MakeClientLimits(uint32_t bulk_threshold, uint32_t send,
                              uint32_t reply_inline, uint32_t header_segments,
                              uint32_t max_segment_size, bool borrow,
                              apache::thrift::TConfiguration& limits) {
  ClientLimits l;
  const uint64_t max_message =
      static_cast<uint64_t>(std::max(limits.getMaxMessageSize(), 0));
  l.writer.bulk_threshold = bulk_threshold != 0 ? bulk_threshold : send;
  l.writer.inline_budget =
      send > 2 * kTransportHeaderRoom ? send - kTransportHeaderRoom : send / 2;
  // The transport header's segments are shared by the call's read chunks,
  // the write chunks it offers and its reply chunk (RFC 8166 §3.4): half of
  // them for bulk items; the write chunks take what the items leave.
  l.header_segments = std::max<uint32_t>(header_segments, 1);
  l.max_segment_size = max_segment_size != 0 ? max_segment_size : 1u << 20;
  l.max_write_chunks = 2;
  l.writer.max_bulk_items = std::max<uint32_t>(1, l.header_segments / 2);
  l.writer.borrow = borrow;
  l.writer.max_message_size = max_message;
  l.max_message_size = max_message;
  l.inline_reply = reply_inline > 2 * kTransportHeaderRoom
                       ? reply_inline - kTransportHeaderRoom
                       : reply_inline / 2;
  return l;
}

ResponderLimits MakeResponderLimits(uint32_t bulk_threshold,
                                    apache::thrift::TConfiguration& limits) {
  ResponderLimits l;
  l.writer.bulk_threshold = bulk_threshold != 0 ? bulk_threshold : 4096;
  l.writer.inline_budget = l.writer.bulk_threshold;
  l.writer.max_bulk_items = 8;
  l.writer.borrow = true;
  l.max_message_size =
      static_cast<uint64_t>(std::max(limits.getMaxMessageSize(), 0));
  // Replies are not limited here: the client refuses one over its own
  // MaxMessageSize before it is sent (THRIFT_FETCH with discard).
  l.writer.max_message_size = ~uint64_t{0};
  return l;
}

std::shared_ptr<apache::thrift::TConfiguration> OrDefault(
    std::shared_ptr<apache::thrift::TConfiguration> config) {
  return config != nullptr ? std::move(config)
                           : std::make_shared<apache::thrift::TConfiguration>();
}

}  // namespace rpcrdma::thrift::internal
