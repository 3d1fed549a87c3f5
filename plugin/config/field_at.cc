#include "plugin/config/field_at.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace rpcrdma::config {
namespace {

using google::protobuf::io::Tokenizer;

// The tokenizer's own errors were reported by the parser already.
class Silent : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber,
                const std::string&) override {}
};

}  // namespace

std::string FieldAt(absl::string_view text, int line, int column,
                    const google::protobuf::Descriptor& root) {
  google::protobuf::io::ArrayInputStream input(text.data(),
                                               static_cast<int>(text.size()));
  Silent silent;
  Tokenizer tokenizer(&input, &silent);
  // Names of the enclosing messages, and the latest identifier in a field
  // name's place (not a value's: an identifier right after ':' is one).
  std::vector<std::string> enclosing;
  std::string field;
  bool after_colon = false;
  while (tokenizer.Next()) {
    const Tokenizer::Token& t = tokenizer.current();
    if (t.line > line || (t.line == line && t.column >= column)) break;
    if (t.type == Tokenizer::TYPE_IDENTIFIER && !after_colon) {
      field = t.text;
    } else if (t.text == "{" || t.text == "<") {
      enclosing.push_back(field);
      field.clear();
    } else if ((t.text == "}" || t.text == ">") && !enclosing.empty()) {
      enclosing.pop_back();
      field.clear();
    }
    after_colon = t.text == ":";
  }
  if (field.empty()) return "";
  const google::protobuf::Descriptor* message = &root;
  for (const std::string& name : enclosing) {
    const google::protobuf::FieldDescriptor* f = message->FindFieldByName(name);
    if (f == nullptr || f->message_type() == nullptr) return "";
    message = f->message_type();
  }
  const google::protobuf::FieldDescriptor* f = message->FindFieldByName(field);
  if (f == nullptr) return "";
  enclosing.push_back(field);
  return absl::StrCat(absl::StrJoin(enclosing, "."), " (", f->type_name(), ")");
}

}  // namespace rpcrdma::config
