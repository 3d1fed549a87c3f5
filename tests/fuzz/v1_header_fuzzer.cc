// Decodes hostile input as an RPC-over-RDMA version one transport header
// (RFC 8166 §4). For input that decodes, re-encoding must reproduce the
// consumed octets exactly: every field is a plain XDR word or hyper and the
// list discriminants are strict booleans, so the encoding is canonical. The
// re-encoding must also decode to the same header.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/types/span.h"
#include "plugin/wire/v1.h"

namespace {

using rpcrdma::wire::ChunkLimits;
using rpcrdma::wire::DecodeErrorKind;
using rpcrdma::wire::DecodeResult;
using rpcrdma::wire::DecodeV1;
using rpcrdma::wire::EncodeV1;
using rpcrdma::wire::V1Decoded;
using rpcrdma::wire::V1EncodedSize;
using rpcrdma::wire::V1ErrorReplyFor;
using rpcrdma::wire::V1Header;

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::Span<const uint8_t> input(data, size);
  ChunkLimits limits;
  limits.max_read_segments = 16;
  limits.max_write_chunks = 8;
  limits.max_segments_per_chunk = 16;

  DecodeResult<V1Decoded> decoded = DecodeV1(input, limits);
  if (!decoded.ok()) {
    // Every failure must be answerable (RFC 8166 §4.5), and the answer must
    // itself be a valid header.
    const V1Header reply = V1ErrorReplyFor(input, decoded.error(), 1);
    const std::vector<uint8_t> encoded = EncodeV1(reply);
    Check(encoded.size() == V1EncodedSize(reply));
    Check((decoded.error().kind == DecodeErrorKind::kBadVersion) ==
          (encoded.size() == 28));
    DecodeResult<V1Decoded> back = DecodeV1(encoded);
    Check(back.ok() && back->header == reply);
    return 0;
  }

  const V1Header& header = decoded->header;
  const size_t length = decoded->header_length;
  Check(length <= size);
  Check(length % 4 == 0);

  const std::vector<uint8_t> encoded = EncodeV1(header);
  Check(encoded.size() == V1EncodedSize(header));
  Check(encoded.size() == length);
  Check(length == 0 || std::memcmp(encoded.data(), data, length) == 0);

  DecodeResult<V1Decoded> again = DecodeV1(encoded, limits);
  Check(again.ok());
  Check(again->header == header);
  Check(again->header_length == encoded.size());

  // Encoding into a buffer one octet short must fail cleanly.
  std::vector<uint8_t> small(encoded.size() - 1);
  Check(!EncodeV1(header, absl::MakeSpan(small)).ok());
  return 0;
}
