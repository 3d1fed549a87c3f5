// A Source for one descriptor whose readiness its owner handles with a
// function: an owner with several descriptors over its life (a Channel's
// connection, then the one replacing it) keeps one FdWatch per descriptor
// and adds and removes it as the descriptor comes and goes.
#ifndef RPCRDMA_PLUGIN_RUNTIME_FD_WATCH_H_
#define RPCRDMA_PLUGIN_RUNTIME_FD_WATCH_H_

#include <cstdint>
#include <functional>
#include <utility>

#include "plugin/runtime/event_loop.h"

namespace rpcrdma::runtime {

class FdWatch : public Source {
 public:
  FdWatch(std::function<void()> on_readable, std::function<bool()> spin = {},
          uint32_t busy_poll_us = 0)
      : on_readable_(std::move(on_readable)),
        spin_(std::move(spin)),
        busy_poll_us_(busy_poll_us) {}

  void OnReadable() override { on_readable_(); }
  bool Spin() override { return spin_ ? spin_() : false; }
  uint32_t busy_poll_us() const override { return busy_poll_us_; }

 private:
  std::function<void()> on_readable_;
  std::function<bool()> spin_;
  uint32_t busy_poll_us_;
};

}  // namespace rpcrdma::runtime

#endif  // RPCRDMA_PLUGIN_RUNTIME_FD_WATCH_H_
