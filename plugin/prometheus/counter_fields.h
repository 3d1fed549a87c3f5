// The fields of Counters (rpcrdma/types.h) by name, for the exporter's
// pages: /metrics exports the monotonic traffic counters as
// rpcrdma_<name>_total, /status shows them with the defence counters.
#ifndef RPCRDMA_PLUGIN_PROMETHEUS_COUNTER_FIELDS_H_
#define RPCRDMA_PLUGIN_PROMETHEUS_COUNTER_FIELDS_H_

#include <cstdint>

#include "rpcrdma/types.h"

namespace rpcrdma::prometheus_internal {

struct CounterField {
  const char* name;
  const char* help;
  uint64_t Counters::*field;
};

// Traffic counters, exported to Prometheus.
inline constexpr CounterField kCounterFields[] = {
    {"calls", "Forward calls sent (channel) or received (server)",
     &Counters::calls},
    {"replies", "Forward replies received (channel) or sent (server)",
     &Counters::replies},
    {"inline_calls", "RDMA_MSG calls without read chunks",
     &Counters::inline_calls},
    {"read_chunk_calls", "RDMA_MSG calls with read chunks",
     &Counters::read_chunk_calls},
    {"read_chunks", "Read chunks (distinct positions)", &Counters::read_chunks},
    {"write_chunks", "Write chunks offered by calls", &Counters::write_chunks},
    {"reply_chunks", "Reply chunks offered by calls", &Counters::reply_chunks},
    {"long_calls", "RDMA_NOMSG calls (position-zero read chunk)",
     &Counters::long_calls},
    {"long_replies", "RDMA_NOMSG replies (via reply chunk)",
     &Counters::long_replies},
    {"remote_invalidations", "Send With Invalidate received or sent",
     &Counters::remote_invalidations},
    {"errors_sent", "RDMA_ERROR messages sent", &Counters::errors_sent},
    {"errors_received", "RDMA_ERROR messages received",
     &Counters::errors_received},
    {"reconnects", "Connections a channel re-established",
     &Counters::reconnects},
    {"backward_calls", "Backward-direction calls (RFC 8167)",
     &Counters::backward_calls},
    {"backward_replies", "Backward-direction replies (RFC 8167)",
     &Counters::backward_replies},
};

// Connections closed or refused to defend against a hostile or broken
// peer: shown on /status beside the traffic counters.
inline constexpr CounterField kDefenceCounterFields[] = {
    {"protocol_closes", "Connections closed for breaking a protocol rule",
     &Counters::protocol_closes},
    {"abandoned_call_disconnects",
     "Connections closed because abandoned calls held the credits",
     &Counters::abandoned_call_disconnects},
    {"idle_closes", "Connections closed for idleness", &Counters::idle_closes},
    {"handshake_timeouts", "Connect requests that never came",
     &Counters::handshake_timeouts},
    {"connections_rejected", "Connect requests rejected at max_connections",
     &Counters::connections_rejected},
    {"accept_errors", "Accepts failed for want of a descriptor or memory",
     &Counters::accept_errors},
};

}  // namespace rpcrdma::prometheus_internal

#endif  // RPCRDMA_PLUGIN_PROMETHEUS_COUNTER_FIELDS_H_
