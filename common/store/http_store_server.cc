#include "common/store/http_store_server.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <mutex>
#include <thread>

#include <sys/socket.h>

#include "common/log.h"
#include "common/store/http_store_wire.h"
#include "common/store/in_memory_store.h"

namespace ddp::comm {

// Note [Store long poll]
// A blocking get (or wait) is a sequence of bounded requests: the client asks the server to hold
// the request up to min(its remaining deadline, its long-poll setting); the server caps that at
// maxLongPoll, waits on the backing store in 50 ms slices (so stop() is never held up by a
// waiting request) and answers 200 with the value, or 404 with `X-Ddp-Store: missing` when the
// wait ended first. The client then asks again until its own deadline. No request outlives
// maxLongPoll, so a pool thread is never held for long and a dead client costs one slice.
// A few pool threads (reservedThreads) never long-poll: when every other thread is held by a
// long poll, further blocking requests are answered at once (404 missing) and the client backs
// off before asking again, so a set() is never queued behind waiting readers.

namespace {

constexpr Duration kSlice = std::chrono::milliseconds(50);

// Note [Listen backlog]
// cpp-httplib 0.11 listens with a backlog of 5 (compiled into the library). When dozens of
// ranks connect at once (every rendezvous does), connections past the backlog are reset and
// clients see read errors. The server therefore captures its listening socket through the
// socket-options hook and calls listen() again with a larger backlog, which Linux applies to an
// already listening socket.
constexpr int kListenBacklog = 1024;

void reply(httplib::Response& res, int code, const std::string& text) {
  res.status = code;
  res.set_content(text, "text/plain");
}

bool parseInt(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && p == text.data() + text.size();
}

}  // namespace

Status HttpStoreServerOptions::validate() const {
  if (port < 0 || port > 65535) return invalidArgument("store server port " + std::to_string(port) + " out of range");
  if (maxKeyBytes == 0) return invalidArgument("store server maxKeyBytes must be > 0");
  if (maxValueBytes == 0) return invalidArgument("store server maxValueBytes must be > 0");
  if (maxKeysPerRequest == 0) return invalidArgument("store server maxKeysPerRequest must be > 0");
  if (maxLongPoll < kSlice) return invalidArgument("store server maxLongPoll must be >= 50ms");
  if (threads < 2) return invalidArgument("store server needs at least 2 threads");
  return Status::ok();
}

struct HttpStoreServer::Impl {
  HttpStoreServerOptions options;
  std::shared_ptr<Store> store;
  httplib::Server server;
  std::thread listener;
  std::atomic<bool> stopping{false};
  std::mutex mu;       // serialises start() and stop()
  bool started = false;  // guarded by mu
  bool used = false;     // guarded by mu: start() was called once
  std::atomic<int> port{-1};
  std::atomic<bool> listenerDone{false};
  std::atomic<int> listenFd{-1};  // Note [Listen backlog]
  std::atomic<int> longPolls{0};  // requests holding a pool thread in a long poll

  // Note [Store long poll]: threads kept free for non-blocking requests.
  int reservedThreads() const { return std::max(1, std::min(4, options.threads / 4)); }

  // Claims a long-poll slot for the scope; when every slot is taken the request does not wait.
  class LongPollSlot {
   public:
    LongPollSlot(Impl& m, Duration* wait) : m_(m) {
      if (++m_.longPolls > m_.options.threads - m_.reservedThreads()) *wait = Duration::zero();
    }
    ~LongPollSlot() { --m_.longPolls; }

   private:
    Impl& m_;
  };

  // Reads the single `key` parameter; on failure answers 400 and returns false.
  bool key(const httplib::Request& req, httplib::Response& res, std::string* out) const {
    size_t n = req.get_param_value_count(store_wire::kKeyParam);
    if (n != 1) {
      reply(res, 400, n == 0 ? "missing query parameter 'key'" : "exactly one 'key' parameter expected");
      return false;
    }
    *out = req.get_param_value(store_wire::kKeyParam);
    return validKey(*out, res);
  }

  bool keys(const httplib::Request& req, httplib::Response& res, std::vector<std::string>* out) const {
    size_t n = req.get_param_value_count(store_wire::kKeyParam);
    if (n > options.maxKeysPerRequest) {
      reply(res, 400, std::to_string(n) + " keys exceed the limit of " +
                          std::to_string(options.maxKeysPerRequest) + " per request");
      return false;
    }
    for (size_t i = 0; i < n; ++i) {
      out->push_back(req.get_param_value(store_wire::kKeyParam, i));
      if (!validKey(out->back(), res)) return false;
    }
    return true;
  }

