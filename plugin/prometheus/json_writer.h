// A small streaming JSON writer for the exporter's /status?format=json:
// it places the commas and escapes strings (RFC 8259 §7), replacing bytes
// that are not UTF-8 with U+FFFD so that any label yields valid JSON. The
// exporter writes JSON nowhere else, and this keeps its library free of a
// JSON dependency.
#ifndef RPCRDMA_PLUGIN_PROMETHEUS_JSON_WRITER_H_
#define RPCRDMA_PLUGIN_PROMETHEUS_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rpcrdma::prometheus_internal {

class JsonWriter {
 public:
  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  // The next value is this member's.
  void Key(std::string_view name);
  void String(std::string_view text);
  void Number(uint64_t value);
  void Bool(bool value);
  void Null();

  const std::string& text() const { return out_; }

 private:
  void Open(char bracket);
  void Close(char bracket);
  // The comma before a value or key, unless it is a member's value or the
  // first in its container.
  void BeforeValue();
  void AppendEscaped(std::string_view text);

  std::string out_;
  // Per open container: whether it has no element yet.
  std::vector<bool> empty_;
  bool after_key_ = false;
};

}  // namespace rpcrdma::prometheus_internal

#endif  // RPCRDMA_PLUGIN_PROMETHEUS_JSON_WRITER_H_
