// Connection: what it tells the log (rpcrdma/log.h) and its metrics
// (rpcrdma/metrics.h).
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "plugin/api/connection.h"
#include "plugin/log/logging.h"

namespace rpcrdma::api_internal {

void Connection::SetLogContext(uint64_t id, std::string description) {
  log_id_ = id;
  log_description_ = std::move(description);
}

void Connection::LogSetUp(const ConnectionInfo& i) {
  RPCRDMA_LOG(
      kInfo, log_id_, log_description_,
      ": connection up, RPC-over-RDMA version ", i.version,
      ", inline thresholds send ", i.send_threshold, " receive ",
      i.receive_threshold,
      i.peer_private_data
          ? absl::StrCat(", peer private data (RFC 8797): send ",
                         i.peer_send_size, " receive ", i.peer_receive_size,
                         " R=", i.peer_remote_invalidation ? 1 : 0)
          : std::string(", no peer private data (RFC 8797 §5.1 defaults)"),
      ", remote invalidation ", i.remote_invalidation ? "on" : "off");
}

void Connection::LogRdmaError(bool sent, uint32_t xid, absl::string_view what) {
  if (!sent) {
    RPCRDMA_LOG(kWarning, log_id_, log_description_, ": received RDMA_ERROR ",
                what, " for XID 0x", absl::Hex(xid),
                what == "ERR_CHUNK"
                    ? ": the peer could not process the chunk lists or "
                      "convey the reply in them (RFC 8166 §4.5.2)"
                    : "");
    return;
  }
  std::string why;
  if (undecodable_ && undecodable_->first == xid) {
    why = absl::StrCat(": the peer's message did not decode: ",
                       undecodable_->second);
    undecodable_.reset();
  } else if (absl::EndsWith(what, "RDMA2_ERR_INVALID_OPTION")) {
    why =
        ": an optional message of a type this side does not serve "
        "(draft-04 §4.1)";
  } else if (absl::EndsWith(what, "RDMA2_ERR_SYSTEM") && !replying_ &&
             role_ == Role::kRequester) {
    why =
        ": this side's handler of an optional message failed (draft-04 "
        "§6.2.4)";
  } else if (replying_) {
    why =
        ": the reply does not fit the chunks the call offered (RFC 8166 "
        "§4.5.2)";
  } else if (role_ == Role::kResponder) {
    why = ": the call's chunks could not be accepted (RFC 8166 §4.5.2)";
  }
  RPCRDMA_LOG(kWarning, log_id_, log_description_, ": sent RDMA_ERROR ", what,
              " for XID 0x", absl::Hex(xid), why);
}

ConnectionMetrics Connection::metrics() const {
  ConnectionMetrics m;
  m.connection = log_id_;
  m.counters = counters();
  m.call_rtt = call_rtt_.Snapshot();
  m.reply_time = reply_time_.Snapshot();
  return m;
}

}  // namespace rpcrdma::api_internal
