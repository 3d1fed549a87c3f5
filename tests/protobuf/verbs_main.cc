// main of protobuf_verbs_test: the unary, bulk and stream tests over
// rdma:// in the Soft-RoCE VM (protobuf.verbs). Fails at once when there
// is no RDMA device, and checks at the end that every kernel RDMA object
// the tests created is gone.
#include <cstdio>

#include "gtest/gtest.h"
#include "tests/testing/rdma_vm.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (rpcrdma::test::ProbeVerbsDevice().empty()) return 1;
  ::testing::AddGlobalTestEnvironment(new rpcrdma::test::RdmaLeakCheck);
  std::fflush(stdout);
  return RUN_ALL_TESTS();
}
