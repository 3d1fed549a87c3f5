// Text-format protobuf files of the adapter (DdpPolicy, AdapterConfig):
// read with a size bound, parsed with errors that name the source, line
// and column.
#ifndef RPCRDMA_ONCRPC_ADAPTER_TEXT_PROTO_H_
#define RPCRDMA_ONCRPC_ADAPTER_TEXT_PROTO_H_

#include <google/protobuf/message.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rpcrdma::oncrpc {

// INVALID_ARGUMENT "<source>:<line>:<column>: <what>" for each error.
absl::Status ParseTextProto(absl::string_view text,
                            absl::string_view source_name,
                            google::protobuf::Message* message);
// NOT_FOUND when it cannot be opened, RESOURCE_EXHAUSTED above 1 MiB.
absl::StatusOr<std::string> ReadTextFile(const std::string& path,
                                         absl::string_view what);

}  // namespace rpcrdma::oncrpc

#endif  // RPCRDMA_ONCRPC_ADAPTER_TEXT_PROTO_H_
