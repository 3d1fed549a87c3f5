// Connection: what it tells the log (rpcrdma/log.h), its counters and
// metrics (rpcrdma/metrics.h) and connection_info() (rpcrdma/types.h).
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "plugin/api/connection.h"
#include "plugin/api/version_two_user.h"
#include "plugin/log/logging.h"
#include "plugin/wire/v1.h"
#include "plugin/wire/v2.h"

namespace rpcrdma::api_internal {

void Connection::SetLogContext(uint64_t id, std::string description) {
  log_id_ = id;
  log_description_ = std::move(description);
}

void Connection::LogDroppedResponder(uint32_t xid) const {
  RPCRDMA_LOG(kWarning, log_id_, log_description_, ": connection ", log_id_,
              ": the Responder of the call with XID 0x", absl::Hex(xid),
              " was dropped unanswered; answered SYSTEM_ERR (RFC 5531 §9)");
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

void Connection::LogRdmaError(bool sent, uint32_t xid, absl::string_view what,
                              absl::string_view engine_why) {
  if (!sent) {
    RPCRDMA_LOG(kWarning, log_id_, log_description_, ": received RDMA_ERROR ",
                what, " for XID 0x", absl::Hex(xid),
                what == "ERR_CHUNK"
                    ? ": the peer could not process the chunk lists or "
                      "convey the reply in them (RFC 8166 §4.5.2); the "
                      "call's status says what it offered and what to raise"
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
              " for XID 0x", absl::Hex(xid), why,
              engine_why.empty() ? "" : ": ", engine_why);
}

ConnectionMetrics Connection::metrics() const {
  ConnectionMetrics m;
  m.connection = ConnectionId(log_id_);
  m.counters = counters();
  m.call_rtt = call_rtt_.Snapshot();
  m.reply_time = reply_time_.Snapshot();
  return m;
}

namespace {

// Read chunks are runs of segments with the same position (RFC 8166
// §3.4.5 lists a chunk's segments together).
uint64_t DistinctPositions(const wire::ChunkLists& chunks) {
  uint64_t n = 0;
  for (size_t i = 0; i < chunks.reads.size(); ++i) {
    n += i == 0 || chunks.reads[i].position != chunks.reads[i - 1].position;
  }
  return n;
}

}  // namespace

void Connection::Count(uint64_t Counters::*field) {
  std::lock_guard<std::mutex> lock(counters_mu_);
  ++(counters_.*field);
}

void Connection::CountMessage(const engine::MessageSeen& seen) {
  const bool sent = seen.sent;
  if (seen.v2_error) {
    // The answer to a version-two probe (draft-04 §7.2) may come as a
    // version-two RDMA2_ERROR, as Linux sends it.
    {
      std::lock_guard<std::mutex> lock(counters_mu_);
      ++(sent ? counters_.errors_sent : counters_.errors_received);
    }
    LogRdmaError(
        sent, seen.xid,
        seen.v2_code
            ? absl::StrCat("RDMA2_ERROR ", wire::V2ErrorCodeName(*seen.v2_code))
            : std::string("RDMA2_ERROR"),
        seen.why);
    return;
  }
  if (seen.header == nullptr) {
    if (!sent && seen.error != nullptr) {
      undecodable_.emplace(seen.xid, seen.error->message);
    }
    return;
  }
  const wire::V1Header& h = *seen.header;
  if (const auto* err = std::get_if<wire::V1Error>(&h.body)) {
    {
      std::lock_guard<std::mutex> lock(counters_mu_);
      ++(sent ? counters_.errors_sent : counters_.errors_received);
    }
    LogRdmaError(sent, h.xid,
                 err->code == wire::V1ErrorCode::kVers
                     ? absl::StrCat("ERR_VERS (versions ", err->vers_low,
                                    " to ", err->vers_high, ")")
                     : std::string(wire::V1ErrorCodeName(err->code)),
                 seen.why);
    return;
  }
  std::lock_guard<std::mutex> lock(counters_mu_);
  const wire::ChunkLists* chunks = h.chunks();
  if (chunks == nullptr) return;
  const bool is_call = seen.is_call;
  // Forward calls go from the requester to the responder; a call the
  // other way is a backward call (RFC 8167).
  const bool forward = is_call == (sent == (role_ == Role::kRequester));
  if (!forward) {
    ++(is_call ? counters_.backward_calls : counters_.backward_replies);
    return;
  }
  if (is_call) {
    ++counters_.calls;
    if (h.proc() == wire::V1Proc::kNoMsg) {
      ++counters_.long_calls;
    } else if (chunks->reads.empty()) {
      ++counters_.inline_calls;
    } else {
      ++counters_.read_chunk_calls;
      counters_.read_chunks += DistinctPositions(*chunks);
    }
    counters_.write_chunks += chunks->writes.size();
    if (chunks->reply) ++counters_.reply_chunks;
  } else {
    ++counters_.replies;
    if (h.proc() == wire::V1Proc::kNoMsg) ++counters_.long_replies;
    counters_.credits_granted = h.credits;
  }
}

ConnectionInfo Connection::info() const {
  std::lock_guard<std::mutex> lock(counters_mu_);
  return info_;
}

ConnectionInfo Connection::ComputeInfo() const {
  ConnectionInfo i;
  if (const auto& peer = engine_.peer_private_data()) {
    i.peer_private_data = true;
    i.peer_send_size = peer->send_size;
    i.peer_receive_size = peer->receive_size;
    i.peer_remote_invalidation = peer->remote_invalidation;
  }
  i.send_threshold = engine_.thresholds().send;
  i.receive_threshold = engine_.thresholds().receive;
  i.max_inline_reply = engine_.max_inline_reply();
  i.remote_invalidation = engine_.thresholds().remote_invalidation;
  i.max_segment_size = config_.max_segment_size;
  i.offered_version = config_.offered_version;
  i.version = engine_.version();
  std::tie(i.peer_version_low, i.peer_version_high) = engine_.peer_versions();
  if (i.version == wire::kRpcRdmaVersion2) {
    const engine::VersionTwoState& v2 = engine_.version_two();
    i.peer_receive_buffer_size = v2.peer_rbsiz;
    i.properties = VersionTwoUser::FromPropSet(v2.local_experimental);
    i.peer_properties = VersionTwoUser::FromPropSet(v2.peer_experimental);
  }
  return i;
}

Counters Connection::counters() const {
  std::lock_guard<std::mutex> lock(counters_mu_);
  return counters_;
}

}  // namespace rpcrdma::api_internal
