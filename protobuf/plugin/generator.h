// protoc-gen-rpcrdma's generator: for NAME.proto, NAME.rpcrdma.pb.h and
// NAME.rpcrdma.pb.cc with, per service, a Stub and a Service base in the
// nested namespace `rdma` of the file's package (pkg::rdma::Greeter), so
// that they sit beside grpc_cpp_plugin's pkg::Greeter in one program.
// Every file gets both outputs, with or without services, so that a build
// can name them in advance.
#ifndef RPCRDMA_PROTOBUF_PLUGIN_GENERATOR_H_
#define RPCRDMA_PROTOBUF_PLUGIN_GENERATOR_H_

#include <string>

#include "google/protobuf/compiler/code_generator.h"
#include "google/protobuf/descriptor.h"

namespace rpcrdma::protobuf::plugin {

class Generator : public google::protobuf::compiler::CodeGenerator {
 public:
  bool Generate(const google::protobuf::FileDescriptor* file,
                const std::string& parameter,
                google::protobuf::compiler::GeneratorContext* context,
                std::string* error) const override;
  uint64_t GetSupportedFeatures() const override {
    return FEATURE_PROTO3_OPTIONAL;
  }
};

}  // namespace rpcrdma::protobuf::plugin

#endif  // RPCRDMA_PROTOBUF_PLUGIN_GENERATOR_H_