  bool validKey(const std::string& k, httplib::Response& res) const {
    if (k.empty()) {
      reply(res, 400, "empty key");
      return false;
    }
    if (k.size() > options.maxKeyBytes) {
      reply(res, 400, "key of " + std::to_string(k.size()) + " bytes exceeds the limit of " +
                          std::to_string(options.maxKeyBytes));
      return false;
    }
    if (k.find('\0') != std::string::npos) {
      reply(res, 400, "key contains a NUL byte");
      return false;
    }
    return true;
  }

  bool intParam(const httplib::Request& req, httplib::Response& res, const char* name,
                bool required, int64_t* out) const {
    if (!req.has_param(name)) {
      if (required) reply(res, 400, std::string("missing query parameter '") + name + "'");
      return !required;
    }
    const std::string v = req.get_param_value(name);
    if (!parseInt(v, out)) {
      reply(res, 400, std::string("query parameter '") + name + "' = '" + v + "' is not a decimal int64");
      return false;
    }
    return true;
  }

  // The long-poll budget the client asked for, capped by maxLongPoll.
  bool waitParam(const httplib::Request& req, httplib::Response& res, Duration* out) const {
    int64_t ms = 0;
    if (!intParam(req, res, store_wire::kWaitParam, false, &ms)) return false;
    if (ms < 0) {
      reply(res, 400, "query parameter 'wait_ms' must be >= 0");
      return false;
    }
    *out = std::min<Duration>(std::chrono::milliseconds(ms), options.maxLongPoll);
    return true;
  }

  bool valueSize(size_t n, httplib::Response& res) const {
    if (n <= options.maxValueBytes) return true;
    reply(res, 413, "value of " + std::to_string(n) + " bytes exceeds the limit of " +
                        std::to_string(options.maxValueBytes));
    return false;
  }

  static void storeError(httplib::Response& res, const Status& st) {
    reply(res, st.code() == StatusCode::kInvalidArgument ? 409 : 503, st.message());
  }

  void missing(httplib::Response& res, const std::string& body) {
    res.status = 404;
    res.set_header(store_wire::kMissingHeader, "missing");
    res.set_content(body, "text/plain");
  }

  void getValue(const httplib::Request& req, httplib::Response& res) {
    std::string k;
    Duration wait{};
    if (!key(req, res, &k) || !waitParam(req, res, &wait)) return;
    LongPollSlot slot(*this, &wait);
    const Deadline until = Deadline::after(wait);
    while (true) {
      auto got = store->get(k, until.min(Deadline::after(kSlice)));
      if (got.isOk()) {
        res.status = 200;
        res.set_content(*got, "application/octet-stream");
        return;
      }
      if (got.status().code() != StatusCode::kTimeout) return storeError(res, got.status());
      if (until.expired() || stopping.load()) return missing(res, store_wire::encode(k));
    }
  }

  void waitKeys(const httplib::Request& req, httplib::Response& res) {
    std::vector<std::string> ks;
    Duration wait{};
    if (!keys(req, res, &ks) || !waitParam(req, res, &wait)) return;
    LongPollSlot slot(*this, &wait);
    const Deadline until = Deadline::after(wait);
    while (true) {
      Status st = store->wait(ks, until.min(Deadline::after(kSlice)));
      if (st.isOk()) return reply(res, 200, "");
      if (st.code() != StatusCode::kTimeout) return storeError(res, st);
      if (until.expired() || stopping.load()) break;
    }
    std::string body;
    for (const auto& k : ks) {
      auto present = store->check({k});
      if (!present.isOk()) return storeError(res, present.status());
      if (!*present) body += store_wire::encode(k) + "\n";
    }
    missing(res, body);
  }

