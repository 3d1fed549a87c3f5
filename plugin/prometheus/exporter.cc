#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "plugin/prometheus/http_listener.h"
#include "plugin/prometheus/status_page.h"
#include "prometheus/metric_family.h"
#include "prometheus/text_serializer.h"
#include "rpcrdma/metrics.h"
#include "rpcrdma/prometheus.h"

namespace rpcrdma {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

struct Source {
  std::variant<const Channel*, const Server*> target;
  std::vector<ClientMetric::Label> labels;  // the caller's, then role

  Metrics Read() const {
    if (const auto* c = std::get_if<const Channel*>(&target)) {
      return (*c)->metrics();
    }
    return std::get<const Server*>(target)->metrics();
  }
  bool is_channel() const {
    return std::holds_alternative<const Channel*>(target);
  }
  // What /status shows of it.
  prometheus_internal::StatusSource ReadStatus() const {
    prometheus_internal::StatusSource out;
    out.is_channel = is_channel();
    // The caller's labels are all but the last, the role.
    for (size_t i = 0; i + 1 < labels.size(); ++i) {
      out.labels.emplace_back(labels[i].name, labels[i].value);
    }
    Metrics metrics = Read();
    out.counters = metrics.counters;
    const auto* channel = std::get_if<const Channel*>(&target);
    if (channel != nullptr) {
      out.connected = (*channel)->connected();
    } else {
      out.uri = std::get<const Server*>(target)->uri();
    }
    for (ConnectionMetrics& m : metrics.connections) {
      prometheus_internal::StatusConnection c;
      if (channel != nullptr) {
        // A Channel has one connection at a time, the one metrics() read
        // (unless it was replaced since: then its successor's).
        c.settled = (*channel)->connection_info();
      } else if (auto info = std::get<const Server*>(target)->connection_info(
                     m.connection);
                 info.ok()) {
        c.settled = *std::move(info);
      }
      c.metrics = std::move(m);
      out.connections.push_back(std::move(c));
    }
    return out;
  }
};

ClientMetric::Histogram ToPrometheus(const LatencyHistogram& h) {
  ClientMetric::Histogram out;
  out.sample_count = h.count();
  out.sample_sum = std::chrono::duration<double>(h.sum()).count();
  uint64_t cumulative = 0;
  for (size_t i = 0; i < LatencyHistogram::kFiniteBuckets; ++i) {
    cumulative += h.buckets()[i];
    out.bucket.push_back({cumulative, std::chrono::duration<double>(
                                          LatencyHistogram::UpperBound(i))
                                          .count()});
  }
  out.bucket.push_back({h.count(), std::numeric_limits<double>::infinity()});
  return out;
}

class Collector {
 public:
  std::vector<MetricFamily> Collect() const {
    std::vector<std::pair<std::vector<ClientMetric::Label>, Metrics>> read;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const Source& s : sources_) read.emplace_back(s.labels, s.Read());
    }
    std::vector<MetricFamily> families;
    auto family = [&](std::string name, std::string help, MetricType type) {
      families.push_back(
          MetricFamily{std::move(name), std::move(help), type, {}});
      return &families.back().metric;
    };
    for (const CounterField& f : kCounterFields) {
      auto* metrics = family(absl::StrCat("rpcrdma_", f.name, "_total"), f.help,
                             MetricType::Counter);
      for (const auto& [labels, m] : read) {
        ClientMetric c;
        c.label = labels;
        c.counter.value = static_cast<double>(m.counters.*(f.field));
        metrics->push_back(std::move(c));
      }
    }
    auto gauge = [&](const char* name, const char* help, auto value) {
      auto* metrics = family(name, help, MetricType::Gauge);
      for (const auto& [labels, m] : read) {
        ClientMetric c;
        c.label = labels;
        c.gauge.value = static_cast<double>(value(m));
        metrics->push_back(std::move(c));
      }
    };
    gauge("rpcrdma_credits_granted", "rdma_credit of the latest reply",
          [](const Metrics& m) { return m.counters.credits_granted; });
    gauge("rpcrdma_peak_calls_outstanding",
          "Most calls outstanding at one time",
          [](const Metrics& m) { return m.counters.peak_calls_outstanding; });
    gauge("rpcrdma_connections", "Live connections",
          [](const Metrics& m) { return m.connections.size(); });
    auto histogram = [&](const char* name, const char* help,
                         LatencyHistogram ConnectionMetrics::*field) {
      auto* metrics = family(name, help, MetricType::Histogram);
      for (const auto& [labels, m] : read) {
        for (const ConnectionMetrics& conn : m.connections) {
          ClientMetric c;
          c.label = labels;
          c.label.push_back(
              {"connection", absl::StrCat(conn.connection.value())});
          c.histogram = ToPrometheus(conn.*field);
          metrics->push_back(std::move(c));
        }
      }
    };
    histogram("rpcrdma_call_rtt_seconds",
              "Round trip of calls this side made, per connection",
              &ConnectionMetrics::call_rtt);
    histogram("rpcrdma_reply_time_seconds",
              "From a call's delivery to its reply sent, per connection",
              &ConnectionMetrics::reply_time);
    return families;
  }

  std::vector<prometheus_internal::StatusSource> ReadStatus() const {
    std::vector<prometheus_internal::StatusSource> out;
    std::lock_guard<std::mutex> lock(mu_);
    for (const Source& s : sources_) out.push_back(s.ReadStatus());
    return out;
  }

  absl::Status Add(Source source, const void* key) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const void* k : keys_) {
      if (k == key)
        return absl::AlreadyExistsError("prometheus: already registered");
    }
    sources_.push_back(std::move(source));
    keys_.push_back(key);
    return absl::OkStatus();
  }
  void Remove(const void* key) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (keys_[i] == key) {
        keys_.erase(keys_.begin() + i);
        sources_.erase(sources_.begin() + i);
        return;
      }
    }
  }

 private:
  mutable std::mutex mu_;
  std::vector<Source> sources_;
  std::vector<const void*> keys_;
};

