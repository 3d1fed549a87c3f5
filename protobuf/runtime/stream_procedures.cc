#include "protobuf/runtime/stream_procedures.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "protobuf/runtime/server_call.h"
#include "protobuf/runtime/wire_codec.h"
#include "rpcrdma/protobuf/program.h"

namespace rpcrdma::protobuf::runtime {
namespace {

// Its end was sent already (a NEXT of the client's window beyond it), or
// it is of another connection, or of a server that restarted.
absl::Status NotOpen(uint64_t stream_id) {
  return absl::UnavailableError(
      absl::StrCat("no stream ", stream_id,
                   " is open on this connection (it ended, or the "
                   "connection or the server was replaced)"));
}

void Next(StreamTable& streams, ConnectionId connection, uint32_t xid,
          XdrReader& in, Responder& responder) {
  NextArgs args;
  if (absl::Status s = ReadNextArgs(in, args); !s.ok()) {
    SendRpcError(responder, xid, AcceptStat::kGarbageArgs);
    return;
  }
  std::shared_ptr<ServerStream> stream =
      streams.Find(connection, args.stream_id);
  if (stream == nullptr) {
    std::vector<uint8_t> xdr = AcceptedHeader(xid, AcceptStat::kSuccess);
    XdrWriter w(&xdr);
    (void)w.WriteUint32("kind", static_cast<uint32_t>(StreamItem::kEnd));
    AppendStatus(NotOpen(args.stream_id), {}, xdr);
    (void)responder.Send(HandlerReply(std::move(xdr)));
    return;
  }
  stream->Next(xid, args.seq, std::move(responder));
}

void Cancel(StreamTable& streams, ConnectionId connection, uint32_t xid,
            XdrReader& in, Responder& responder) {
  uint64_t id = 0;
  if (absl::Status s = ReadStreamId(in, id); !s.ok()) {
    SendRpcError(responder, xid, AcceptStat::kGarbageArgs);
    return;
  }
  if (std::shared_ptr<ServerStream> stream = streams.Find(connection, id)) {
    stream->Abort(absl::CancelledError("the client cancelled the stream"));
  }
  // Cancelling a stream that already ended is no error: the two crossed.
  SendStatusOnly(responder, xid, absl::OkStatus());
}

// The stream a SEND or HALF_CLOSE names, when it takes client messages;
// otherwise the call was answered.
std::shared_ptr<ServerStream> ClientStreamOf(StreamTable& streams,
                                             ConnectionId connection,
                                             uint32_t xid, uint64_t stream_id,
                                             Responder& responder) {
  std::shared_ptr<ServerStream> stream = streams.Find(connection, stream_id);
  if (stream == nullptr) {
    SendStatusOnly(responder, xid, NotOpen(stream_id));
    return nullptr;
  }
  if (stream->inbox() == nullptr) {
    SendStatusOnly(
        responder, xid,
        absl::InvalidArgumentError(absl::StrCat(
            "stream ", stream_id, " of ", stream->method().full_name(),
            " is server-streaming: it takes no client messages")));
    return nullptr;
  }
  return stream;
}

void Send(StreamTable& streams, ConnectionId connection, uint32_t xid,
          XdrReader& in, Responder& responder) {
  StreamNumberArgs args;
  if (absl::Status s = ReadStreamNumberArgs(in, args); !s.ok()) {
    SendRpcError(responder, xid, AcceptStat::kGarbageArgs);
    return;
  }
  std::shared_ptr<ServerStream> stream =
      ClientStreamOf(streams, connection, xid, args.stream_id, responder);
  if (stream == nullptr) return;
  std::unique_ptr<google::protobuf::Message> message =
      stream->inbox()->NewMessage();
  if (absl::Status s = ReadPayload(in, *message); !s.ok()) {
    // In the status, as a unary call's; the stream goes on, the seq not
    // taken (the client may send it again).
    SendStatusOnly(responder, xid,
                   absl::InvalidArgumentError(absl::StrCat(
                       "SEND of message ", args.number, " of stream ",
                       args.stream_id, " is malformed: ", s.message())));
    return;
  }
  stream->inbox()->Send(xid, args.number, std::move(message),
                        std::move(responder));
}

void HalfClose(StreamTable& streams, ConnectionId connection, uint32_t xid,
               XdrReader& in, Responder& responder) {
  StreamNumberArgs args;
  if (absl::Status s = ReadStreamNumberArgs(in, args);
      !s.ok() || in.remaining() != 0) {
    SendRpcError(responder, xid, AcceptStat::kGarbageArgs);
    return;
  }
  std::shared_ptr<ServerStream> stream =
      ClientStreamOf(streams, connection, xid, args.stream_id, responder);
  if (stream == nullptr) return;
  stream->inbox()->HalfClose(xid, args.number, std::move(responder));
}

}  // namespace

bool ServeStreamProcedure(StreamTable& streams, ConnectionId connection,
                          uint32_t procedure, uint32_t xid, XdrReader& in,
                          Responder& responder) {
  switch (procedure) {
    case kStreamNextProcedure:
      Next(streams, connection, xid, in, responder);
      return true;
    case kStreamCancelProcedure:
      Cancel(streams, connection, xid, in, responder);
      return true;
    case kStreamSendProcedure:
      Send(streams, connection, xid, in, responder);
      return true;
    case kStreamHalfCloseProcedure:
      HalfClose(streams, connection, xid, in, responder);
      return true;
    default:
      return false;
  }
}

}  // namespace rpcrdma::protobuf::runtime
