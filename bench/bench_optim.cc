// bench_optim: optimizer step time and optimizer-state memory for DDP + Adam,
// ZeroRedundancyOptimizer(Adam) (ZeRO-1) and DistributedFusedAdam (ZeRO-2) on the DDP step
// benchmark's MLP (1024 -> 2048 x4 -> 10, about 14.7M parameters, batch 64 per rank), and the
// cost of Join: total time of DDP + Adam with uneven inputs (20 vs 30 batches) against even
// inputs (30 and 30).
//
//   build/bin/bench_optim [--json] [--steps 10] [--warmup 3] [--rounds 3] [--batch 64] [--world 2]
//                         [--dfa-bucket-mib 25] [--configs ddp_adam,zero1,dfa,join]
//
// Every configuration runs in fresh processes (this binary re-executed with --worker), one
// compute thread each, over Gloo (TCP loopback); they meet through an HttpStoreServer that this
// process runs. ms_per_step is the slowest rank's median over the measured steps of a whole
// training step (zero grad, forward, backward with the reduction overlapped, optimizer step,
// parameter sync); cpu_ms_per_step the same for the process's CPU time (all threads), which a
// loaded machine disturbs less than wall time; state_bytes_per_rank is the largest rank's optimizer state (exp_avg and
// exp_avg_sq: plain Adam holds all of it, ZeRO-1 its partition, DFA its padded shards).
// Optional config `oib`: DDP with Adam run per bucket from the reducer's callback (optimizer in
// backward) instead of after finalize().
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench/common/mlp_bench.h"
#include "bench/common/rank_processes.h"
#include "bench/common/temp_dir.h"
#include "worker/comm/gloo_backend.h"
#include "common/store/http_store_client.h"
#include "common/store/http_store_server.h"
#include "worker/ddp/ddp_joinable.h"
#include "worker/ddp/reducer.h"
#include "worker/join/join.h"
#include "worker/optim/distributed_fused_adam.h"
#include "worker/optim/optimizer.h"
#include "worker/optim/optimizer_in_backward.h"
#include "worker/optim/zero_redundancy_optimizer.h"

namespace ddp::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kJoinLong = 30;
constexpr int kJoinShort = 20;

struct Args {
  bool json = false;
  int steps = 10;
  int warmup = 3;
  int batch = 64;
  int world = 2;
  int rounds = 3;          // Note [Interleaved rounds]
  int dfaBucketMib = 25;  // DDP's bucket cap, so both overlap backward alike (DFA's default is 100)
  std::vector<std::string> configs = {"ddp_adam", "zero1", "dfa", "join"};
  // Worker mode.
  bool worker = false;
  int rank = 0;
  std::string config;  // ddp_adam | zero1 | dfa | oib | join_even | join_uneven
  std::string store;   // host:port
  std::string dir;
  std::string prefix;
};

Deadline longDeadline() { return Deadline::after(std::chrono::minutes(5)); }

// CPU time of the whole process (every thread: compute, Gloo's transport, the comm thread).
double processCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// One process; writes "<ms_per_step> <state_bytes> <total_s> <cpu_ms_per_step>" to dir/result_<rank>.
// The reducer and the optimizer the configuration `a.config` measures (dfa: no reducer).
struct BenchOptimizers {
  std::unique_ptr<Reducer> reducer;
  std::unique_ptr<optim::Optimizer> plain;
  std::unique_ptr<optim::ZeroRedundancyOptimizer> zero;
  std::unique_ptr<optim::DistributedFusedAdam> dfa;
  std::unique_ptr<optim::OptimizerInBackward> oib;

