/*
 * An ONC RPC server transport (libtirpc's SVCXPRT) over RPC-over-RDMA.
 * The dispatcher rpcgen writes (*_svc.c) works on it unchanged:
 *
 *   SVCXPRT *xprt = svc_vc_create(fd, 0, 0);                    // before
 *   SVCXPRT *xprt = svc_rdma_create("rdma://0.0.0.0:20049", NULL);
 *   svc_reg(xprt, PROG, VERS, prog_1, NULL);  // NULL netconfig: no rpcbind
 *   svc_run();
 *
 * One SVCXPRT listens on `uri` and serves every connection made to it.
 * It is registered with libtirpc (xprt_register) under a descriptor that
 * is readable while calls wait, so svc_run(), svc_getreq_poll() and a
 * poll loop of one's own serve it beside libtirpc's own transports (the
 * same program may be served over TCP by svc_vc_create at the same time).
 * Or svc_rdma_run_threads() dispatches its calls on threads of its own.
 * Unless the configuration names a Runtime, a second descriptor is
 * registered beside it: when svc_run (or svc_getreq_poll) finds it
 * readable, that thread reads the connections itself and dispatches what
 * it finds, as svc_vc reads its sockets, so that no other thread is woken
 * on a call's way in or its reply's way out (until then, and for
 * svc_rdma_run_threads, a thread of the adapter reads them).
 *
 * What the ops do:
 * - svc_getargs: decodes the arguments from the complete call (read
 *   chunks already in place); svc_freeargs frees them.
 * - svc_sendreply: a result opaque at or above the policy's result
 *   threshold (or marked, xdr_rdma.h) goes into the next write chunk the
 *   call offered, straight from the result's memory; the rest inline, or
 *   through the call's reply chunk when too long. It returns once the
 *   transport no longer reads the result's memory, so rpcgen's dispatcher
 *   may free it. A reply the offered chunks cannot carry is answered with
 *   RDMA_ERROR ERR_CHUNK (RFC 8166 §4.5.2), and a copy of it is kept
 *   for the client's second try (clnt_rdma.h): the same call (XID,
 *   program, version, procedure and arguments, as the duplicate request
 *   cache below tells calls apart) on the same connection, offering
 *   enough room, gets it without being dispatched. At most 64 replies,
 *   64 MiB between them, each for at most 30 seconds, are kept per
 *   SVCXPRT (the oldest go first; a connection that closes takes its own
 *   along).
 * - svcerr_noproc, svcerr_decode, svcerr_auth, svcerr_weakauth,
 *   svcerr_systemerr, svcerr_progvers, svcerr_noprog: as usual; a call
 *   whose RPC header does not decode is answered by the adapter (RPC
 *   version 2 mismatch, or GARBAGE_ARGS).
 * - svc_getrpccaller: the client of the call being dispatched (a struct
 *   sockaddr_in/_in6 for rdma:// and soft+tcp://, sockaddr_un for
 *   soft+unix://, which has no client name).
 * - svc_destroy: unregisters the descriptor, stops the threads of
 *   svc_rdma_run_threads, closes every connection.
 * A call the dispatcher does not answer (rpcgen: a procedure returning
 * NULL) is answered SYSTEM_ERR by the transport (RFC 5531 §9), and so are
 * its duplicates waiting in the reply cache: over RDMA only a reply
 * returns the call's credit (RFC 8166 §3.3.1). A client that does not
 * wait for a reply (a zero timeout) discards it.
 * AUTH_NONE and AUTH_SYS are authenticated by libtirpc as usual.
 */
#ifndef RPCRDMA_ONCRPC_SVC_RDMA_H_
#define RPCRDMA_ONCRPC_SVC_RDMA_H_

#include <rpc/rpc.h>
#include <stdint.h>

#include "rpcrdma/oncrpc/config.h"
#include "rpcrdma/oncrpc/ddp_policy.h"
#include "rpcrdma/oncrpc/xdr_rdma.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Listens on `uri` (a port of 0 picks one: xp_port, or svc_rdma_uri).
 * NULL on failure, with rdma_oncrpc_error() saying why. `config` may be
 * NULL (every default); it is copied. */
