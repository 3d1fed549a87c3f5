#include "protobuf/plugin/method_printers.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace rpcrdma::protobuf::plugin {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::MethodDescriptor;
using google::protobuf::ServiceDescriptor;
using google::protobuf::io::Printer;

using Vars = std::map<std::string, std::string>;

std::string PackageNamespace(const FileDescriptor* file) {
  if (file->package().empty()) return "";
  return absl::StrCat("::",
                      absl::StrReplaceAll(file->package(), {{".", "::"}}));
}

// protoc's C++ name for a message: nested types joined with '_'.
std::string ClassName(const Descriptor* d) {
  if (d->containing_type() == nullptr) return d->name();
  return absl::StrCat(ClassName(d->containing_type()), "_", d->name());
}

std::string QualifiedClassName(const Descriptor* d) {
  return absl::StrCat(PackageNamespace(d->file()), "::", ClassName(d));
}

bool IsServerStreaming(const MethodDescriptor* m) {
  return !m->client_streaming() && m->server_streaming();
}

bool IsClientStreaming(const MethodDescriptor* m) {
  return m->client_streaming() && !m->server_streaming();
}

bool IsBidiStreaming(const MethodDescriptor* m) {
  return m->client_streaming() && m->server_streaming();
}

Vars MethodVars(const MethodDescriptor* m) {
  return {{"method", m->name()},
          {"index", absl::StrCat(m->index())},
          {"full_name", m->full_name()},
          {"request", QualifiedClassName(m->input_type())},
          {"response", QualifiedClassName(m->output_type())}};
}

}  // namespace

// The Stub's methods, one or two per method of the service.
void StubMethodDeclarations(Printer& p, const ServiceDescriptor* s) {
  p.Indent();
  p.Indent();
  for (int i = 0; i < s->method_count(); ++i) {
    const MethodDescriptor* m = s->method(i);
    if (IsServerStreaming(m)) {
      p.Print(MethodVars(m),
              "// Opens the stream, blocking until the server answered; read\n"
              "// it with Read until false, then Finish (stream.h). Never\n"
              "// null; `context` must outlive the reader.\n"
              "std::unique_ptr<::rpcrdma::protobuf::ClientReader<$response$>>\n"
              "$method$(::rpcrdma::protobuf::ClientContext* context,\n"
              "    const $request$& request);\n");
      continue;
    }
    if (IsClientStreaming(m)) {
      p.Print(
          MethodVars(m),
          "// Opens the stream, blocking until the server answered; write\n"
          "// it with Write, then Finish, which fills `response` (stream.h).\n"
          "// Never null; `context` and `response` must outlive the writer.\n"
          "std::unique_ptr<::rpcrdma::protobuf::ClientWriter<$request$>>\n"
          "$method$(::rpcrdma::protobuf::ClientContext* context,\n"
          "    $response$* response);\n");
      continue;
    }
    if (IsBidiStreaming(m)) {
      p.Print(MethodVars(m),
              "// Opens the stream, blocking until the server answered; Write\n"
              "// and WritesDone, Read until false, then Finish (stream.h).\n"
              "// Never null; `context` must outlive the stream.\n"
              "std::unique_ptr<::rpcrdma::protobuf::ClientReaderWriter<\n"
              "    $request$, $response$>>\n"
              "$method$(::rpcrdma::protobuf::ClientContext* context);\n");
      continue;
    }
    p.Print(MethodVars(m),
            "// Blocks until the reply; then the async form, whose `done`\n"
            "// runs once on a loop thread (it must not block).\n"
            "::rpcrdma::protobuf::Status $method$(\n"
            "    ::rpcrdma::protobuf::ClientContext* context,\n"
            "    const $request$& request, $response$* response);\n"
            "void $method$(::rpcrdma::protobuf::ClientContext* context,\n"
            "    const $request$* request, $response$* response,\n"
            "    std::function<void(::rpcrdma::protobuf::Status)> done);\n");
  }
  p.Outdent();
  p.Outdent();
}

