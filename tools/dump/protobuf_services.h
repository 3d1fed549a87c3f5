// The protobuf services rpcrdma-dump knows (from a descriptor set), by the
// RPC program each is served under (protobuf/README.md, "The RPC
// program"): the number comes from the adapter's own derivation
// (rpcrdma/protobuf/program.h), so the dump and the adapter cannot
// disagree on it.
#ifndef RPCRDMA_TOOLS_DUMP_PROTOBUF_SERVICES_H_
#define RPCRDMA_TOOLS_DUMP_PROTOBUF_SERVICES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace rpcrdma::dump {

struct ProtobufMethod {
  std::string name;  // "Watch", as in the .proto
  bool client_streaming = false;
  bool server_streaming = false;
};

struct ProtobufService {
  std::string full_name;                // "pkg.Ticker"
  std::vector<ProtobufMethod> methods;  // in .proto order
};

// A stream control procedure (protobuf/README.md, "Streams"): the same in
// every program. Its arguments start with these unsigned hypers, in order.
struct StreamProcedure {
  uint32_t number = 0;
  absl::string_view name;  // "NEXT"
  absl::Span<const absl::string_view> argument_words;
};

// The stream control procedure `procedure` names, or nullptr.
const StreamProcedure* FindStreamProcedure(uint32_t procedure);

class ProtobufServices {
 public:
  // Fails when two services have one program number (as
  // ServiceSet::Register does): the dump could not tell their calls apart.
  // A service named twice is taken once.
  static absl::StatusOr<ProtobufServices> Create(
      std::vector<ProtobufService> services);

  // The service served as `program` `version`, or nullptr.
  const ProtobufService* Find(uint32_t program, uint32_t version) const;

  size_t size() const { return services_.size(); }

 private:
  ProtobufServices() = default;

  std::vector<ProtobufService> services_;
  absl::flat_hash_map<uint32_t, size_t> by_program_;
};

// The method `procedure` calls in `service` (method i is procedure i + 1),
// or nullptr for NULL (0), a stream control procedure or no method.
const ProtobufMethod* FindMethod(const ProtobufService& service,
                                 uint32_t procedure);

}  // namespace rpcrdma::dump

#endif  // RPCRDMA_TOOLS_DUMP_PROTOBUF_SERVICES_H_
