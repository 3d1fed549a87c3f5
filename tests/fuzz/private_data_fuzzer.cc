// Fuzzes the RFC 8797 §5.2 search over hostile CM private data. For input in
// which private data is found, encoding it must succeed (every decoded size
// is in 1024..262144, §4.2) and decoding the encoding must give it back.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/types/span.h"
#include "plugin/wire/private_data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using rpcrdma::wire::EncodePrivateData;
  using rpcrdma::wire::FindPrivateData;
  using rpcrdma::wire::PrivateData;
  using rpcrdma::wire::PrivateDataOrDefault;

  const absl::Span<const uint8_t> input(data, size);
  const std::optional<PrivateData> found = FindPrivateData(input);
  const PrivateData resolved = PrivateDataOrDefault(input);
  if (!found.has_value()) {
    // §5.1: absent private data means R clear and 1024-octet sizes.
    if (!(resolved == PrivateData{})) __builtin_trap();
    return 0;
  }
  if (!(resolved == *found)) __builtin_trap();
  auto encoded = EncodePrivateData(*found);
  if (!encoded.ok()) __builtin_trap();
  const std::optional<PrivateData> again = FindPrivateData(*encoded);
  if (!again.has_value() || !(*again == *found)) __builtin_trap();
  return 0;
}