// The Service's virtual handlers, one per method of the service.
void HandlerDeclarations(Printer& p, const ServiceDescriptor* s) {
  p.Indent();
  p.Indent();
  for (int i = 0; i < s->method_count(); ++i) {
    const MethodDescriptor* m = s->method(i);
    if (IsServerStreaming(m)) {
      p.Print(MethodVars(m),
              "// Runs on a thread of its own for the stream; Write blocks\n"
              "// while the client is behind and fails once the stream was\n"
              "// cancelled. Returning ends the stream with that status.\n"
              "virtual ::rpcrdma::protobuf::Status $method$(\n"
              "    ::rpcrdma::protobuf::ServerContext* context,\n"
              "    const $request$* request,\n"
              "    ::rpcrdma::protobuf::ServerWriter<$response$>* writer);\n");
      continue;
    }
    if (IsClientStreaming(m)) {
      p.Print(
          MethodVars(m),
          "// Runs on a thread of its own for the stream; Read blocks\n"
          "// until the client's next message and is false after its\n"
          "// last (or once cancelled). `response` goes when it returns OK.\n"
          "virtual ::rpcrdma::protobuf::Status $method$(\n"
          "    ::rpcrdma::protobuf::ServerContext* context,\n"
          "    ::rpcrdma::protobuf::ServerReader<$request$>* reader,\n"
          "    $response$* response);\n");
      continue;
    }
    if (IsBidiStreaming(m)) {
      p.Print(MethodVars(m),
              "// Runs on a thread of its own for the stream; Read is false\n"
              "// after the client's last message, Write blocks while the\n"
              "// client is behind, both fail once the stream was cancelled.\n"
              "// Returning ends the stream with that status.\n"
              "virtual ::rpcrdma::protobuf::Status $method$(\n"
              "    ::rpcrdma::protobuf::ServerContext* context,\n"
              "    ::rpcrdma::protobuf::ServerReaderWriter<$response$,\n"
              "        $request$>* stream);\n");
      continue;
    }
    p.Print(MethodVars(m),
            "virtual void $method$(::rpcrdma::protobuf::ServerContext* "
            "context,\n"
            "    const $request$* request, $response$* response,\n"
            "    ::rpcrdma::protobuf::Completion done);\n");
  }
  p.Outdent();
  p.Outdent();
}
// What each Stub method calls on the channel.
void StubMethodDefinitions(Printer& p, const ServiceDescriptor* s) {
  for (int i = 0; i < s->method_count(); ++i) {
    const MethodDescriptor* m = s->method(i);
    Vars v = MethodVars(m);
    v["service"] = s->name();
    if (IsServerStreaming(m)) {
      p.Print(v,
              "std::unique_ptr<::rpcrdma::protobuf::ClientReader<$response$>>\n"
              "$service$::Stub::$method$(\n"
              "    ::rpcrdma::protobuf::ClientContext* context,\n"
              "    const $request$& request) {\n"
              "  return std::make_unique<\n"
              "      ::rpcrdma::protobuf::ClientReader<$response$>>(\n"
              "      channel_->OpenServerStream(\n"
              "          program_, *$service$::descriptor()->method($index$),\n"
              "          *context, request));\n"
              "}\n\n");
      continue;
    }
    if (IsClientStreaming(m)) {
      p.Print(v,
              "std::unique_ptr<::rpcrdma::protobuf::ClientWriter<$request$>>\n"
              "$service$::Stub::$method$(\n"
              "    ::rpcrdma::protobuf::ClientContext* context,\n"
              "    $response$* response) {\n"
              "  return std::make_unique<\n"
              "      ::rpcrdma::protobuf::ClientWriter<$request$>>(\n"
              "      channel_->OpenClientStream(\n"
              "          program_, *$service$::descriptor()->method($index$),\n"
              "          *context),\n"
              "      response);\n"
              "}\n\n");
      continue;
    }
    if (IsBidiStreaming(m)) {
      p.Print(
          v,
          "std::unique_ptr<::rpcrdma::protobuf::ClientReaderWriter<\n"
          "    $request$, $response$>>\n"
          "$service$::Stub::$method$(\n"
          "    ::rpcrdma::protobuf::ClientContext* context) {\n"
          "  return std::make_unique<::rpcrdma::protobuf::ClientReaderWriter<\n"
          "      $request$, $response$>>(\n"
          "      channel_->OpenClientStream(\n"
          "          program_, *$service$::descriptor()->method($index$),\n"
          "          *context));\n"
          "}\n\n");
      continue;
    }
    p.Print(v,
            "::rpcrdma::protobuf::Status $service$::Stub::$method$(\n"
            "    ::rpcrdma::protobuf::ClientContext* context,\n"
            "    const $request$& request, $response$* response) {\n"
            "  return channel_->CallUnary(program_, "
            "*$service$::descriptor()->method($index$),\n"
            "                             *context, request, *response);\n"
            "}\n\n"
            "void $service$::Stub::$method$(\n"
            "    ::rpcrdma::protobuf::ClientContext* context,\n"
            "    const $request$* request, $response$* response,\n"
            "    std::function<void(::rpcrdma::protobuf::Status)> done) {\n"
            "  channel_->CallUnaryAsync(program_, "
            "*$service$::descriptor()->method($index$),\n"
            "                           *context, *request, *response,\n"
            "                           std::move(done));\n"
            "}\n\n");
  }
}

