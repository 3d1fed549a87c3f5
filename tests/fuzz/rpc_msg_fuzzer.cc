// Fuzzes the RFC 5531 call and reply header decoders, and AUTH_SYS bodies,
// with hostile input. Whatever decodes must encode again (every decoded
// length is within its RFC bound), and decoding that encoding must give the
// same header and the same offset of the body.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "rpcrdma/rpc_msg.h"

namespace {

using namespace rpcrdma;  // NOLINT(build/namespaces): fuzzer only

void CheckCall(absl::Span<const uint8_t> input) {
  absl::StatusOr<DecodedCall> call = DecodeCallHeader(input);
  if (!call.ok()) return;
  if (call->body_offset > input.size()) __builtin_trap();
  std::vector<uint8_t> again;
  if (!EncodeCallHeader(call->header, again).ok()) __builtin_trap();
  if (again.size() != call->body_offset) __builtin_trap();
  absl::StatusOr<DecodedCall> twice = DecodeCallHeader(again);
  if (!twice.ok() || !(twice->header == call->header)) __builtin_trap();
  if (call->header.credential.flavor ==
      static_cast<uint32_t>(AuthFlavor::kSys)) {
    absl::StatusOr<AuthSysParams> sys = DecodeAuthSys(call->header.credential);
    if (!sys.ok()) return;
    absl::StatusOr<OpaqueAuth> encoded = AuthSys(*sys);
    if (!encoded.ok()) __builtin_trap();
    absl::StatusOr<AuthSysParams> back = DecodeAuthSys(*encoded);
    if (!back.ok() || !(*back == *sys)) __builtin_trap();
  }
}

void CheckReply(absl::Span<const uint8_t> input) {
  absl::StatusOr<DecodedReply> reply = DecodeReplyHeader(input);
  if (!reply.ok()) return;
  if (reply->body_offset > input.size()) __builtin_trap();
  std::vector<uint8_t> again;
  if (!EncodeReplyHeader(reply->header, again).ok()) __builtin_trap();
  if (again.size() != reply->body_offset) __builtin_trap();
  absl::StatusOr<DecodedReply> twice = DecodeReplyHeader(again);
  if (!twice.ok() || !(twice->header == reply->header)) __builtin_trap();
  // Every decoded reply has a status, OK only for SUCCESS.
  const bool success = reply->header.reply_stat == ReplyStat::kAccepted &&
                       reply->header.accept_stat == AcceptStat::kSuccess;
  if (ReplyStatus(reply->header).ok() != success) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::Span<const uint8_t> input(data, size);
  CheckCall(input);
  CheckReply(input);
  return 0;
}
