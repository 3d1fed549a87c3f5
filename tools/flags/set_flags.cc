#include "tools/flags/set_flags.h"

#include <optional>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace rpcrdma::tools {

absl::StatusOr<std::vector<std::string>> SetFlags(
    const std::vector<std::string>& args) {
  std::vector<std::string> operands;
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      operands.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    absl::string_view name =
        arg == "-h" ? absl::string_view("-help") : absl::string_view(arg);
    name.remove_prefix(absl::StartsWith(name, "--") ? 2 : 1);
    std::optional<absl::string_view> value;
    if (size_t eq = name.find('='); eq != absl::string_view::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && !value && absl::ConsumePrefix(&name, "no")) {
      flag = absl::FindCommandLineFlag(name);
      if (flag != nullptr && flag->IsOfType<bool>()) {
        value = "false";
      } else {
        flag = nullptr;
      }
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option '", arg, "'"));
    }
    if (!value) {
      if (flag->IsOfType<bool>()) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("option '", arg, "' needs a value"));
      }
    }
    std::string error;
    if (!flag->ParseFrom(*value, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("option '", arg, "': ", error));
    }
  }
  return operands;
}

}  // namespace rpcrdma::tools
