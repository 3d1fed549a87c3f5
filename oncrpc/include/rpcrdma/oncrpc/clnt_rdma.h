/*
 * An ONC RPC client handle (libtirpc's CLIENT) over RPC-over-RDMA. The
 * stubs rpcgen writes (*_clnt.c) and clnt_call() work on it unchanged:
 *
 *   CLIENT *clnt = clnt_create(host, PROG, VERS, "tcp");       // before
 *   CLIENT *clnt = clnt_rdma_create("rdma://host:20049", PROG, VERS, NULL);
 *
 * Arguments: a variable-length opaque at or above the policy's argument
 * threshold is sent from the caller's memory without a copy, as a read
 * chunk when the call does not fit inline (xdr_rdma.h). Results: the
 * write chunks and the reply chunk the program's DDP policy names are
 * offered, so that results of any size come back (ddp_policy.h). A reply
 * larger than they are is answered RDMA_ERROR ERR_CHUNK (RFC 8166 §4.5.2)
 * and kept by the server (svc_rdma.h): clnt_call then sends the call once
 * more, with the same XID and within the same timeout, offering a reply
 * chunk (§3.5.4) as large as the transport configuration's largest
 * message (limits.max_call_size, 16 MiB and a page by default), which
 * fetches the kept reply without the procedure running again; and the
 * CLIENT remembers the size for the procedure, so that its later calls
 * offer it at once. A policy that offers enough saves the first call's
 * extra round trip. A second ERR_CHUNK fails the call (RPC_SYSTEMERROR,
 * rdma_oncrpc_error() saying what to raise). clnt_rdma_call_async and
 * backward calls (clnt_rdma_callback_create) make no second try.
 *
 * Unlike libtirpc's own handles, one CLIENT may be used by many threads at
 * once, each with calls in flight: every call is independent, and
 * clnt_geterr() reports the calling thread's last call.
 *
 * What the ops do:
 * - clnt_call: RPC_SUCCESS, or the error of the reply (RPC_PROGUNAVAIL,
 *   RPC_PROCUNAVAIL, RPC_PROGVERSMISMATCH, RPC_CANTDECODEARGS (the server's
 *   GARBAGE_ARGS), RPC_SYSTEMERROR, RPC_AUTHERROR, RPC_VERSMISMATCH), or of
 *   the transport: RPC_TIMEDOUT (the timeout passed), RPC_CANTRECV (the
 *   connection was lost before the reply), RPC_CANTSEND (no connection,
 *   or the call cannot be sent: re_errno EMSGSIZE when it is too large for
 *   the configuration), RPC_CANTENCODEARGS, RPC_CANTDECODERES (also a
 *   reply that breaks RFC 8166, or whose write-chunk data no result took),
 *   RPC_SYSTEMERROR with re_errno EPROTO for the peer's RDMA_ERROR.
 *   rdma_oncrpc_error() gives the transport's own words. A timeout of zero
 *   sends the call and returns RPC_TIMEDOUT at once without waiting, as
 *   libtirpc's message-passing mode does (the reply is discarded); the
 *   arguments are then copied, since the caller may free them.
 * - clnt_control: CLSET_TIMEOUT / CLGET_TIMEOUT (overrides the per-call
 *   timeout, as with clnt_vc), CLGET_XID (the XID of this thread's last
 *   call) / CLSET_XID (the XID of the next call; later calls count up
 *   from it), CLGET_VERS / CLSET_VERS,
 *   CLGET_PROG / CLSET_PROG, CLGET_SERVER_ADDR (a struct sockaddr) and
 *   CLGET_SVC_ADDR (a struct netbuf), CLSET_FD_CLOSE / CLSET_FD_NCLOSE
 *   (accepted, nothing to close). CLGET_FD is refused: an RDMA connection
 *   has no socket. Plus CLSET_RDMA_RETRY below.
 * - clnt_freeres, clnt_geterr, clnt_perror, clnt_sperror: as usual.
 * - clnt_destroy: fails calls still waiting (RPC_CANTRECV) and closes the
 *   connection; cl_auth is the caller's to destroy, as with clnt_vc.
 * AUTH_NONE (the default cl_auth) and AUTH_SYS (authunix_create_default)
 * are supported; under RPCSEC_GSS no DDP is used.
 */
