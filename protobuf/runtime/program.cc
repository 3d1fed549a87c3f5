#include "rpcrdma/protobuf/program.h"

namespace rpcrdma::protobuf {

uint32_t ProgramNumberFor(absl::string_view service_full_name) {
  uint32_t hash = 2166136261u;  // FNV-1a offset basis
  for (char c : service_full_name) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 16777619u;  // FNV prime
  }
  // The block's 2^29 numbers are its low 29 bits.
  return kFirstLocalProgram | (hash & (kLastLocalProgram - kFirstLocalProgram));
}

}  // namespace rpcrdma::protobuf
