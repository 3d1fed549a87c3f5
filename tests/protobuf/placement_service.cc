#include "tests/protobuf/placement_service.h"

#include <utility>

#include "tests/protobuf/echo_service.h"

namespace rpcrdma::test {

using protobuf::Completion;
using protobuf::ServerContext;

std::string BlobOctets(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) {
    s[i] = static_cast<char>(((i * 131) >> 3) + static_cast<size_t>(seed) * 7);
  }
  return s;
}

rpcrdma_test::BlobReply BlobReplyFor(const rpcrdma_test::BlobRequest& request) {
  rpcrdma_test::BlobReply reply;
  reply.set_small(BlobOctets(request.small_size(), 100));
  reply.set_data(BlobOctets(request.size(), 0));
  for (uint32_t i = 0; i < request.extras(); ++i) {
    reply.add_extra(BlobOctets(request.extra_size(), static_cast<int>(i) + 1));
  }
  reply.set_note("the rest of the reply");
  return reply;
}

void PlacementService::Echo(ServerContext* /*context*/,
                            const rpcrdma_test::Placed* request,
                            rpcrdma_test::Placed* response, Completion done) {
  *response = *request;
  done(protobuf::Status());
}

void PlacementService::Fetch(ServerContext* /*context*/,
                             const rpcrdma_test::BlobRequest* request,
                             rpcrdma_test::BlobReply* response,
                             Completion done) {
  *response = BlobReplyFor(*request);
  done(protobuf::Status());
}

void PlacementService::FetchUnsized(ServerContext* context,
                                    const rpcrdma_test::BlobRequest* request,
                                    rpcrdma_test::BlobReply* response,
                                    Completion done) {
  Fetch(context, request, response, std::move(done));
}

std::unique_ptr<PlacementServer> StartPlacementServer(
    const std::string& scheme) {
  auto s = std::make_unique<PlacementServer>();
  if (!s->services.Register(&s->service).ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<::rpcrdma::Server>> server =
      ::rpcrdma::Server::Create(TestUri(scheme), {}, s->services.Handler());
  if (!server.ok()) return nullptr;
  s->server = *std::move(server);
  return s;
}

std::shared_ptr<protobuf::Channel> PlacementChannel(const PlacementServer& s) {
  absl::StatusOr<std::shared_ptr<protobuf::Channel>> channel =
      protobuf::Channel::Create(s.server->uri(), TestChannelOptions());
  return channel.ok() ? *channel : nullptr;
}

}  // namespace rpcrdma::test
