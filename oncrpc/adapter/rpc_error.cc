#include "oncrpc/adapter/rpc_error.h"

#include <cerrno>

namespace rpcrdma::oncrpc {
namespace {

rpc_err WithErrno(clnt_stat stat, int error) {
  rpc_err e{};
  e.re_status = stat;
  e.re_errno = error;
  return e;
}

}  // namespace

rpc_err RpcErrorOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return WithErrno(RPC_SUCCESS, 0);
    case absl::StatusCode::kDeadlineExceeded:
      return WithErrno(RPC_TIMEDOUT, 0);
    // The connection was lost before the reply (channel.h).
    case absl::StatusCode::kUnavailable:
      return WithErrno(RPC_CANTRECV, ECONNRESET);
    // A backward call to a connection that is gone (server.h).
    case absl::StatusCode::kNotFound:
      return WithErrno(RPC_CANTSEND, ENOTCONN);
    case absl::StatusCode::kCancelled:
      return WithErrno(RPC_INTR, EINTR);
    // The call's transport header, or its chunks, exceed the limits.
    case absl::StatusCode::kResourceExhausted:
      return WithErrno(RPC_CANTSEND, EMSGSIZE);
    case absl::StatusCode::kAlreadyExists:
      return WithErrno(RPC_CANTSEND, EEXIST);
    // A reply that breaks RFC 8166.
    case absl::StatusCode::kDataLoss:
      return WithErrno(RPC_CANTDECODERES, EBADMSG);
    // The peer's RDMA_ERROR: ERR_CHUNK (INVALID_ARGUMENT), ERR_VERS and a
    // disabled backchannel (FAILED_PRECONDITION).
    case absl::StatusCode::kInvalidArgument:
      return WithErrno(RPC_SYSTEMERROR, EPROTO);
    case absl::StatusCode::kFailedPrecondition:
      return WithErrno(RPC_SYSTEMERROR, EPROTONOSUPPORT);
    default:
      return WithErrno(RPC_SYSTEMERROR, EIO);
  }
}

}  // namespace rpcrdma::oncrpc
