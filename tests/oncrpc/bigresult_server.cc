// The server procedures of bigresult.x (rpcgen -M style), for rpcgen's
// dispatcher bigresult_1 to call.
#include "tests/oncrpc/bigresult_server.h"

#include <rpc/rpc.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace rpcrdma::test {

uint8_t BigResultOctet(size_t offset) {
  return static_cast<uint8_t>((offset * 7 + (offset >> 12)) % 253);
}

const uint8_t* BigResultPattern() {
  static const std::vector<uint8_t>* const pattern = [] {
    auto* octets = new std::vector<uint8_t>(BIGRESULT_MAXDATA);
    for (size_t i = 0; i < octets->size(); ++i) {
      (*octets)[i] = BigResultOctet(i);
    }
    return octets;
  }();
  return pattern->data();
}

std::atomic<unsigned> bigresult_counted{0};

}  // namespace rpcrdma::test

namespace {

// `size` octets of the pattern, for xdr_free to release (malloc'd).
bulk PatternOf(u_int size) {
  bulk b{};
  b.bulk_len = size;
  b.bulk_val = static_cast<char*>(std::malloc(size + 1));
  if (size != 0) {
    std::memcpy(b.bulk_val, rpcrdma::test::BigResultPattern(), size);
  }
  return b;
}

}  // namespace

extern "C" {

bool_t bigresult_get_1_svc(u_int* size, bulk* result, struct svc_req*) {
  if (*size > BIGRESULT_MAXDATA) return FALSE;
  *result = PatternOf(*size);
  return TRUE;
}

bool_t bigresult_count_1_svc(u_int* size, counted* result, struct svc_req*) {
  if (*size > BIGRESULT_MAXDATA) return FALSE;
  result->count = ++rpcrdma::test::bigresult_counted;
  result->data = PatternOf(*size);
  return TRUE;
}

int bigresult_1_freeresult(SVCXPRT*, xdrproc_t free_result, caddr_t result) {
  xdr_free(free_result, result);
  return TRUE;
}

}  // extern "C"
