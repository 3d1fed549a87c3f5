// The Placement test service (proto/rpcrdma_test/placement.proto): Echo
// answers its request, Fetch and FetchUnsized the reply the request
// describes, each value's octets given by BlobOctets.
#ifndef RPCRDMA_TESTS_PROTOBUF_PLACEMENT_SERVICE_H_
#define RPCRDMA_TESTS_PROTOBUF_PLACEMENT_SERVICE_H_

#include <cstddef>
#include <memory>
#include <string>

#include "rpcrdma/protobuf/channel.h"
#include "rpcrdma/protobuf/service.h"
#include "rpcrdma/server.h"
#include "rpcrdma_test/placement.rpcrdma.pb.h"

namespace rpcrdma::test {

// `n` octets, different for each `seed`.
std::string BlobOctets(size_t n, int seed);

// The reply a BlobRequest describes: `data` of seed 0, `extra` i of seed
// i + 1, `small` of seed 100.
rpcrdma_test::BlobReply BlobReplyFor(const rpcrdma_test::BlobRequest& request);

class PlacementService : public rpcrdma_test::rdma::Placement::Service {
 public:
  void Echo(protobuf::ServerContext* context,
            const rpcrdma_test::Placed* request, rpcrdma_test::Placed* response,
            protobuf::Completion done) override;
  void Fetch(protobuf::ServerContext* context,
             const rpcrdma_test::BlobRequest* request,
             rpcrdma_test::BlobReply* response,
             protobuf::Completion done) override;
  void FetchUnsized(protobuf::ServerContext* context,
                    const rpcrdma_test::BlobRequest* request,
                    rpcrdma_test::BlobReply* response,
                    protobuf::Completion done) override;
};

struct PlacementServer {
  PlacementService service;
  protobuf::ServiceSet services;
  std::unique_ptr<::rpcrdma::Server> server;
};
// Serving on `uri` ("unix" or "tcp", as TestUri); null when it could not.
std::unique_ptr<PlacementServer> StartPlacementServer(
    const std::string& scheme);
// Connected to it, accepting replies of up to 20 MiB in the reply chunk.
std::shared_ptr<protobuf::Channel> PlacementChannel(const PlacementServer& s);

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_PROTOBUF_PLACEMENT_SERVICE_H_
