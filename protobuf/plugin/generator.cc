#include "protobuf/plugin/generator.h"

#include <cctype>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/io/printer.h"
#include "google/protobuf/io/zero_copy_stream.h"

namespace rpcrdma::protobuf::plugin {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::FileOptions;
using google::protobuf::MethodDescriptor;
using google::protobuf::ServiceDescriptor;
using google::protobuf::io::Printer;

using Vars = std::map<std::string, std::string>;

std::string StripProto(const std::string& name) {
  const std::string suffix = ".proto";
  if (name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return name.substr(0, name.size() - suffix.size());
  }
  return name;
}

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

std::string HeaderGuard(const std::string& base) {
  std::string guard = "RPCRDMA_GENERATED_";
  for (char c : base) {
    guard +=
        std::isalnum(static_cast<unsigned char>(c))
            ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
            : '_';
  }
  return guard + "_RPCRDMA_PB_H_";
}

bool IsUnary(const MethodDescriptor* m) {
  return !m->client_streaming() && !m->server_streaming();
}

bool IsServerStreaming(const MethodDescriptor* m) {
  return !m->client_streaming() && m->server_streaming();
}

std::string StreamingKind(const MethodDescriptor* m) {
  if (m->client_streaming() && m->server_streaming()) return "bidirectional";
  return m->client_streaming() ? "client-streaming" : "server-streaming";
}

Vars MethodVars(const MethodDescriptor* m) {
  return {{"method", m->name()},
          {"index", absl::StrCat(m->index())},
          {"full_name", m->full_name()},
          {"kind", IsUnary(m) ? "unary" : StreamingKind(m)},
          {"request", QualifiedClassName(m->input_type())},
          {"response", QualifiedClassName(m->output_type())}};
}

void OpenNamespaces(Printer& p, const FileDescriptor* file) {
  for (absl::string_view part :
       absl::StrSplit(file->package(), '.', absl::SkipEmpty())) {
    p.Print("namespace $ns$ {\n", "ns", std::string(part));
  }
  p.Print("namespace rdma {\n\n");
}

void CloseNamespaces(Printer& p, const FileDescriptor* file) {
  p.Print("}  // namespace rdma\n");
  std::vector<std::string> parts =
      absl::StrSplit(file->package(), '.', absl::SkipEmpty());
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    p.Print("}  // namespace $ns$\n", "ns", *it);
  }
}

void NotGenerated(Printer& p, const MethodDescriptor* m) {
  p.Print(MethodVars(m),
          "// $method$ is $kind$: not generated, this version serves unary\n"
          "// and server-streaming methods only (a server answers it\n"
          "// PROC_UNAVAIL).\n");
}

void StubMethodDeclarations(Printer& p, const ServiceDescriptor* s);
void HandlerDeclarations(Printer& p, const ServiceDescriptor* s);
void StubMethodDefinitions(Printer& p, const ServiceDescriptor* s);
void HandlerRegistrations(Printer& p, const ServiceDescriptor* s);
void DefaultHandlerDefinitions(Printer& p, const ServiceDescriptor* s);

