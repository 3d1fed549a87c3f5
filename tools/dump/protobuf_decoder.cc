#include "tools/dump/protobuf_decoder.h"

#include <array>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "rpcrdma/protobuf/metadata.h"
#include "rpcrdma/protobuf/program.h"
#include "rpcrdma/xdr.h"
#include "tools/dump/dump_format.h"

namespace rpcrdma::dump {
namespace {

using nlohmann::json;

// RFC 5531 §9.
constexpr uint32_t kMsgCall = 0;
constexpr uint32_t kMsgReply = 1;
constexpr uint32_t kMsgAccepted = 0;
constexpr uint32_t kAcceptSuccess = 0;
constexpr uint32_t kMaxAuthBody = 400;
// protobuf/README.md §2 and §6.
constexpr uint32_t kMaxStatusMessage = 65536;
constexpr uint32_t kStreamMessage = 0;
constexpr uint32_t kStreamEnd = 1;

#define RPCRDMA_DUMP_RETURN_IF_ERROR(expr) \
  do {                                     \
    absl::Status status_ = (expr);         \
    if (!status_.ok()) return status_;     \
  } while (false)

absl::Status SkipOpaqueAuth(XdrReader& in, absl::string_view field) {
  uint32_t flavor = 0;
  absl::Span<const uint8_t> body;
  RPCRDMA_DUMP_RETURN_IF_ERROR(in.ReadUint32(field, &flavor));
  return in.ReadVarOpaque(field, kMaxAuthBody, &body);
}

// The pairs' count goes into `j` as "metadata" (their octets are the
// peer's business, not the dump's).
absl::Status ReadMetadata(XdrReader& in, json& j) {
  uint32_t count = 0;
  RPCRDMA_DUMP_RETURN_IF_ERROR(in.ReadUint32("metadata count", &count));
  if (count > protobuf::kMaxMetadataEntries) {
    return absl::InvalidArgumentError(
        absl::StrCat("metadata count ", count, " is more than ",
                     protobuf::kMaxMetadataEntries));
  }
  for (uint32_t i = 0; i < count; ++i) {
    absl::Span<const uint8_t> octets;
    RPCRDMA_DUMP_RETURN_IF_ERROR(
        in.ReadVarOpaque("metadata key", protobuf::kMaxMetadataKey, &octets));
    RPCRDMA_DUMP_RETURN_IF_ERROR(in.ReadVarOpaque(
        "metadata value", protobuf::kMaxMetadataValue, &octets));
  }
  j["metadata"] = count;
  return absl::OkStatus();
}

// A payload's serialized message and its bulk fields' count. What follows
// (the bulk paths and values) is not read: a call's values may have gone
// as read chunks (RFC 8166 §3.4.5), leaving only their length words.
absl::Status ReadPayloadHead(XdrReader& in, json& j) {
  absl::Span<const uint8_t> message;
  uint32_t bulk = 0;
  RPCRDMA_DUMP_RETURN_IF_ERROR(
      in.ReadVarOpaque("payload message", UINT32_MAX, &message));
  RPCRDMA_DUMP_RETURN_IF_ERROR(in.ReadUint32("payload bulk count", &bulk));
  j["message_length"] = message.size();
  j["bulk"] = bulk;
  return absl::OkStatus();
}

// absl::StatusCode's name (gRPC's numbering), or the number when it is
// none of them.
json CodeJson(uint32_t code) {
  constexpr uint32_t kLastCode =
      static_cast<uint32_t>(absl::StatusCode::kUnauthenticated);
  if (code > kLastCode) return code;
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

// code, message<65536>, trailing metadata; the message only when it is not
// empty. `code` is the peer's.
absl::Status ReadStatus(XdrReader& in, json& j, uint32_t& code) {
  std::string message;
  RPCRDMA_DUMP_RETURN_IF_ERROR(in.ReadUint32("code", &code));
  RPCRDMA_DUMP_RETURN_IF_ERROR(
      in.ReadString("message", kMaxStatusMessage, &message));
  j["code"] = CodeJson(code);
  if (!message.empty()) j["message"] = EscapeOctets(message);
  return ReadMetadata(in, j);
}

const char* AcceptStatName(uint32_t stat) {
  static constexpr std::array<const char*, 6> kNames = {
      "SUCCESS",      "PROG_UNAVAIL", "PROG_MISMATCH",
      "PROC_UNAVAIL", "GARBAGE_ARGS", "SYSTEM_ERR"};
  return stat < kNames.size() ? kNames[stat] : nullptr;
}

const char* StreamingName(const ProtobufMethod& method) {
  if (method.client_streaming && method.server_streaming) return "bidi";
  if (method.client_streaming) return "client";
  if (method.server_streaming) return "server";
  return nullptr;
}

// The service, and the method or procedure, of `call` into `j`.
void AddCallNames(const ProtobufService& service, uint32_t procedure,
                  const ProtobufMethod* method, json& j) {
  j["service"] = service.full_name;
  if (method != nullptr) j["method"] = method->name;
  if (const StreamProcedure* p = FindStreamProcedure(procedure)) {
    j["procedure"] = std::string(p->name);
  } else if (procedure == 0) {
    j["procedure"] = "NULL";
  } else if (method == nullptr) {
    j["procedure"] = procedure;  // no method of the service has it
  }
}

}  // namespace

std::optional<json> ProtobufDecoder::Decode(absl::Span<const uint8_t> rpc) {
  XdrReader in(rpc);
  uint32_t xid = 0;
  uint32_t type = 0;
  if (!in.ReadUint32("xid", &xid).ok() ||
      !in.ReadUint32("msg_type", &type).ok()) {
    return std::nullopt;
  }
  if (type == kMsgCall) return DecodeCall(xid, in.rest());
  if (type == kMsgReply) return DecodeReply(xid, in.rest());
  return std::nullopt;
}

std::optional<json> ProtobufDecoder::DecodeCall(
    uint32_t xid, absl::Span<const uint8_t> body) {
  XdrReader in(body);
  uint32_t rpcvers = 0;
  uint32_t program = 0;
  uint32_t version = 0;
  uint32_t procedure = 0;
  if (!in.ReadUint32("rpcvers", &rpcvers).ok() ||
      !in.ReadUint32("prog", &program).ok() ||
      !in.ReadUint32("vers", &version).ok() ||
      !in.ReadUint32("proc", &procedure).ok()) {
    return std::nullopt;
  }
  const ProtobufService* service = services_.Find(program, version);
  if (service == nullptr) return std::nullopt;
  Call call;
  call.service = service;
  call.procedure = procedure;
  const ProtobufMethod* method = FindMethod(*service, procedure);
  const StreamProcedure* stream_procedure = FindStreamProcedure(procedure);
  json j = json::object();
  json fields = json::object();
  absl::Status decoded = [&]() -> absl::Status {
    RPCRDMA_DUMP_RETURN_IF_ERROR(SkipOpaqueAuth(in, "cred"));
    RPCRDMA_DUMP_RETURN_IF_ERROR(SkipOpaqueAuth(in, "verf"));
    if (stream_procedure != nullptr) {
      for (absl::string_view word : stream_procedure->argument_words) {
        uint64_t value = 0;
        RPCRDMA_DUMP_RETURN_IF_ERROR(in.ReadUint64(word, &value));
        fields[std::string(word)] = value;
        if (word == "stream_id") call.stream_id = value;
        if (word == "seq") call.seq = value;
      }
      return absl::OkStatus();
    }
    if (method == nullptr) return absl::OkStatus();
    uint32_t timeout_ms = 0;
    RPCRDMA_DUMP_RETURN_IF_ERROR(in.ReadUint32("timeout_ms", &timeout_ms));
    fields["timeout_ms"] = timeout_ms;
    RPCRDMA_DUMP_RETURN_IF_ERROR(ReadMetadata(in, fields));
    return ReadPayloadHead(in, fields);
  }();
  if (call.stream_id) {
    auto it = streams_.find(*call.stream_id);
    if (it != streams_.end() && it->second.service == service) {
      call.method = it->second.method;
    }
  }
  AddCallNames(*service, procedure, method != nullptr ? method : call.method,
               j);
  if (method != nullptr && StreamingName(*method) != nullptr) {
    j["streaming"] = StreamingName(*method);
  }
  j.update(fields);
  if (!decoded.ok()) j["error"] = std::string(decoded.message());
  if (calls_.size() >= kMaxRemembered) calls_.clear();
  calls_[xid] = call;
  return j;
}

std::optional<json> ProtobufDecoder::DecodeReply(
    uint32_t xid, absl::Span<const uint8_t> body) {
  auto found = calls_.find(xid);
  if (found == calls_.end()) return std::nullopt;
  const Call call = found->second;
  calls_.erase(found);
  const ProtobufMethod* method = FindMethod(*call.service, call.procedure);
  json j = json::object();
  AddCallNames(*call.service, call.procedure,
               method != nullptr ? method : call.method, j);
  if (call.stream_id) j["stream_id"] = *call.stream_id;
  if (call.seq) j["seq"] = *call.seq;
  XdrReader in(body);
  absl::Status decoded = [&]() -> absl::Status {
    uint32_t reply_stat = 0;
    RPCRDMA_DUMP_RETURN_IF_ERROR(in.ReadUint32("reply_stat", &reply_stat));
    if (reply_stat != kMsgAccepted) {
      j["reply_stat"] = "MSG_DENIED";
      return absl::OkStatus();
    }
    RPCRDMA_DUMP_RETURN_IF_ERROR(SkipOpaqueAuth(in, "verf"));
    uint32_t accept_stat = 0;
    RPCRDMA_DUMP_RETURN_IF_ERROR(in.ReadUint32("accept_stat", &accept_stat));
    if (accept_stat != kAcceptSuccess) {
      const char* name = AcceptStatName(accept_stat);
      j["accept_stat"] = name != nullptr ? json(name) : json(accept_stat);
      return absl::OkStatus();
    }
    if (call.procedure == 0) return absl::OkStatus();  // NULL: no body
    uint32_t code = 0;
    if (call.procedure == protobuf::kStreamNextProcedure) {
      uint32_t kind = 0;
      RPCRDMA_DUMP_RETURN_IF_ERROR(in.ReadUint32("kind", &kind));
      if (kind == kStreamMessage) {
        j["item"] = "MESSAGE";
        return ReadPayloadHead(in, j);
      }
      if (kind != kStreamEnd) {
        return absl::InvalidArgumentError(
            absl::StrCat("stream item kind ", kind, " is neither 0 nor 1"));
      }
      j["item"] = "END";
      return ReadStatus(in, j, code);
    }
    if (FindStreamProcedure(call.procedure) != nullptr) {
      return ReadStatus(in, j, code);
    }
    if (method == nullptr) return absl::OkStatus();
    RPCRDMA_DUMP_RETURN_IF_ERROR(ReadStatus(in, j, code));
    if (code != 0) return absl::OkStatus();
    if (StreamingName(*method) == nullptr) return ReadPayloadHead(in, j);
    // The open of a stream (protobuf/README.md §6): its id in place of
    // the payload.
    uint64_t stream_id = 0;
    RPCRDMA_DUMP_RETURN_IF_ERROR(in.ReadUint64("stream_id", &stream_id));
    j["stream_id"] = stream_id;
    if (streams_.size() >= kMaxRemembered) streams_.clear();
    streams_[stream_id] = OpenStream{.service = call.service, .method = method};
    return absl::OkStatus();
  }();
  if (!decoded.ok()) j["error"] = std::string(decoded.message());
  return j;
}

#undef RPCRDMA_DUMP_RETURN_IF_ERROR

}  // namespace rpcrdma::dump
