// Names the field a text-format parse error is about. protobuf's
// TextFormat::Parser reports a wrong value ("max_requests: -1" for an
// unsigned field, a string where a number belongs) as "Expected integer,
// got: -" with a line and column but without the field; this finds the
// field by reading the text up to that position.
#ifndef RPCRDMA_PLUGIN_CONFIG_FIELD_AT_H_
#define RPCRDMA_PLUGIN_CONFIG_FIELD_AT_H_

#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"

namespace rpcrdma::config {

// The field whose name precedes (line, column) (0-based, as the tokenizer
// counts) in `text`, a text-format `root` message: its dotted path from
// the root and its type, e.g. "credits.max_requests (uint32)". Empty when
// the text there names no field of `root` (an unknown field, whose error
// names it already).
std::string FieldAt(absl::string_view text, int line, int column,
                    const google::protobuf::Descriptor& root);

}  // namespace rpcrdma::config

#endif  // RPCRDMA_PLUGIN_CONFIG_FIELD_AT_H_
