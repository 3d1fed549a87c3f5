// What a reply does to the requester's call (RFC 8166 §3.4.7, §3.5.4,
// §4.5): the chunks it returns checked against those offered, the reply
// handed over, or why the call fails.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/engine/engine_util.h"
#include "plugin/engine/requester.h"

namespace rpcrdma::engine {

absl::Status Requester::WithReplyRoom(const absl::Status& error,
                                      const Call& c) const {
  std::string writes;
  for (const wire::WriteChunk& w : c.write_chunks) {
    absl::StrAppend(&writes, writes.empty() ? "" : ", ", ChunkLength(w));
  }
  return absl::Status(
      error.code(),
      absl::StrCat(
          error.message(),
          "; if the reply is what did not fit, the server could not send it "
          "within what this call offered: inline up to ",
          ctx_.thresholds.receive, " octets (the inline threshold), ",
          c.reply_chunk ? absl::StrCat("a reply chunk of ",
                                       ChunkLength(*c.reply_chunk), " octets")
                        : std::string("no reply chunk"),
          " (max_reply_size ", c.call.max_reply_size, "), ",
          c.write_chunks.size(), " write chunks",
          writes.empty() ? "" : absl::StrCat(" of ", writes, " octets"),
          ": raise CallRequest::max_reply_size to the largest reply (rpcgen "
          "and Thrift users: the DDP policy's reply size), or the result "
          "buffers"));
}

absl::StatusOr<CompleteCall> Requester::ReplyOutcome(
    const wire::V1Decoded& decoded, absl::Span<const uint8_t> bytes,
    Call& c) const {
  const wire::V1Header& h = decoded.header;
  if (const auto* err = std::get_if<wire::V1Error>(&h.body)) {
    if (err->code == wire::V1ErrorCode::kVers) {
      // RFC 8166 §4.5.1.
      return absl::FailedPreconditionError(absl::StrCat(
          "RDMA_ERROR ERR_VERS: the peer supports RPC-over-RDMA versions ",
          err->vers_low, " to ", err->vers_high));
    }
    // RFC 8166 §4.5.2.
    return WithReplyRoom(
        absl::InvalidArgumentError(
            "RDMA_ERROR ERR_CHUNK: the peer could not process the call's "
            "chunk lists or convey the reply in them"),
        c);
  }
  if (h.proc() != wire::V1Proc::kMsg && h.proc() != wire::V1Proc::kNoMsg) {
    return absl::DataLossError(absl::StrCat("reply with unexpected procedure ",
                                            wire::V1ProcName(h.proc())));
  }
  const wire::ChunkLists& lists = *h.chunks();
  if (!lists.reads.empty()) {
    return absl::DataLossError("reply carries a read list");
  }
  if (lists.writes.size() > c.write_chunks.size()) {
    return absl::DataLossError(
        absl::StrCat("reply returns ", lists.writes.size(), " write chunks, ",
                     c.write_chunks.size(), " offered"));
  }
  CompleteCall done{c.id, c.xid, {}, {}};
  for (size_t i = 0; i < lists.writes.size(); ++i) {
    auto n = ReturnedLength(lists.writes[i], c.write_chunks[i],
                            absl::StrCat("write chunk ", i));
    if (!n.ok()) return n.status();
    done.result_lengths.push_back(*n);
  }
  uint32_t reply_length = 0;
  if (lists.reply.has_value()) {
    if (!c.reply_chunk.has_value()) {
      return absl::DataLossError("reply returns a reply chunk never offered");
    }
    auto n = ReturnedLength(*lists.reply, *c.reply_chunk, "reply chunk");
    if (!n.ok()) return n.status();
    reply_length = *n;
  }
  if (h.proc() == wire::V1Proc::kMsg) {
    if (reply_length != 0) {
      return absl::DataLossError("RDMA_MSG reply also used the reply chunk");
    }
    auto payload = bytes.subspan(decoded.header_length);
    // The caller sized its buffers for max_reply_size; a longer reduced
    // reply is refused, not handed over (the Linux client likewise fails
    // a reply larger than its receive buffer allows).
    if (payload.size() > c.call.max_reply_size) {
      return absl::ResourceExhaustedError(
          absl::StrCat("inline reply of ", payload.size(),
                       " octets exceeds the call's max_reply_size of ",
                       c.call.max_reply_size));
    }
    done.reply = Buffer::CopyOf(payload);
  } else {
    // RFC 8166 §3.5.4: the whole reduced reply is in the reply chunk.
    if (!lists.reply.has_value() || reply_length == 0) {
      return absl::DataLossError("RDMA_NOMSG reply without a used reply chunk");
    }
    // Handed over where the peer wrote it, without a copy.
    done.reply = std::move(c.reply_buffer);
    done.reply.Truncate(reply_length);
  }
  return done;
}

}  // namespace rpcrdma::engine
