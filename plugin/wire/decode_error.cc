#include "plugin/wire/decode_error.h"

#include "absl/strings/str_cat.h"

namespace rpcrdma::wire {

absl::string_view DecodeErrorKindName(DecodeErrorKind kind) {
  switch (kind) {
    case DecodeErrorKind::kTruncated:
      return "truncated";
    case DecodeErrorKind::kBadVersion:
      return "bad version";
    case DecodeErrorKind::kBadProc:
      return "bad procedure";
    case DecodeErrorKind::kBadDiscriminant:
      return "bad discriminant";
    case DecodeErrorKind::kTooManyReadSegments:
      return "too many read segments";
    case DecodeErrorKind::kTooManyWriteChunks:
      return "too many write chunks";
    case DecodeErrorKind::kTooManySegments:
      return "too many segments";
    case DecodeErrorKind::kBadLength:
      return "bad length";
    case DecodeErrorKind::kBadPropertyValue:
      return "bad property value";
  }
  return "unknown";
}

absl::Status DecodeError::ToStatus() const {
  return absl::InvalidArgumentError(
      absl::StrCat(DecodeErrorKindName(kind), ": ", message));
}

}  // namespace rpcrdma::wire
