#include "common/store/store_service.h"

#include "common/store/http_store_wire.h"

namespace ddp::comm {

// Note [Store long poll]
// A blocking get (or wait) is a series of bounded requests: the client asks the server to hold
// each one for min(its remaining deadline, HttpStoreClientOptions::longPoll); the server caps
// the hold at maxLongPoll (default 2 s) and answers 200 as soon as the key(s) exist, or 404 with
// `X-Ddp-Store: missing` when the hold ends first; the client then asks again until its own
// deadline, which also makes a blocking get survive a server restart.
// On the server a held request is a KeySpace waiter (a callback holding the request's
// Responder), not a thread: the handler thread registers it and returns at once. The set() that
// makes the keys appear runs the waiters' callbacks (after the key space's lock is released),
// which queue the replies for the event loop; a timer thread expires each waiter at its hold's
// end (expireWait, within a few ms); a client that disconnects cancels its waiter from the
// event loop (Responder::onClose). So thousands of ranks can wait at once on a few handler
// threads, and a set is never queued behind waiting readers.

namespace {

std::string missingBody(const std::vector<std::string>& missing, bool isGet) {
  std::string body;
  for (const auto& k : missing) body += store_wire::encode(k) + (isGet ? "" : "\n");
  return body;
}

}  // namespace

StoreService::StoreService(StoreServiceOptions options) : options_(std::move(options)) {}

StoreService::~StoreService() { timers_.stop(/*runPending=*/true); }

void StoreService::handle(const std::shared_ptr<KeySpace>& space, const std::string& op, http::Request& request,
                          std::shared_ptr<http::Responder> responder) {
  auto parsed = parseStoreRequest(op, request, options_);
  if (auto* rejected = std::get_if<http::Response>(&parsed)) {
    responder->reply(std::move(*rejected));
    return;
  }
  StoreRequest& r = std::get<StoreRequest>(parsed);
  switch (r.kind) {
    case StoreRequest::Kind::kGet:
      return longPoll(space, std::move(r.keys), r.wait, true, std::move(responder));
    case StoreRequest::Kind::kWait:
      return longPoll(space, std::move(r.keys), r.wait, false, std::move(responder));
    case StoreRequest::Kind::kSet: {
      const Status st = space->set(r.keys[0], std::move(r.value));
      responder->reply(st.isOk() ? storeText("") : storeFailure(st));
      return;
    }
    case StoreRequest::Kind::kDelete:
      responder->reply(storeText(space->deleteKey(r.keys[0]) ? "1" : "0"));
      return;
    case StoreRequest::Kind::kAdd: {
      auto v = space->add(r.keys[0], r.delta);
      responder->reply(v.isOk() ? storeText(std::to_string(*v)) : storeFailure(v.status()));
      return;
    }
    case StoreRequest::Kind::kCompareSet: {
      auto v = space->compareSet(r.keys[0], r.expected, r.value);
      responder->reply(v.isOk() ? storeValue(std::move(*v)) : storeFailure(v.status()));
      return;
    }
    case StoreRequest::Kind::kCheck:
      responder->reply(storeText(space->check(r.keys) ? "1" : "0"));
      return;
  }
}

void StoreService::longPoll(const std::shared_ptr<KeySpace>& space, std::vector<std::string> keys, Duration wait,
                            bool isGet, std::shared_ptr<http::Responder> responder) {
  const Deadline until = Deadline::after(wait);
  const std::weak_ptr<KeySpace> weak = space;
  auto done = [weak, responder, keys, isGet](const Status& st) {
    const std::shared_ptr<KeySpace> s = weak.lock();
    if (st.isOk() || st.code() == StatusCode::kTimeout) {
      if (st.isOk() && !isGet) {
        responder->reply(storeText(""));
        return;
      }
      std::optional<std::string> value = (isGet && s) ? s->get(keys[0]) : std::nullopt;
      if (value) {
        responder->reply(storeValue(std::move(*value)));
      } else {  // timed out, or set and deleted again before we read it
        responder->reply(storeMissing(missingBody(s ? s->missing(keys) : keys, isGet)));
      }
      return;
    }
    responder->reply(storeFailure(st));
  };
  const KeySpace::WaitId id = space->waitAsync(std::move(keys), until, std::move(done));
  if (id == 0) return;  // answered already
  timers_.schedule(until.at(), [weak, id] {
    if (auto s = weak.lock()) s->expireWait(id);
  });
  responder->onClose([weak, id] {
    if (auto s = weak.lock()) s->cancelWait(id);
  });
}

}  // namespace ddp::comm
