#include "bench/api/process_counters.h"

#include <dirent.h>
#include <linux/perf_event.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rpcrdma::bench {
namespace {

// The id of the raw_syscalls:sys_enter tracepoint, or -1.
long SyscallTracepointId() {
  for (const char* path :
       {"/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
        "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id"}) {
    if (FILE* f = std::fopen(path, "r")) {
      long id = -1;
      if (std::fscanf(f, "%ld", &id) != 1) id = -1;
      std::fclose(f);
      if (id >= 0) return id;
    }
  }
  return -1;
}

int64_t ContextSwitches() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  // Voluntary ones: the wake-ups a design causes, not preemption by other
  // load on a shared machine.
  return usage.ru_nvcsw;
}

}  // namespace

void ProcessCounters::Start() {
  for (int fd : counters_) close(fd);
  counters_.clear();
  static const long id = SyscallTracepointId();
  if (id >= 0) {
    if (DIR* tasks = opendir("/proc/self/task")) {
      while (dirent* e = readdir(tasks)) {
        if (e->d_name[0] == '.') continue;
        perf_event_attr attr{};
        attr.type = PERF_TYPE_TRACEPOINT;
        attr.size = sizeof(attr);
        attr.config = static_cast<uint64_t>(id);
        const int fd = static_cast<int>(syscall(
            SYS_perf_event_open, &attr, std::atoi(e->d_name), -1, -1, 0));
        if (fd >= 0) counters_.push_back(fd);
      }
      closedir(tasks);
    }
  }
  syscalls_ = ReadSyscalls();
  switches_ = ContextSwitches();
  allocations_ = HeapAllocations();
}

uint64_t ProcessCounters::ReadSyscalls() const {
  uint64_t total = 0;
  for (int fd : counters_) {
    uint64_t value = 0;
    if (read(fd, &value, sizeof value) == sizeof value) total += value;
  }
  return total;
}

ProcessCounters::Delta ProcessCounters::Stop(uint64_t operations) {
  Delta d;
  const double n = operations == 0 ? 1 : static_cast<double>(operations);
  if (!counters_.empty()) {
    d.syscalls = static_cast<double>(ReadSyscalls() - syscalls_) / n;
  }
  d.context_switches = static_cast<double>(ContextSwitches() - switches_) / n;
  if (const int64_t now = HeapAllocations(); now >= 0) {
    d.allocations = static_cast<double>(now - allocations_) / n;
  }
  for (int fd : counters_) close(fd);
  counters_.clear();
  return d;
}

}  // namespace rpcrdma::bench
