// The C++ in README.md and docs/*.md works: every ```cpp block is compiled
// against the public headers, as an installed tree lays them out
// (<rpcrdma/channel.h>, <rpcrdma/config.pb.h>), and every
// ```cpp excerpt=PATH block must appear verbatim in PATH, a source file
// the build compiles and runs (so excerpts cannot drift from tested code).
// A block marked ```cpp fragment is not checked; prefer complete blocks.
// C (```c excerpt=PATH) is checked as an excerpt only; other ```c blocks
// are not extracted.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"

namespace {

namespace fs = std::filesystem;

struct Snippet {
  std::string doc;  // relative to the source tree
  int line = 0;     // of the opening fence, 1-based
  std::string info;
  std::string code;
};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> Docs() {
  std::vector<std::string> docs = {"README.md"};
  const fs::path dir = fs::path(RPCRDMA_SOURCE_DIR) / "docs";
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".md") {
      found.push_back("docs/" + entry.path().filename().string());
    }
  }
  std::sort(found.begin(), found.end());
  docs.insert(docs.end(), found.begin(), found.end());
  return docs;
}

// Fenced blocks whose info string starts with "cpp" (or is "c excerpt=..."),
// with the fence's indentation (a block inside a list item) removed.
std::vector<Snippet> Extract(const std::string& doc) {
  std::vector<Snippet> snippets;
  const std::string text = ReadFile(fs::path(RPCRDMA_SOURCE_DIR) / doc);
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t indent = lines[i].find_first_not_of(' ');
    if (indent == std::string::npos) continue;
    absl::string_view fence = absl::string_view(lines[i]).substr(indent);
    if (!absl::ConsumePrefix(&fence, "```cpp")) {
      // C does not compile as C++: a C block counts only as an excerpt.
      if (!absl::ConsumePrefix(&fence, "```c ") ||
          !absl::StartsWith(absl::StripLeadingAsciiWhitespace(fence),
                            "excerpt=")) {
        continue;
      }
    }
    Snippet s{doc, static_cast<int>(i + 1),
              std::string(absl::StripAsciiWhitespace(fence)), ""};
    for (++i; i < lines.size(); ++i) {
      absl::string_view line = lines[i];
      if (absl::StripLeadingAsciiWhitespace(line) == "```") break;
      line.remove_prefix(std::min(
          indent, line.find_first_not_of(' ') == absl::string_view::npos
                      ? line.size()
                      : line.find_first_not_of(' ')));
      absl::StrAppend(&s.code, line, "\n");
    }
    snippets.push_back(std::move(s));
  }
  return snippets;
}

std::vector<Snippet> AllSnippets() {
  std::vector<Snippet> all;
  for (const std::string& doc : Docs()) {
    for (Snippet& s : Extract(doc)) all.push_back(std::move(s));
  }
  return all;
}

// Runs `command` through the shell; returns its exit status and output.
int RunShell(const std::string& command, std::string* output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) {
    output->append(buffer, n);
  }
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Test output names a block by its place, not by its bytes.
void PrintTo(const Snippet& s, std::ostream* os) {
  *os << s.doc << ":" << s.line;
}

class DocSnippet : public ::testing::TestWithParam<Snippet> {};

TEST_P(DocSnippet, WorksAsWritten) {
  const Snippet& s = GetParam();
  const std::string where = absl::StrCat(s.doc, ":", s.line);
  if (s.info == "fragment") GTEST_SKIP() << where << " is a fragment";
  if (absl::string_view path = s.info; absl::ConsumePrefix(&path, "excerpt=")) {
    const std::string source =
        ReadFile(fs::path(RPCRDMA_SOURCE_DIR) / std::string(path));
    ASSERT_FALSE(source.empty()) << where << ": cannot read " << path;
    EXPECT_NE(source.find(s.code), std::string::npos)
        << where << ": this block is not (any longer) a verbatim part of "
        << path << ":\n"
        << s.code;
    return;
  }
  ASSERT_EQ(s.info, "") << where << ": unknown block kind ```cpp " << s.info;
  std::string name = where;
  for (char& c : name) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  const std::string file = ::testing::TempDir() + "snippet_" + name + ".cc";
  std::ofstream(file) << s.code;
  std::string output;
  const int status = RunShell(
      absl::StrCat("'", RPCRDMA_CXX, "' -std=c++20 -Wall -Wextra -Werror -I'",
                   RPCRDMA_PUBLIC_INCLUDE, "' -I'", RPCRDMA_PROTO_INCLUDE,
                   "' -fsyntax-only '", file, "'"),
      &output);
  EXPECT_EQ(status, 0) << where << " does not compile:\n"
                       << output << "\n"
                       << s.code;
  std::remove(file.c_str());
}

std::string SnippetName(const ::testing::TestParamInfo<Snippet>& info) {
  std::string name = absl::StrCat(info.param.doc, "_line_", info.param.line);
  for (char& c : name) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Docs, DocSnippet, ::testing::ValuesIn(AllSnippets()),
                         SnippetName);

// Guards against the extractor silently finding nothing.
TEST(DocSnippets, ReadmeAndDocsHaveCompiledBlocks) {
  int readme = 0;
  int docs = 0;
  for (const Snippet& s : AllSnippets()) {
    if (!s.info.empty()) continue;
    (s.doc == "README.md" ? readme : docs) += 1;
  }
  EXPECT_GT(readme, 0);
  EXPECT_GT(docs, 0);
}

}  // namespace