absl::StatusOr<std::vector<ClientMetric::Label>> MakeLabels(
    const PrometheusExporter::Labels& labels, const char* role) {
  std::vector<ClientMetric::Label> out;
  for (const auto& [name, value] : labels) {
    bool valid = !name.empty() && !absl::ascii_isdigit(name[0]) &&
                 name.rfind("__", 0) != 0;
    for (char c : name) {
      valid &= absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
    }
    if (!valid || name == "role" || name == "connection" || name == "le") {
      return absl::InvalidArgumentError(
          absl::StrCat("prometheus: label name \"", name,
                       "\" is not allowed (must match [a-zA-Z_][a-zA-Z0-9_]* "
                       "and not be role, connection or le)"));
    }
    out.push_back({name, value});
  }
  out.push_back({"role", role});
  return out;
}

std::string Serialize(const Collector& collector) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, collector.Collect());
  return out.str();
}

}  // namespace

struct PrometheusExporter::Impl {
  Collector collector;
  // Null without a listener. Declared last: destroyed first, so no scrape
  // runs once the collector goes.
  std::unique_ptr<prometheus_internal::HttpListener> listener;
};

absl::StatusOr<std::unique_ptr<PrometheusExporter>> PrometheusExporter::Create(
    const std::string& listen_address) {
  PrometheusExporterOptions options;
  options.listen_address = listen_address;
  return Create(options);
}

absl::StatusOr<std::unique_ptr<PrometheusExporter>> PrometheusExporter::Create(
    const PrometheusExporterOptions& options) {
  auto impl = std::make_unique<Impl>();
  const Collector* collector = &impl->collector;
  prometheus_internal::HttpListener::Pages pages;
  pages.metrics = [collector] { return Serialize(*collector); };
  pages.status_html = [collector] {
    return prometheus_internal::RenderStatusHtml(collector->ReadStatus());
  };
  pages.status_json = [collector] {
    return prometheus_internal::RenderStatusJson(collector->ReadStatus());
  };
  auto listener =
      prometheus_internal::HttpListener::Start(options, std::move(pages));
  if (!listener.ok()) return listener.status();
  impl->listener = *std::move(listener);
  return std::unique_ptr<PrometheusExporter>(
      new PrometheusExporter(std::move(impl)));
}

std::unique_ptr<PrometheusExporter>
PrometheusExporter::CreateWithoutListener() {
  return std::unique_ptr<PrometheusExporter>(
      new PrometheusExporter(std::make_unique<Impl>()));
}

PrometheusExporter::PrometheusExporter(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

// The listener stops first, so no scrape reads a source being dropped.
PrometheusExporter::~PrometheusExporter() { impl_->listener.reset(); }

absl::Status PrometheusExporter::Register(const Channel& channel,
                                          Labels labels) {
  auto l = MakeLabels(labels, "channel");
  if (!l.ok()) return l.status();
  return impl_->collector.Add(Source{&channel, *std::move(l)}, &channel);
}

absl::Status PrometheusExporter::Register(const Server& server, Labels labels) {
  auto l = MakeLabels(labels, "server");
  if (!l.ok()) return l.status();
  return impl_->collector.Add(Source{&server, *std::move(l)}, &server);
}

void PrometheusExporter::Unregister(const Channel& channel) {
  impl_->collector.Remove(&channel);
}
void PrometheusExporter::Unregister(const Server& server) {
  impl_->collector.Remove(&server);
}

uint16_t PrometheusExporter::port() const {
  return impl_->listener == nullptr ? 0 : impl_->listener->port();
}

std::string PrometheusExporter::Scrape() const {
  return Serialize(impl_->collector);
}

std::string PrometheusExporter::StatusPage() const {
  return prometheus_internal::RenderStatusHtml(impl_->collector.ReadStatus());
}

std::string PrometheusExporter::StatusJson() const {
  return prometheus_internal::RenderStatusJson(impl_->collector.ReadStatus());
}

}  // namespace rpcrdma
