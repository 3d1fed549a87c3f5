// docs/configuration.md stays in step with config.proto: every field path
// and enum value of rpcrdma.config.TransportConfig (walked through its
// protobuf descriptor, so a field someone adds is caught) is documented,
// every field a table names exists, and every Default cell agrees with the
// defaults the loader applies.
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "plugin/config/config_loader.h"
#include "rpcrdma/config.pb.h"

namespace rpcrdma::config {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

std::string ReadDoc() {
  std::ifstream in(RPCRDMA_CONFIG_DOC);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Field paths ("limits.max_call_size") of `message` and its sub-messages.
void CollectPaths(
    const Descriptor& message, const std::string& prefix,
    std::vector<const FieldDescriptor*>& chain,
    std::map<std::string, std::vector<const FieldDescriptor*>>& paths) {
  for (int i = 0; i < message.field_count(); ++i) {
    const FieldDescriptor* field = message.field(i);
    const std::string path = prefix + field->name();
    chain.push_back(field);
    paths[path] = chain;
    if (field->type() == FieldDescriptor::TYPE_MESSAGE) {
      CollectPaths(*field->message_type(), path + ".", chain, paths);
    }
    chain.pop_back();
  }
}

std::map<std::string, std::vector<const FieldDescriptor*>> FieldPaths() {
  std::map<std::string, std::vector<const FieldDescriptor*>> paths;
  std::vector<const FieldDescriptor*> chain;
  CollectPaths(*TransportConfig::descriptor(), "", chain, paths);
  return paths;
}

// Enum values used anywhere under TransportConfig.
void CollectEnumValues(const Descriptor& message,
                       std::vector<std::string>& names) {
  for (int i = 0; i < message.field_count(); ++i) {
    const FieldDescriptor* field = message.field(i);
    if (field->type() == FieldDescriptor::TYPE_ENUM) {
      for (int v = 0; v < field->enum_type()->value_count(); ++v) {
        names.push_back(field->enum_type()->value(v)->name());
      }
    } else if (field->type() == FieldDescriptor::TYPE_MESSAGE) {
      CollectEnumValues(*field->message_type(), names);
    }
  }
}

// Rows "| `path` | type | default | rule |" of the doc's field tables.
struct Row {
  std::string path;
  std::string default_cell;
};
std::vector<Row> TableRows(const std::string& doc) {
  std::vector<Row> rows;
  for (absl::string_view line : absl::StrSplit(doc, '\n')) {
    if (!absl::ConsumePrefix(&line, "| `")) continue;
    std::vector<absl::string_view> cells = absl::StrSplit(line, '|');
    for (absl::string_view& cell : cells) {
      cell = absl::StripAsciiWhitespace(cell);
    }
    if (cells.size() < 4 || !absl::ConsumeSuffix(&cells[0], "`")) continue;
    rows.push_back({std::string(cells[0]), std::string(cells[2])});
  }
  return rows;
}

TEST(ConfigDoc, DocumentsEveryFieldPath) {
  const std::string doc = ReadDoc();
  ASSERT_FALSE(doc.empty()) << "cannot read " << RPCRDMA_CONFIG_DOC;
  std::map<std::string, bool> in_table;
  for (const Row& row : TableRows(doc)) in_table[row.path] = true;
  for (const auto& [path, chain] : FieldPaths()) {
    EXPECT_TRUE(in_table.count(path))
        << "docs/configuration.md has no table row for the field `" << path
        << "` of rpcrdma.config.TransportConfig";
  }
}

TEST(ConfigDoc, DocumentsEveryEnumValue) {
  const std::string doc = ReadDoc();
  std::vector<std::string> names;
  CollectEnumValues(*TransportConfig::descriptor(), names);
  ASSERT_FALSE(names.empty());
  for (const std::string& name : names) {
    EXPECT_NE(doc.find("`" + name + "`"), std::string::npos)
        << "docs/configuration.md does not name the enum value " << name;
  }
}

TEST(ConfigDoc, TablesNameOnlyRealFields) {
  const auto paths = FieldPaths();
  const std::vector<Row> rows = TableRows(ReadDoc());
  ASSERT_FALSE(rows.empty());
  for (const Row& row : rows) {
    EXPECT_TRUE(paths.count(row.path))
        << "docs/configuration.md documents `" << row.path
        << "`, which TransportConfig does not have";
  }
}

// A scalar's Default cell starts with the value DefaultConfig() holds, in
// text format between backticks.
TEST(ConfigDoc, DefaultsMatchTheLoader) {
  const TransportConfig defaults = DefaultConfig();
  const auto paths = FieldPaths();
  for (const Row& row : TableRows(ReadDoc())) {
    auto it = paths.find(row.path);
    if (it == paths.end()) continue;  // reported by TablesNameOnlyRealFields
    const std::vector<const FieldDescriptor*>& chain = it->second;
    if (chain.back()->type() == FieldDescriptor::TYPE_MESSAGE) continue;
    const google::protobuf::Message* holder = &defaults;
    for (size_t i = 0; i + 1 < chain.size(); ++i) {
      holder = &holder->GetReflection()->GetMessage(*holder, chain[i]);
    }
    std::string want;
    google::protobuf::TextFormat::PrintFieldValueToString(*holder, chain.back(),
                                                          -1, &want);
    absl::string_view cell = row.default_cell;
    EXPECT_TRUE(absl::ConsumePrefix(&cell, "`" + want + "`"))
        << "`" << row.path << "`: the doc's default is \"" << row.default_cell
        << "\", the loader's is " << want;
  }
}

}  // namespace
}  // namespace rpcrdma::config
