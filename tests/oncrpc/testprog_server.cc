// The server procedures of testprog.x (rpcgen -M style), for rpcgen's
// dispatcher testprog_1 to call, and the pattern and hash both sides use.
#include "tests/oncrpc/testprog_server.h"

#include <rpc/rpc.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace rpcrdma::test {

uint8_t PatternAt(uint64_t offset) {
  return static_cast<uint8_t>((offset * 131 + (offset >> 8)) % 251);
}

void FillPattern(uint64_t offset, uint8_t* out, size_t length) {
  for (size_t i = 0; i < length; ++i) out[i] = PatternAt(offset + i);
}

uint64_t Fnv1a(uint64_t offset, const uint8_t* data, size_t length) {
  uint64_t h = 1469598103934665603ull ^ offset;
  for (size_t i = 0; i < length; ++i) {
    h = (h ^ data[i]) * 1099511628211ull;
  }
  return h;
}

std::atomic<int> noreply_calls{0};

}  // namespace rpcrdma::test

using rpcrdma::test::FillPattern;
using rpcrdma::test::Fnv1a;

namespace {

char* CopyOf(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

}  // namespace

extern "C" {

bool_t testproc_null_1_svc(void*, void*, struct svc_req*) { return TRUE; }

bool_t testproc_echo_1_svc(blob* argument, blob* result, struct svc_req*) {
  // The argument's memory goes with svc_freeargs: the result owns a copy.
  result->blob_len = argument->blob_len;
  result->blob_val = static_cast<char*>(std::malloc(argument->blob_len + 1));
  if (argument->blob_len != 0) {
    std::memcpy(result->blob_val, argument->blob_val, argument->blob_len);
  }
  return TRUE;
}

bool_t testproc_swap_1_svc(pair* argument, pair* result, struct svc_req*) {
  std::string label(argument->label);
  std::reverse(label.begin(), label.end());
  result->label = CopyOf(label);
  result->tag = -argument->tag;
  // Moved: the arguments' buffers become the results' (svc_freeargs then
  // frees nothing of them).
  result->first = argument->second;
  result->second = argument->first;
  argument->first = {0, nullptr};
  argument->second = {0, nullptr};
  return TRUE;
}

bool_t testproc_read_1_svc(read_args* argument, read_res* result,
                           struct svc_req*) {
  if (argument->count == 0xffffffffu) {
    result->status = 2;
    return TRUE;
  }
  result->status = 0;
  read_ok& ok = result->read_res_u.ok;
  ok.count = argument->count;
  ok.eof = argument->count < 4096;
  ok.data.blob_len = argument->count;
  ok.data.blob_val = static_cast<char*>(std::malloc(argument->count + 1));
  FillPattern(argument->offset, reinterpret_cast<uint8_t*>(ok.data.blob_val),
              argument->count);
  return TRUE;
}

bool_t testproc_write_1_svc(write_args* argument, u_quad_t* result,
                            struct svc_req*) {
  *result = Fnv1a(argument->offset,
                  reinterpret_cast<const uint8_t*>(argument->data.blob_val),
                  argument->data.blob_len);
  return TRUE;
}

bool_t testproc_list_1_svc(u_int* count, listing* result, struct svc_req*) {
  result->names.names_len = *count;
  result->names.names_val =
      static_cast<name*>(std::calloc(*count + 1, sizeof(name)));
  for (u_int i = 0; i < *count; ++i) {
    result->names.names_val[i] = CopyOf("name-" + std::to_string(i));
  }
  return TRUE;
}

bool_t testproc_sleep_1_svc(u_int* milliseconds, u_int* result,
                            struct svc_req*) {
  std::this_thread::sleep_for(std::chrono::milliseconds(*milliseconds));
  *result = *milliseconds;
  return TRUE;
}

bool_t testproc_noreply_1_svc(void*, void*, struct svc_req*) {
  ++rpcrdma::test::noreply_calls;
  return FALSE;
}

bool_t testproc_whoami_1_svc(void*, u_int* result, struct svc_req* request) {
  if (request->rq_cred.oa_flavor != AUTH_SYS) {
    svcerr_weakauth(request->rq_xprt);
    return FALSE;
  }
  *result = static_cast<const authsys_parms*>(request->rq_clntcred)->aup_uid;
  return TRUE;
}

namespace {
// TESTPROC_BADRESULT's result: a name over its bound of 255 octets.
// Static, because xdr_free cannot free it: libtirpc's xdr_string checks
// the bound before it frees (ASan found the malloc'd one leaking).
char too_long_name[301];
}  // namespace

bool_t testproc_badresult_1_svc(void*, name* result, struct svc_req*) {
  std::memset(too_long_name, 'x', sizeof too_long_name - 1);
  *result = too_long_name;
  return TRUE;
}

int testprog_1_freeresult(SVCXPRT*, xdrproc_t free_result, caddr_t result) {
  if (free_result == rpcrdma::test::AsXdrProc(&xdr_name) &&
      *reinterpret_cast<name*>(result) == too_long_name) {
    return TRUE;
  }
  xdr_free(free_result, result);
  return TRUE;
}

}  // extern "C"
