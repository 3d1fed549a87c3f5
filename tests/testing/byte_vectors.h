// Builders for golden byte vectors in tests: XDR words and hex fixtures.
#ifndef RPCRDMA_TESTS_TESTING_BYTE_VECTORS_H_
#define RPCRDMA_TESTS_TESTING_BYTE_VECTORS_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "rpcrdma/xdr.h"

namespace rpcrdma::test {

// Big-endian 32-bit words, as XDR lays them out.
inline std::vector<uint8_t> Words(std::initializer_list<uint32_t> words) {
  std::vector<uint8_t> out(words.size() * 4);
  size_t i = 0;
  for (uint32_t w : words) {
    StoreBigEndian32(out.data() + i, w);
    i += 4;
  }
  return out;
}

inline void AppendWord(std::vector<uint8_t>& out, uint32_t w) {
  AppendBigEndian32(out, w);
}

// Hex fixture to octets; spaces and newlines between digits are ignored.
inline std::vector<uint8_t> HexBytes(const std::string& hex) {
  std::vector<uint8_t> out;
  std::string digits;
  for (char c : hex) {
    if (c != ' ' && c != '\n') digits += c;
  }
  for (size_t i = 0; i + 1 < digits.size(); i += 2) {
    out.push_back(
        static_cast<uint8_t>(std::stoul(digits.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// `reduced` (an XDR stream with a chunk's data item taken out, RFC 8166 §3.4.5)
// with `data` and its XDR roundup put back at `position`.
inline std::vector<uint8_t> WithXdrItem(const std::vector<uint8_t>& reduced,
                                        size_t position,
                                        const std::vector<uint8_t>& data) {
  const auto at = reduced.begin() + static_cast<std::ptrdiff_t>(position);
  std::vector<uint8_t> out(reduced.begin(), at);
  out.insert(out.end(), data.begin(), data.end());
  out.insert(out.end(), (4 - data.size() % 4) % 4, uint8_t{0});
  out.insert(out.end(), at, reduced.end());
  return out;
}

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_TESTING_BYTE_VECTORS_H_
