// bigresult.x's server procedures (bigresult_server.cc) and what the tests
// check their results against.
#ifndef RPCRDMA_TESTS_ONCRPC_BIGRESULT_SERVER_H_
#define RPCRDMA_TESTS_ONCRPC_BIGRESULT_SERVER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "bigresult.h"

// rpcgen's dispatcher (bigresult_svc.c), which its header does not
// declare.
extern "C" void bigresult_1(struct svc_req* request, SVCXPRT* transport);

namespace rpcrdma::test {

// The octet at `offset` of every result.
uint8_t BigResultOctet(size_t offset);
// BIGRESULT_MAXDATA octets of that pattern, made once (copying and
// comparing them is cheap even in an unoptimised build).
const uint8_t* BigResultPattern();
// BIGRESULT_COUNT calls executed.
extern std::atomic<unsigned> bigresult_counted;

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_ONCRPC_BIGRESULT_SERVER_H_
