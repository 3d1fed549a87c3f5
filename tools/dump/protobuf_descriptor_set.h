// Reads the protobuf services out of a FileDescriptorSet, as written by
// `protoc --include_imports --descriptor_set_out=FILE`: only the services'
// full names and their methods are taken, so a set without its imports
// does as well.
#ifndef RPCRDMA_TOOLS_DUMP_PROTOBUF_DESCRIPTOR_SET_H_
#define RPCRDMA_TOOLS_DUMP_PROTOBUF_DESCRIPTOR_SET_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/dump/protobuf_services.h"

namespace rpcrdma::dump {

// INVALID_ARGUMENT when `octets` is not a serialized FileDescriptorSet or
// names no service; ALREADY_EXISTS when two services share a program.
absl::StatusOr<ProtobufServices> ParseDescriptorSet(absl::string_view octets);

// The same for the file at `path`; the status names the file.
absl::StatusOr<ProtobufServices> ReadDescriptorSetFile(const std::string& path);

}  // namespace rpcrdma::dump

#endif  // RPCRDMA_TOOLS_DUMP_PROTOBUF_DESCRIPTOR_SET_H_
