// Loading a transport configuration (rpcrdma::config::TransportConfig, the
// schema in rpcrdma/config.proto with every field's unit, range and
// default) from text format, for Channel::Create and Server::Create.
//
// Every function returns a validated configuration or INVALID_ARGUMENT
// whose message names the source, and the line or the field:
//   - a syntax error or unknown field:  "<source>:<line>:<column>: <what>"
//   - a value of the wrong type:
//       "<source>:<line>:<column>: <field.path> (<type>): <what>"
//     e.g. "tuned.textproto:3:17: credits.max_requests (uint32): Expected
//     integer, got: -"
//   - a value out of range or contradicting another field, one line each:
//       "<source>: <field.path>: <value> <reason>"
//   - an unknown field, with the likely fix: "did you mean ..." for a
//     misspelt field, or, for a field of an enclosing message, whether a
//     "}" is missing before it.
// These functions return their errors without logging them;
// Channel::Create and Server::Create log a configuration they reject at
// kError (rpcrdma/log.h).
//
// Without code: RPCRDMA_CONFIG=PATH makes Channel::Create and
// Server::Create load PATH with LoadConfigFile when the program passed a
// TransportConfig with no field set; an error fails Create with this
// status, its message prefixed "RPCRDMA_CONFIG=PATH: " (docs/debugging.md,
// "Without touching code").
#ifndef RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_CONFIG_H_
#define RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_CONFIG_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rpcrdma/config.pb.h"

namespace rpcrdma {

// Reads the text-format file at `path` (its path is the source name).
// NOT_FOUND when it does not exist, PERMISSION_DENIED when it cannot be
// read, FAILED_PRECONDITION when it is not a regular file,
// RESOURCE_EXHAUSTED above 1 MiB, INVALID_ARGUMENT as above.
absl::StatusOr<config::TransportConfig> LoadConfigFile(const std::string& path);

// Parses `text`; `source_name` stands for it in error messages.
absl::StatusOr<config::TransportConfig> ParseConfig(
    absl::string_view text, absl::string_view source_name = "config");

// Checks a configuration built in code, as Create does.
absl::Status ValidateConfig(const config::TransportConfig& config,
                            absl::string_view source_name = "config");

// Every field set explicitly to its default (the Linux kernel's values
// where it has them).
config::TransportConfig DefaultConfig();

}  // namespace rpcrdma

#endif  // RPCRDMA_PLUGIN_INCLUDE_RPCRDMA_CONFIG_H_
