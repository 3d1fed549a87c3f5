// The ONC RPC program number a protobuf service is served under
// (protobuf/README.md, "The RPC program"): derived from the service's full
// name into the block RFC 5531 §13 (its table of program number blocks)
// leaves to the local administrator, 0x20000000 to 0x3fffffff, so that two
// services never need a registry to agree on one and no number IANA assigns
// (0x00000000 to 0x1fffffff) is taken. Both sides may override it (Stub's and
// Service's program argument) when two names collide or a site assigns its own.
#ifndef RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_PROGRAM_H_
#define RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_PROGRAM_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace rpcrdma::protobuf {

inline constexpr uint32_t kFirstLocalProgram = 0x20000000;
inline constexpr uint32_t kLastLocalProgram = 0x3fffffff;
// Every service is version 1 of its program; procedure 0 is the RFC 5531
// NULL procedure, method i (in .proto order) is procedure i + 1.
inline constexpr uint32_t kProgramVersion = 1;

// The stream control procedures (protobuf/README.md, "Streams"), the same in
// every program: a fixed number far beyond any method's, so that adding a
// method to a service (a compatible change in protobuf) moves none of them.
// NEXT asks an open stream for its next message, CANCEL ends one; SEND
// carries one client message of a client-streaming or bidirectional
// stream, HALF_CLOSE says how many the client sent.
inline constexpr uint32_t kStreamNextProcedure = 0x40000000;
inline constexpr uint32_t kStreamCancelProcedure = 0x40000001;
inline constexpr uint32_t kStreamSendProcedure = 0x40000002;
inline constexpr uint32_t kStreamHalfCloseProcedure = 0x40000003;
// A client keeps at most this many NEXT calls of one stream outstanding: a
// server refuses a NEXT asking further ahead of the messages it has sent,
// so that a stream holds at most this many unanswered calls. The same bounds
// a client's SEND calls: a server refuses a SEND this many or more beyond
// what its reader's buffer may take.
inline constexpr uint32_t kMaxStreamWindow = 16;

// FNV-1a (32 bits) of `service_full_name` ("pkg.Greeter"), folded into
// [kFirstLocalProgram, kLastLocalProgram].
uint32_t ProgramNumberFor(absl::string_view service_full_name);

}  // namespace rpcrdma::protobuf

#endif  // RPCRDMA_PROTOBUF_INCLUDE_RPCRDMA_PROTOBUF_PROGRAM_H_
