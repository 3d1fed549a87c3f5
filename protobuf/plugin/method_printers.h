// The per-method parts of protoc-gen-rpcrdma's output: for each method of
// a service, by its kind (unary, server-streaming, client-streaming,
// bidirectional), the Stub's methods, the Service's virtual handlers,
// their definitions, registrations and UNIMPLEMENTED defaults.
#ifndef RPCRDMA_PROTOBUF_PLUGIN_METHOD_PRINTERS_H_
#define RPCRDMA_PROTOBUF_PLUGIN_METHOD_PRINTERS_H_

#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/printer.h"

namespace rpcrdma::protobuf::plugin {

// In the header's class declaration.
void StubMethodDeclarations(google::protobuf::io::Printer& p,
                            const google::protobuf::ServiceDescriptor* s);
void HandlerDeclarations(google::protobuf::io::Printer& p,
                         const google::protobuf::ServiceDescriptor* s);
// In the .cc file.
void StubMethodDefinitions(google::protobuf::io::Printer& p,
                           const google::protobuf::ServiceDescriptor* s);
void HandlerRegistrations(google::protobuf::io::Printer& p,
                          const google::protobuf::ServiceDescriptor* s);
void DefaultHandlerDefinitions(google::protobuf::io::Printer& p,
                               const google::protobuf::ServiceDescriptor* s);

}  // namespace rpcrdma::protobuf::plugin

#endif  // RPCRDMA_PROTOBUF_PLUGIN_METHOD_PRINTERS_H_
