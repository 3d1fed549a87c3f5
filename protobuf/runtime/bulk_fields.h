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
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
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
// at least one) out of `message`, leaving it empty, without copying. A
// field's (rpcrdma.protobuf.ddp) overrides the threshold: DDP_ALWAYS moves
// every value (an empty one too), DDP_NEVER none.
std::vector<BulkValue> ExtractBulkFields(google::protobuf::Message& message,
                                         size_t threshold);

// Moves bulk values back into one message, each into the field its path
// names. A map's key order is computed once per map and kept: restoring a
// value changes no key, and a peer's call may send a value for every entry
// of a large map, which sorting the map again for each value would make
// cost the product of the two.
class BulkFieldRestorer {
 public:
  // `message` must outlive the restorer, and its maps' keys must not
  // change while it is used.
  explicit BulkFieldRestorer(google::protobuf::Message& message)
      : message_(message) {}

  // Moves `bulk.value` into the field its path names. INVALID_ARGUMENT
  // naming the step when the path does not name an empty `bytes` field of
  // the message (a field number the type lacks, an index past the end, a
  // message field that is not set, a field that already holds octets).
  absl::Status Restore(BulkValue& bulk);

  // How many times a map's key order was computed.
  size_t key_orders_computed() const { return key_orders_computed_; }

 private:
  using MapOf = std::pair<const google::protobuf::Message*,
                          const google::protobuf::FieldDescriptor*>;
  const std::vector<int>& KeyOrder(
      const google::protobuf::Message& owner,
      const google::protobuf::FieldDescriptor* field);

  google::protobuf::Message& message_;
  absl::flat_hash_map<MapOf, std::vector<int>> key_orders_;
  size_t key_orders_computed_ = 0;
};

}  // namespace rpcrdma::protobuf::runtime

#endif  // RPCRDMA_PROTOBUF_RUNTIME_BULK_FIELDS_H_
