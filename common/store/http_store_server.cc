#include "common/store/http_store_server.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "common/http/http_router.h"
#include "common/http/http_server.h"
#include "common/store/http_store_wire.h"
#include "common/store/key_space_store.h"
#include "common/store/store_service.h"

namespace ddp::comm {

namespace {

constexpr Duration kSlice = std::chrono::milliseconds(50);  // backing-store long polls

}  // namespace

Status HttpStoreServerOptions::validate() const {
  if (port < 0 || port > 65535) return invalidArgument("store server port " + std::to_string(port) + " out of range");
  if (threads < 2) return invalidArgument("store server needs at least 2 threads");
  return serviceOptions().validate();
}

StoreServiceOptions HttpStoreServerOptions::serviceOptions() const {
  StoreServiceOptions o;
  o.maxKeyBytes = maxKeyBytes;
  o.maxValueBytes = maxValueBytes;
  o.maxKeysPerRequest = maxKeysPerRequest;
  o.maxLongPoll = maxLongPoll;
  return o;
}

struct HttpStoreServer::Impl {
  HttpStoreServerOptions options;
  std::shared_ptr<Store> backing;   // null: serve `space`
  std::shared_ptr<KeySpace> space;
  std::unique_ptr<KeySpaceStore> view;
  StoreService service;
  http::Router router;
  std::atomic<int> longPolls{0};    // backing store: requests holding a handler thread
  std::mutex mu;                    // serialises start() and stop()
  bool used = false;                // guarded by mu
  std::unique_ptr<http::Server> server;  // last: destroyed (stopped) first

  explicit Impl(HttpStoreServerOptions o)
      : options(std::move(o)), service(options.serviceOptions()) {}

  void handle(http::Request& req, std::shared_ptr<http::Responder> responder) {
    const std::string& op = req.params.at("op");
    if (!backing) return service.handle(space, op, req, std::move(responder));
    serveBacking(op, req, *responder);
  }

  // A backing Store is served synchronously (see the header): threads kept free for requests
  // that do not wait.
  int reservedThreads() const { return std::max(1, std::min(4, options.threads / 4)); }

  void serveBacking(const std::string& op, http::Request& req, http::Responder& responder) {
    auto parsed = parseStoreRequest(op, req, service.options());
    if (auto* rejected = std::get_if<http::Response>(&parsed)) {
      responder.reply(std::move(*rejected));
      return;
    }
    StoreRequest& r = std::get<StoreRequest>(parsed);
    Store& s = *backing;
    const std::string& key = r.keys.empty() ? std::string() : r.keys[0];
    switch (r.kind) {
      case StoreRequest::Kind::kGet:
      case StoreRequest::Kind::kWait:
        responder.reply(backingLongPoll(r, responder));
        return;
      case StoreRequest::Kind::kSet: {
        const Status st = s.set(key, r.value);
        responder.reply(st.isOk() ? storeText("") : storeFailure(st));
        return;
      }
      case StoreRequest::Kind::kDelete: {
        auto v = s.deleteKey(key);
        responder.reply(v.isOk() ? storeText(*v ? "1" : "0") : storeFailure(v.status()));
        return;
      }
      case StoreRequest::Kind::kAdd: {
        auto v = s.add(key, r.delta);
        responder.reply(v.isOk() ? storeText(std::to_string(*v)) : storeFailure(v.status()));
        return;
      }
      case StoreRequest::Kind::kCompareSet: {
        auto v = s.compareSet(key, r.expected, r.value);
        responder.reply(v.isOk() ? storeValue(std::move(*v)) : storeFailure(v.status()));
        return;
      }
      case StoreRequest::Kind::kCheck: {
        auto v = s.check(r.keys);
        responder.reply(v.isOk() ? storeText(*v ? "1" : "0") : storeFailure(v.status()));
        return;
      }
    }
  }

  http::Response backingLongPoll(const StoreRequest& r, const http::Responder& responder) {
    Duration wait = r.wait;
    if (++longPolls > options.threads - reservedThreads()) wait = Duration::zero();
    struct Release {
      std::atomic<int>& n;
      ~Release() { --n; }
    } release{longPolls};
    const bool isGet = r.kind == StoreRequest::Kind::kGet;
    const Deadline until = Deadline::after(wait);
    while (true) {
      const Deadline slice = until.min(Deadline::after(kSlice));
      if (isGet) {
        auto got = backing->get(r.keys[0], slice);
        if (got.isOk()) return storeValue(std::move(*got));
        if (got.status().code() != StatusCode::kTimeout) return storeFailure(got.status());
      } else {
        const Status st = backing->wait(r.keys, slice);
        if (st.isOk()) return storeText("");
        if (st.code() != StatusCode::kTimeout) return storeFailure(st);
      }
      if (until.expired() || responder.closed()) break;
    }
    if (isGet) return storeMissing(store_wire::encode(r.keys[0]));
    std::string body;
    for (const auto& k : r.keys) {
      auto present = backing->check({k});
      if (!present.isOk()) return storeFailure(present.status());
      if (!*present) body += store_wire::encode(k) + "\n";
    }
    return storeMissing(std::move(body));
  }
};

HttpStoreServer::HttpStoreServer(HttpStoreServerOptions options, std::shared_ptr<Store> backing)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  Impl& m = *impl_;
  if (backing) {
    m.backing = std::move(backing);
  } else {
    m.space = std::make_shared<KeySpace>(m.options.quotaBytes == 0 ? kNoQuota : m.options.quotaBytes);
    m.view = std::make_unique<KeySpaceStore>(m.space);
  }
  const std::string pattern = std::string(store_wire::kDefaultBasePath) + "/{op}";
  for (const char* method : {"GET", "PUT", "POST", "DELETE"}) {
    m.router.add(method, pattern, [&m](http::Request& req, std::shared_ptr<http::Responder> r) {
      m.handle(req, std::move(r));
    });
  }
  http::ServerOptions so;
  so.host = m.options.host;
  so.port = m.options.port;
  so.handlerThreads = m.options.threads;
  so.bodyLimit = [limit = m.service.bodyLimit()](const http::Request&) { return limit; };
  m.server = std::make_unique<http::Server>(std::move(so), m.router.handler());
}

HttpStoreServer::~HttpStoreServer() { stop(); }

Status HttpStoreServer::start(Deadline) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  if (m.used) return failedPrecondition("store server on " + address() + " was already started (servers are not restartable)");
  DDP_RETURN_IF_ERROR(m.options.validate());
  m.used = true;
  const Status st = m.server->start();
  if (!st.isOk()) return st.withContext("store server");
  return Status::ok();
}

void HttpStoreServer::stop() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->server->stop();
}

bool HttpStoreServer::running() const { return impl_->server->running(); }
int HttpStoreServer::port() const { return impl_->server->port(); }
std::string HttpStoreServer::address() const {
  return impl_->options.host + ":" + std::to_string(impl_->server->port());
}
Store& HttpStoreServer::store() { return impl_->backing ? *impl_->backing : *impl_->view; }
std::shared_ptr<KeySpace> HttpStoreServer::keySpace() const { return impl_->space; }

}  // namespace ddp::comm
