// bench_store: latency of the rendezvous store over HTTP on loopback (HttpStoreServer +
// HttpStoreClient) against the in-process InMemoryStore measured in the same run, and the time
// of the all-to-all key exchange a rendezvous does (each of W ranks sets its key, then gets every
// other rank's key, then all meet at a counter).
// Output (one JSON line each):
//   {"bench":"store_op","store":"http"|"memory","op":"set"|"get"|"add","n":N,
//    "mean_us":..,"p50_us":..,"p99_us":..}
//   {"bench":"store_rendezvous","store":..,"world":W,"time_ms":..,"vs_memory":..}
// Usage: bench_store [--ops N] [--world W]
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/json_line.h"
#include "common/store/http_store_client.h"
#include "common/store/http_store_server.h"
#include "common/store/in_memory_store.h"

using namespace ddp;
using namespace ddp::comm;

namespace {

double us(Duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

void opLatency(const std::string& name, Store& store, const std::string& op, int n) {
  std::vector<double> t;
  t.reserve(n);
  const std::string value(64, 'v');
  for (int i = 0; i < n; ++i) {
    const std::string key = "k" + std::to_string(i % 64);
    auto start = std::chrono::steady_clock::now();
    bool ok = true;
    if (op == "set") ok = store.set(key, value).isOk();
    if (op == "get") ok = store.get(key, Deadline::after(std::chrono::seconds(10))).isOk();
    if (op == "add") ok = store.add("counter", 1).isOk();
    t.push_back(us(std::chrono::steady_clock::now() - start));
    if (!ok) {
      std::fprintf(stderr, "%s %s failed\n", name.c_str(), op.c_str());
      std::exit(1);
    }
  }
  std::sort(t.begin(), t.end());
  double mean = 0;
  for (double x : t) mean += x;
  bench::JsonLine()
      .add("bench", "store_op")
      .add("store", name)
      .add("op", op)
      .add("n", n)
      .add("mean_us", mean / n)
      .add("p50_us", t[t.size() / 2])
      .add("p99_us", t[std::min(t.size() - 1, t.size() * 99 / 100)])
      .print();
}

// Each rank: set its key, get every other key (blocking), add to a counter, wait for "go".
double rendezvous(int world, const std::function<std::shared_ptr<Store>()>& connect, int round) {
  const std::string p = "round" + std::to_string(round) + "/";
  std::vector<std::thread> ranks;
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      auto s = connect();
      const Deadline d = Deadline::after(std::chrono::seconds(60));
      auto fail = [&](const Status& st) {
        std::fprintf(stderr, "rank %d of %d: %s\n", r, world, st.toString().c_str());
        std::exit(1);
      };
      Status st = s->set(p + "addr" + std::to_string(r), std::string(128, char('a' + r % 26)));
      if (!st.isOk()) fail(st);
      for (int q = 0; q < world; ++q) {
        if (q == r) continue;
        auto got = s->get(p + "addr" + std::to_string(q), d);
        if (!got.isOk()) fail(got.status());
      }
      auto n = s->add(p + "arrived", 1);
      if (!n.isOk()) fail(n.status());
      if (*n == world && !(st = s->set(p + "go", "1")).isOk()) fail(st);
      if (!(st = s->wait({p + "go"}, d)).isOk()) fail(st);
    });
  }
  for (auto& t : ranks) t.join();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  int ops = 2000;
  std::vector<int> worlds = {2, 8, 32};
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--ops") == 0) ops = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--world") == 0) worlds = {std::atoi(argv[i + 1])};
  }
  HttpStoreServer server;
  if (!server.start().isOk()) return 1;
  auto memory = std::make_shared<InMemoryStore>();
  HttpStoreClient http("127.0.0.1", server.port());
  for (const char* op : {"set", "get", "add"}) {
    opLatency("memory", *memory, op, ops);
    opLatency("http", http, op, ops);
  }
  int round = 0;
  for (int world : worlds) {
    const double mem = rendezvous(world, [&] { return memory; }, ++round);
    const double net = rendezvous(
        world, [&] { return std::make_shared<HttpStoreClient>("127.0.0.1", server.port()); }, ++round);
    bench::JsonLine().add("bench", "store_rendezvous").add("store", "memory").add("world", world)
        .add("time_ms", mem).add("vs_memory", 1.0).print();
    bench::JsonLine().add("bench", "store_rendezvous").add("store", "http").add("world", world)
        .add("time_ms", net).add("vs_memory", net / std::max(mem, 1e-3)).print();
  }
  return 0;
}
