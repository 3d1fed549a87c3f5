// svc_rdma_create and the rest of svc_rdma.h: the listening SVCXPRT, its
// dispatch threads, and CLIENTs for calls back to a connection's client
// (RFC 8167).
#include "rpcrdma/oncrpc/svc_rdma.h"

#include <cerrno>
#include <future>
#include <memory>
#include <utility>

#include "oncrpc/adapter/last_error.h"
#include "oncrpc/adapter/rdma_client.h"
#include "oncrpc/adapter/rdma_transport.h"

namespace rpcrdma::oncrpc {
namespace {

// Backward calls on one connection of a Server.
class BackwardPath final : public CallPath {
 public:
  BackwardPath(Server& server, uint64_t connection,
               std::optional<SocketAddress> client)
      : server_(server), connection_(connection), client_(client) {}

  absl::StatusOr<Reply> Call(CallRequest request) override {
    return server_.Call(ConnectionId(connection_), std::move(request)).get();
  }
  void CallAsync(CallRequest request,
                 std::function<void(absl::StatusOr<Reply>)> done) override {
    server_.Call(ConnectionId(connection_), std::move(request),
                 std::move(done));
  }
  uint32_t max_inline_reply() const override {
    absl::StatusOr<ConnectionInfo> info =
        server_.connection_info(ConnectionId(connection_));
    return info.ok() ? info->max_inline_reply : 0;
  }
  std::optional<SocketAddress> server_address() const override {
    return client_;
  }

 private:
  Server& server_;
  const uint64_t connection_;
  const std::optional<SocketAddress> client_;
};

}  // namespace

absl::StatusOr<SVCXPRT*> CreateServerTransport(absl::string_view uri,
                                               const AdapterConfig& config) {
  absl::StatusOr<RdmaTransport*> transport = RdmaTransport::Listen(uri, config);
  if (!transport.ok()) return transport.status();
  return (*transport)->xprt();
}

Server* ServerOf(SVCXPRT* xprt) {
  RdmaTransport* transport = RdmaTransport::Of(xprt);
  return transport != nullptr ? transport->server() : nullptr;
}

}  // namespace rpcrdma::oncrpc

using rpcrdma::oncrpc::RdmaTransport;

extern "C" {

SVCXPRT* svc_rdma_create(const char* uri, const rdma_oncrpc_config* config) {
  if (uri == nullptr) {
    rpcrdma::oncrpc::SetLastError("svc_rdma_create: uri is NULL");
    return nullptr;
  }
  absl::StatusOr<SVCXPRT*> xprt = rpcrdma::oncrpc::CreateServerTransport(
      uri,
      config != nullptr ? config->config : rpcrdma::oncrpc::AdapterConfig{});
  if (!xprt.ok()) {
    rpcrdma::oncrpc::SetLastError(xprt.status());
    return nullptr;
  }
  return *xprt;
}

const char* svc_rdma_uri(const SVCXPRT* xprt) {
  RdmaTransport* transport = RdmaTransport::Of(xprt);
  return transport != nullptr ? transport->uri().c_str() : nullptr;
}

bool_t svc_rdma_run_threads(SVCXPRT* xprt, u_int threads) {
  RdmaTransport* transport = RdmaTransport::Of(xprt);
  return transport != nullptr && transport->RunThreads(threads) ? TRUE : FALSE;
}

bool_t svc_rdma_enablecache(SVCXPRT* xprt, u_int entries, u_long max_bytes) {
  RdmaTransport* transport = RdmaTransport::Of(xprt);
  return transport != nullptr &&
                 transport->EnableCache(
                     entries, max_bytes != 0 ? max_bytes : u_long{64} << 20)
             ? TRUE
             : FALSE;
}

bool_t svc_rdma_cache_only(SVCXPRT* xprt, rpcprog_t prog, rpcvers_t vers,
                           const rpcproc_t* procedures, u_int count) {
  RdmaTransport* transport = RdmaTransport::Of(xprt);
  if (transport == nullptr || transport->cache() == nullptr ||
      (procedures == nullptr && count != 0)) {
    return FALSE;
  }
  transport->cache()->Only(prog, vers, absl::MakeConstSpan(procedures, count));
  return TRUE;
}

u_long svc_rdma_cache_hits(const SVCXPRT* xprt) {
  RdmaTransport* transport = RdmaTransport::Of(xprt);
  return transport != nullptr && transport->cache() != nullptr
             ? transport->cache()->hits()
             : 0;
}

uint64_t svc_rdma_connection(const struct svc_req* rqstp) {
  return RdmaTransport::ConnectionOf(rqstp);
}

CLIENT* clnt_rdma_callback_create(SVCXPRT* xprt, uint64_t connection,
                                  rpcprog_t prog, rpcvers_t vers) {
  RdmaTransport* transport = RdmaTransport::Of(xprt);
  if (transport == nullptr || transport->server() == nullptr) {
    rpcrdma::oncrpc::SetLastError(
        "clnt_rdma_callback_create: not a listening RPC-over-RDMA SVCXPRT");
    rpc_createerr.cf_stat = RPC_UNKNOWNPROTO;
    rpc_createerr.cf_error = {};
    rpc_createerr.cf_error.re_status = RPC_UNKNOWNPROTO;
    return nullptr;
  }
  auto path = std::make_unique<rpcrdma::oncrpc::BackwardPath>(
      *transport->server(), connection, transport->PeerOf(connection));
  auto* client = new rpcrdma::oncrpc::RdmaClient(std::move(path), prog, vers,
                                                 transport->config());
  return client->handle();
}

}  // extern "C"
