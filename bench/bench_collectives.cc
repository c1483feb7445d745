// bench_collectives: nccl-tests-style bandwidth of GlooBackend on loopback, plus the baselines
// measured in the same run: Gloo's own allreduce called directly on the same buffers
// (impl "gloo_direct" ring and "gloo_direct_bcube"), f16/bf16 vs f32 allreduce, 64 coalesced vs
// 64 separate 16 KiB allreduces (wall and process CPU time), memcpy bandwidth, and from 1 MiB the
// loopback TCP ceiling (Note [Loopback TCP ceiling] in bench/common/tcp_ring.h: the bytes a ring
// moves, moved by plain TCP over 1 and 2 streams) with our busbw as a fraction of it.
//
//   build/bin/bench_collectives [--json] [--world 2] [--min-bytes 4096] [--max-bytes 67108864]
//                               [--comm-thread-priority auto|realtime|normal] [--same-host-memory on|off]
//
// Ranks are processes of one host, so from 256 KiB our allreduce reads the peers' memory (Note
// [Same-host allreduce] in worker/comm/cross_memory.h) and up to 32 bytes a rank our ops are one
// exchange of the shared page (Note [Small ops through the page]; `--min-bytes 8` shows them);
// `--same-host-memory off` times our TCP ring instead (what ranks on different hosts run).
// Every row names it (same_host_memory).
//
// Comm threads (ours and Gloo direct's alike) get the priority `ddpctl run` would give a job of
// --world one-thread workers on this machine (Note [Comm thread priority]): the operator's
// DDP_COMM_THREAD_PRIORITY, else normal when the ranks outnumber the cores, else auto; the flag
// overrides it. Every row names it (comm_thread_priority).
// The parent serves an HttpStoreServer on loopback and runs the ranks as child processes (this
// binary again, with --rank); rank 0 prints. bytes = total across ranks for allgather and
// reduce_scatter. busbw = algbw * 2(n-1)/n (allreduce), * (n-1)/n (allgather, reduce_scatter),
// * 1 (broadcast). #wrong = elements differing from the closed form, summed over ranks.
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/common/json_line.h"
#include "bench/common/process.h"
#include "bench/common/tcp_ring.h"
#include "common/dtype.h"
#include "common/thread_priority.h"
#include "common/usable_cores.h"
#include "worker/control/launch_env.h"
#include "worker/comm/gloo_backend.h"
#include "worker/comm/gloo_store_adapter.h"
#include "common/store/http_store_client.h"
#include "common/store/http_store_server.h"

