#include "oncrpc/adapter/reply_cache.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/hash/hash.h"

namespace rpcrdma::oncrpc {
namespace {

// The client's address without its port (reply_cache.h): an IPv4 or IPv6
// address, else nothing (a Unix-domain client has no name).
std::string AddressWithoutPort(absl::Span<const uint8_t> address) {
  std::string key;
  auto append = [&key](const void* data, size_t size) {
    key.append(static_cast<const char*>(data), size);
  };
  if (address.size() >= sizeof(sockaddr_in6)) {
    sockaddr_in6 in6;
    std::memcpy(&in6, address.data(), sizeof in6);
    if (in6.sin6_family == AF_INET6) {
      key = "6";
      append(&in6.sin6_addr, sizeof in6.sin6_addr);
      append(&in6.sin6_scope_id, sizeof in6.sin6_scope_id);
      return key;
    }
  }
  if (address.size() >= sizeof(sockaddr_in)) {
    sockaddr_in in4;
    std::memcpy(&in4, address.data(), sizeof in4);
    if (in4.sin_family == AF_INET) {
      key = "4";
      append(&in4.sin_addr, sizeof in4.sin_addr);
      return key;
    }
  }
  return key;
}

}  // namespace

CallIdentity IdentifyCall(uint64_t connection,
                          absl::Span<const uint8_t> client_address,
                          uint32_t xid, uint32_t program, uint32_t version,
                          uint32_t procedure,
                          absl::Span<const uint8_t> arguments) {
  CallIdentity c;
  c.connection = connection;
  c.address = AddressWithoutPort(client_address);
  c.xid = xid;
  c.program = program;
  c.version = version;
  c.procedure = procedure;
  c.arguments_length = arguments.size();
  // Every octet: past a closed connection, equal arguments are what tells
  // a retransmission from another client's call (reply_cache.h).
  c.arguments_checksum = absl::HashOf(absl::string_view(
      reinterpret_cast<const char*>(arguments.data()), arguments.size()));
  return c;
}

size_t CachedReply::bytes() const {
  size_t n = xdr.size();
  for (const auto& item : items) n += item.second.size();
  return n;
}

HandlerReply CachedReply::ToSend(std::shared_ptr<const CachedReply> cached) {
  HandlerReply reply(cached->xdr);
  for (const auto& [position, data] : cached->items) {
    reply.results.push_back(ReplyItem::Lent(position, data));
  }
  // The lent octets live as long as the transport reads them, even if the
  // cache lets the entry go meanwhile.
  reply.on_released = [keep = std::move(cached)] {};
  return reply;
}

void ReplyCache::Only(uint32_t program, uint32_t version,
                      absl::Span<const uint32_t> procedures) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& set = only_[{program, version}];
  set.insert(procedures.begin(), procedures.end());
}

bool ReplyCache::Caches(uint32_t program, uint32_t version,
                        uint32_t procedure) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (only_.empty()) return true;
  auto it = only_.find({program, version});
  return it != only_.end() && it->second.contains(procedure);
}

void ReplyCache::Opened(uint64_t connection) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.insert(connection);
}

void ReplyCache::Closed(uint64_t connection) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.erase(connection);
}

ReplyCache::Key ReplyCache::KeyOf(const CallIdentity& call) {
  return Key{call.xid,       call.program,          call.version,
             call.procedure, call.arguments_length, call.arguments_checksum};
}

std::optional<ReplyCache::EntryRef> ReplyCache::Own(
    const CallIdentity& call) const {
  auto it = by_key_.find(KeyOf(call));
  if (it == by_key_.end()) return std::nullopt;
  for (EntryRef entry : it->second) {
    if (entry->connection == call.connection) return entry;
  }
  return std::nullopt;
}

std::optional<ReplyCache::EntryRef> ReplyCache::Match(
    const CallIdentity& call) const {
  auto it = by_key_.find(KeyOf(call));
  if (it == by_key_.end()) return std::nullopt;
  // Its own connection's first: a Server never reuses a connection.
  for (EntryRef entry : it->second) {
    if (entry->connection == call.connection) return entry;
  }
  const bool call_open = open_.contains(call.connection);
  for (EntryRef entry : it->second) {
    if (entry->address != call.address) continue;
    // Two clients open at once are two clients, whatever they send.
    if (call_open && open_.contains(entry->connection)) continue;
    return entry;
  }
  return std::nullopt;
}

ReplyCache::Lookup ReplyCache::Begin(const CallIdentity& call,
                                     absl::FunctionRef<Waiter()> park) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::optional<EntryRef> found = Match(call);
  if (!found.has_value()) {
    oldest_first_.push_back(Entry{.key = KeyOf(call),
                                  .connection = call.connection,
                                  .address = call.address,
                                  .reply = nullptr,
                                  .waiting = {}});
    by_key_[KeyOf(call)].push_back(std::prev(oldest_first_.end()));
    Evict();
    return {.execute = true, .reply = nullptr};
  }
  ++hits_;
  Entry& entry = **found;
  if (entry.reply != nullptr) return {.execute = false, .reply = entry.reply};
  entry.waiting.push_back(park());
  return {.execute = false, .reply = nullptr};
}

std::vector<ReplyCache::Waiter> ReplyCache::Complete(
    const CallIdentity& call, std::shared_ptr<const CachedReply> reply) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::optional<EntryRef> own = Own(call);
  if (!own.has_value() || (*own)->reply != nullptr) return {};
  std::vector<Waiter> waiting = std::move((*own)->waiting);
  const size_t size = reply->bytes();
  if (size > max_bytes_) {
    Erase(*own);
    return waiting;
  }
  bytes_ += size;
  (*own)->reply = std::move(reply);
  Evict();
  return waiting;
}

std::vector<ReplyCache::Waiter> ReplyCache::Abandon(const CallIdentity& call) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::optional<EntryRef> own = Own(call);
  if (!own.has_value() || (*own)->reply != nullptr) return {};
  std::vector<Waiter> waiting = std::move((*own)->waiting);
  Erase(*own);
  return waiting;
}

void ReplyCache::Erase(EntryRef entry) {
  auto it = by_key_.find(entry->key);
  std::vector<EntryRef>& same = it->second;
  same.erase(std::find(same.begin(), same.end(), entry));
  if (same.empty()) by_key_.erase(it);
  if (entry->reply != nullptr) bytes_ -= entry->reply->bytes();
  oldest_first_.erase(entry);
}

void ReplyCache::Evict() {
  // Calls still in progress stay: their duplicates wait on them.
  for (auto entry = oldest_first_.begin();
       entry != oldest_first_.end() &&
       (oldest_first_.size() > max_entries_ || bytes_ > max_bytes_);) {
    if (entry->reply == nullptr) {
      ++entry;
      continue;
    }
    Erase(entry++);
  }
}

size_t ReplyCache::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return oldest_first_.size();
}

uint64_t ReplyCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

}  // namespace rpcrdma::oncrpc
