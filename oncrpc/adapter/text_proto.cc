#include "oncrpc/adapter/text_proto.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace rpcrdma::oncrpc {
namespace {

constexpr size_t kMaxFileSize = 1 << 20;

class ErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  explicit ErrorCollector(absl::string_view source) : source_(source) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    errors_.push_back(line >= 0 ? absl::StrCat(source_, ":", line + 1, ":",
                                               column + 1, ": ", message)
                                : absl::StrCat(source_, ": ", message));
  }
  std::string Joined() const { return absl::StrJoin(errors_, "\n"); }

 private:
  absl::string_view source_;
  std::vector<std::string> errors_;
};

}  // namespace

absl::Status ParseTextProto(absl::string_view text,
                            absl::string_view source_name,
                            google::protobuf::Message* message) {
  ErrorCollector errors(source_name);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (parser.ParseFromString(std::string(text), message)) {
    return absl::OkStatus();
  }
  std::string joined = errors.Joined();
  if (joined.empty()) {
    joined = absl::StrCat(source_name, ": not a valid ",
                          message->GetDescriptor()->name());
  }
  return absl::InvalidArgumentError(joined);
}

absl::StatusOr<std::string> ReadTextFile(const std::string& path,
                                         absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open ", what, " ", path));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > kMaxFileSize) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " ", path, " is larger than ", kMaxFileSize, " octets"));
  }
  return text.str();
}

}  // namespace rpcrdma::oncrpc
