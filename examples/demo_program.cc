#include "examples/demo_program.h"

#include "absl/strings/str_cat.h"

namespace rpcrdma::demo {

// XdrWriter writes into a buffer of fixed size: the message grows by the
// item's encoded size first, so the write cannot run out of room.
void PutUint32(std::vector<uint8_t>& out, uint32_t value) {
  const size_t at = out.size();
  out.resize(at + 4);
  XdrWriter writer(absl::MakeSpan(out).subspan(at));
  (void)writer.WriteUint32("unsigned", value);
}

void PutOpaque(std::vector<uint8_t>& out, absl::Span<const uint8_t> data) {
  const size_t at = out.size();
  out.resize(at + 4 + XdrRoundUp(data.size()));
  XdrWriter writer(absl::MakeSpan(out).subspan(at));
  (void)writer.WriteVarOpaque("opaque", data);
}

std::vector<uint8_t> CallHeader(uint32_t xid, uint32_t program,
                                uint32_t procedure) {
  rpcrdma::CallHeader header;
  header.xid = xid;
  header.program = program;
  header.version = kVersion;
  header.procedure = procedure;
  header.credential = AuthNone();
  header.verifier = AuthNone();
  std::vector<uint8_t> out;
  // Fails only for an auth body over 400 octets; AUTH_NONE has none.
  (void)EncodeCallHeader(header, out);
  return out;
}

std::vector<uint8_t> ReplyHeader(uint32_t xid, AcceptStat status) {
  rpcrdma::ReplyHeader header;
  header.xid = xid;
  header.verifier = AuthNone();
  header.accept_stat = status;
  std::vector<uint8_t> out;
  (void)EncodeReplyHeader(header, out);
  return out;
}

absl::StatusOr<Call> DecodeCall(absl::Span<const uint8_t> message) {
  absl::StatusOr<DecodedCall> call = DecodeCallHeader(message);
  if (!call.ok()) return call.status();
  return Call{call->header, XdrReader(message.subspan(call->body_offset))};
}

absl::StatusOr<XdrReader> DecodeResults(absl::Span<const uint8_t> reply,
                                        uint32_t xid) {
  absl::StatusOr<DecodedReply> decoded = DecodeReplyHeader(reply);
  if (!decoded.ok()) return decoded.status();
  if (decoded->header.xid != xid) {
    return absl::InvalidArgumentError(
        absl::StrCat("reply to XID ", decoded->header.xid, ", not to ", xid));
  }
  if (absl::Status s = ReplyStatus(decoded->header); !s.ok()) {
    return s;
  }
  return XdrReader(reply.subspan(decoded->body_offset));
}

absl::Status ReadSizeAndSeed(XdrReader& args, uint32_t* n, uint32_t* seed) {
  if (absl::Status s = args.ReadUint32("n", n); !s.ok()) return s;
  if (*n > kMaxBulk) {
    return absl::InvalidArgumentError(
        absl::StrCat("n ", *n, " exceeds ", kMaxBulk));
  }
  return args.ReadUint32("seed", seed);
}

absl::Status ReadSizeAndChecksum(XdrReader& results, uint32_t* size,
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
