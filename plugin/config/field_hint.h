// A hint for protobuf's text-format error about an unknown field
// ('Message type "rpcrdma.config.Credits" has no field named "timeouts".'),
// which names neither what was meant nor the likely cause:
//   - a field of an enclosing message (a "}" missing before it), or
//   - a field of the same message one or two edits away (a misspelling).
#ifndef RPCRDMA_PLUGIN_CONFIG_FIELD_HINT_H_
#define RPCRDMA_PLUGIN_CONFIG_FIELD_HINT_H_

#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"

namespace rpcrdma::config {

// " (did you mean \"credits\"?)", " (\"timeouts\" is a field of
// rpcrdma.config.TransportConfig: is a \"}\" missing before it?)", or ""
// when `parser_message` is not about an unknown field of a message under
// `root` or nothing close is known.
std::string UnknownFieldHint(absl::string_view parser_message,
                             const google::protobuf::Descriptor& root);

}  // namespace rpcrdma::config

#endif  // RPCRDMA_PLUGIN_CONFIG_FIELD_HINT_H_
