// clnt_rdma_create and the CLIENTs of clnt_rdma.h: forward calls through a
// Channel, and the SVCXPRT of a CLIENT's backchannel.
#include "rpcrdma/oncrpc/clnt_rdma.h"

#include <cerrno>
#include <memory>
#include <utility>

#include "oncrpc/adapter/last_error.h"
#include "oncrpc/adapter/rdma_client.h"
#include "oncrpc/adapter/rdma_transport.h"
#include "rpcrdma/channel.h"

namespace rpcrdma::oncrpc {
namespace {

class ChannelPath final : public CallPath {
 public:
  ChannelPath(std::unique_ptr<Channel> channel,
              std::optional<SocketAddress> server)
      : channel_(std::move(channel)), server_(server) {}

  absl::StatusOr<Reply> Call(CallRequest request) override {
    return channel_->BlockingCall(std::move(request));
  }
  void CallAsync(CallRequest request,
                 std::function<void(absl::StatusOr<Reply>)> done) override {
    channel_->Call(std::move(request), std::move(done));
  }
  uint32_t max_inline_reply() const override {
    return channel_->connection_info().max_inline_reply;
  }
  std::optional<SocketAddress> server_address() const override {
    return server_;
  }
  Channel* channel() override { return channel_.get(); }

 private:
  std::unique_ptr<Channel> channel_;
  const std::optional<SocketAddress> server_;
};

// rpc_createerr as clnt_create sets it.
void SetCreateError(const absl::Status& status) {
  rpc_createerr.cf_error = {};
  if (status.code() == absl::StatusCode::kInvalidArgument) {
    rpc_createerr.cf_stat = RPC_UNKNOWNHOST;
    rpc_createerr.cf_error.re_errno = EINVAL;
  } else {
    // FAILED_PRECONDITION: the server refused our RPC-over-RDMA version
    // (RDMA_ERROR ERR_VERS, RFC 8166 §4.5.1), as a call fails on ERR_VERS
    // (rpc_error.cc); it is there, so not ECONNREFUSED.
    rpc_createerr.cf_stat = RPC_SYSTEMERROR;
    rpc_createerr.cf_error.re_errno =
        status.code() == absl::StatusCode::kDeadlineExceeded    ? ETIMEDOUT
        : status.code() == absl::StatusCode::kResourceExhausted ? ENOMEM
        : status.code() == absl::StatusCode::kFailedPrecondition
            ? EPROTONOSUPPORT
        // NOT_FOUND: this host has no RDMA device; nothing was refused.
        : status.code() == absl::StatusCode::kNotFound ? ENODEV
                                                       : ECONNREFUSED;
  }
  rpc_createerr.cf_error.re_status = rpc_createerr.cf_stat;
}

}  // namespace

absl::StatusOr<CLIENT*> CreateClient(absl::string_view uri, rpcprog_t prog,
                                     rpcvers_t vers,
                                     const AdapterConfig& config) {
  std::unique_ptr<RdmaTransport> backchannel;
  ChannelOptions options;
  options.runtime = config.runtime;
  if (config.backchannel) {
    absl::StatusOr<std::unique_ptr<RdmaTransport>> transport =
        RdmaTransport::ForBackchannel(config, uri);
    if (!transport.ok()) return transport.status();
    backchannel = *std::move(transport);
    options.backward_handler = backchannel->Handler();
  }
  absl::StatusOr<std::unique_ptr<Channel>> channel =
      Channel::Create(uri, config.transport, std::move(options));
  if (!channel.ok()) return channel.status();
  absl::StatusOr<SocketAddress> server = ResolveUriAddress(uri);
  auto path = std::make_unique<ChannelPath>(
      *std::move(channel),
      server.ok() ? std::optional<SocketAddress>(*server) : std::nullopt);
  auto* client = new RdmaClient(std::move(path), prog, vers, config,
                                std::move(backchannel));
  return client->handle();
}

Channel* ChannelOf(CLIENT* clnt) {
  RdmaClient* client = RdmaClient::Of(clnt);
  return client != nullptr ? client->path().channel() : nullptr;
}

}  // namespace rpcrdma::oncrpc

extern "C" {

CLIENT* clnt_rdma_create(const char* uri, rpcprog_t prog, rpcvers_t vers,
                         const rdma_oncrpc_config* config) {
  using rpcrdma::oncrpc::AdapterConfig;
  if (uri == nullptr) {
    const absl::Status null_uri =
        absl::InvalidArgumentError("clnt_rdma_create: uri is NULL");
    rpcrdma::oncrpc::SetLastError(null_uri);
    rpcrdma::oncrpc::SetCreateError(null_uri);
    return nullptr;
  }
  absl::StatusOr<CLIENT*> client = rpcrdma::oncrpc::CreateClient(
      uri, prog, vers, config != nullptr ? config->config : AdapterConfig{});
  if (!client.ok()) {
    rpcrdma::oncrpc::SetLastError(client.status());
    rpcrdma::oncrpc::SetCreateError(client.status());
    return nullptr;
  }
  return *client;
}

bool_t clnt_rdma_call_async(CLIENT* clnt, rpcproc_t proc, xdrproc_t xargs,
                            void* args, xdrproc_t xres, void* res,
                            struct timeval timeout,
                            void (*done)(enum clnt_stat, void*),
                            void* done_arg) {
  rpcrdma::oncrpc::RdmaClient* client = rpcrdma::oncrpc::RdmaClient::Of(clnt);
  if (client == nullptr) {
    rpcrdma::oncrpc::SetLastError(
        "clnt_rdma_call_async: not an RPC-over-RDMA CLIENT");
    return FALSE;
  }
  return client->CallAsync(proc, xargs, args, xres, res, timeout, done,
                           done_arg);
}

SVCXPRT* svc_rdma_backchannel(CLIENT* clnt) {
  rpcrdma::oncrpc::RdmaClient* client = rpcrdma::oncrpc::RdmaClient::Of(clnt);
  if (client == nullptr || client->backchannel() == nullptr) return nullptr;
  return client->backchannel()->xprt();
}

}  // extern "C"
