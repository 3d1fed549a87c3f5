// /status?format=json: see docs/debugging.md ("A status page") for the
// shape, which only grows (new members) without changing what exists.
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "plugin/prometheus/json_writer.h"
#include "plugin/prometheus/status_page.h"

namespace rpcrdma::prometheus_internal {
namespace {

void WriteCounters(JsonWriter& json, const Counters& counters) {
  json.BeginObject();
  for (const CounterField& f : kCounterFields) {
    json.Key(f.name);
    json.Number(counters.*(f.field));
  }
  json.Key("credits_granted");
  json.Number(counters.credits_granted);
  json.Key("peak_calls_outstanding");
  json.Number(counters.peak_calls_outstanding);
  json.EndObject();
}

void WriteHistogram(JsonWriter& json, const LatencyHistogram& h) {
  json.BeginObject();
  json.Key("count");
  json.Number(h.count());
  json.Key("sum_ns");
  json.Number(static_cast<uint64_t>(h.sum().count()));
  json.Key("buckets");
  json.BeginArray();
  for (size_t i = 0; i < LatencyHistogram::kBuckets; ++i) {
    json.BeginObject();
    json.Key("le_us");
    if (i < LatencyHistogram::kFiniteBuckets) {
      json.Number(static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(
              LatencyHistogram::UpperBound(i))
              .count()));
    } else {
      json.Null();
    }
    json.Key("count");
    json.Number(h.buckets()[i]);
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
}

void WriteProperties(JsonWriter& json,
                     const std::vector<TransportProperty>& properties) {
  json.BeginArray();
  for (const TransportProperty& p : properties) {
    json.BeginObject();
    json.Key("id");
    json.Number(p.id);
    json.Key("value_hex");
    json.String(absl::BytesToHexString(absl::string_view(
        reinterpret_cast<const char*>(p.value.data()), p.value.size())));
    json.EndObject();
  }
  json.EndArray();
}

void WriteSettled(JsonWriter& json, const ConnectionInfo& info) {
  json.BeginObject();
  const auto number = [&](const char* key, uint64_t value) {
    json.Key(key);
    json.Number(value);
  };
  const auto boolean = [&](const char* key, bool value) {
    json.Key(key);
    json.Bool(value);
  };
  number("version", info.version);
  number("offered_version", info.offered_version);
  number("peer_version_low", info.peer_version_low);
  number("peer_version_high", info.peer_version_high);
  number("send_threshold", info.send_threshold);
  number("receive_threshold", info.receive_threshold);
  number("max_inline_reply", info.max_inline_reply);
  number("max_segment_size", info.max_segment_size);
  boolean("remote_invalidation", info.remote_invalidation);
  boolean("peer_private_data", info.peer_private_data);
  number("peer_send_size", info.peer_send_size);
  number("peer_receive_size", info.peer_receive_size);
  boolean("peer_remote_invalidation", info.peer_remote_invalidation);
  number("peer_receive_buffer_size", info.peer_receive_buffer_size);
  json.Key("properties");
  WriteProperties(json, info.properties);
  json.Key("peer_properties");
  WriteProperties(json, info.peer_properties);
  json.EndObject();
}

void WriteConnection(JsonWriter& json, const StatusConnection& connection) {
  json.BeginObject();
  json.Key("id");
  json.Number(connection.metrics.connection.value());
  json.Key("settled");
  if (connection.settled.has_value()) {
    WriteSettled(json, *connection.settled);
  } else {
    json.Null();
  }
  json.Key("unanswered_calls");
  json.Number(UnansweredCalls(connection.metrics.counters));
  json.Key("counters");
  WriteCounters(json, connection.metrics.counters);
  json.Key("call_rtt");
  WriteHistogram(json, connection.metrics.call_rtt);
  json.Key("reply_time");
  WriteHistogram(json, connection.metrics.reply_time);
  json.EndObject();
}

}  // namespace

std::string RenderStatusJson(const std::vector<StatusSource>& sources) {
  JsonWriter json;
  json.BeginObject();
  json.Key("sources");
  json.BeginArray();
  for (const StatusSource& source : sources) {
    json.BeginObject();
    json.Key("role");
    json.String(source.is_channel ? "channel" : "server");
    json.Key("labels");
    json.BeginObject();
    for (const auto& [name, value] : source.labels) {
      json.Key(name);
      json.String(value);
    }
    json.EndObject();
    json.Key("uri");
    if (source.uri.has_value()) {
      json.String(*source.uri);
    } else {
      json.Null();
    }
    json.Key("connected");
    json.Bool(source.connected);
    json.Key("unanswered_calls");
    json.Number(UnansweredCalls(source.counters));
    json.Key("counters");
    WriteCounters(json, source.counters);
    json.Key("connections");
    json.BeginArray();
    for (const StatusConnection& c : source.connections) {
      WriteConnection(json, c);
    }
    json.EndArray();
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  return json.text() + "\n";
}

}  // namespace rpcrdma::prometheus_internal