namespace ddp::bench {
namespace {

using comm::Backend;
using comm::BufferView;
using comm::ReduceOp;
using SteadyClock = std::chrono::steady_clock;

struct Args {
  bool json = false;
  int rank = -1;
  int world = 2;
  std::string store;
  size_t minBytes = 4096;
  size_t maxBytes = size_t{64} << 20;
  std::string priority;  // --comm-thread-priority; empty: as ddpctl run decides (the parent's)
  bool sameHostMemory = true;  // --same-host-memory
};

double seconds(SteadyClock::time_point a, SteadyClock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

struct Ctx {
  Args args;
  Backend* b = nullptr;
  std::shared_ptr<::gloo::Context> direct;
  std::vector<std::unique_ptr<TcpRing>> ceilings;  // 1 and 2 streams (Note [Loopback TCP ceiling])
  bool print() const { return args.rank == 0; }
};

double maxOverRanks(Ctx& c, double v) {
  (void)c.b->allreduce(comm::viewOf(&v, 1), ReduceOp::kMax)->wait();
  return v;
}
int64_t sumOverRanks(Ctx& c, int64_t v) {
  (void)c.b->allreduce(comm::viewOf(&v, 1), ReduceOp::kSum)->wait();
  return v;
}

int itersFor(size_t bytes) { return int(std::clamp<size_t>((size_t{64} << 20) / std::max<size_t>(bytes, 1), 2, 40)); }

// Seconds per op (max over ranks). Our ops are timed as nccl-tests times NCCL: `iters` ops
// issued back to back, then all waited (the backend is asynchronous; this is how DDP issues
// buckets). Gloo's direct calls are synchronous: `iters` calls in a row.
double timeLoop(Ctx& c, size_t bytes, const std::function<comm::WorkPtr()>& issue, const std::function<void()>& run) {
  (void)c.b->barrier()->wait();
  const int iters = itersFor(bytes);
  const auto t0 = SteadyClock::now();
  if (issue) {
    std::vector<comm::WorkPtr> works;
    for (int i = 0; i < iters; ++i) works.push_back(issue());
    for (auto& w : works) (void)w->wait();
  } else {
    for (int i = 0; i < iters; ++i) run();
  }
  return maxOverRanks(c, seconds(t0, SteadyClock::now()) / iters);
}

double busFactor(const std::string& op, int n) {
  if (op == "allreduce") return 2.0 * (n - 1) / n;
  if (op == "allgather" || op == "reduce_scatter") return double(n - 1) / n;
  return 1.0;
}

// Note [Timing on a shared machine]
// The reference machine has 2 cores shared with other work, so one timing can be off by 2x.
// Every case of a size is timed in kRounds (kRoundsLarge from 16 MiB) interleaved rounds (ours, Gloo direct, ... in turn,
// starting one case later each round, so a burst of outside load hits all of them alike) and
// the fastest round is reported: outside load only ever adds time, so the minimum is the
// estimate least disturbed by it (the same reasoning as Python's timeit). The target checks
// compare cases timed next to each other: the ratio is taken within each round and the median
// of those per-round ratios is reported, so one lucky round of one case cannot decide it.
constexpr int kRounds = 7;
constexpr int kRoundsLarge = 15;  // sizes >= 16 MiB, where the targets are

// One benchmark row: the op to time (buffers owned by the closure) and its correctness count.
struct Case {
  std::string op, impl, type;
  size_t bytes = 0, count = 0;
  int64_t wrong = 0;
  std::function<comm::WorkPtr()> issue;  // ours (asynchronous)
  std::function<void()> run;             // Gloo direct (synchronous)
  std::vector<double> times;
  double best() const { return *std::min_element(times.begin(), times.end()); }
};

void row(Ctx& c, const Case& k) {
  if (!c.print()) return;
  const double sec = k.best();
  const double algbw = double(k.bytes) / sec / 1e9;
  const double busbw = algbw * busFactor(k.op, c.args.world);
  if (c.args.json) {
    JsonLine().add("op", k.op).add("impl", k.impl).add("type", k.type).add("bytes", uint64_t(k.bytes))
        .add("count", uint64_t(k.count)).add("world", c.args.world).add("time_us", sec * 1e6).add("algbw_gbps", algbw)
        .add("busbw_gbps", busbw).add("wrong", k.wrong).add("rounds", int(k.times.size()))
        .add("comm_thread_priority", c.args.priority).add("same_host_memory", c.args.sameHostMemory).print();
  } else {
    std::printf("%12zu %12zu %6s %15s %18s %10.1f %7.3f %7.3f %6lld\n", k.bytes, k.count, k.type.c_str(), k.op.c_str(),
                k.impl.c_str(), sec * 1e6, algbw, busbw, static_cast<long long>(k.wrong));
    std::fflush(stdout);
  }
}

// Buffers as f32/f16/bf16 filled from doubles.
struct Typed {
  DType dtype;
  std::vector<char> data;
  Typed(DType d, size_t n) : dtype(d), data(n * dtypeSize(d)) {}
  size_t count() const { return data.size() / dtypeSize(dtype); }
  BufferView view() { return BufferView{data.data(), count(), dtype, Device::cpu()}; }
  void set(size_t i, double v) {
    if (dtype == DType::kF32) { float f = float(v); std::memcpy(&data[i * 4], &f, 4); }
    else { uint16_t h = dtype == DType::kF16 ? floatToHalf(float(v)) : floatToBf16(float(v)); std::memcpy(&data[i * 2], &h, 2); }
  }
  double get(size_t i) const {
    if (dtype == DType::kF32) { float f; std::memcpy(&f, &data[i * 4], 4); return f; }
    uint16_t h; std::memcpy(&h, &data[i * 2], 2);
    return dtype == DType::kF16 ? halfToFloat(h) : bf16ToFloat(h);
  }
};

double arInput(int r, size_t i) { return double((r + 1) * int(i % 7 + 1)); }

// Allreduce (sum) of `bytes` per rank in `dtype`: ours, or Gloo's allreduce called directly.
// Timed iterations keep summing into the buffer (values grow; the cost per element does not).
Case allreduceCase(Ctx& c, size_t bytes, DType dtype, const std::string& impl) {
  const int n = c.args.world, r = c.args.rank;
  const size_t count = bytes / dtypeSize(dtype);
  auto buf = std::make_shared<Typed>(dtype, count);
  for (size_t i = 0; i < count; ++i) buf->set(i, arInput(r, i));
  Case k{"allreduce", impl, dtypeName(dtype), bytes, count};
  if (impl == "ours") {
    Backend* b = c.b;
    k.issue = [b, buf] { return b->allreduce(buf->view(), ReduceOp::kSum); };
  } else {
    const bool bcube = impl == "gloo_direct_bcube";
    auto ctx = c.direct;
    auto tag = std::make_shared<uint32_t>(0);
    k.run = [ctx, buf, count, bcube, tag] {
      ::gloo::AllreduceOptions o(ctx);
      o.setOutput(reinterpret_cast<float*>(buf->data.data()), count);
      o.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&::gloo::sum<float>));
      o.setAlgorithm(bcube ? ::gloo::AllreduceOptions::Algorithm::BCUBE : ::gloo::AllreduceOptions::Algorithm::RING);
      o.setTag((*tag)++);
      ::gloo::allreduce(o);
    };
  }
  if (k.issue) (void)k.issue()->wait(); else k.run();  // correctness round on the closed-form input
  for (size_t i = 0; i < count; ++i) k.wrong += buf->get(i) != double(n * (n + 1) / 2) * double(i % 7 + 1);
  k.wrong = sumOverRanks(c, k.wrong);
  return k;
}

Case allgatherCase(Ctx& c, size_t total) {
  const int n = c.args.world, r = c.args.rank;
  const size_t per = total / 4 / n;
  auto in = std::make_shared<std::vector<float>>(per), out = std::make_shared<std::vector<float>>(per * n);
  for (size_t i = 0; i < per; ++i) (*in)[i] = float(r * 1000 + int(i % 1000));
  Backend* b = c.b;
  Case k{"allgather", "ours", "f32", per * n * 4, per * n};
  k.issue = [b, in, out, per] { return b->allgather(comm::viewOf(in->data(), per), comm::viewOf(out->data(), out->size())); };
  (void)k.issue()->wait();
  for (size_t j = 0; j < out->size(); ++j) k.wrong += (*out)[j] != float(int(j / per) * 1000 + int((j % per) % 1000));
  k.wrong = sumOverRanks(c, k.wrong);
  return k;
}

Case reduceScatterCase(Ctx& c, size_t total) {
  const int n = c.args.world, r = c.args.rank;
  const size_t per = total / 4 / n;
  auto in = std::make_shared<std::vector<float>>(per * n), out = std::make_shared<std::vector<float>>(per);
  for (size_t i = 0; i < in->size(); ++i) (*in)[i] = float(arInput(r, i));
  Backend* b = c.b;
  Case k{"reduce_scatter", "ours", "f32", per * n * 4, per * n};
  k.issue = [b, in, out, per] {
    return b->reduceScatter(comm::viewOf(in->data(), in->size()), comm::viewOf(out->data(), per), ReduceOp::kSum);
  };
  (void)k.issue()->wait();
  for (size_t i = 0; i < per; ++i) k.wrong += (*out)[i] != float(n * (n + 1) / 2 * int((r * per + i) % 7 + 1));
  k.wrong = sumOverRanks(c, k.wrong);
  return k;
}

Case broadcastCase(Ctx& c, size_t bytes) {
  const size_t count = bytes / 4;
  auto x = std::make_shared<std::vector<float>>(count);
  for (size_t i = 0; i < count; ++i) (*x)[i] = c.args.rank == 0 ? float(i % 1000) : -1.f;
  Backend* b = c.b;
  Case k{"broadcast", "ours", "f32", bytes, count};
  k.issue = [b, x, count] { return b->broadcast(comm::viewOf(x->data(), count), 0); };
  (void)k.issue()->wait();
  for (size_t i = 0; i < count; ++i) k.wrong += (*x)[i] != float(i % 1000);
  k.wrong = sumOverRanks(c, k.wrong);
  return k;
}

// 64 allreduces of 16 KiB: one coalesced scope vs 64 separate calls (all issued, then waited).
void benchCoalesced(Ctx& c) {
  constexpr int kOps = 64, kReps = 8;
  constexpr size_t kCount = 4096;
  const int n = c.args.world, r = c.args.rank;
  std::vector<std::vector<float>> bufs(kOps, std::vector<float>(kCount));
  auto fill = [&] {
    for (int k = 0; k < kOps; ++k)
      for (size_t i = 0; i < kCount; ++i) bufs[k][i] = float(arInput(r, i + k));
  };
  auto separate = [&] {
    std::vector<comm::WorkPtr> w;
    for (auto& b : bufs) w.push_back(c.b->allreduce(comm::viewOf(b.data(), kCount), ReduceOp::kSum));
    for (auto& x : w) (void)x->wait();
  };
  auto coalesced = [&] {
    comm::CoalescingScope scope(*c.b);
    for (auto& b : bufs) c.b->allreduce(comm::viewOf(b.data(), kCount), ReduceOp::kSum);
    (void)scope.end()->wait();
  };
  int64_t wrong = 0;
  const std::vector<std::function<void()>> variants{separate, coalesced};
  for (const auto& variant : variants) {
    fill();
    variant();
    for (int k = 0; k < kOps; ++k)
      for (size_t i = 0; i < kCount; ++i) wrong += bufs[k][i] != float(n * (n + 1) / 2 * int((i + k) % 7 + 1));
  }
  wrong = sumOverRanks(c, wrong);
  auto measure = [&](const std::function<void()>& f, std::vector<double>* wall, std::vector<double>* cpu) {
    (void)c.b->barrier()->wait();
    const double cpu0 = processCpuSeconds();
    const auto t0 = SteadyClock::now();
    for (int i = 0; i < kReps; ++i) f();
    wall->push_back(seconds(t0, SteadyClock::now()) / kReps);
    cpu->push_back((processCpuSeconds() - cpu0) / kReps);
  };
  auto best = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  for (int i = 0; i < 2; ++i) separate(), coalesced();  // warm-up
  std::vector<double> sw_, sc_, cw_, cc_;
  for (int round = 0; round < kRounds; ++round) {  // interleaved, see Note [Timing on a shared machine]
    measure(separate, &sw_, &sc_);
    measure(coalesced, &cw_, &cc_);
  }
  const double sepWall = best(sw_), sepCpu = best(sc_), coWall = best(cw_), coCpu = best(cc_);
  if (!c.print()) return;
  const double sw = sepWall / coWall, sc = sepCpu / coCpu;
  if (c.args.json) {
    JsonLine().add("op", "coalesced64").add("impl", "ours").add("type", "f32").add("bytes", uint64_t(kCount * 4))
        .add("count", kOps).add("world", n).add("separate_wall_us", sepWall * 1e6).add("coalesced_wall_us", coWall * 1e6)
        .add("separate_cpu_us", sepCpu * 1e6).add("coalesced_cpu_us", coCpu * 1e6).add("speedup_wall", sw)
        .add("speedup_cpu", sc).add("target", 4.0).add("met", sw >= 4.0 && sc >= 4.0).add("wrong", wrong).print();
  } else {
    std::printf("# coalesced64 (64 x 16 KiB allreduce): separate %.0f us wall / %.0f us cpu, coalesced %.0f us wall / "
                "%.0f us cpu -> speedup wall %.2fx cpu %.2fx (target 4x) #wrong %lld\n",
                sepWall * 1e6, sepCpu * 1e6, coWall * 1e6, coCpu * 1e6, sw, sc, static_cast<long long>(wrong));
  }
}

void benchMemcpy(Ctx& c) {
  if (!c.print()) return;
  const size_t bytes = size_t{64} << 20;
  std::vector<char> a(bytes, 1), b(bytes, 2);
  std::memcpy(b.data(), a.data(), bytes);
  double sec = 1e9;
  for (int i = 0; i < 10; ++i) {  // fastest of 10 copies (Note [Timing on a shared machine])
    a[i] = char(i);
    const auto t0 = SteadyClock::now();
    std::memcpy(b.data(), a.data(), bytes);
    sec = std::min(sec, seconds(t0, SteadyClock::now()));
  }
  const int64_t wrong = std::memcmp(a.data(), b.data(), bytes) != 0;
  const double bw = double(bytes) / sec / 1e9;
  if (c.args.json) {
    JsonLine().add("op", "memcpy").add("impl", "memcpy").add("type", "u8").add("bytes", uint64_t(bytes)).add("count", uint64_t(bytes))
        .add("world", 1).add("time_us", sec * 1e6).add("algbw_gbps", bw).add("busbw_gbps", bw).add("wrong", wrong).print();
  } else {
    std::printf("# memcpy 64 MiB: %.1f us, %.3f GB/s (physical limit of one copy)\n", sec * 1e6, bw);
  }
}

void check(Ctx& c, const std::string& name, const std::string& type, size_t bytes, double ratio, double target) {
  if (!c.print()) return;
  if (c.args.json) {
    JsonLine().add("op", "allreduce").add("check", name).add("type", type).add("bytes", uint64_t(bytes)).add("ratio", ratio)
        .add("target", target).add("met", ratio >= target).print();
  } else {
    std::printf("# check %s %s at %zu bytes: ratio %.3f (target >= %.2f) %s\n", name.c_str(), type.c_str(), bytes, ratio,
                target, ratio >= target ? "met" : "MISSED");
  }
}

// The loopback TCP ceiling at this size (Note [Loopback TCP ceiling]): the bytes a ring allreduce
// moves per rank, moved by plain TCP; reported as an allreduce of `bytes` (same busbw formula).
Case ceilingCase(Ctx& c, size_t bytes, TcpRing& ring) {
  Case k{"allreduce", ring.streams() == 1 ? "tcp_ceiling_1stream" : "tcp_ceiling_2streams", "u8", bytes, bytes};
  const int n = c.args.world;
  const size_t moved = bytes / n * 2 * (n - 1);
  k.run = [&ring, moved] {
    Status st = ring.move(moved);
    if (!st.isOk()) {
      std::fprintf(stderr, "%s\n", st.toString().c_str());
      std::exit(2);
    }
  };
  return k;
}

void ceilingLine(Ctx& c, size_t bytes, int streams, double fraction) {
  if (!c.print()) return;
  if (c.args.json) {
    JsonLine().add("op", "allreduce").add("check", "busbw_fraction_of_tcp_ceiling").add("type", "f32")
        .add("bytes", uint64_t(bytes)).add("streams", streams).add("fraction", fraction).print();
  } else {
    std::printf("# our allreduce at %zu bytes: %.3f of the loopback TCP ceiling (%d stream%s)\n", bytes, fraction,
                streams, streams == 1 ? "" : "s");
  }
}

Status connectCeilings(Ctx& c, comm::Store& store) {
  for (int streams : {1, 2}) {
    DDP_ASSIGN_OR_RETURN(auto ring, TcpRing::connect(store, "bench/tcp" + std::to_string(streams), c.args.rank,
                                                     c.args.world, streams, Deadline::after(std::chrono::seconds(60))));
    c.ceilings.push_back(std::move(ring));
  }
  return Status::ok();
}

// Gloo's own context for the direct baseline, on the same store; Internal on failure.
Status connectDirect(Ctx& c, comm::Store& store) {
  try {
    ::gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto dev = ::gloo::transport::tcp::CreateDevice(attr);
    auto ctx = std::make_shared<::gloo::rendezvous::Context>(c.args.rank, c.args.world);
    ctx->setTimeout(std::chrono::seconds(120));
    comm::GlooStoreAdapter adapter(store, "bench/direct", Deadline::after(std::chrono::seconds(60)));
    ctx->connectFullMesh(adapter, dev);
    c.direct = ctx;
  } catch (const std::exception& e) {
    return internalError(std::string("gloo direct context: ") + e.what());
  }
  return Status::ok();
}

// Every case of one size, timed in interleaved rounds, its rows and its target lines.
void benchSize(Ctx& c, size_t bytes) {
  std::vector<Case> cases;
  cases.push_back(allreduceCase(c, bytes, DType::kF32, "ours"));
  cases.push_back(allreduceCase(c, bytes, DType::kF32, "gloo_direct"));
  cases.push_back(allreduceCase(c, bytes, DType::kF32, "gloo_direct_bcube"));
  cases.push_back(allreduceCase(c, bytes, DType::kF16, "ours"));
  cases.push_back(allreduceCase(c, bytes, DType::kBF16, "ours"));
  cases.push_back(allgatherCase(c, bytes));
  cases.push_back(reduceScatterCase(c, bytes));
  cases.push_back(broadcastCase(c, bytes));
  const bool ceiling = bytes >= (size_t{1} << 20);
  if (ceiling) {
    for (auto& ring : c.ceilings) cases.push_back(ceilingCase(c, bytes, *ring));
  }
  const int rounds = bytes >= (size_t{16} << 20) ? kRoundsLarge : kRounds;
  for (int round = 0; round < rounds; ++round) {
    for (size_t j = 0; j < cases.size(); ++j) {  // rotate the order: no case is always first
      Case& k = cases[(j + round) % cases.size()];
      k.times.push_back(timeLoop(c, bytes, k.issue, k.run));
    }
  }
  for (const auto& k : cases) row(c, k);
  // Target ratios are paired per round (Note [Timing on a shared machine]). Same bytes, so a
  // busbw ratio is the inverse time ratio. Gloo's faster algorithm at this size (by best
  // round) is the baseline; taking the faster of two per round would bias it by noise alone.
  auto pairedRatio = [&](const std::function<double(int)>& ratioOfRound) {
    std::vector<double> r;
    for (int i = 0; i < rounds; ++i) r.push_back(ratioOfRound(i));
    std::sort(r.begin(), r.end());
    return r[r.size() / 2];
  };
  const auto& ours = cases[0].times;
  if (bytes == (size_t{16} << 20) || bytes == (size_t{64} << 20)) {
    const auto& fastest = cases[1].best() <= cases[2].best() ? cases[1].times : cases[2].times;
    check(c, "vs_gloo_direct", "f32", bytes, pairedRatio([&](int i) { return fastest[i] / ours[i]; }), 1.0);
  }
  for (size_t j = 0; ceiling && j < c.ceilings.size(); ++j) {
    const auto& tcp = cases[8 + j].times;
    ceilingLine(c, bytes, c.ceilings[j]->streams(), pairedRatio([&](int i) { return tcp[i] / ours[i]; }));
  }
  if (bytes == (size_t{16} << 20)) {
    check(c, "half_vs_f32", "f16", bytes, pairedRatio([&](int i) { return ours[i] / cases[3].times[i]; }), 0.9);
    check(c, "half_vs_f32", "bf16", bytes, pairedRatio([&](int i) { return ours[i] / cases[4].times[i]; }), 0.9);
  }
}

int runRank(const Args& args) {
  // The whole rank runs at comm priority (Note [Comm thread priority]): Gloo direct's calls run
  // on this thread and its I/O loop inherits the policy, so the baseline is scheduled exactly as
  // GlooBackend's executor and loop, and differs from ours in the layer only. (Every thread that
  // enters Gloo must share the priority; this one creates, drives and destroys the direct
  // context.)
  const CommThreadPriority priority = *parseCommThreadPriority(args.priority);  // the parent checked it
  CommPriorityScope scope(priority);
  auto fail = [&](const Status& st) {
    std::fprintf(stderr, "rank %d: %s\n", args.rank, st.toString().c_str());
    return 2;
  };
  auto client = comm::HttpStoreClient::connect(args.store);
  if (!client.isOk()) return fail(client.status());
  comm::GlooOptions o;
  o.rank = args.rank;
  o.size = args.world;
  o.prefix = "bench/ours";
  o.commThreadPriority = priority;
  o.sameHostMemory = args.sameHostMemory;
  auto backend = comm::GlooBackend::create(o, **client);
  if (!backend.isOk()) return fail(backend.status());
  Ctx c;
  c.args = args;
  c.b = backend->get();
  if (Status st = connectDirect(c, **client); !st.isOk()) return fail(st);
  if (Status st = connectCeilings(c, **client); !st.isOk()) return fail(st);
  if (c.print() && !args.json) {
    std::printf("# bench_collectives: %d processes on loopback, GlooBackend vs Gloo direct, comm threads %s\n",
                args.world, args.priority.c_str());
    std::printf("# %10s %12s %6s %15s %18s %10s %7s %7s %6s\n", "size(B)", "count", "type", "op", "impl", "time(us)",
                "algbw", "busbw", "#wrong");
  }
  for (size_t bytes = args.minBytes; bytes <= args.maxBytes; bytes *= 4) benchSize(c, bytes);
  benchCoalesced(c);
  benchMemcpy(c);
  (void)c.b->barrier()->wait();
  return 0;
}

// The ranks' comm thread priority: the flag's, else what ddpctl run gives a job of args.world
// one-thread workers on the cores this process may use.
Result<std::string> ranksPriority(const Args& args) {
  if (!args.priority.empty()) {
    DDP_RETURN_IF_ERROR(parseCommThreadPriority(args.priority).status());
    return args.priority;
  }
  DDP_ASSIGN_OR_RETURN(auto operatorChoice, runtime::operatorCommPriority(runtime::processEnv()));
  const auto p = runtime::workerCommPriority(JobSpec{}, args.world, usableCores(), operatorChoice);
  return std::string(commThreadPriorityName(p.value_or(CommThreadPriority::kAuto)));
}

int runParent(const Args& args, int argc, char** argv) {
  auto priority = ranksPriority(args);
  if (!priority.isOk()) {
    std::fprintf(stderr, "bench_collectives: %s\n", priority.status().message().c_str());
    return 2;
  }
  comm::HttpStoreServer server;
  Status st = server.start();
  if (!st.isOk()) {
    std::fprintf(stderr, "store server: %s\n", st.toString().c_str());
    return 2;
  }
  std::vector<pid_t> pids;
  for (int r = 0; r < args.world; ++r) {
    std::vector<std::string> child{selfExe()};
    for (int i = 1; i < argc; ++i) child.push_back(argv[i]);
    for (const std::string& s : {std::string("--rank"), std::to_string(r), std::string("--store"), server.address(),
                                 std::string("--comm-thread-priority"), *priority}) {
      child.push_back(s);
    }
    auto pid = spawnProcess(child);
    if (!pid.isOk()) {
      std::fprintf(stderr, "%s\n", pid.status().toString().c_str());
      return 2;
    }
    pids.push_back(*pid);
  }
  int rc = 0;
  for (const auto& e : waitAll(pids, Deadline::after(std::chrono::minutes(20)))) {
    if (!e.ok()) {
      std::fprintf(stderr, "rank process %d failed (exit %d, signal %d)\n", int(e.pid), e.code, e.signal);
      rc = 1;
    }
  }
  return rc;
}

}  // namespace
}  // namespace ddp::bench

int main(int argc, char** argv) {
  ddp::bench::Args args;
  auto usage = [] {
    std::fprintf(stderr, "usage: bench_collectives [--json] [--world N] [--min-bytes B] [--max-bytes B] "
                         "[--comm-thread-priority auto|realtime|normal] [--same-host-memory on|off]\n");
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--json") args.json = true;
    else if (a == "--rank") args.rank = std::atoi(next().c_str());
    else if (a == "--world") args.world = std::atoi(next().c_str());
    else if (a == "--store") args.store = next();
    else if (a == "--min-bytes") args.minBytes = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--max-bytes") args.maxBytes = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--comm-thread-priority") args.priority = next();
    else if (a == "--same-host-memory") {
      const std::string v = next();
      if (v != "on" && v != "off") return usage();
      args.sameHostMemory = v == "on";
    } else {
      return usage();
    }
  }
  if (args.world < 2 || args.minBytes < 8 || args.maxBytes < args.minBytes) {
    std::fprintf(stderr, "bench_collectives: need --world >= 2 and 8 <= min-bytes <= max-bytes\n");
    return 2;
  }
  return args.rank < 0 ? ddp::bench::runParent(args, argc, argv) : ddp::bench::runRank(args);
}
