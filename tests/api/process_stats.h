// What a test or benchmark reads of its own process from /proc: entries of
// a directory (descriptors, threads), memory maps, resident memory, and a
// thread's voluntary context switches.
#ifndef RPCRDMA_TESTS_API_PROCESS_STATS_H_
#define RPCRDMA_TESTS_API_PROCESS_STATS_H_

#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace rpcrdma::test {

// Entries of `dir` but . and .. (/proc/self/fd, /proc/self/task).
inline size_t CountEntries(const char* dir) {
  size_t n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

inline size_t Threads() { return CountEntries("/proc/self/task"); }

inline size_t Maps() {
  size_t n = 0;
  if (FILE* f = std::fopen("/proc/self/maps", "r")) {
    int c;
    while ((c = std::fgetc(f)) != EOF) n += c == '\n';
    std::fclose(f);
  }
  return n;
}

// The value of the first line of `path` that starts with `key`, or -1.
inline long ProcValue(const std::string& path, const char* key) {
  long value = -1;
  const size_t length = std::strlen(key);
  if (FILE* f = std::fopen(path.c_str(), "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::strncmp(line, key, length) == 0) {
        value = std::strtol(line + length, nullptr, 10);
        break;
      }
    }
    std::fclose(f);
  }
  return value;
}

inline long ResidentKib() { return ProcValue("/proc/self/status", "VmRSS:"); }

// Voluntary context switches of thread `tid` of this process.
inline long VoluntarySwitches(const std::string& tid) {
  return ProcValue("/proc/self/task/" + tid + "/status",
                   "voluntary_ctxt_switches:");
}

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_API_PROCESS_STATS_H_
