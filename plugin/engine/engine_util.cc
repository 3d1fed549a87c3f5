#include "plugin/engine/engine_util.h"

#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "rpcrdma/xdr.h"

namespace rpcrdma::engine {

// Rebuilds an XDR stream from its reduced form by inserting each item with
// its XDR roundup (RFC 4506 §4.10) at its position. Positions are validated
// (non-decreasing, within the stream) by the caller.
size_t InsertedSize(absl::Span<const uint8_t> reduced,
                    absl::Span<const Item> items) {
  size_t total = reduced.size();
  for (const Item& item : items) total += XdrRoundUp(item.data.size());
  return total;
}

void InsertItemsInto(absl::Span<const uint8_t> reduced,
                     absl::Span<const Item> items, absl::Span<uint8_t> out) {
  uint8_t* to = out.data();
  auto put = [&](const uint8_t* from, size_t n) {
    CopyBytes(to, from, n);
    to += n;
  };
  size_t at = 0;
  for (const Item& item : items) {
    put(reduced.data() + at, item.position - at);
    put(item.data.data(), item.data.size());
    const size_t pad = XdrPad(item.data.size());
    if (pad != 0) std::memset(to, 0, pad);  // `to` may be null when empty
    to += pad;
    at = item.position;
  }
  put(reduced.data() + at, reduced.size() - at);
}

std::vector<uint8_t> InsertItems(absl::Span<const uint8_t> reduced,
                                 absl::Span<const Item> items) {
  std::vector<uint8_t> out(InsertedSize(reduced, items));
  InsertItemsInto(reduced, items, absl::MakeSpan(out));
  return out;
}

uint64_t ChunkLength(const wire::WriteChunk& chunk) {
  uint64_t total = 0;
  for (const wire::Segment& s : chunk) total += s.length;
  return total;
}

// Checks a chunk the responder returned against the one this side offered
// (same handles, lengths within what was offered) and returns the octets it
// reports as written.
absl::StatusOr<uint32_t> ReturnedLength(const wire::WriteChunk& returned,
                                        const wire::WriteChunk& offered,
                                        absl::string_view what) {
  if (returned.size() > offered.size()) {
    return absl::DataLossError(absl::StrCat(what, " returned with ",
                                            returned.size(), " segments, ",
                                            offered.size(), " were offered"));
  }
  uint64_t total = 0;
  for (size_t i = 0; i < returned.size(); ++i) {
    if (returned[i].handle != offered[i].handle ||
        returned[i].length > offered[i].length) {
      return absl::DataLossError(absl::StrCat(
          what, " segment ", i, " does not match the offered segment"));
    }
    total += returned[i].length;
  }
  return static_cast<uint32_t>(total);
}

// Fills a returned chunk: the offered segments with the lengths actually
// used, `length` octets spread over them in order (RFC 8166 §3.4.7; an
// unused chunk comes back with every length zero, as the Linux server does).
wire::WriteChunk FillChunk(const wire::WriteChunk& offered, size_t length) {
  wire::WriteChunk used = offered;
  for (wire::Segment& s : used) {
    uint32_t n = static_cast<uint32_t>(std::min<size_t>(length, s.length));
    s.length = n;
    length -= n;
  }
  return used;
}

}  // namespace rpcrdma::engine