void ServiceDeclaration(Printer& p, const ServiceDescriptor* s) {
  p.Print({{"service", s->name()}, {"full_name", s->full_name()}},
          "// $full_name$ over RPC-over-RDMA (rpcrdma/protobuf/service.h).\n"
          "class $service$ final {\n"
          " public:\n"
          "  static constexpr const char* service_full_name() {\n"
          "    return \"$full_name$\";\n"
          "  }\n"
          "  static const ::google::protobuf::ServiceDescriptor* "
          "descriptor();\n\n"
          "  class Stub final {\n"
          "   public:\n"
          "    // program 0: derived from the service's full name.\n"
          "    explicit Stub(\n"
          "        std::shared_ptr<::rpcrdma::protobuf::Channel> channel,\n"
          "        uint32_t program = 0);\n"
          "    uint32_t program() const { return program_; }\n\n");
  StubMethodDeclarations(p, s);
  p.Print({{"service", s->name()}},
          "\n   private:\n"
          "    std::shared_ptr<::rpcrdma::protobuf::Channel> channel_;\n"
          "    uint32_t program_;\n"
          "  };\n\n"
          "  // Override the methods served; the others answer "
          "UNIMPLEMENTED.\n"
          "  // A unary handler answers once through `done`, now or later\n"
          "  // from any thread; context, request and response live until\n"
          "  // then. A server-streaming handler returns its status.\n"
          "  class Service : public ::rpcrdma::protobuf::Service {\n"
          "   public:\n"
          "    explicit Service(uint32_t program = 0);\n"
          "    ~Service() override;\n\n");
  HandlerDeclarations(p, s);
  p.Print("  };\n};\n\n");
}

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
    if (!IsUnary(m)) {
      NotGenerated(p, m);
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
    if (!IsUnary(m)) {
      NotGenerated(p, m);
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

void ServiceDefinition(Printer& p, const ServiceDescriptor* s) {
  p.Print({{"service", s->name()}, {"full_name", s->full_name()}},
          "const ::google::protobuf::ServiceDescriptor* "
          "$service$::descriptor() {\n"
          "  static const ::google::protobuf::ServiceDescriptor* const d =\n"
          "      ::google::protobuf::DescriptorPool::generated_pool()\n"
          "          ->FindServiceByName(\"$full_name$\");\n"
          "  return d;\n"
          "}\n\n"
          "$service$::Stub::Stub(\n"
          "    std::shared_ptr<::rpcrdma::protobuf::Channel> channel,\n"
          "    uint32_t program)\n"
          "    : channel_(std::move(channel)),\n"
          "      program_(program != 0 ? program\n"
          "                            : "
          "::rpcrdma::protobuf::ProgramNumberFor(\n"
          "                                  \"$full_name$\")) {}\n\n");
  StubMethodDefinitions(p, s);
  HandlerRegistrations(p, s);
  DefaultHandlerDefinitions(p, s);
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
    if (!IsUnary(m)) continue;
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
    if (!IsUnary(m)) continue;
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
    if (!IsUnary(m)) continue;
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

}  // namespace

bool Generator::Generate(const FileDescriptor* file,
                         const std::string& /*parameter*/,
                         google::protobuf::compiler::GeneratorContext* context,
                         std::string* error) const {
  if (file->service_count() > 0 &&
      file->options().optimize_for() == FileOptions::LITE_RUNTIME) {
    *error = absl::StrCat(
        file->name(),
        ": services over rpcrdma need the full protobuf runtime (its "
        "reflection moves bulk fields); remove optimize_for = LITE_RUNTIME");
    return false;
  }
  const std::string base = StripProto(file->name());
  const Vars file_vars = {
      {"proto", file->name()}, {"base", base}, {"guard", HeaderGuard(base)}};
  {
    std::unique_ptr<google::protobuf::io::ZeroCopyOutputStream> out(
        context->Open(base + ".rpcrdma.pb.h"));
    Printer p(out.get(), '$');
    p.Print(file_vars,
            "// Generated by protoc-gen-rpcrdma from $proto$. DO NOT EDIT.\n"
            "#ifndef $guard$\n"
            "#define $guard$\n\n"
            "#include <cstdint>\n"
            "#include <functional>\n"
            "#include <memory>\n\n"
            "#include \"$base$.pb.h\"\n"
            "#include \"rpcrdma/protobuf/channel.h\"\n"
            "#include \"rpcrdma/protobuf/client_context.h\"\n"
            "#include \"rpcrdma/protobuf/server_context.h\"\n"
            "#include \"rpcrdma/protobuf/service.h\"\n"
            "#include \"rpcrdma/protobuf/status.h\"\n"
            "#include \"rpcrdma/protobuf/stream.h\"\n\n");
    if (file->service_count() > 0) {
      OpenNamespaces(p, file);
      for (int i = 0; i < file->service_count(); ++i) {
        ServiceDeclaration(p, file->service(i));
      }
      CloseNamespaces(p, file);
      p.Print("\n");
    } else {
      p.Print("// $proto$ declares no service.\n\n", "proto", file->name());
    }
    p.Print(file_vars, "#endif  // $guard$\n");
  }
  std::unique_ptr<google::protobuf::io::ZeroCopyOutputStream> out(
      context->Open(base + ".rpcrdma.pb.cc"));
  Printer p(out.get(), '$');
  p.Print(file_vars,
          "// Generated by protoc-gen-rpcrdma from $proto$. DO NOT EDIT.\n"
          "#include \"$base$.rpcrdma.pb.h\"\n\n");
  if (file->service_count() == 0) return true;
  p.Print(
      "#include <utility>\n\n"
      "#include \"absl/status/status.h\"\n"
      "#include \"google/protobuf/descriptor.h\"\n"
      "#include \"rpcrdma/protobuf/program.h\"\n\n");
  OpenNamespaces(p, file);
  for (int i = 0; i < file->service_count(); ++i) {
    ServiceDefinition(p, file->service(i));
  }
  CloseNamespaces(p, file);
  return true;
}

}  // namespace rpcrdma::protobuf::plugin
