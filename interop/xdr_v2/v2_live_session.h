// A version-two session between our Channel and Server in which every
// message draft-cel-nfsv4-rpcrdma-version-two-04 §6.2 defines travels live,
// captured by the Server's capture tap for the oracles (rpcgen's decoders,
// the Lua dissector) to read: RDMA2_CONNPROP each way; RDMA2_MSG and
// RDMA2_NOMSG in every chunk form, forward and backward; RDMA2_REQPROP and
// RDMA2_RESPROP (a receive buffer size granted, experimental properties
// granted and partly granted, both roles asking); RDMA2_UPDPROP (receive
// buffer sizes raised, an experimental property changed, both roles);
// RDMA2_OPTIONAL both ways; RDMA2_ERROR with RDMA2_ERR_INVALID_OPTION and
// RDMA2_ERR_SYSTEM. The same session runs over the soft fabric in the
// oracle tests and over rdma:// in the Soft-RoCE VM (api.verbs), whose
// capture the oracles then read too.
#ifndef RPCRDMA_INTEROP_XDR_V2_V2_LIVE_SESSION_H_
#define RPCRDMA_INTEROP_XDR_V2_V2_LIVE_SESSION_H_

#include <set>
#include <string>

#include "absl/status/status.h"

namespace rpcrdma::test {

// Runs the session: a Server listening on `listen_uri` (a port of 0 picks
// one) captures to `capture_path`, a Channel connects to it. Returns once
// both are gone, the capture complete; an error names the step that
// failed.
absl::Status RunV2LiveSession(const std::string& listen_uri,
                              const std::string& capture_path);

// What the capture of a session must hold, as rpcrdma-dump names them:
// every procedure of §6.2, and these error codes.
const std::set<std::string>& V2LiveSessionProcs();
const std::set<std::string>& V2LiveSessionErrors();

// RPCRDMA_V2_CAPTURE when set (a capture the VM test wrote, for the
// oracles to read), else "".
std::string V2CaptureFromEnvironment();

}  // namespace rpcrdma::test

#endif  // RPCRDMA_INTEROP_XDR_V2_V2_LIVE_SESSION_H_