// The Service's constructor: each served method's handler registered.
void HandlerRegistrations(Printer& p, const ServiceDescriptor* s) {
  p.Print({{"service", s->name()}},
          "$service$::Service::Service(uint32_t program)\n"
          "    : ::rpcrdma::protobuf::Service($service$::descriptor(), "
          "program) {\n");
  for (int i = 0; i < s->method_count(); ++i) {
    const MethodDescriptor* m = s->method(i);
    if (IsServerStreaming(m)) {
      p.Print(
          MethodVars(m),
          "  AddServerStreamingMethod(\n"
          "      $index$, [this](::rpcrdma::protobuf::ServerContext* "
          "context,\n"
          "                 const ::google::protobuf::Message* request,\n"
          "                 ::rpcrdma::protobuf::ServerStreamWriter* "
          "writer) {\n"
          "        ::rpcrdma::protobuf::ServerWriter<$response$> "
          "typed(writer);\n"
          "        return $method$(context,\n"
          "                        static_cast<const $request$*>(request),\n"
          "                        &typed);\n"
          "      });\n");
      continue;
    }
    if (IsClientStreaming(m)) {
      p.Print(MethodVars(m),
              "  AddClientStreamingMethod(\n"
              "      $index$, [this](::rpcrdma::protobuf::ServerContext* "
              "context,\n"
              "                 ::rpcrdma::protobuf::ServerStreamReader* "
              "reader,\n"
              "                 ::google::protobuf::Message* response) {\n"
              "        ::rpcrdma::protobuf::ServerReader<$request$> "
              "typed(reader);\n"
              "        return $method$(context, &typed,\n"
              "                        static_cast<$response$*>(response));\n"
              "      });\n");
      continue;
    }
    if (IsBidiStreaming(m)) {
      p.Print(MethodVars(m),
              "  AddBidiStreamingMethod(\n"
              "      $index$, [this](::rpcrdma::protobuf::ServerContext* "
              "context,\n"
              "                 ::rpcrdma::protobuf::ServerStreamReader* "
              "reader,\n"
              "                 ::rpcrdma::protobuf::ServerStreamWriter* "
              "writer) {\n"
              "        ::rpcrdma::protobuf::ServerReaderWriter<$response$,\n"
              "            $request$> typed(reader, writer);\n"
              "        return $method$(context, &typed);\n"
              "      });\n");
      continue;
    }
    p.Print(MethodVars(m),
            "  AddMethod($index$, [this](::rpcrdma::protobuf::ServerContext* "
            "context,\n"
            "                        const ::google::protobuf::Message* "
            "request,\n"
            "                        ::google::protobuf::Message* response,\n"
            "                        ::rpcrdma::protobuf::Completion done) {\n"
            "    $method$(context, static_cast<const $request$*>(request),\n"
            "             static_cast<$response$*>(response), "
            "std::move(done));\n"
            "  });\n");
  }
  p.Print({{"service", s->name()}},
          "}\n\n"
          "$service$::Service::~Service() = default;\n\n");
}

// The handlers a subclass does not override: UNIMPLEMENTED.
void DefaultHandlerDefinitions(Printer& p, const ServiceDescriptor* s) {
  for (int i = 0; i < s->method_count(); ++i) {
    const MethodDescriptor* m = s->method(i);
    Vars v = MethodVars(m);
    v["service"] = s->name();
    if (IsServerStreaming(m)) {
      p.Print(
          v,
          "::rpcrdma::protobuf::Status $service$::Service::$method$(\n"
          "    ::rpcrdma::protobuf::ServerContext* /*context*/,\n"
          "    const $request$* /*request*/,\n"
          "    ::rpcrdma::protobuf::ServerWriter<$response$>* /*writer*/) {\n"
          "  return ::absl::UnimplementedError(\n"
          "      \"$full_name$ is not implemented by this server\");\n"
          "}\n\n");
      continue;
    }
    if (IsClientStreaming(m)) {
      p.Print(v,
              "::rpcrdma::protobuf::Status $service$::Service::$method$(\n"
              "    ::rpcrdma::protobuf::ServerContext* /*context*/,\n"
              "    ::rpcrdma::protobuf::ServerReader<$request$>* /*reader*/,\n"
              "    $response$* /*response*/) {\n"
              "  return ::absl::UnimplementedError(\n"
              "      \"$full_name$ is not implemented by this server\");\n"
              "}\n\n");
      continue;
    }
    if (IsBidiStreaming(m)) {
      p.Print(v,
              "::rpcrdma::protobuf::Status $service$::Service::$method$(\n"
              "    ::rpcrdma::protobuf::ServerContext* /*context*/,\n"
              "    ::rpcrdma::protobuf::ServerReaderWriter<$response$,\n"
              "        $request$>* /*stream*/) {\n"
              "  return ::absl::UnimplementedError(\n"
              "      \"$full_name$ is not implemented by this server\");\n"
              "}\n\n");
      continue;
    }
    p.Print(v,
            "void $service$::Service::$method$(\n"
            "    ::rpcrdma::protobuf::ServerContext* /*context*/,\n"
            "    const $request$* /*request*/, $response$* /*response*/,\n"
            "    ::rpcrdma::protobuf::Completion done) {\n"
            "  done.Finish(::absl::UnimplementedError(\n"
            "      \"$full_name$ is not implemented by this server\"));\n"
            "}\n\n");
  }
}

}  // namespace rpcrdma::protobuf::plugin
