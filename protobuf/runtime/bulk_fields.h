// Moving large `bytes` fields out of a message before it is serialized,
// and back in after it is parsed (protobuf/README.md, "Bulk fields"). A
// path names a field by the field numbers from the top message down, with
// an index per step: the element of a repeated field, the rank of a map
// entry's key in ascending key order (a map's order on the wire and in
// memory is unspecified, its key order is not), 0 for a singular field.
#ifndef RPCRDMA_PROTOBUF_RUNTIME_BULK_FIELDS_H_
#define RPCRDMA_PROTOBUF_RUNTIME_BULK_FIELDS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace rpcrdma::protobuf::runtime {

// Deeper than protobuf's own parse recursion limit (100) cannot be a
// field of a message that parsed.
inline constexpr uint32_t kMaxBulkPathSteps = 100;

struct BulkPathStep {
  uint32_t field_number = 0;
  uint32_t index = 0;
};

struct BulkValue {
  std::vector<BulkPathStep> path;
  std::string value;
};

// Moves every `bytes` field (singular, repeated, in nested messages, map
// values and oneofs; not extensions) of at least `threshold` octets (and
// at least one) out of `message`, leaving it empty, without copying.
std::vector<BulkValue> ExtractBulkFields(google::protobuf::Message& message,
                                         size_t threshold);

// Moves `bulk.value` back into the field its path names. INVALID_ARGUMENT
// naming the step when the path does not name an empty `bytes` field of
// `message` (a field number the type lacks, an index past the end, a
// message field that is not set, a field that already holds octets).
absl::Status RestoreBulkField(google::protobuf::Message& message,
                              BulkValue& bulk);

}  // namespace rpcrdma::protobuf::runtime

#endif  // RPCRDMA_PROTOBUF_RUNTIME_BULK_FIELDS_H_
