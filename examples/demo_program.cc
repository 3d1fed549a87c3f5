#include "examples/demo_program.h"

#include "absl/strings/str_cat.h"

namespace rpcrdma::demo {

// XdrWriter writes into a buffer of fixed size: the message grows by the
// item's encoded size first, so the write cannot run out of room.
void PutUint32(std::vector<uint8_t>& out, uint32_t value) {
  const size_t at = out.size();
  out.resize(at + 4);
  wire::XdrWriter writer(absl::MakeSpan(out).subspan(at));
  (void)writer.WriteUint32("unsigned", value);
}

void PutOpaque(std::vector<uint8_t>& out, absl::Span<const uint8_t> data) {
  const size_t at = out.size();
  out.resize(at + 4 + wire::XdrRoundUp(data.size()));
  wire::XdrWriter writer(absl::MakeSpan(out).subspan(at));
  (void)writer.WriteVarOpaque("opaque", data);
}

std::vector<uint8_t> CallHeader(uint32_t xid, uint32_t program,
                                uint32_t procedure) {
  oncrpc::CallHeader header;
  header.xid = xid;
  header.program = program;
  header.version = kVersion;
  header.procedure = procedure;
  header.credential = oncrpc::AuthNone();
  header.verifier = oncrpc::AuthNone();
  std::vector<uint8_t> out;
  // Fails only for an auth body over 400 octets; AUTH_NONE has none.
  (void)oncrpc::EncodeCallHeader(header, out);
  return out;
}

std::vector<uint8_t> ReplyHeader(uint32_t xid, oncrpc::AcceptStat status) {
  oncrpc::ReplyHeader header;
  header.xid = xid;
  header.verifier = oncrpc::AuthNone();
  header.accept_stat = status;
  std::vector<uint8_t> out;
  (void)oncrpc::EncodeReplyHeader(header, out);
  return out;
}

absl::StatusOr<Call> DecodeCall(absl::Span<const uint8_t> message) {
  absl::StatusOr<oncrpc::DecodedCall> call = oncrpc::DecodeCallHeader(message);
  if (!call.ok()) return call.status();
  return Call{call->header,
              wire::XdrReader(message.subspan(call->body_offset))};
}

absl::StatusOr<wire::XdrReader> DecodeResults(absl::Span<const uint8_t> reply,
                                              uint32_t xid) {
  absl::StatusOr<oncrpc::DecodedReply> decoded =
      oncrpc::DecodeReplyHeader(reply);
  if (!decoded.ok()) return decoded.status();
  if (decoded->header.xid != xid) {
    return absl::InvalidArgumentError(
        absl::StrCat("reply to XID ", decoded->header.xid, ", not to ", xid));
  }
  if (absl::Status s = oncrpc::ReplyStatus(decoded->header); !s.ok()) {
    return s;
  }
  return wire::XdrReader(reply.subspan(decoded->body_offset));
}

absl::Status ReadSizeAndSeed(wire::XdrReader& args, uint32_t* n,
                             uint32_t* seed) {
  if (absl::Status s = args.ReadUint32("n", n); !s.ok()) return s;
  if (*n > kMaxBulk) {
    return absl::InvalidArgumentError(
        absl::StrCat("n ", *n, " exceeds ", kMaxBulk));
  }
  return args.ReadUint32("seed", seed);
}

absl::Status ReadSizeAndChecksum(wire::XdrReader& results, uint32_t* size,
                                 uint32_t* checksum) {
  if (absl::Status s = results.ReadUint32("size", size); !s.ok()) return s;
  return results.ReadUint32("checksum", checksum);
}

std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    v[i] = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

uint32_t Checksum(absl::Span<const uint8_t> data) {
  uint32_t h = 2166136261u;
  for (uint8_t octet : data) h = (h ^ octet) * 16777619u;
  return h;
}

}  // namespace rpcrdma::demo
