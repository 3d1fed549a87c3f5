// Helpers of the version two header codec tests (v2_test.cc,
// v2_malformed_test.cc, v2_encode_test.cc): XDR words, headers, and the
// golden messages. Golden octets are written by hand from the §6.2 XDR of
// draft-cel-nfsv4-rpcrdma-version-two-04: every item is a big-endian 32-bit
// word (RFC 4506 §4.1), hypers are two words, most significant first
// (§4.5), opaque data is padded with zeros to a multiple of four octets
// (§4.10).
#ifndef RPCRDMA_TESTS_WIRE_V2_TEST_UTIL_H_
#define RPCRDMA_TESTS_WIRE_V2_TEST_UTIL_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "plugin/wire/v2.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::test {

using Bytes = std::vector<uint8_t>;

inline Bytes Cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// rdma_xid, rdma_vers = 2, rdma_credit, rdma_proc.
inline Bytes Hdr(uint32_t xid, uint32_t credit, uint32_t proc) {
  return Words({xid, 2, credit, proc});
}

inline wire::DecodeError DecodeFails(const Bytes& message,
                                     const wire::V2Limits& limits = {}) {
  wire::DecodeResult<wire::V2Decoded> d = DecodeV2(message, limits);
  EXPECT_FALSE(d.ok());
  if (d.ok())
    return wire::DecodeError{wire::DecodeErrorKind::kTruncated, 9999, "", 0};
  return d.error();
}

inline wire::V2Decoded DecodeOk(const Bytes& message,
                                const wire::V2Limits& limits = {}) {
  wire::DecodeResult<wire::V2Decoded> d = DecodeV2(message, limits);
  EXPECT_TRUE(d.ok()) << d.status();
  if (!d.ok()) return wire::V2Decoded{};
  return *d;
}

// The golden vectors below, shared by the truncation and round-trip tests.

// §6.2 RDMA2_MSG, direction REPLY, remote invalidation handle, two read
// segments, two write chunks and a reply chunk.
inline Bytes GoldenMsgAllLists() {
  return Cat({
      Hdr(0x0A0B0C0D, 128, 0),
      Words({1, 0xAABBCCDD}),  // rdma_direction REPLY, rdma_inv_handle
      // rdma_reads
      Words({1, 0, 0x11111111, 0x1000, 0x00000001, 0x00002000}),
      Words({1, 0x40, 0x22222222, 0x200, 0xFFFFFFFF, 0x00000000}),
      Words({0}),
      // rdma_writes
      Words({1, 2, 0x33333333, 0x100, 0x00000001, 0x00000000, 0x44444444, 0x80,
             0x00000000, 0x00000010}),
      Words({1, 1, 0x55555555, 0x10, 0, 0}),
      Words({0}),
      // rdma_reply
      Words({1, 1, 0x66666666, 0x400, 0x77777777, 0x88888888}),
  });
}

inline wire::V2Header GoldenMsgAllListsHeader() {
  wire::V2Header h;
  h.xid = 0x0A0B0C0D;
  h.credits = 128;
  wire::V2Msg m;
  m.chunks.direction = wire::MsgDirection::kReply;
  m.chunks.inv_handle = 0xAABBCCDD;
  m.chunks.lists.reads = {
      wire::ReadSegment{0,
                        wire::Segment{0x11111111, 0x1000, 0x0000000100002000}},
      wire::ReadSegment{0x40,
                        wire::Segment{0x22222222, 0x200, 0xFFFFFFFF00000000}},
  };
  m.chunks.lists.writes = {
      wire::WriteChunk{wire::Segment{0x33333333, 0x100, 0x0000000100000000},
                       wire::Segment{0x44444444, 0x80, 0x10}},
      wire::WriteChunk{wire::Segment{0x55555555, 0x10, 0}},
  };
  m.chunks.lists.reply =
      wire::WriteChunk{wire::Segment{0x66666666, 0x400, 0x7777777788888888}};
  h.body = m;
  return h;
}

// §5.3.1 RDMA2_CONNPROP: RBSIZ = 8192, BRS = GENL, an unknown property
// 0x12345678 with three octets "abc", and rdma_nochg selecting elements 0
// and 2. Offsets: rdma_start count 16, propvals 20 / 32 / 44, rdma_nochg 56.
inline Bytes GoldenConnProp() {
  return {
      0x00, 0x00, 0x00, 0x2A,  // rdma_xid
      0x00, 0x00, 0x00, 0x02,  // rdma_vers
      0x00, 0x00, 0x00, 0x10,  // rdma_credit
      0x00, 0x00, 0x00, 0x06,  // rdma_proc = RDMA2_CONNPROP
      0x00, 0x00, 0x00, 0x03,  // rdma_start: 3 propvals
      0x00, 0x00, 0x00, 0x01,  // rdma_which = RDMA2_PROPID_RBSIZ
      0x00, 0x00, 0x00, 0x04,  // rdma_data length
      0x00, 0x00, 0x20, 0x00,  // 8192
      0x00, 0x00, 0x00, 0x02,  // rdma_which = RDMA2_PROPID_BRS
      0x00, 0x00, 0x00, 0x04,  // rdma_data length
      0x00, 0x00, 0x00, 0x02,  // RDMA2_BKREQSUP_GENL
      0x12, 0x34, 0x56, 0x78,  // rdma_which = unknown
      0x00, 0x00, 0x00, 0x03,  // rdma_data length
      0x61, 0x62, 0x63, 0x00,  // "abc" + one octet of padding
      0x00, 0x00, 0x00, 0x01,  // rdma_nochg: one word
      0x00, 0x00, 0x00, 0x05,  // bits 0 and 2
  };
}

// §5.3.3 RDMA2_RESPROP: done = {0}, rejected = {1}, other = RBSIZ 16384.
inline Bytes GoldenResProp() {
  return Cat({Hdr(0x77, 3, 8), Words({1, 0x00000001}), Words({1, 0x00000002}),
              Words({1, 1, 4, 0x4000})});
}

// §6.2 RDMA2_OPTIONAL with five octets of rdma_optinfo.
inline Bytes GoldenOptional5() {
  return Cat({Hdr(1, 0, 5), Words({1, 0x102, 5}),
              Bytes{0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0x00, 0x00, 0x00}});
}

// §6.2.4 RDMA2_ERROR / RDMA2_ERR_VERS.
inline Bytes GoldenErrVers() {
  return Cat({Hdr(0xCAFEF00D, 1, 4), Words({1, 1, 2})});
}

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_WIRE_V2_TEST_UTIL_H_
