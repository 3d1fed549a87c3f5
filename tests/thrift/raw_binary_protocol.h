// Thrift's strict TBinaryProtocol written octet by octet, for tests and
// benchmarks that send what a hostile or broken client would: headers
// that claim more than they carry, which no generated client can write.
#ifndef RPCRDMA_TESTS_THRIFT_RAW_BINARY_PROTOCOL_H_
#define RPCRDMA_TESTS_THRIFT_RAW_BINARY_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rpcrdma/xdr.h"

namespace rpcrdma::test {

// TType codes of the binary protocol.
inline constexpr uint8_t kTypeI32 = 8;
inline constexpr uint8_t kTypeString = 11;
inline constexpr uint8_t kTypeList = 15;

inline void PutU8(std::vector<uint8_t>& out, uint8_t v) { out.push_back(v); }
inline void PutU16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}
// TBinaryProtocol's i32 is big-endian, laid out as an XDR word.
inline void PutU32(std::vector<uint8_t>& out, uint32_t v) {
  const size_t at = out.size();
  out.resize(at + 4);
  StoreBigEndian32(out.data() + at, v);
}

// The message header of a T_CALL of `name` (strict: version 1), sequence
// id 1.
inline void PutCallHeader(std::vector<uint8_t>& out, const std::string& name) {
  PutU32(out, 0x80010001u);  // version 1, T_CALL
  PutU32(out, static_cast<uint32_t>(name.size()));
  out.insert(out.end(), name.begin(), name.end());
  PutU32(out, 1);  // seqid
}

// A T_CALL of `name` whose field 1 is a list header of `count` elements of
// type `element`, and nothing after it.
inline std::vector<uint8_t> ListHeaderCall(const std::string& name,
                                           uint8_t element, uint32_t count) {
  std::vector<uint8_t> out;
  PutCallHeader(out, name);
  PutU8(out, kTypeList);
  PutU16(out, 1);
  PutU8(out, element);
  PutU32(out, count);
  return out;
}

// A T_CALL of Store.echo (the tests' service) with `size` octets of data.
inline std::vector<uint8_t> EchoCall(size_t size) {
  std::vector<uint8_t> out;
  PutCallHeader(out, "echo");
  PutU8(out, kTypeString);
  PutU16(out, 1);
  PutU32(out, static_cast<uint32_t>(size));
  out.insert(out.end(), size, 0x5a);
  PutU8(out, 0);  // T_STOP of the arguments
  return out;
}

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_THRIFT_RAW_BINARY_PROTOCOL_H_
