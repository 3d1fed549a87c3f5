// The smallest RPC call stream a Server delivers (RFC 5531 §9: XID,
// msg_type CALL, rpcvers 2, program, version, procedure); shorter ones are
// dropped before any handler sees them (engine.h, RFC 8166 §4.1). And the
// accepted, successful reply header that answers it.
#ifndef RPCRDMA_TESTS_API_CALL_STREAM_H_
#define RPCRDMA_TESTS_API_CALL_STREAM_H_

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace rpcrdma::test_calls {

inline std::vector<uint8_t> Words(std::initializer_list<uint32_t> words) {
  std::vector<uint8_t> out;
  for (uint32_t word : words) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      out.push_back(static_cast<uint8_t>(word >> shift));
    }
  }
  return out;
}

inline std::vector<uint8_t> MinimalCallStream(uint32_t xid) {
  return Words({xid, 0u, 2u, 0x20000000u, 1u, 0u});
}

// RFC 5531: XID, REPLY, MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS.
inline std::vector<uint8_t> ReplyHeader(uint32_t xid) {
  return Words({xid, 1u, 0u, 0u, 0u, 0u});
}

}  // namespace rpcrdma::test_calls

#endif  // RPCRDMA_TESTS_API_CALL_STREAM_H_
