#include "plugin/api/version_two_user.h"

#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "plugin/log/logging.h"
#include "plugin/wire/private_data.h"
#include "plugin/wire/v2.h"

namespace rpcrdma::api_internal {
namespace {

wire::PropSet ToPropSet(std::vector<TransportProperty> properties) {
  wire::PropSet set;
  set.reserve(properties.size());
  for (TransportProperty& p : properties) {
    set.push_back(wire::PropVal{p.id, std::move(p.value)});
  }
  return set;
}

absl::Status Lost(const engine::PropertiesAnswered& a, absl::string_view what) {
  if (a.connection_lost) {
    return absl::UnavailableError(
        absl::StrCat("connection lost before the peer ", what));
  }
  return a.status;
}

}  // namespace

VersionTwoUser::VersionTwoUser(std::shared_ptr<const VersionTwoOptions> options)
    : options_(std::move(options)) {}

absl::Status VersionTwoUser::Validate(const VersionTwoOptions& options) {
  std::set<uint32_t> ids;
  for (size_t i = 0; i < options.properties.size(); ++i) {
    const uint32_t id = options.properties[i].id;
    if (!wire::IsExperimentalPropId(id)) {
      return absl::InvalidArgumentError(
          absl::StrCat("version_two.properties[", i, "]: id ", id,
                       " is not an experimental property id (draft-04 §5.4.2: ",
                       wire::kFirstExperimentalPropId, " to 4294967295)"));
    }
    if (!ids.insert(id).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "version_two.properties[", i, "]: id ", id, " is stated twice"));
    }
  }
  // §5.3.1: RDMA2_CONNPROP goes first, to a peer that may receive no more
  // than the default inline size; the largest this side sends (RBSIZ, BRS
  // marked unchanging, the experimental properties) must fit.
  wire::V2ConnProp connprop{
      {wire::MakeRbsizProperty(0),
       wire::MakeBrsProperty(wire::BackwardRequestSupport::kNone)},
      {2}};
  for (const TransportProperty& p : options.properties) {
    connprop.start.push_back(wire::PropVal{p.id, p.value});
  }
  const size_t size = wire::V2EncodedSize(
      wire::V2Header{0, wire::kRpcRdmaVersion2, 0, std::move(connprop)});
  if (size > wire::kMinInlineSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "version_two.properties: the RDMA2_CONNPROP carrying them has ", size,
        " octets; it must fit the ", wire::kMinInlineSize,
        " octets every peer receives first (draft-04 §5.3.1)"));
  }
  for (const auto& [type, handler] : options.optional_handlers) {
    if (wire::IsPropertyOperationOptType(type)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "version_two.optional_handlers: type ", type,
          " is a property operation of draft-04 §5.3 (Table 2: 1 to 4)"));
    }
    if (handler == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "version_two.optional_handlers: type ", type, " has no handler"));
    }
  }
  return absl::OkStatus();
}

void VersionTwoUser::Configure(engine::Config& config) const {
  config.experimental_properties = ToPropSet(options_->properties);
  config.optional_types.clear();
  for (const auto& [type, handler] : options_->optional_handlers) {
    config.optional_types.insert(type);
  }
  config.decides_properties = options_->property_decider != nullptr;
}

absl::StatusOr<VersionTwoUser::Wait<engine::PropertiesAnswered>>
VersionTwoUser::Request(Connection& conn, std::vector<TransportProperty> want) {
  absl::StatusOr<uint32_t> xid =
      conn.RequestProperties(ToPropSet(std::move(want)));
  if (!xid.ok()) return xid.status();
  auto promise = std::make_shared<std::promise<engine::PropertiesAnswered>>();
  property_waits_[*xid] = promise;
  return Wait<engine::PropertiesAnswered>{*xid, promise->get_future()};
}

absl::StatusOr<VersionTwoUser::Wait<engine::PropertiesAnswered>>
VersionTwoUser::Update(Connection& conn, std::vector<TransportProperty> now) {
  absl::StatusOr<uint32_t> xid =
      conn.UpdateProperties(ToPropSet(std::move(now)));
  if (!xid.ok()) return xid.status();
  auto promise = std::make_shared<std::promise<engine::PropertiesAnswered>>();
  property_waits_[*xid] = promise;
  return Wait<engine::PropertiesAnswered>{*xid, promise->get_future()};
}

absl::StatusOr<VersionTwoUser::Wait<engine::OptionalAnswered>>
VersionTwoUser::Optional(Connection& conn, OptionalMessage message) {
  absl::StatusOr<uint32_t> xid = conn.StartOptional(
      message.type, std::move(message.info), std::move(message.payload));
  if (!xid.ok()) return xid.status();
  auto promise = std::make_shared<std::promise<engine::OptionalAnswered>>();
  optional_waits_[*xid] = promise;
  return Wait<engine::OptionalAnswered>{*xid, promise->get_future()};
}

