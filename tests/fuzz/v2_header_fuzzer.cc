// Fuzzes the RPC-over-RDMA version two header decoder
// (draft-cel-nfsv4-rpcrdma-version-two-04 §6.2).
//
// For input that decodes, the encoder must reproduce the consumed prefix.
// The one permitted difference is XDR padding: the decoder does not check
// the content of the 0..3 padding octets after an opaque (rdma_optinfo,
// rdma_data), while the encoder always writes zeros. Padding never starts a
// 4-octet word, so a differing octet is accepted only when it is not the
// first of its word and the encoder wrote zero there. On top of that the
// re-encoding must decode to the same header and encode to the same octets
// again (decode(encode(x)) == x, encode is stable), and V2EncodedSize must
// match what EncodeV2 wrote.
//
// For input that fails to decode, the §6.2.4 error reply built for it must
// encode, and must decode back when it carries version two.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "plugin/wire/v2.h"

namespace {

using rpcrdma::wire::DecodeResult;
using rpcrdma::wire::DecodeV2;
using rpcrdma::wire::EncodeV2;
using rpcrdma::wire::V2Decoded;
using rpcrdma::wire::V2EncodedSize;
using rpcrdma::wire::V2ErrorReplyFor;
using rpcrdma::wire::V2Header;
using rpcrdma::wire::V2Limits;

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

// Encodes `h` both ways and checks they agree with V2EncodedSize.
std::vector<uint8_t> EncodeChecked(const V2Header& h) {
  std::vector<uint8_t> enc = EncodeV2(h);
  Check(!enc.empty());
  Check(enc.size() == V2EncodedSize(h));
  std::vector<uint8_t> buffer(enc.size());
  absl::StatusOr<size_t> n = EncodeV2(h, absl::MakeSpan(buffer));
  Check(n.ok() && *n == enc.size() && buffer == enc);
  // One octet short must fail cleanly.
  absl::StatusOr<size_t> short_n =
      EncodeV2(h, absl::MakeSpan(buffer.data(), buffer.size() - 1));
  Check(!short_n.ok());
  return enc;
}

void CheckRoundTrip(absl::Span<const uint8_t> input, const V2Decoded& d) {
  std::vector<uint8_t> enc = EncodeChecked(d.header);
  Check(enc.size() == d.header_length);
  for (size_t i = 0; i < enc.size(); ++i) {
    if (enc[i] != input[i]) Check(i % 4 != 0 && enc[i] == 0);
  }
  DecodeResult<V2Decoded> again = DecodeV2(enc);
  Check(again.ok());
  Check(again->header == d.header);
  Check(again->header_length == enc.size());
  Check(EncodeV2(again->header) == enc);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::Span<const uint8_t> input(data, size);
  DecodeResult<V2Decoded> decoded = DecodeV2(input);
  if (decoded.ok()) {
    CheckRoundTrip(input, *decoded);
  } else {
    V2Header reply = V2ErrorReplyFor(input, decoded.error(), 7);
    std::vector<uint8_t> enc = EncodeChecked(reply);
    if (reply.vers == rpcrdma::wire::kRpcRdmaVersion2) {
      DecodeResult<V2Decoded> r = DecodeV2(enc);
      Check(r.ok() && r->header == reply);
    }
  }

  // Tight limits exercise every limit check; whatever they accept must be
  // what the default limits produce.
  V2Limits tight;
  tight.chunks.max_read_segments = 2;
  tight.chunks.max_write_chunks = 2;
  tight.chunks.max_segments_per_chunk = 2;
  tight.max_properties = 2;
  tight.max_property_length = 8;
  tight.max_subset_words = 2;
  tight.max_optinfo_length = 8;
  DecodeResult<V2Decoded> limited = DecodeV2(input, tight);
  if (limited.ok()) {
    Check(decoded.ok());
    Check(limited->header == decoded->header);
    Check(limited->header_length == decoded->header_length);
  }
  return 0;
}
