// rpcrdma-dump: prints the RPC-over-RDMA messages in a capture as JSON lines.
#include <iostream>
#include <string>
#include <vector>

#include "tools/dump/dump_cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return rpcrdma::dump::RunDump(args, std::cin, std::cout, std::cerr);
}
