// rpcrdma::Buffer: octets the transport hands to a handler (an incoming
// call's RPC message).
//
// Unlike std::vector<uint8_t>, a Buffer's octets start uninitialised: the
// transport reassembles a call by letting RDMA Reads land in place, so a
// large call is written once, by the peer, and never zero-filled first
// (a zero-fill would also commit every page of a call whose reads have not
// completed, which a hostile peer could exploit). Copying copies the
// octets, as with std::vector.
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_BUFFER_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_BUFFER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <vector>

#include "absl/types/span.h"

namespace rpcrdma {

class Buffer {
 public:
  Buffer() = default;
  // `size` octets, contents unspecified until written.
  explicit Buffer(size_t size)
      : data_(size == 0 ? nullptr : new uint8_t[size]), size_(size) {}
  static Buffer CopyOf(absl::Span<const uint8_t> bytes);

  Buffer(const Buffer& other) : Buffer(CopyOf(other.span())) {}
  Buffer& operator=(const Buffer& other) {
    if (this != &other) *this = CopyOf(other.span());
    return *this;
  }
  Buffer(Buffer&& other) noexcept
      : data_(std::move(other.data_)), size_(other.size_) {
    other.size_ = 0;
  }
  Buffer& operator=(Buffer&& other) noexcept {
    data_ = std::move(other.data_);
    size_ = other.size_;
    other.size_ = 0;
    return *this;
  }

  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  uint8_t* begin() { return data(); }
  uint8_t* end() { return data() + size_; }
  const uint8_t* begin() const { return data(); }
  const uint8_t* end() const { return data() + size_; }
  uint8_t& operator[](size_t i) { return data_[i]; }
  uint8_t operator[](size_t i) const { return data_[i]; }

  // Keeps the first `n` octets (n <= size()); the memory stays allocated.
  void Truncate(size_t n) { size_ = std::min(n, size_); }

  absl::Span<uint8_t> span() { return {data(), size_}; }
  absl::Span<const uint8_t> span() const { return {data(), size_}; }
  operator absl::Span<const uint8_t>() const { return span(); }  // NOLINT
  std::vector<uint8_t> ToVector() const { return {begin(), end()}; }

  friend bool operator==(const Buffer& a, const Buffer& b) {
    return a.span() == b.span();
  }
  friend bool operator==(const Buffer& a, const std::vector<uint8_t>& b) {
    return a.span() == absl::Span<const uint8_t>(b);
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
};

inline Buffer Buffer::CopyOf(absl::Span<const uint8_t> bytes) {
  Buffer b(bytes.size());
  if (!bytes.empty()) std::copy(bytes.begin(), bytes.end(), b.begin());
  return b;
}

// For test failure messages (GoogleTest finds it by ADL).
inline void PrintTo(const Buffer& b, std::ostream* os) {
  *os << "Buffer(" << b.size() << " octets:";
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < b.size() && i < 64; ++i) {
    *os << (i % 4 == 0 ? " " : "") << kHex[b[i] >> 4] << kHex[b[i] & 15];
  }
  *os << (b.size() > 64 ? " ...)" : ")");
}

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_BUFFER_H_
