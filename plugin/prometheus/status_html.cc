// /status as HTML: one page with everything inline (CSS in <style>, charts
// drawn here as SVG), so that it works where the exporter's port is all a
// browser can reach. Every string that comes from the application (labels,
// URIs) is escaped.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "plugin/prometheus/status_page.h"

namespace rpcrdma::prometheus_internal {
namespace {

constexpr absl::string_view kStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1d2733;background:#f6f7f9}
h1{font-size:1.4em;margin:0 0 .2em}
h2{font-size:1.15em;margin:0 0 .4em}
h3{font-size:1em;margin:1em 0 .4em}
section.source{background:#fff;border:1px solid #d5dae1;border-radius:6px;padding:1em;margin:1em 0}
.role{text-transform:uppercase;font-size:.75em;letter-spacing:.05em;background:#1d5fa8;color:#fff;border-radius:3px;padding:.1em .4em;margin-right:.4em}
.role.channel{background:#2c8a4b}
.label{font-family:monospace;background:#eef1f5;border-radius:3px;padding:0 .3em;margin-right:.3em}
.muted{color:#667}
.row{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}
table{border-collapse:collapse;font-size:.9em}
th,td{text-align:left;padding:.1em .6em .1em 0;vertical-align:top}
th{font-weight:normal;color:#556}
td{font-family:monospace}
table.counters{display:block}
table.counters tbody{display:grid;grid-template-columns:repeat(3,minmax(14em,auto));column-gap:1.5em}
table.counters tr{display:flex;justify-content:space-between}
figure{margin:0 0 .6em}
figcaption{font-size:.9em;margin-bottom:.2em}
svg.histogram{background:#fafbfc;border:1px solid #e3e6ea}
svg.histogram rect.bar{fill:#1d5fa8}
svg.histogram text{font:10px monospace;fill:#556}
)";

std::string Escape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// "512 µs", "1.05 ms", "2.1 s".
std::string HumanDuration(std::chrono::nanoseconds d) {
  const double ns = static_cast<double>(d.count());
  if (ns < 1e3) return absl::StrFormat("%.3g ns", ns);
  if (ns < 1e6) return absl::StrFormat("%.3g µs", ns / 1e3);
  if (ns < 1e9) return absl::StrFormat("%.3g ms", ns / 1e6);
  return absl::StrFormat("%.3g s", ns / 1e9);
}

void Row(std::string& out, absl::string_view name, absl::string_view value) {
  absl::StrAppend(&out, "<tr><th>", name, "</th><td>", value, "</td></tr>");
}

std::string YesNo(bool value) { return value ? "yes" : "no"; }

void AppendCounters(std::string& out, const Counters& c) {
  out += "<table class=\"counters\">";
  Row(out, "unanswered calls (calls &minus; replies)",
      absl::StrCat(UnansweredCalls(c)));
  Row(out, "credits_granted", absl::StrCat(c.credits_granted));
  Row(out, "peak_calls_outstanding", absl::StrCat(c.peak_calls_outstanding));
  for (const CounterField& f : kCounterFields) {
    out +=
        absl::StrCat("<tr data-counter=\"", f.name, "\"><th title=\"", f.help,
                     "\">", f.name, "</th><td>", c.*(f.field), "</td></tr>");
  }
  out += "</table>";
}

std::string PropertiesText(const std::vector<TransportProperty>& properties) {
  if (properties.empty()) return "none";
  std::string out;
  for (const TransportProperty& p : properties) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", p.id, " (", p.value.size(),
                    " octets)");
  }
  return out;
}

void AppendSettled(std::string& out, const ConnectionInfo& info) {
  out += "<table class=\"settled\">";
  Row(out, "version", absl::StrCat(info.version));
  Row(out, "offered version", absl::StrCat(info.offered_version));
  if (info.peer_version_high != 0) {
    Row(out, "peer's versions (ERR_VERS)",
        absl::StrCat(info.peer_version_low, "&ndash;", info.peer_version_high));
  }
  Row(out, "send threshold", absl::StrCat(info.send_threshold, " octets"));
  Row(out, "receive threshold",
      absl::StrCat(info.receive_threshold, " octets"));
  Row(out, "max inline reply", absl::StrCat(info.max_inline_reply, " octets"));
  Row(out, "max segment size", absl::StrCat(info.max_segment_size, " octets"));
  Row(out, "remote invalidation", YesNo(info.remote_invalidation));
  Row(out, "peer private data (RFC 8797)", YesNo(info.peer_private_data));
  if (info.peer_private_data) {
    Row(out, "peer send size", absl::StrCat(info.peer_send_size, " octets"));
    Row(out, "peer receive size",
        absl::StrCat(info.peer_receive_size, " octets"));
    Row(out, "peer remote invalidation (R)",
        YesNo(info.peer_remote_invalidation));
  }
  if (info.version == 2) {
    Row(out, "peer receive buffer size",
        absl::StrCat(info.peer_receive_buffer_size, " octets"));
    Row(out, "properties", PropertiesText(info.properties));
    Row(out, "peer properties", PropertiesText(info.peer_properties));
  }
  out += "</table>";
}

// One bar per bucket of `h`, as tall as its share of the fullest bucket,
// with the bucket's bound and count in its tooltip.
void AppendHistogram(std::string& out, absl::string_view name,
                     absl::string_view caption, const LatencyHistogram& h) {
  constexpr int kBarWidth = 18;
  constexpr int kPlotHeight = 100;
  constexpr int kAxisHeight = 16;
  // Room after the last bar for its axis label.
  constexpr int kWidth =
      kBarWidth * static_cast<int>(LatencyHistogram::kBuckets) + 24;
  absl::StrAppend(&out, "<figure class=\"histogram\" data-histogram=\"", name,
                  "\"><figcaption>", caption, ": ", h.count(), " calls");
  if (h.count() != 0) {
    absl::StrAppend(&out, ", mean ", HumanDuration(h.sum() / h.count()),
                    ", p50 &le; ", HumanDuration(h.Percentile(0.5)),
                    ", p99 &le; ", HumanDuration(h.Percentile(0.99)));
  }
  absl::StrAppend(&out, "</figcaption><svg class=\"histogram\" width=\"",
                  kWidth, "\" height=\"", kPlotHeight + kAxisHeight,
                  "\" viewBox=\"0 0 ", kWidth, " ", kPlotHeight + kAxisHeight,
                  "\" role=\"img\" aria-label=\"", caption, "\">");
  const uint64_t fullest =
      *std::max_element(h.buckets().begin(), h.buckets().end());
  for (size_t i = 0; i < LatencyHistogram::kBuckets; ++i) {
    const bool overflow = i == LatencyHistogram::kFiniteBuckets;
    const std::string bound =
        overflow
            ? absl::StrCat("&gt; ",
                           HumanDuration(LatencyHistogram::UpperBound(i - 1)))
            : absl::StrCat("&le; ",
                           HumanDuration(LatencyHistogram::UpperBound(i)));
    const int x = static_cast<int>(i) * kBarWidth;
    const uint64_t count = h.buckets()[i];
    if (count != 0) {
      // At least a pixel, so that a lone sample beside a full bucket shows.
      const int height = std::max<int>(
          1, static_cast<int>(static_cast<double>(count) /
                              static_cast<double>(fullest) * kPlotHeight));
      absl::StrAppend(&out, "<rect class=\"bar\" data-bucket=\"", i,
                      "\" data-count=\"", count, "\" x=\"", x + 2, "\" y=\"",
                      kPlotHeight - height, "\" width=\"", kBarWidth - 4,
                      "\" height=\"", height, "\"><title>", bound, ": ", count,
                      "</title></rect>");
    }
    if (i % 3 == 0) {
      absl::StrAppend(
          &out, "<text x=\"", x + 1, "\" y=\"", kPlotHeight + 12, "\">",
          overflow ? "more"
                   : HumanDuration(LatencyHistogram::UpperBound(i)).c_str(),
          "</text>");
    }
  }
  out += "</svg></figure>";
}

void AppendConnection(std::string& out, const StatusConnection& c) {
  absl::StrAppend(&out, "<div class=\"connection\" data-connection=\"",
                  c.metrics.connection.value(), "\"><h3>Connection ",
                  c.metrics.connection.value(), "</h3><div class=\"row\">");
  if (c.settled.has_value()) {
    AppendSettled(out, *c.settled);
  } else {
    out += "<p class=\"muted\">closed while this page was read</p>";
  }
  AppendCounters(out, c.metrics.counters);
  out += "<div>";
  AppendHistogram(out, "call_rtt", "Call round trip (calls this side made)",
                  c.metrics.call_rtt);
  AppendHistogram(out, "reply_time",
                  "Reply time (calls this side served, until the reply's "
                  "Send completed)",
                  c.metrics.reply_time);
  out += "</div></div></div>";
}

void AppendSource(std::string& out, const StatusSource& s) {
  const char* role = s.is_channel ? "channel" : "server";
  absl::StrAppend(&out, "<section class=\"source\" data-role=\"", role,
                  "\"><h2><span class=\"role ", role, "\">", role, "</span>");
  for (const auto& [name, value] : s.labels) {
    absl::StrAppend(&out, "<span class=\"label\">", Escape(name), "=",
                    Escape(value), "</span>");
  }
  out += "</h2><p>";
  if (s.uri.has_value()) {
    absl::StrAppend(&out, "URI <code class=\"uri\">", Escape(*s.uri),
                    "</code> &middot; ");
  }
  if (s.is_channel) {
    out += s.connected ? "connected" : "<strong>reconnecting</strong>";
  } else {
    absl::StrAppend(&out, s.connections.size(), " connection",
                    s.connections.size() == 1 ? "" : "s");
  }
  out += "</p><h3>Totals";
  if (!s.is_channel) out += " (every connection, past and present)";
  out += "</h3>";
  AppendCounters(out, s.counters);
  for (const StatusConnection& c : s.connections) AppendConnection(out, c);
  out += "</section>";
}

}  // namespace

std::string RenderStatusHtml(const std::vector<StatusSource>& sources) {
  std::string out = absl::StrCat(
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width\">"
      "<title>rpcrdma status</title><style>",
      kStyle,
      "</style></head><body><h1>rpcrdma status</h1><p class=\"muted\">"
      "Read when this page was requested. Also as "
      "<a href=\"?format=json\">JSON</a> and <a href=\"metrics\">Prometheus "
      "text</a>.</p>");
  if (sources.empty()) {
    out += "<p>No Channel or Server is registered with the exporter.</p>";
  }
  for (const StatusSource& s : sources) AppendSource(out, s);
  out += "</body></html>\n";
  return out;
}

}  // namespace rpcrdma::prometheus_internal
