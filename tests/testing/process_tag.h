// A tag that tells this test process apart from every other one running on
// the machine, for the names of abstract Unix sockets and other resources
// tests create.
//
// The pid alone is not enough: Bazel's sandbox runs each test in its own PID
// namespace, where every test binary gets the same small pid, while abstract
// socket names live in the network namespace that the tests share. Two test
// binaries naming sockets "prefix-<pid>-<n>" then collide ("bind: Address
// already in use"). A random part drawn once per process keeps the names
// apart; the pid stays in the tag so that a forked child differs from its
// parent and names still say which process made them.
#ifndef RPCRDMA_TESTS_TESTING_PROCESS_TAG_H_
#define RPCRDMA_TESTS_TESTING_PROCESS_TAG_H_

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

namespace rpcrdma::test {

inline std::string ProcessTag() {
  static const uint32_t random_part = [] {
    std::random_device device;
    return static_cast<uint32_t>(device());
  }();
  char tag[32];
  std::snprintf(tag, sizeof tag, "%d-%08x", static_cast<int>(getpid()),
                random_part);
  return tag;
}

}  // namespace rpcrdma::test

#endif  // RPCRDMA_TESTS_TESTING_PROCESS_TAG_H_