  void routes() {
    using httplib::Request;
    using httplib::Response;
    server.Get(store_wire::kValuePath, [this](const Request& req, Response& res) { getValue(req, res); });
    server.Put(store_wire::kValuePath, [this](const Request& req, Response& res) {
      std::string k;
      if (!key(req, res, &k) || !valueSize(req.body.size(), res)) return;
      Status st = store->set(k, req.body);
      if (!st.isOk()) return storeError(res, st);
      reply(res, 200, "");
    });
    server.Delete(store_wire::kValuePath, [this](const Request& req, Response& res) {
      std::string k;
      if (!key(req, res, &k)) return;
      auto r = store->deleteKey(k);
      if (!r.isOk()) return storeError(res, r.status());
      reply(res, 200, *r ? "1" : "0");
    });
    server.Post(store_wire::kAddPath, [this](const Request& req, Response& res) {
      std::string k;
      int64_t delta = 0;
      if (!key(req, res, &k) || !intParam(req, res, store_wire::kDeltaParam, true, &delta)) return;
      auto r = store->add(k, delta);
      if (!r.isOk()) return storeError(res, r.status());
      reply(res, 200, std::to_string(*r));
    });
    server.Post(store_wire::kCompareSetPath, [this](const Request& req, Response& res) {
      std::string k;
      int64_t expectedLen = 0;
      if (!key(req, res, &k) ||
          !intParam(req, res, store_wire::kExpectedLenParam, true, &expectedLen)) {
        return;
      }
      if (expectedLen < 0 || static_cast<uint64_t>(expectedLen) > req.body.size()) {
        return reply(res, 400, "expected_len " + std::to_string(expectedLen) +
                                   " does not fit the body of " + std::to_string(req.body.size()) + " bytes");
      }
      std::string expected = req.body.substr(0, expectedLen);
      std::string desired = req.body.substr(expectedLen);
      if (!valueSize(expected.size(), res) || !valueSize(desired.size(), res)) return;
      auto r = store->compareSet(k, expected, desired);
      if (!r.isOk()) return storeError(res, r.status());
      res.status = 200;
      res.set_content(*r, "application/octet-stream");
    });
    server.Get(store_wire::kCheckPath, [this](const Request& req, Response& res) {
      std::vector<std::string> ks;
      if (!keys(req, res, &ks)) return;
      auto r = store->check(ks);
      if (!r.isOk()) return storeError(res, r.status());
      reply(res, 200, *r ? "1" : "0");
    });
    server.Get(store_wire::kWaitPath, [this](const Request& req, Response& res) { waitKeys(req, res); });
    server.set_error_handler([this](const Request& req, Response& res) {
      if (!res.body.empty()) return;
      if (res.status == 404) {
        reply(res, 404, "no such endpoint: " + req.method + " " + req.path);
      } else if (res.status == 413) {
        reply(res, 413, "request body exceeds the limit of " + std::to_string(payloadLimit()) + " bytes");
      } else if (res.status == 400) {
        reply(res, 400, "malformed HTTP request");
      } else {
        reply(res, res.status, "HTTP error " + std::to_string(res.status));
      }
    });
    server.set_exception_handler([](const Request&, Response& res, std::exception_ptr) {
      reply(res, 500, "internal error in the store server");
    });
  }

  // The largest body accepted at all (compare_set carries two values).
  size_t payloadLimit() const { return 2 * options.maxValueBytes + 1024; }
};

HttpStoreServer::HttpStoreServer(HttpStoreServerOptions options, std::shared_ptr<Store> backing)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->store = backing ? std::move(backing) : std::make_shared<InMemoryStore>();
}

HttpStoreServer::~HttpStoreServer() { stop(); }

Status HttpStoreServer::start(Deadline deadline) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  if (m.used) return failedPrecondition("store server on " + address() + " was already started (servers are not restartable)");
  DDP_RETURN_IF_ERROR(m.options.validate());
  m.used = true;
  m.routes();
  const int threads = m.options.threads;
  m.server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  m.server.set_payload_max_length(m.payloadLimit());
  m.server.set_keep_alive_timeout(1);
  m.server.set_read_timeout(std::chrono::seconds(5));
  m.server.set_write_timeout(std::chrono::seconds(5));
  m.server.set_socket_options([&m](socket_t sock) {
    httplib::default_socket_options(sock);
    m.listenFd = static_cast<int>(sock);
  });
  int port = m.options.port;
  if (port == 0) {
    port = m.server.bind_to_any_port(m.options.host);
    if (port < 0) return unavailable("store server cannot bind " + m.options.host + ":0");
  } else if (!m.server.bind_to_port(m.options.host, port)) {
    return unavailable("store server cannot bind " + m.options.host + ":" + std::to_string(port));
  }
  m.port = port;
  if (m.listenFd.load() >= 0) (void)::listen(m.listenFd.load(), kListenBacklog);
  m.stopping = false;
  m.listenerDone = false;
  m.listener = std::thread([&m] {
    if (!m.server.listen_after_bind() && !m.stopping.load()) {
      DDP_LOG(Error) << "store server on " << m.options.host << ":" << m.port.load() << " stopped listening";
    }
    m.listenerDone = true;
  });
  m.started = true;
  // cpp-httplib 0.11 has no wait_until_ready(): stop() before the listener is running would be
  // lost, so start() returns only once it is.
  while (!m.server.is_running()) {
    if (deadline.expired()) {
      return unavailable("store server on " + address() + " did not start listening in time");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Status::ok();
}

void HttpStoreServer::stop() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  if (!m.started) return;
  m.stopping = true;
  // A stop() issued before the listener entered its loop would be lost: wait for it to run (or
  // to have ended) first. start() already waited for this, so this is normally immediate.
  const Deadline limit = Deadline::after(std::chrono::seconds(5));
  while (!m.server.is_running() && !m.listenerDone.load() && !limit.expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  m.server.stop();
  m.listener.join();
  m.started = false;
}

bool HttpStoreServer::running() const { return impl_->server.is_running(); }
int HttpStoreServer::port() const { return impl_->port.load(); }
std::string HttpStoreServer::address() const {
  return impl_->options.host + ":" + std::to_string(impl_->port.load());
}
Store& HttpStoreServer::store() { return *impl_->store; }

}  // namespace ddp::comm
