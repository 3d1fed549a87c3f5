#include "plugin/config/field_hint.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace rpcrdma::config {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// The text between the quotes that follow `after` in `message`.
absl::string_view QuotedAfter(absl::string_view message,
                              absl::string_view after) {
  const size_t at = message.find(after);
  if (at == absl::string_view::npos) return {};
  const size_t start = at + after.size();
  const size_t end = message.find('"', start);
  if (end == absl::string_view::npos) return {};
  return message.substr(start, end - start);
}

// Levenshtein distance: field names are short, so the quadratic table is
// cheap (no library in the build offers one).
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The chain of message types from `root` down to the one named `name`
// (root first), or empty when it is not under `root`.
bool PathTo(const Descriptor& from, absl::string_view name,
            std::vector<const Descriptor*>& path) {
  path.push_back(&from);
  if (from.full_name() == name) return true;
  for (int i = 0; i < from.field_count(); ++i) {
    const Descriptor* child = from.field(i)->message_type();
    if (child != nullptr &&
        std::find(path.begin(), path.end(), child) == path.end() &&
        PathTo(*child, name, path)) {
      return true;
    }
  }
  path.pop_back();
  return false;
}

}  // namespace

std::string UnknownFieldHint(absl::string_view parser_message,
                             const Descriptor& root) {
  const absl::string_view type = QuotedAfter(parser_message, "Message type \"");
  const absl::string_view field =
      QuotedAfter(parser_message, "has no field named \"");
  std::vector<const Descriptor*> path;
  if (type.empty() || field.empty() || !PathTo(root, type, path)) return "";
  // A field of an enclosing message: the block was not closed.
  for (size_t i = path.size() - 1; i-- > 0;) {
    if (path[i]->FindFieldByName(std::string(field)) != nullptr) {
      return absl::StrCat(" (\"", field, "\" is a field of ",
                          path[i]->full_name(),
                          ": is a \"}\" missing before it?)");
    }
  }
  const Descriptor& message = *path.back();
  const FieldDescriptor* closest = nullptr;
  size_t best = 3;  // at most two edits away
  for (int i = 0; i < message.field_count(); ++i) {
    const size_t d = EditDistance(field, message.field(i)->name());
    if (d < best) {
      best = d;
      closest = message.field(i);
    }
  }
  if (closest == nullptr) return "";
  return absl::StrCat(" (did you mean \"", closest->name(), "\"?)");
}

}  // namespace rpcrdma::config
