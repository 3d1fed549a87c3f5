// The hostile-peer attacks hostile_figures measures, each against the
// server it was reported against. An attack calls `underway` once it is in
// progress (the tool then times a legitimate client's call) and returns
// what it saw, in words for the table.
#ifndef RPCRDMA_BENCH_HOSTILE_ATTACKS_H_
#define RPCRDMA_BENCH_HOSTILE_ATTACKS_H_

#include <functional>
#include <string>
#include <vector>

namespace rpcrdma::bench::hostile {

struct Attack {
  std::string name;
  // What the review measured before the fix.
  std::string before;
  // hostile_figures_server's arguments: the server attacked.
  std::vector<std::string> server;
  std::function<std::string(const std::string& uri,
                            const std::function<void()>& underway)>
      run;
};

std::vector<Attack> Attacks();

}  // namespace rpcrdma::bench::hostile

#endif  // RPCRDMA_BENCH_HOSTILE_ATTACKS_H_