  static Result<BenchOptimizers> create(const Args& a, const std::vector<Parameter*>& params, comm::GlooBackend& gloo) {
    const auto adam = optim::OptimizerConfig::adam(1e-4f);
    BenchOptimizers o;
    if (a.config == "dfa") {
      optim::DistributedFusedAdamOptions options;
      options.config = adam;
      options.bucketCapBytes = static_cast<size_t>(a.dfaBucketMib) << 20;
      DDP_ASSIGN_OR_RETURN(o.dfa, optim::DistributedFusedAdam::create(params, gloo, options));
    } else {
      DDP_ASSIGN_OR_RETURN(o.reducer, Reducer::create(gloo, params));
      if (a.config == "zero1") {
        DDP_ASSIGN_OR_RETURN(o.zero, optim::ZeroRedundancyOptimizer::create(params, gloo, adam));
      } else if (a.config == "oib") {
        DDP_ASSIGN_OR_RETURN(o.oib, optim::OptimizerInBackward::create(*o.reducer, adam));
      } else {
        DDP_ASSIGN_OR_RETURN(o.plain, optim::makeOptimizer(adam, params));
      }
    }
    return o;
  }
  size_t stateBytes() const {
    return dfa ? dfa->stateBytes() : zero ? zero->stateBytes() : oib ? oib->optimizer().stateBytes() : plain->stateBytes();
  }
};

Status runWorker(const Args& a) {
  DDP_ASSIGN_OR_RETURN(auto model, buildBenchMlp(a.batch));
  const SyntheticBatches data(a.rank, a.batch);

  DDP_ASSIGN_OR_RETURN(auto store, comm::HttpStoreClient::connect(a.store));
  comm::GlooOptions go;
  go.rank = a.rank;
  go.size = a.world;
  go.prefix = a.prefix;  // unique per run: the store outlives runs (Note [Store prefix per generation])
  go.timeout = std::chrono::seconds(300);
  DDP_ASSIGN_OR_RETURN(auto gloo, comm::GlooBackend::create(go, *store));

  DDP_ASSIGN_OR_RETURN(BenchOptimizers opt, BenchOptimizers::create(a, model->parameters(), *gloo));
  auto& [reducer, plain, zero, dfa, oib] = opt;
  const bool isJoin = a.config.rfind("join", 0) == 0;
  std::unique_ptr<DdpJoinable> ddpJoin;
  std::unique_ptr<join::Join> joinScope;
  int iterations = a.warmup + a.steps;
  if (isJoin) {
    ddpJoin = std::make_unique<DdpJoinable>(*reducer);
    iterations = a.config == "join_uneven" && a.rank == 0 ? kJoinShort : kJoinLong;
  }

  std::vector<double> stepMs, cpuMs;
  const auto start = Clock::now();
  if (isJoin) {
    DDP_ASSIGN_OR_RETURN(joinScope, join::Join::create({ddpJoin.get()}));
  }
  for (int step = 0; step < iterations; ++step) {
    const int b = step % kSyntheticBatches;
    const auto t0 = Clock::now();
    const double c0 = processCpuMs();
    model->zeroGrad();
    if (ddpJoin) DDP_RETURN_IF_ERROR(ddpJoin->beginIteration(longDeadline()));
    const GradReadyFn ready = dfa ? dfa->gradReadyFn() : reducer->gradReadyFn();
    DDP_ASSIGN_OR_RETURN(auto stats, model->forwardBackward(data.images(b), data.labels(b), a.batch, ready));
    (void)stats;
    if (dfa) {
      DDP_RETURN_IF_ERROR(dfa->step(longDeadline()));
    } else {
      DDP_RETURN_IF_ERROR(ddpJoin ? ddpJoin->finalize(longDeadline()) : reducer->finalize(longDeadline()));
      if (oib) {
        DDP_RETURN_IF_ERROR(oib->takeError());
      } else {
        DDP_RETURN_IF_ERROR(zero ? zero->step(longDeadline()) : plain->step());
      }
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (step >= a.warmup) {
      stepMs.push_back(ms);
      cpuMs.push_back(processCpuMs() - c0);
    }
  }
  if (joinScope) DDP_RETURN_IF_ERROR(joinScope->finish(longDeadline()));
  const double totalS = std::chrono::duration<double>(Clock::now() - start).count();
  const size_t stateBytes = opt.stateBytes();
  joinScope.reset();
  oib.reset();  // unregisters its callback from the reducer
  reducer.reset();
  std::ofstream out(a.dir + "/result_" + std::to_string(a.rank));
  out << median(stepMs) << " " << stateBytes << " " << totalS << " " << median(cpuMs) << "\n";
  return out ? Status::ok() : unavailable("cannot write the result file");
}

struct ConfigResult {
  double msPerStep = 0, totalS = 0, cpuMsPerStep = 0;
  size_t stateBytes = 0;
};

// Spawns the configuration's processes and collects the slowest / largest rank's figures.
Result<ConfigResult> runConfig(const Args& a, const std::string& config, const std::string& storeAddress) {
  DDP_ASSIGN_OR_RETURN(const TempDir tempDir, TempDir::make("bench_optim"));
  const std::string& dir = tempDir.path();
  static int runCounter = 0;
  const std::string prefix = "bench_optim/" + config + "/" + std::to_string(++runCounter);
  auto argvFor = [&](int r) -> std::vector<std::string> {
    return {"/proc/self/exe", "--worker", "--rank", std::to_string(r), "--world",
            std::to_string(a.world), "--config", config, "--store", storeAddress,
            "--dir", dir, "--prefix", prefix, "--dfa-bucket-mib", std::to_string(a.dfaBucketMib),
            "--steps", std::to_string(a.steps), "--warmup",
            std::to_string(a.warmup), "--batch", std::to_string(a.batch)};
  };
  // Each rank's line: ms_per_step state_bytes total_s cpu_ms_per_step.
  auto rows = runRankProcesses(a.world, argvFor, dir, 4);
  if (!rows.isOk() && rows.status().code() == StatusCode::kUnavailable) return rows.status();
  if (!rows.isOk()) return internalError("configuration '" + config + "' failed (see the workers' messages above)");
  ConfigResult res;
  for (const auto& one : *rows) {
    res.cpuMsPerStep = std::max(res.cpuMsPerStep, one[3]);
    res.msPerStep = std::max(res.msPerStep, one[0]);
    res.stateBytes = std::max(res.stateBytes, static_cast<size_t>(one[1]));
    res.totalS = std::max(res.totalS, one[2]);
  }
  return res;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
    if (s == "--json") a.json = true;
    else if (s == "--steps") a.steps = std::stoi(next());
    else if (s == "--warmup") a.warmup = std::stoi(next());
    else if (s == "--batch") a.batch = std::stoi(next());
    else if (s == "--world") a.world = std::stoi(next());
    else if (s == "--rounds") a.rounds = std::stoi(next());
    else if (s == "--dfa-bucket-mib") a.dfaBucketMib = std::stoi(next());
    else if (s == "--worker") a.worker = true;
    else if (s == "--rank") a.rank = std::stoi(next());
    else if (s == "--config") a.config = next();
    else if (s == "--store") a.store = next();
    else if (s == "--dir") a.dir = next();
    else if (s == "--prefix") a.prefix = next();
    else if (s == "--configs") {
      a.configs.clear();
      std::stringstream ss(next());
      for (std::string c; std::getline(ss, c, ',');) a.configs.push_back(c);
    } else {
      std::cerr << "unknown flag " << s << "\n";
      std::exit(2);
    }
  }
  return a;
}

