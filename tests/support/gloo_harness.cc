#include "tests/support/gloo_harness.h"

#include <gloo/rendezvous/context.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <gloo/transport/tcp/device.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "worker/comm/gloo_backend.h"
#include "common/store/in_memory_store.h"
#include "worker/comm/gloo_store_adapter.h"

namespace ddp::test {

std::string uniqueGlooPrefix(const std::string& base) {
  static std::atomic<uint64_t> counter{0};
  return base + "/" + std::to_string(counter.fetch_add(1));
}

std::vector<std::unique_ptr<comm::SharedWords>> sharedPageOf(int world) {
  const std::vector<int64_t> pids(static_cast<size_t>(world), ::getpid());
  std::vector<std::unique_ptr<comm::SharedWords>> ranks;
  for (int r = 0; r < world; ++r) {
    auto page = r == 0 ? comm::SharedWords::create(0, world) : comm::SharedWords::open(::getpid(), ranks[0]->fd(), r, world);
    EXPECT_TRUE(page.isOk()) << page.status();
    if (!page.isOk()) return ranks;
    EXPECT_TRUE((*page)->watch(pids).isOk());
    ranks.push_back(std::move(*page));
  }
  return ranks;
}

comm::OpHeader opHeader(uint64_t collSeq, uint64_t count) {
  comm::OpHeader h;
  h.collSeq = collSeq;
  h.type = 1;
  h.count = count;
  return h;
}

std::vector<std::shared_ptr<::gloo::Context>> connectGlooPair() {
  using namespace std::chrono_literals;
  comm::InMemoryStore store;
  std::vector<std::shared_ptr<::gloo::Context>> contexts(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      ::gloo::transport::tcp::attr attr;
      attr.hostname = "127.0.0.1";
      auto context = std::make_shared<::gloo::rendezvous::Context>(rank, 2);
      context->setTimeout(10s);
      comm::GlooStoreAdapter adapter(store, "pair", Deadline::after(10s));
      auto device = ::gloo::transport::tcp::CreateDevice(attr);
      context->connectFullMesh(adapter, device);
      contexts[static_cast<size_t>(rank)] = context;
    });
  }
  for (auto& t : threads) t.join();
  return contexts;
}

Status runRanks(int world, const RankFn& fn, Duration timeout) {
  return runRanks(world, OptionsFn{}, fn, timeout);
}

Status runRanks(int world, const OptionsFn& configure, const RankFn& fn, Duration timeout) {
  if (world < 1) return invalidArgument("runRanks: world must be >= 1");
  comm::InMemoryStore store;
  const std::string prefix = uniqueGlooPrefix("harness");
  const Deadline deadline = Deadline::after(timeout);

  std::mutex mu;
  std::condition_variable cv;
  int done = 0;                                          // guarded by mu
  std::vector<comm::GlooBackend*> live(world, nullptr);  // guarded by mu
  std::vector<Status> createStatus(world);               // guarded by mu

  std::vector<std::thread> threads;
  threads.reserve(world);
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      comm::GlooOptions opts;
      opts.rank = r;
      opts.size = world;
      opts.prefix = prefix;
      opts.connectTimeout = std::min<Duration>(timeout, opts.connectTimeout);
      if (configure) configure(opts);
      auto backend = comm::GlooBackend::create(opts, store);
      if (!backend.isOk()) {
        std::lock_guard<std::mutex> lock(mu);
        createStatus[r] = backend.status();
        ++done;
        cv.notify_all();
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        live[r] = backend->get();
      }
      fn(r, **backend);
      {
        std::lock_guard<std::mutex> lock(mu);
        live[r] = nullptr;
      }
      backend->reset();  // joins the backend's threads
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      cv.notify_all();
    });
  }

  bool timedOut = false;
  {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_until(lock, deadline.at(), [&] { return done == world; })) {
      timedOut = true;
      for (auto* b : live) {
        if (b) b->abort(timeoutError("test harness: ranks not done within " + formatDuration(timeout)));
      }
    }
  }
  for (auto& t : threads) t.join();
  if (timedOut) return timeoutError("runRanks(" + std::to_string(world) + "): ranks not done within " + formatDuration(timeout));
  for (int r = 0; r < world; ++r) {
    if (!createStatus[r].isOk()) return createStatus[r].withContext("rank " + std::to_string(r));
  }
  return Status::ok();
}

}  // namespace ddp::test
