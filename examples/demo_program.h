// The demo's RPC programs, encoded and decoded with the installed codecs:
// XDR (RFC 4506, <rpcrdma/xdr.h>) for arguments and results, and the ONC
// RPC message header (RFC 5531, <rpcrdma/rpc_msg.h>).
//
// Program kProgram, version 1 (the server):
//   PING   (0)  void -> void
//   STORE  (1)  opaque data<> (DDP-eligible) -> unsigned size, checksum
//   LOAD   (2)  unsigned n, seed -> opaque data<n> (DDP-eligible)
//   LIST   (3)  unsigned n, seed -> opaque data<n> (inline)
//   CALL_ME_BACK (4) unsigned n, seed -> unsigned size, checksum: before
//               answering, the server calls CB_CHECK with opaque<n>
// Program kCallbackProgram, version 1 (the client, RFC 8167 backchannel):
//   CB_CHECK (1) opaque data<> (DDP-eligible) -> unsigned size, checksum
#ifndef RPCRDMA_EXAMPLES_DEMO_PROGRAM_H_
#define RPCRDMA_EXAMPLES_DEMO_PROGRAM_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::demo {

constexpr uint32_t kProgram = 0x20000099;
constexpr uint32_t kCallbackProgram = 0x40000099;
constexpr uint32_t kVersion = 1;

constexpr uint32_t kPing = 0;
constexpr uint32_t kStore = 1;
constexpr uint32_t kLoad = 2;
constexpr uint32_t kList = 3;
constexpr uint32_t kCallMeBack = 4;
constexpr uint32_t kCbCheck = 1;

// The largest opaque a procedure takes or returns: the 1 MiB a server
// accepts per call (limits.max_call_size's default).
constexpr uint32_t kMaxBulk = 1 << 20;

// Append one XDR item to a message being built.
void PutUint32(std::vector<uint8_t>& out, uint32_t value);
void PutOpaque(std::vector<uint8_t>& out, absl::Span<const uint8_t> data);

// An RFC 5531 call header with AUTH_NONE, version kVersion.
std::vector<uint8_t> CallHeader(uint32_t xid, uint32_t program,
                                uint32_t procedure);
// An accepted reply header; with SUCCESS the results follow.
std::vector<uint8_t> ReplyHeader(uint32_t xid,
                                 AcceptStat status = AcceptStat::kSuccess);

// A call's header and a reader over its arguments.
struct Call {
  rpcrdma::CallHeader header;
  XdrReader args;
};
absl::StatusOr<Call> DecodeCall(absl::Span<const uint8_t> message);

// The results of the reply to `xid`: INVALID_ARGUMENT when it answers
// another XID, the peer's refusal (rpcrdma::ReplyStatus) when it is not
// an accepted SUCCESS.
absl::StatusOr<XdrReader> DecodeResults(absl::Span<const uint8_t> reply,
                                        uint32_t xid);

// Arguments "unsigned n, seed" with n at most kMaxBulk.
absl::Status ReadSizeAndSeed(XdrReader& args, uint32_t* n, uint32_t* seed);
// Results "unsigned size, checksum".
absl::Status ReadSizeAndChecksum(XdrReader& results, uint32_t* size,
                                 uint32_t* checksum);

// `n` octets that depend on `seed`, and an FNV-1a checksum.
std::vector<uint8_t> Pattern(size_t n, uint32_t seed);
uint32_t Checksum(absl::Span<const uint8_t> data);

}  // namespace rpcrdma::demo

#endif  // RPCRDMA_EXAMPLES_DEMO_PROGRAM_H_
