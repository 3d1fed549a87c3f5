#include "tools/dump/protobuf_descriptor_set.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.pb.h"

namespace rpcrdma::dump {

absl::StatusOr<ProtobufServices> ParseDescriptorSet(absl::string_view octets) {
  // A FileDescriptorSet is one protobuf message, which protobuf parses
  // only up to 2 GiB.
  if (octets.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError("too large for a descriptor set");
  }
  google::protobuf::FileDescriptorSet set;
  if (!set.ParseFromArray(octets.data(), static_cast<int>(octets.size()))) {
    return absl::InvalidArgumentError(
        "not a serialized FileDescriptorSet (protoc --include_imports "
        "--descriptor_set_out writes one)");
  }
  std::vector<ProtobufService> services;
  for (const google::protobuf::FileDescriptorProto& file : set.file()) {
    for (const google::protobuf::ServiceDescriptorProto& s : file.service()) {
      ProtobufService service;
      service.full_name = file.package().empty()
                              ? s.name()
                              : absl::StrCat(file.package(), ".", s.name());
      for (const google::protobuf::MethodDescriptorProto& m : s.method()) {
        service.methods.push_back(
            {m.name(), m.client_streaming(), m.server_streaming()});
      }
      services.push_back(std::move(service));
    }
  }
  if (services.empty()) {
    return absl::InvalidArgumentError("the descriptor set names no service");
  }
  return ProtobufServices::Create(std::move(services));
}

absl::StatusOr<ProtobufServices> ReadDescriptorSetFile(
    const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  std::string octets((std::istreambuf_iterator<char>(file)),
                     std::istreambuf_iterator<char>());
  if (file.bad()) {
    return absl::DataLossError(absl::StrCat(path, ": read failed"));
  }
  absl::StatusOr<ProtobufServices> services = ParseDescriptorSet(octets);
  if (!services.ok()) {
    return absl::Status(services.status().code(),
                        absl::StrCat(path, ": ", services.status().message()));
  }
  return services;
}

}  // namespace rpcrdma::dump
