// testprog.x's server procedures (testprog_server.cc) and what the tests
// check their results against.
#ifndef RPCRDMA_TESTS_ONCRPC_TESTPROG_SERVER_H_
#define RPCRDMA_TESTS_ONCRPC_TESTPROG_SERVER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "testprog.h"

// rpcgen's dispatcher (testprog_svc.c), which its header does not declare.
extern "C" void testprog_1(struct svc_req* request, SVCXPRT* transport);

namespace rpcrdma::test {

// An XDR routine as libtirpc's variadic xdrproc_t (through void (*)(),
// the cast GCC accepts between function types).
template <typename Function>
xdrproc_t AsXdrProc(Function* function) {
  return reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(function));
}

// TESTPROC_READ's data: the octet at `offset` of an endless file.
uint8_t PatternAt(uint64_t offset);
void FillPattern(uint64_t offset, uint8_t* out, size_t length);
// TESTPROC_WRITE's result.
uint64_t Fnv1a(uint64_t offset, const uint8_t* data, size_t length);
// TESTPROC_NOREPLY calls served.
extern std::atomic<int> noreply_calls;

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_ONCRPC_TESTPROG_SERVER_H_
