// protoc-gen-rpcrdma: protoc --rpcrdma_out=DIR --plugin=protoc-gen-rpcrdma
#include "google/protobuf/compiler/plugin.h"
#include "protobuf/plugin/generator.h"

int main(int argc, char* argv[]) {
  rpcrdma::protobuf::plugin::Generator generator;
  return google::protobuf::compiler::PluginMain(argc, argv, &generator);
}