SVCXPRT *svc_rdma_create(const char *uri, const rdma_oncrpc_config *config);

/* The URI clients connect to (the port chosen when it was 0). The string
 * belongs to the SVCXPRT. */
const char *svc_rdma_uri(const SVCXPRT *xprt);

/* Dispatches the SVCXPRT's calls on `threads` threads of its own, up to
 * `threads` at once (calls of one connection too), instead of svc_run():
 * each thread runs libtirpc's svc_getreq_common for one call at a time, so
 * programs registered with svc_reg run there. The descriptor svc_run polls
 * then stays quiet. Once per SVCXPRT (FALSE otherwise, or for 0 or more
 * than 1024 threads); svc_destroy stops them. */
bool_t svc_rdma_run_threads(SVCXPRT *xprt, u_int threads);

/* A duplicate request cache for the SVCXPRT's calls, as libtirpc's
 * svc_dg_enablecache gives UDP transports: the replies of the last
 * `entries` calls answered (at most `max_bytes` octets of them; 0: 64 MiB)
 * are kept by the call's identity (XID, program, version, procedure, and
 * its arguments' length and checksum over all of their octets), and a call
 * a client sends again with the same XID (RFC 5531 §9) is answered with
 * the kept reply instead of being executed twice; one that arrives while
 * the first is still executing waits for its reply. While the connection a
 * reply was made for is open, only that connection's calls get it: two
 * clients never get each other's replies, even from one address. Once it
 * has closed, the same call from the same address (any port, as a client
 * that reconnects has) gets it: an RPC-over-RDMA client sends its calls
 * again after a reconnect. Once per SVCXPRT, before calls are dispatched:
 * FALSE otherwise or for 0 entries. */
bool_t svc_rdma_enablecache(SVCXPRT *xprt, u_int entries, u_long max_bytes);
/* Keeps only the replies of these procedures of `prog` version `vers`
 * (the non-idempotent ones, as NFS servers do); by default every reply is
 * kept. May be called for several programs. FALSE without a cache. */
bool_t svc_rdma_cache_only(SVCXPRT *xprt, rpcprog_t prog, rpcvers_t vers,
                           const rpcproc_t *procedures, u_int count);
/* Calls answered from the cache so far (0 without a cache). */
u_long svc_rdma_cache_hits(const SVCXPRT *xprt);

/* The connection of the call `rqstp` is (being) served for: pass it to
 * clnt_rdma_callback_create to call the client back. 0 when rqstp is not
 * a call of an RPC-over-RDMA SVCXPRT. */
uint64_t svc_rdma_connection(const struct svc_req *rqstp);

/* A CLIENT for program `prog` version `vers` served by the client on
 * `connection` of `xprt` (RFC 8167 backward-direction calls over the same
 * connection; the client must serve a backchannel, see
 * rdma_oncrpc_config_set_backchannel). It may be kept after the call that
 * gave the connection is answered, and used from any thread, as long as
 * `xprt` lives: once the connection is gone its calls fail with
 * RPC_CANTSEND. Destroy it with clnt_destroy. NULL with rpc_createerr set
 * when xprt is not an RPC-over-RDMA SVCXPRT. */
CLIENT *clnt_rdma_callback_create(SVCXPRT *xprt, uint64_t connection,
                                  rpcprog_t prog, rpcvers_t vers);

#ifdef __cplusplus
}

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rpcrdma/server.h"

namespace rpcrdma::oncrpc {

// svc_rdma_create for C++, with the failure as a Status.
absl::StatusOr<SVCXPRT *> CreateServerTransport(
    absl::string_view uri, const AdapterConfig &config = {});

// The Server under an SVCXPRT of svc_rdma_create, for its counters,
// metrics and connections; null for other transports. It belongs to the
// SVCXPRT.
Server *ServerOf(SVCXPRT *xprt);

}  // namespace rpcrdma::oncrpc
#endif

#endif /* RPCRDMA_ONCRPC_SVC_RDMA_H_ */
