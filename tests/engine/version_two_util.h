// Helpers of the version-two engine tests
// (draft-cel-nfsv4-rpcrdma-version-two-04): configurations of both roles,
// a connected Loopback, decoding what a side sent.
#ifndef RPCRDMA_TESTS_ENGINE_VERSION_TWO_UTIL_H_
#define RPCRDMA_TESTS_ENGINE_VERSION_TWO_UTIL_H_

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/engine/engine.h"
#include "plugin/wire/v2.h"
#include "tests/engine/engine_test_util.h"

namespace rpcrdma::test {

inline constexpr uint32_t kV2Credits = 4;

inline wire::V2Header DecodeV2OrDie(const std::vector<uint8_t>& bytes) {
  auto d = wire::DecodeV2(bytes);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? d->header : wire::V2Header{};
}

inline std::vector<uint8_t> ConnPropBytes(uint32_t xid, uint32_t rbsiz) {
  return wire::EncodeV2(
      wire::V2Header{xid, 2, kV2Credits,
                     wire::V2ConnProp{{wire::MakeRbsizProperty(rbsiz)}, {}}});
}

inline engine::Config V2ClientConfig(uint32_t receive_size = 4096,
                                     uint32_t send_size = 4096) {
  engine::Config c;
  c.responder = false;
  c.credits = kV2Credits;
  c.local = {false, send_size, receive_size};
  c.offered_version = 2;
  c.version_fallback = false;
  return c;
}

inline engine::Config V2ServerConfig(uint32_t receive_size = 4096,
                                     uint32_t send_size = 4096) {
  engine::Config c;
  c.requester = false;
  c.credits = kV2Credits;
  c.local = {false, send_size, receive_size};
  c.serve_version_two = true;
  return c;
}

// The procedures of the messages `side` sent from `first` on.
inline std::vector<wire::V2Proc> SentProcs(const Side& side, size_t first = 0) {
  std::vector<wire::V2Proc> procs;
  for (size_t i = first; i < side.sends.size(); ++i) {
    procs.push_back(DecodeV2OrDie(side.sends[i]).proc());
  }
  return procs;
}

inline void ExpectNoLinkErrors(const Loopback& link) {
  EXPECT_TRUE(link.errors.empty()) << link.errors.front();
}

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_ENGINE_VERSION_TWO_UTIL_H_