// Note [Interleaved rounds]
// The reference machine is shared and its load swings by 2x within a minute, so one run per
// configuration would compare different machines. Each round runs every configuration once,
// in order; a ratio is taken within a round and the reported figure is the median over rounds.
// The runs of the configurations asked for: "join" is two, an even and an uneven one.
std::vector<std::string> runsOf(const std::vector<std::string>& configs) {
  std::vector<std::string> runs;
  for (const auto& c : configs) {
    if (c == "join") {
      runs.push_back("join_even");
      runs.push_back("join_uneven");
    } else {
      runs.push_back(c);
    }
  }
  return runs;
}

int runParent(const Args& a) {
  comm::HttpStoreServer server;
  Status st = server.start();
  if (!st.isOk()) {
    std::cerr << "bench_optim: store server: " << st << "\n";
    return 1;
  }
  const std::string address = server.address();
  const std::vector<std::string> runs = runsOf(a.configs);
  std::map<std::string, std::vector<ConfigResult>> results;
  std::map<std::string, std::vector<double>> msRatio, cpuRatio, joinRatio;
  for (int round = 0; round < a.rounds; ++round) {
    std::map<std::string, ConfigResult> thisRound;
    for (const auto& config : runs) {
      auto r = runConfig(a, config, address);
      if (!r.isOk()) {
        std::cerr << r.status() << "\n";
        return 1;
      }
      thisRound[config] = *r;
      results[config].push_back(*r);
    }
    for (const auto& [config, r] : thisRound) {
      if (!thisRound.count("ddp_adam")) continue;
      msRatio[config].push_back(r.msPerStep / thisRound["ddp_adam"].msPerStep);
      cpuRatio[config].push_back(r.cpuMsPerStep / thisRound["ddp_adam"].cpuMsPerStep);
    }
    if (thisRound.count("join_even") && thisRound.count("join_uneven")) {
      joinRatio["join"].push_back(thisRound["join_uneven"].totalS / thisRound["join_even"].totalS);
    }
  }
  auto med = [](std::vector<double> v) { return median(std::move(v)); };
  if (!a.json) std::printf("%-10s %5s %12s %10s %12s %10s %22s %10s\n", "optimizer", "world", "ms_per_step",
                           "vs_ddp_adam", "cpu_ms", "vs_ddp_adam", "state_bytes_per_rank", "vs_adam");
  const size_t adamBytes = results.count("ddp_adam") ? results["ddp_adam"].front().stateBytes : 0;
  for (const auto& config : runs) {
    if (config.rfind("join", 0) == 0) continue;
    std::vector<double> ms, cpu;
    for (const auto& r : results[config]) {
      ms.push_back(r.msPerStep);
      cpu.push_back(r.cpuMsPerStep);
    }
    const double vsCpu = cpuRatio.count(config) ? med(cpuRatio[config]) : 0.0;
    const size_t bytes = results[config].front().stateBytes;
    const double vsMs = msRatio.count(config) ? med(msRatio[config]) : 0.0;
    const double vsBytes = adamBytes ? static_cast<double>(bytes) / adamBytes : 0.0;
    if (a.json) {
      std::printf("{\"bench\":\"optim\",\"optimizer\":\"%s\",\"world\":%d,\"batch_per_rank\":%d,\"steps\":%d,"
                  "\"rounds\":%d,\"ms_per_step\":%.3f,\"state_bytes_per_rank\":%zu,\"ms_vs_ddp_adam\":%.3f,"
                  "\"cpu_ms_per_step\":%.3f,\"cpu_vs_ddp_adam\":%.3f,\"state_vs_ddp_adam\":%.4f}\n",
                  config.c_str(), a.world, a.batch, a.steps, a.rounds, med(ms), bytes, vsMs, med(cpu), vsCpu, vsBytes);
    } else {
      std::printf("%-10s %5d %12.2f %10.3f %12.2f %10.3f %22zu %10.4f\n", config.c_str(), a.world, med(ms), vsMs,
                  med(cpu), vsCpu, bytes, vsBytes);
    }
  }
  if (joinRatio.count("join")) {
    std::vector<double> even, uneven;
    for (const auto& r : results["join_even"]) even.push_back(r.totalS);
    for (const auto& r : results["join_uneven"]) uneven.push_back(r.totalS);
    if (a.json) {
      std::printf("{\"bench\":\"join\",\"world\":%d,\"batch_per_rank\":%d,\"even_batches\":\"%d,%d\","
                  "\"uneven_batches\":\"%d,%d\",\"rounds\":%d,\"even_s\":%.3f,\"uneven_s\":%.3f,"
                  "\"uneven_vs_even\":%.3f}\n",
                  a.world, a.batch, kJoinLong, kJoinLong, kJoinShort, kJoinLong, a.rounds, med(even), med(uneven),
                  med(joinRatio["join"]));
    } else {
      std::printf("join: even (30,30) %.2f s, uneven (20,30) %.2f s, uneven/even %.3f\n", med(even), med(uneven),
                  med(joinRatio["join"]));
    }
  }
  return 0;
}

}  // namespace
}  // namespace ddp::bench

int main(int argc, char** argv) {
  using namespace ddp::bench;
  Args a = parse(argc, argv);
  if (a.worker) {
    ddp::Status st = runWorker(a);
    if (!st.isOk()) {
      std::cerr << "bench_optim worker rank " << a.rank << " config " << a.config << ": " << st << "\n";
      return 1;
    }
    return 0;
  }
  return runParent(a);
}
