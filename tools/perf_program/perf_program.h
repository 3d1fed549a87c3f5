// The RPC program that rpcrdma-ping and rpcrdma-perf speak: a small ONC RPC
// program (RFC 5531) whose server is `rpcrdma-perf server`. It is written
// against the public API only (its XDR, RFC 4506, with <rpcrdma/xdr.h>), as
// any user's program would be.
//
// Program kProgram (0x20008166, in the ONC RPC user-defined range
// 0x20000000-0x3fffffff, RFC 5531 §7.3), version 1, AUTH_NONE:
//   NULL (0)  void -> void
//   ECHO (1)  opaque data<> (DDP-eligible) -> opaque data<> (DDP-eligible)
// ECHO's argument travels in a read chunk and its result in a write chunk
// when they do not fit inline (RFC 8166 §3.4.5, §3.4.7).
#ifndef RPCRDMA_TOOLS_PERF_PROGRAM_PERF_PROGRAM_H_
#define RPCRDMA_TOOLS_PERF_PROGRAM_PERF_PROGRAM_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rpcrdma/responder.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/types.h"

namespace rpcrdma::perf {

constexpr uint32_t kProgram = 0x20008166;
constexpr uint32_t kVersion = 1;
constexpr uint32_t kNullProcedure = 0;
constexpr uint32_t kEchoProcedure = 1;

// The largest reduced reply either procedure produces: the reply header
// plus ECHO's length word (its octets go in the write chunk).
constexpr uint32_t kMaxReducedReply = 64;

// RFC 5531 accept_stat values (rpc_msg.h), which this program answers with.
using ::rpcrdma::AcceptStat;

// A decoded call header and the arguments after it.
struct DecodedCall {
  uint32_t xid = 0;
  uint32_t program = 0;
  uint32_t version = 0;
  uint32_t procedure = 0;
  absl::Span<const uint8_t> arguments;
};

// Decodes an RFC 5531 call message; INVALID_ARGUMENT naming what is wrong.
absl::StatusOr<DecodedCall> DecodeCall(absl::Span<const uint8_t> message);

// An accepted reply header for `xid` (verifier AUTH_NONE); with kSuccess
// the results follow, with kProgMismatch the supported range (1, 1).
std::vector<uint8_t> ReplyHeader(uint32_t xid, AcceptStat status);

// Serves one call of the program: the handler of `rpcrdma-perf server`
// (runs on the Server's loop thread and answers at once).
void ServeCall(IncomingCall call, Responder responder);

// A NULL call with `xid`.
CallRequest NullCall(uint32_t xid);
// An ECHO call with `xid`: `argument` as a DDP-eligible item, the result
// into `result` (at least argument.size() octets) through a write chunk.
// Both spans must stay valid until the call completes.
CallRequest EchoCall(uint32_t xid, absl::Span<const uint8_t> argument,
                     absl::Span<uint8_t> result);

// Checks the reply to the NULL call `xid`: INVALID_ARGUMENT for a
// malformed reply, FAILED_PRECONDITION naming the server's refusal (a
// server that does not serve kProgram answers PROG_UNAVAIL).
absl::Status CheckNullReply(const Reply& reply, uint32_t xid);
// The same for ECHO: also DATA_LOSS unless exactly `expected_size` octets
// came back in the write chunk.
absl::Status CheckEchoReply(const Reply& reply, uint32_t xid,
                            size_t expected_size);

}  // namespace rpcrdma::perf

#endif  // RPCRDMA_TOOLS_PERF_PROGRAM_PERF_PROGRAM_H_
