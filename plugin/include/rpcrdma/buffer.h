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

namespace memory_internal {
// The process-wide pool behind Buffer (plugin/memory/buffer_cache.cc): at
// least `size` octets, and how many were given; and their return.
uint8_t* AllocateBuffer(size_t size, size_t& capacity);
void ReleaseBuffer(uint8_t* data, size_t capacity);
}  // namespace memory_internal

class Buffer {
 public:
  Buffer() = default;
  // `size` octets, contents unspecified until written. The memory comes
  // from a pool that keeps recently released buffers (up to a bound), so
  // a process that handles calls of similar sizes reuses memory whose
  // pages are already in place instead of faulting in fresh ones.
  explicit Buffer(size_t size)
      : data_(size == 0 ? nullptr
                        : memory_internal::AllocateBuffer(size, capacity_)),
        size_(size) {}
  static Buffer CopyOf(absl::Span<const uint8_t> bytes);

  Buffer(const Buffer& other) : Buffer(CopyOf(other.span())) {}
  Buffer& operator=(const Buffer& other) {
    if (this != &other) *this = CopyOf(other.span());
    return *this;
  }
  Buffer(Buffer&& other) noexcept
      : capacity_(other.capacity_), data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = other.capacity_ = 0;
  }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      Release();
      data_ = other.data_;
      size_ = other.size_;
      capacity_ = other.capacity_;
      other.data_ = nullptr;
      other.size_ = other.capacity_ = 0;
    }
    return *this;
  }
  ~Buffer() { Release(); }

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
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
  void Release() {
    if (data_ != nullptr) memory_internal::ReleaseBuffer(data_, capacity_);
    data_ = nullptr;
  }
  // Declared first: the constructor's AllocateBuffer sets it while data_
  // is initialised.
  size_t capacity_ = 0;
  uint8_t* data_ = nullptr;
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
