// What a process holds that a leak would grow: resident memory, open
// descriptors and threads, read from /proc/self.
#ifndef RPCRDMA_TESTS_SOAK_PROCESS_RESOURCES_H_
#define RPCRDMA_TESTS_SOAK_PROCESS_RESOURCES_H_

#include <dirent.h>
#include <malloc.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "plugin/memory/buffer_cache.h"

namespace rpcrdma::test {

struct ProcessResources {
  long rss_kib = 0;
  int descriptors = 0;
  int threads = 0;
  // Octets malloc has handed out and not had back (mallinfo2: in use in
  // every arena plus mmapped blocks): what is live, without the pages
  // fragmentation keeps resident.
  size_t heap_live = 0;

  std::string ToString() const {
    return absl::StrCat("rss ", rss_kib, " KiB, heap live ", heap_live / 1024,
                        " KiB, fds ", descriptors, ", threads ", threads);
  }
};

inline int CountEntries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      ++n;
    }
  }
  closedir(d);
  return n;
}

// Freed heap memory goes back to the system first (malloc_trim walks every
// arena), so what remains resident is what is still allocated plus
// fragmentation.
inline ProcessResources SampleProcessResources() {
  // Allocator caches are not leaks: rpcrdma's buffer pool and malloc's.
  memory_internal::ReleaseRetainedBuffers();
  malloc_trim(0);
  ProcessResources r;
  const struct mallinfo2 heap = mallinfo2();
  r.heap_live = heap.uordblks + heap.hblkhd;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      if (std::strncmp(line, "VmRSS:", 6) == 0) {
        r.rss_kib = std::strtol(line + 6, nullptr, 10);
      }
    }
    std::fclose(f);
  }
  // opendir holds one descriptor of its own while counting.
  r.descriptors = CountEntries("/proc/self/fd") - 1;
  r.threads = CountEntries("/proc/self/task");
  return r;
}

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_SOAK_PROCESS_RESOURCES_H_
