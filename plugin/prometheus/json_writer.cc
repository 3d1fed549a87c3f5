#include "plugin/prometheus/json_writer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rpcrdma::prometheus_internal {
namespace {

// The length of the well-formed UTF-8 sequence at the start of `text`
// (Unicode 15 Table 3-7: no overlong forms, surrogates or code points
// above U+10FFFF), or 0 when it is not one.
size_t Utf8SequenceLength(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint8_t low = 0x80;
  uint8_t high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (text.size() < length) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

}  // namespace

void JsonWriter::Key(std::string_view name) {
  BeforeValue();
  AppendEscaped(name);
  out_ += ':';
  after_key_ = true;
}

void JsonWriter::String(std::string_view text) {
  BeforeValue();
  AppendEscaped(text);
}

void JsonWriter::Number(uint64_t value) {
  BeforeValue();
  absl::StrAppend(&out_, value);
}

void JsonWriter::Bool(bool value) {
  BeforeValue();
  out_ += value ? "true" : "false";
}

void JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
}

void JsonWriter::Open(char bracket) {
  BeforeValue();
  out_ += bracket;
  empty_.push_back(true);
}

void JsonWriter::Close(char bracket) {
  out_ += bracket;
  empty_.pop_back();
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (empty_.empty()) return;
  if (!empty_.back()) out_ += ',';
  empty_.back() = false;
}

void JsonWriter::AppendEscaped(std::string_view text) {
  out_ += '"';
  while (!text.empty()) {
    const char c = text.front();
    const size_t length = Utf8SequenceLength(text);
    if (length == 0) {
      out_ += "\\ufffd";
      text.remove_prefix(1);
      continue;
    }
    if (c == '"' || c == '\\') {
      out_ += '\\';
      out_ += c;
    } else if (static_cast<uint8_t>(c) < 0x20) {
      absl::StrAppendFormat(&out_, "\\u%04x", static_cast<unsigned>(c));
    } else {
      out_.append(text.substr(0, length));
    }
    text.remove_prefix(length);
  }
  out_ += '"';
}

}  // namespace rpcrdma::prometheus_internal
