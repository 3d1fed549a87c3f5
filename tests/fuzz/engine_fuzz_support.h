// What the engine fuzzer (engine_fuzzer.cc) is made of besides its driver:
// the input it consumes, the memory and budget doubles it hands the
// engine, and the version-two messages of the peer's own (property,
// optional and error messages, draft-cel-nfsv4-rpcrdma-version-two-04).
#ifndef RPCRDMA_TESTS_FUZZ_ENGINE_FUZZ_SUPPORT_H_
#define RPCRDMA_TESTS_FUZZ_ENGINE_FUZZ_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "plugin/engine/engine.h"
#include "plugin/wire/v2.h"
#include "rpcrdma/xdr.h"
#include "tests/testing/byte_vectors.h"

namespace rpcrdma::test {

inline void Check(bool condition) {
  if (!condition) __builtin_trap();
}

inline constexpr uint32_t kOptType = 0x4F505431;
inline constexpr uint32_t kExpProp = wire::kFirstExperimentalPropId + 1;

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return at_ >= size_; }
  uint32_t Byte() { return at_ < size_ ? data_[at_++] : 0u; }
  uint32_t Word() {
    uint32_t w = 0;
    for (int i = 0; i < 4; ++i) w = (w << 8) | Byte();
    return w;
  }
  std::vector<uint8_t> Bytes(size_t n) {
    std::vector<uint8_t> out;
    while (n-- > 0 && !empty()) out.push_back(data_[at_++]);
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

class Exposer : public engine::MemoryExposer {
 public:
  absl::StatusOr<wire::Segment> Expose(absl::Span<uint8_t> memory,
                                       uint32_t) override {
    uint32_t handle = next_++;
    valid[handle] = true;
    return wire::Segment{handle, static_cast<uint32_t>(memory.size()),
                         uint64_t{handle} << 32};
  }
  std::map<uint32_t, bool> valid;

 private:
  uint32_t next_ = 0x100;
};

class Budget : public engine::ReassemblyBudget {
 public:
  explicit Budget(uint64_t capacity) : capacity_(capacity) {}
  bool TryReserve(uint64_t bytes) override {
    if (held + bytes > capacity_) return false;
    held += bytes;
    return true;
  }
  void Release(uint64_t bytes) override {
    Check(bytes <= held);
    held -= bytes;
  }
  uint64_t capacity() const override { return capacity_; }
  uint64_t held = 0;

 private:
  uint64_t capacity_;
};

// A property: a receive buffer size (often a plausible one), a BRS value
// of any number, the driver's experimental property, or any id.
inline wire::PropVal RandomProperty(Input& in) {
  switch (in.Byte() % 4) {
    case 0:
      return wire::MakeRbsizProperty(in.Byte() % 2 ? 1024u * (in.Byte() % 12)
                                                   : in.Word());
    case 1:
      return {wire::kPropIdBrs, Words({in.Byte() % 4})};
    case 2:
      return {kExpProp, in.Bytes(in.Byte() % 6)};
    default:
      return {in.Word(), in.Bytes(in.Byte() % 6)};
  }
}

// One of the peer's own version-two messages, about one time in three:
// optional messages (CALL and REPLY, of the served type or any), property
// requests, answers and updates, errors with random arms. `exchange` is
// an XID the answers may carry (one of this side's exchanges, or any).
inline std::optional<std::vector<uint8_t>> VersionTwoMessage(
    Input& in, uint32_t xid, uint32_t exchange) {
  switch (in.Byte() % 24) {
    case 0:
      return wire::EncodeV2(
          wire::V2Header{xid, 2, in.Byte() % 6,
                         wire::V2Optional{wire::MsgDirection::kCall, in.Word(),
                                          in.Bytes(in.Byte() % 8)}});
    case 1:
      return wire::EncodeV2(wire::V2Header{
          xid, 2, in.Byte() % 6,
          wire::V2ReqProp{{wire::MakeRbsizProperty(in.Word())}}});
    case 2:
      return wire::EncodeV2(wire::V2Header{
          xid, 2, in.Byte() % 6,
          wire::V2UpdProp{{wire::MakeRbsizProperty(in.Word())}}});
    case 3: {
      wire::V2Error e;
      e.code = static_cast<wire::V2ErrorCode>(1 + in.Byte() % 10);
      e.vers_low = e.max_chunks = e.max_segments = e.chunk_index = in.Byte();
      e.vers_high = e.length_needed = in.Word();
      return wire::EncodeV2(wire::V2Header{xid, 2, in.Byte() % 6, e});
    }
    case 4: {  // an answer to one of this side's exchanges, or to none
      wire::V2ResProp r{{in.Byte()}, {in.Byte()}, {}};
      if (in.Byte() % 2) r.other.push_back(RandomProperty(in));
      return wire::EncodeV2(
          wire::V2Header{exchange, 2, in.Byte() % 6, std::move(r)});
    }
    case 5:
      return wire::EncodeV2(
          wire::V2Header{exchange, 2, in.Byte() % 6,
                         wire::V2Optional{wire::MsgDirection::kReply,
                                          in.Byte() % 2 ? kOptType : in.Word(),
                                          in.Bytes(in.Byte() % 8)}});
    case 6:
      return wire::EncodeV2(wire::V2Header{
          xid, 2, in.Byte() % 6,
          wire::V2ReqProp{{RandomProperty(in), RandomProperty(in)}}});
    case 7:
      return wire::EncodeV2(wire::V2Header{
          xid, 2, in.Byte() % 6, wire::V2UpdProp{{RandomProperty(in)}}});
    case 8:
      return wire::EncodeV2(
          wire::V2Header{xid, 2, in.Byte() % 6,
                         wire::V2Optional{wire::MsgDirection::kCall, kOptType,
                                          in.Bytes(in.Byte() % 8)}});
    default:
      return std::nullopt;  // a grammar message in its version-two form
  }
}

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_FUZZ_ENGINE_FUZZ_SUPPORT_H_
