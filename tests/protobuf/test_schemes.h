// The transports the protobuf adapter's tests run over: the soft fabric's
// two natively, or rdma:// in protobuf_verbs_test (the same tests built
// with RPCRDMA_PROTOBUF_TEST_VERBS), which runs in the Soft-RoCE VM as
// protobuf.verbs. TestUri (echo_service.h) turns each into a URI.
#ifndef RPCRDMA_TESTS_PROTOBUF_TEST_SCHEMES_H_
#define RPCRDMA_TESTS_PROTOBUF_TEST_SCHEMES_H_

#include <string>
#include <vector>

namespace rpcrdma::test {

inline std::vector<std::string> TestSchemes() {
#ifdef RPCRDMA_PROTOBUF_TEST_VERBS
  return {"rdma"};
#else
  return {"unix", "tcp"};
#endif
}

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_PROTOBUF_TEST_SCHEMES_H_
