#include "protobuf/plugin/generator.h"

#include <cctype>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/io/printer.h"
#include "google/protobuf/io/zero_copy_stream.h"
#include "protobuf/plugin/method_printers.h"

namespace rpcrdma::protobuf::plugin {
namespace {

using google::protobuf::FileDescriptor;
using google::protobuf::FileOptions;
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
          "  // then. A streaming handler runs on a thread of its own for\n"
          "  // its stream and returns the stream's status.\n"
          "  class Service : public ::rpcrdma::protobuf::Service {\n"
          "   public:\n"
          "    explicit Service(uint32_t program = 0);\n"
          "    ~Service() override;\n\n");
  HandlerDeclarations(p, s);
  p.Print("  };\n};\n\n");
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
