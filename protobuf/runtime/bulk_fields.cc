#include "protobuf/runtime/bulk_fields.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "protobuf/runtime/proto_options.h"

namespace rpcrdma::protobuf::runtime {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

bool KeyLess(const Message& a, const Message& b, const FieldDescriptor* key) {
  const Reflection* ra = a.GetReflection();
  const Reflection* rb = b.GetReflection();
  switch (key->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return ra->GetInt32(a, key) < rb->GetInt32(b, key);
    case FieldDescriptor::CPPTYPE_INT64:
      return ra->GetInt64(a, key) < rb->GetInt64(b, key);
    case FieldDescriptor::CPPTYPE_UINT32:
      return ra->GetUInt32(a, key) < rb->GetUInt32(b, key);
    case FieldDescriptor::CPPTYPE_UINT64:
      return ra->GetUInt64(a, key) < rb->GetUInt64(b, key);
    case FieldDescriptor::CPPTYPE_BOOL:
      return ra->GetBool(a, key) < rb->GetBool(b, key);
    case FieldDescriptor::CPPTYPE_STRING:
      return ra->GetString(a, key) < rb->GetString(b, key);
    default:  // protobuf allows no other map key type
      return false;
  }
}

// The repeated-field indices of a map's entries in ascending key order.
std::vector<int> MapKeyOrder(const Message& message,
                             const FieldDescriptor* field) {
  const Reflection* r = message.GetReflection();
  std::vector<int> order(static_cast<size_t>(r->FieldSize(message, field)));
  std::iota(order.begin(), order.end(), 0);
  const FieldDescriptor* key = field->message_type()->map_key();
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return KeyLess(r->GetRepeatedMessage(message, field, a),
                   r->GetRepeatedMessage(message, field, b), key);
  });
  return order;
}

bool IsBytes(const FieldDescriptor* field) {
  return field->type() == FieldDescriptor::TYPE_BYTES;
}

void Extract(Message& message, size_t threshold,
             std::vector<BulkPathStep>& path, std::vector<BulkValue>& out) {
  if (path.size() >= kMaxBulkPathSteps) return;
  const Reflection* r = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->is_extension()) continue;
    const auto number = static_cast<uint32_t>(field->number());
    if (IsBytes(field)) {
      // (rpcrdma.protobuf.ddp) overrides the threshold either way.
      const Ddp ddp = DdpOf(*field);
      if (ddp == DDP_NEVER) continue;
      const size_t at_least = ddp == DDP_ALWAYS ? 0 : threshold;
      const int n = field->is_repeated() ? r->FieldSize(message, field) : 1;
      for (int i = 0; i < n; ++i) {
        std::string scratch;
        const std::string& held =
            field->is_repeated()
                ? r->GetRepeatedStringReference(message, field, i, &scratch)
                : r->GetStringReference(message, field, &scratch);
        // A field kept in another representation (a Cord) comes back as
        // `scratch`; moving that out would gain nothing: it stays inline.
        if (held.size() < at_least || &held == &scratch) continue;
        path.push_back({number, static_cast<uint32_t>(i)});
        // The message's own string: reflection offers no mutable access
        // to a string field, and a move keeps the octets where the
        // transport sends them from.
        std::string& owned = const_cast<std::string&>(held);
        out.push_back({path, std::move(owned)});
        owned.clear();
        path.pop_back();
      }
      continue;
    }
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_map()) {
      const std::vector<int> order = MapKeyOrder(message, field);
      for (size_t rank = 0; rank < order.size(); ++rank) {
        path.push_back({number, static_cast<uint32_t>(rank)});
        Extract(*r->MutableRepeatedMessage(&message, field, order[rank]),
                threshold, path, out);
        path.pop_back();
      }
    } else if (field->is_repeated()) {
      const int n = r->FieldSize(message, field);
      for (int i = 0; i < n; ++i) {
        path.push_back({number, static_cast<uint32_t>(i)});
        Extract(*r->MutableRepeatedMessage(&message, field, i), threshold, path,
                out);
        path.pop_back();
      }
    } else {
      path.push_back({number, 0});
      Extract(*r->MutableMessage(&message, field), threshold, path, out);
      path.pop_back();
    }
  }
}

absl::Status BadStep(const BulkValue& bulk, size_t step, const Message& message,
                     absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "bulk field path step ", step, " (field ", bulk.path[step].field_number,
      ", index ", bulk.path[step].index, ") in ",
      message.GetDescriptor()->full_name(), ": ", why,
      "; the peer's bulk path does not match the message type"));
}

}  // namespace

std::vector<BulkValue> ExtractBulkFields(Message& message, size_t threshold) {
  std::vector<BulkValue> out;
  std::vector<BulkPathStep> path;
  Extract(message, std::max<size_t>(threshold, 1), path, out);
  return out;
}

absl::Status BulkFieldRestorer::Restore(BulkValue& bulk) {
  if (bulk.path.empty() || bulk.path.size() > kMaxBulkPathSteps) {
    return absl::InvalidArgumentError(
        absl::StrCat("bulk field path of ", bulk.path.size(),
                     " steps; it must have 1 to ", kMaxBulkPathSteps));
  }
  Message* current = &message_;
  for (size_t step = 0; step < bulk.path.size(); ++step) {
    const BulkPathStep& s = bulk.path[step];
    const Reflection* r = current->GetReflection();
    const FieldDescriptor* field =
        s.field_number > static_cast<uint32_t>(FieldDescriptor::kMaxNumber)
            ? nullptr
            : current->GetDescriptor()->FindFieldByNumber(
                  static_cast<int>(s.field_number));
    if (field == nullptr) return BadStep(bulk, step, *current, "no such field");
    const bool last = step + 1 == bulk.path.size();
    if (last ? !IsBytes(field)
             : field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
      return BadStep(bulk, step, *current,
                     last ? "not a bytes field" : "not a message field");
    }
    int index = 0;
    if (field->is_repeated()) {
      const int size = r->FieldSize(*current, field);
      if (s.index >= static_cast<uint32_t>(size)) {
        return BadStep(
            bulk, step, *current,
            absl::StrCat("index past the field's ", size, " elements"));
      }
      index = static_cast<int>(s.index);
      if (field->is_map()) index = KeyOrder(*current, field)[s.index];
    } else {
      if (s.index != 0) {
        return BadStep(bulk, step, *current, "index of a singular field");
      }
      if (field->has_presence() && !r->HasField(*current, field)) {
        return BadStep(bulk, step, *current, "field not set");
      }
    }
    if (!last) {
      current = field->is_repeated()
                    ? r->MutableRepeatedMessage(current, field, index)
                    : r->MutableMessage(current, field);
      continue;
    }
    std::string scratch;
    const std::string& held =
        field->is_repeated()
            ? r->GetRepeatedStringReference(*current, field, index, &scratch)
            : r->GetStringReference(*current, field, &scratch);
    if (!held.empty()) {
      return BadStep(bulk, step, *current, "field already holds octets");
    }
    if (field->is_repeated()) {
      r->SetRepeatedString(current, field, index, std::move(bulk.value));
      return absl::OkStatus();
    }
    r->SetString(current, field, std::move(bulk.value));
  }
  return absl::OkStatus();
}

const std::vector<int>& BulkFieldRestorer::KeyOrder(
    const Message& owner, const FieldDescriptor* field) {
  auto [it, added] = key_orders_.try_emplace(MapOf{&owner, field});
  if (added) {
    it->second = MapKeyOrder(owner, field);
    ++key_orders_computed_;
  }
  return it->second;
}

}  // namespace rpcrdma::protobuf::runtime