bool VersionTwoUser::Forget(uint32_t xid) {
  return property_waits_.erase(xid) + optional_waits_.erase(xid) > 0;
}

bool VersionTwoUser::Collect(engine::Action& action, ConnectionId connection,
                             uint64_t generation,
                             std::weak_ptr<VersionTwoTarget> target,
                             std::vector<std::function<void()>>& jobs) {
  if (auto* p = std::get_if<engine::PropertiesAnswered>(&action)) {
    auto wait = property_waits_.find(p->xid);
    if (wait != property_waits_.end()) {  // else: it timed out
      wait->second->set_value(std::move(*p));
      property_waits_.erase(wait);
    }
    return true;
  }
  if (auto* o = std::get_if<engine::OptionalAnswered>(&action)) {
    auto wait = optional_waits_.find(o->xid);
    if (wait != optional_waits_.end()) {
      wait->second->set_value(std::move(*o));
      optional_waits_.erase(wait);
    }
    return true;
  }
  if (auto* d = std::get_if<engine::DeliverOptional>(&action)) {
    auto handler = options_->optional_handlers.find(d->type);
    if (handler == options_->optional_handlers.end()) return true;
    jobs.push_back([handler = handler->second, d = std::move(*d), connection,
                    generation, target]() mutable {
      absl::StatusOr<OptionalMessage> answer = handler(
          connection,
          OptionalMessage{d.type, std::move(d.info), std::move(d.payload)});
      absl::StatusOr<engine::DeliverOptional> reply =
          answer.ok()
              ? absl::StatusOr<engine::DeliverOptional>(engine::DeliverOptional{
                    d.xid, d.type, std::move(answer->info),
                    std::move(answer->payload)})
              : answer.status();
      if (!answer.ok()) {
        RPCRDMA_LOG(kWarning, connection.value(), "optional message of type ",
                    d.type,
                    ": the handler failed (answered RDMA2_ERR_SYSTEM): ",
                    answer.status().message());
      }
      std::shared_ptr<VersionTwoTarget> t = target.lock();
      if (t == nullptr) return;
      absl::Status sent = t->OnConnection(generation, [&](Connection& c) {
        return c.AnswerOptional(d.xid, std::move(reply));
      });
      if (!sent.ok() && !absl::IsUnavailable(sent)) {
        RPCRDMA_LOG(kWarning, connection.value(), "optional message of type ",
                    d.type, ": ", sent.message());
      }
    });
    return true;
  }
  if (auto* r = std::get_if<engine::PropertiesRequested>(&action)) {
    jobs.push_back([decider = options_->property_decider, r = std::move(*r),
                    connection, generation, target]() mutable {
      std::vector<engine::PropertyDecision> decisions;
      for (auto& [index, wanted] : r.wanted) {
        decisions.push_back(
            decider == nullptr
                ? std::nullopt
                : decider(
                      connection,
                      TransportProperty{wanted.which, std::move(wanted.data)}));
      }
      std::shared_ptr<VersionTwoTarget> t = target.lock();
      if (t == nullptr) return;
      absl::Status sent = t->OnConnection(generation, [&](Connection& c) {
        return c.DecideProperties(r.xid, std::move(decisions));
      });
      if (!sent.ok() && !absl::IsUnavailable(sent)) {
        RPCRDMA_LOG(kWarning, connection.value(),
                    "property request: ", sent.message());
      }
    });
    return true;
  }
  return false;
}

absl::Status VersionTwoUser::UpdateResult(const engine::PropertiesAnswered& a) {
  return Lost(a, "took the update");
}

absl::StatusOr<PropertyAnswer> VersionTwoUser::RequestResult(
    const engine::PropertiesAnswered& a) {
  if (absl::Status s = Lost(a, "answered the request"); !s.ok()) return s;
  return PropertyAnswer{a.accepted, FromPropSet(a.other)};
}

absl::StatusOr<OptionalMessage> VersionTwoUser::OptionalResult(
    uint32_t type, engine::OptionalAnswered a) {
  if (!a.status.ok()) return a.status;
  return OptionalMessage{type, std::move(a.info), std::move(a.payload)};
}

std::vector<TransportProperty> VersionTwoUser::FromPropSet(
    const wire::PropSet& set) {
  std::vector<TransportProperty> out;
  out.reserve(set.size());
  for (const wire::PropVal& p : set) out.push_back({p.which, p.data});
  return out;
}

}  // namespace rpcrdma::api_internal