#ifndef RPCRDMA_ONCRPC_CLNT_RDMA_H_
#define RPCRDMA_ONCRPC_CLNT_RDMA_H_

#include <rpc/rpc.h>

#include "rpcrdma/oncrpc/config.h"
#include "rpcrdma/oncrpc/ddp_policy.h"
#include "rpcrdma/oncrpc/xdr_rdma.h"

#ifdef __cplusplus
extern "C" {
#endif

/* clnt_control: *(int *)arg nonzero makes calls "at least once": a call
 * whose connection is lost is sent again, with the same XID, once the
 * CLIENT has reconnected, until its timeout (servers keep a duplicate
 * request cache keyed by XID for this, as NFS servers do). Zero (the
 * default) fails it with RPC_CANTRECV. */
#define CLSET_RDMA_RETRY 0x5244
#define CLGET_RDMA_RETRY 0x5245

/* Connects to `uri` (rdma://host:port, soft+tcp://host:port,
 * soft+unix:///path; see rpcrdma/channel.h) and returns a CLIENT for
 * program `prog` version `vers`, or NULL with rpc_createerr set
 * (clnt_pcreateerror prints it) and rdma_oncrpc_error() saying why:
 * RPC_UNKNOWNHOST for a URI that does not parse or resolve, RPC_SYSTEMERROR
 * (cf_error.re_errno ECONNREFUSED, ETIMEDOUT, EINVAL...) otherwise;
 * EPROTONOSUPPORT when the server refused the configuration's
 * RPC-over-RDMA version (RDMA_ERROR ERR_VERS).
 * `config` may be NULL (every default); it is copied. */
CLIENT *clnt_rdma_create(const char *uri, rpcprog_t prog, rpcvers_t vers,
                         const rdma_oncrpc_config *config);

/* clnt_call() without waiting for the reply, for a caller that keeps many
 * calls in flight from one thread (libtirpc has no such call; rpcgen's
 * stubs use clnt_call). The call is encoded and sent before this returns;
 * `done(stat, done_arg)` then runs exactly once with what clnt_call() would
 * have returned, once the reply is decoded into `results`: on the
 * connection's loop thread, or on the calling thread before this returns
 * when the call fails at once (it cannot be encoded or sent). In `done`,
 * rdma_oncrpc_error() says why a call failed; clnt_geterr() and CLGET_XID
 * do not report these calls. `done` must not block, nor destroy the
 * CLIENT, nor call clnt_call(); it may start calls with this function.
 * The arguments' bulk data (their DDP items, sent from the caller's
 * memory), the write chunks offered in caller memory and `results` must
 * stay valid until `done` has run. The timeout (CLSET_TIMEOUT overrides
 * it) must not be zero. FALSE, with nothing sent and `done` not run, for
 * a handle that is not an RPC-over-RDMA CLIENT, a zero timeout or a NULL
 * `done`. */
bool_t clnt_rdma_call_async(CLIENT *clnt, rpcproc_t proc, xdrproc_t xargs,
                            void *args, xdrproc_t xres, void *res,
                            struct timeval timeout,
                            void (*done)(enum clnt_stat stat, void *done_arg),
                            void *done_arg);

/* For a CLIENT made with rdma_oncrpc_config_set_backchannel: the SVCXPRT
 * that serves the calls its server makes on this connection (RFC 8167).
 * svc_reg(xprt, PROG, VERS, dispatch, NULL) and svc_run() (or
 * svc_rdma_run_threads) serve them as any SVCXPRT's calls. It belongs to
 * the CLIENT and goes with clnt_destroy. NULL for other handles. */
SVCXPRT *svc_rdma_backchannel(CLIENT *clnt);

#ifdef __cplusplus
}

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rpcrdma/channel.h"

namespace rpcrdma::oncrpc {

// clnt_rdma_create for C++, with the failure as a Status.
absl::StatusOr<CLIENT *> CreateClient(absl::string_view uri, rpcprog_t prog,
                                      rpcvers_t vers,
                                      const AdapterConfig &config = {});

// The Channel under a CLIENT of clnt_rdma_create, for its counters,
// metrics and connection_info(); null for other handles (and for those of
// clnt_rdma_callback_create). It belongs to the CLIENT.
Channel *ChannelOf(CLIENT *clnt);

}  // namespace rpcrdma::oncrpc
#endif

#endif /* RPCRDMA_ONCRPC_CLNT_RDMA_H_ */
