#include "oncrpc/adapter/reply_cache.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/hash/hash.h"

namespace rpcrdma::oncrpc {
namespace {

// Linux's nfsd checksums at most this much of the arguments (RC_CSUMLEN).
constexpr size_t kHashedArgumentOctets = 256;

// The client as the cache knows it (reply_cache.h): an IPv4 or IPv6
// address with its port, else the connection.
std::string ClientKey(uint64_t connection, absl::Span<const uint8_t> address) {
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
      append(&in6.sin6_port, sizeof in6.sin6_port);
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
      append(&in4.sin_port, sizeof in4.sin_port);
      return key;
    }
  }
  // A Unix-domain client has no name (all of them would share the
  // server's): only its connection tells it apart.
  key = "c";
  append(&connection, sizeof connection);
  return key;
}

}  // namespace

CallIdentity IdentifyCall(uint64_t connection,
                          absl::Span<const uint8_t> client_address,
                          uint32_t xid, uint32_t program, uint32_t version,
                          uint32_t procedure,
                          absl::Span<const uint8_t> arguments) {
  CallIdentity c;
  c.client = ClientKey(connection, client_address);
  c.xid = xid;
  c.program = program;
  c.version = version;
  c.procedure = procedure;
  c.arguments_length = arguments.size();
  c.arguments_hash = absl::HashOf(
      absl::string_view(reinterpret_cast<const char*>(arguments.data()),
                        std::min(arguments.size(), kHashedArgumentOctets)));
  return c;
}

size_t CachedReply::bytes() const {
  size_t n = xdr.size();
  for (const auto& item : items) n += item.second.size();
  return n;
}

ServerReply CachedReply::ToSend(std::shared_ptr<const CachedReply> cached) {
  ServerReply reply(cached->xdr);
  for (const auto& [position, data] : cached->items) {
    reply.results.push_back(ReplyItem::View(position, data));
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

ReplyCache::Lookup ReplyCache::Begin(const CallIdentity& call,
                                     absl::FunctionRef<Waiter()> park) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(call);
  if (it == entries_.end()) {
    oldest_first_.push_back(call);
    entries_.emplace(call, Entry{nullptr, {}, std::prev(oldest_first_.end())});
    Evict();
    return {.execute = true, .reply = nullptr};
  }
  ++hits_;
  if (it->second.reply != nullptr)
    return {.execute = false, .reply = it->second.reply};
  it->second.waiting.push_back(park());
  return {.execute = false, .reply = nullptr};
}

std::vector<ReplyCache::Waiter> ReplyCache::Complete(
    const CallIdentity& call, std::shared_ptr<const CachedReply> reply) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(call);
  if (it == entries_.end()) return {};
  std::vector<Waiter> waiting = std::move(it->second.waiting);
  const size_t size = reply->bytes();
  if (size > max_bytes_) {
    oldest_first_.erase(it->second.age);
    entries_.erase(it);
    return waiting;
  }
  bytes_ += size;
  it->second.reply = std::move(reply);
  Evict();
  return waiting;
}

std::vector<ReplyCache::Waiter> ReplyCache::Abandon(const CallIdentity& call) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(call);
  if (it == entries_.end()) return {};
  std::vector<Waiter> waiting = std::move(it->second.waiting);
  oldest_first_.erase(it->second.age);
  entries_.erase(it);
  return waiting;
}

void ReplyCache::Evict() {
  // Calls still in progress stay: their duplicates wait on them.
  for (auto age = oldest_first_.begin();
       age != oldest_first_.end() &&
       (entries_.size() > max_entries_ || bytes_ > max_bytes_);) {
    auto it = entries_.find(*age);
    if (it->second.reply == nullptr) {
      ++age;
      continue;
    }
    bytes_ -= it->second.reply->bytes();
    entries_.erase(it);
    age = oldest_first_.erase(age);
  }
}

size_t ReplyCache::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

uint64_t ReplyCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

}  // namespace rpcrdma::oncrpc
