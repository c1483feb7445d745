// bench_controller: the controller's worker API under load, with the load generator in a
// separate process: it starts `ddp-controller --launcher external` on 127.0.0.1 (fresh state
// directory), then simulated workers (one keep-alive connection each, all driven by one epoll
// thread of this process; bench/common/controller_load_*.h) use the worker routes of docs/API.md.
//
//   build/bin/bench_controller [--json] [--workers 64,256,1024] [--heartbeat-workers 256,1024,4096]
//                              [--heartbeat-seconds 10] [--controller PATH] [--heartbeat-csv FILE]
//
// 1. Rendezvous: a job of N workers (workers.count = min = max = N), N workers register and
//    long-poll their assignment (wait_ms=2000, 204: ask again). `seconds` runs from the first
//    join sent to the last assignment received (the connections are opened before the clock
//    starts); every rank 0..N-1 must be handed out exactly once, else the program fails.
//    {"bench":"rendezvous","workers":N,"seconds":S,"join_seconds":..,"polls":..,
//     "assignment_mb":..,"connect_seconds":..,"controller_cpu_seconds":..,"client_cpu_seconds":..}
// 2. Heartbeats: a job of N workers, rendezvoused as above, then every worker POSTs a heartbeat
//    once per period (1 s) at its own phase (i/N of the period) for --heartbeat-seconds, on its
//    own connection. Latency is send .. full response; controller_cpu_cores is the controller's
//    utime+stime (/proc/PID/stat) over the window (first scheduled beat .. last response) divided
//    by the window; client_cpu_cores is this process's, for the same window.
//    {"bench":"heartbeat","workers":N,"p50_ms":..,"p99_ms":..,"controller_cpu_cores":..,
//     "errors":..,"max_ms":..,"mean_ms":..,"requests":..,"deferred":..,"retries":..,
//     "client_cpu_cores":..,"rendezvous_seconds":..}
//    (deferred: beats due while that worker's previous one was still in flight, sent when it
//    returned; retries: beats resent on a fresh connection because the controller had closed the
//    idle keep-alive one, Note [Stale keep-alive connections]).
// Targets: 1024 workers rendezvous in <= 1 s; 4096 workers at 1 Hz with p99 <= 20 ms and
// <= 0.5 controller core.
//
// An empty list (--workers "") skips that part. Progress ("# heartbeat N workers: rendezvous took
// S s; beating for T s") goes to stderr. Every loop is bounded by a deadline (connect 30 s,
// rendezvous 120 s, heartbeats T + 30 s); SIGINT/SIGTERM end the run at the next batch of events,
// with the same cleanup.
//
// --heartbeat-csv FILE writes every beat (workers,sent_s,latency_ms,worker; latency -1: no 200
// answer) to see when slow answers happen (e.g. periodically, for every worker at once).
//
// Each job is deleted (DELETE /v1/jobs/NAME) after its run. The controller is stopped (SIGTERM,
// SIGKILL after 5 s) and its directory removed on every path; it also dies with this process.
// Exit status: 0 ok, 1 a run failed, 2 bad flags.
#include <signal.h>
#include <sys/resource.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/common/controller_load_client.h"
#include "bench/common/controller_load_job_token.h"
#include "bench/common/controller_load_process.h"
#include "bench/common/controller_load_workers.h"
#include "bench/common/json_line.h"
#include "bench/common/process.h"

namespace {

using namespace ddp;
using namespace ddp::bench;

constexpr auto kApiTimeout = std::chrono::seconds(30);

struct Options {
  bool json = false;
  std::vector<int> workers = {64, 256, 1024};
  std::vector<int> heartbeatWorkers = {256, 1024, 4096};
  int heartbeatSeconds = 10;
  std::string controller;  // empty: ddp-controller next to this program
  std::string samplesCsv;  // --heartbeat-csv: every beat of every heartbeat run
};

// SIGINT/SIGTERM: the loops stop at their next batch and the controller is cleaned up. A process
// global only because a signal handler sets it; nothing else reads it but workerOptions().
std::atomic<bool> gInterrupted{false};
void onSignal(int) { gInterrupted = true; }

std::string usage() {
  return "usage: bench_controller [--json] [--workers 64,256,1024] [--heartbeat-workers 256,1024,4096]\n"
         "                        [--heartbeat-seconds 10] [--controller PATH] [--heartbeat-csv FILE]\n";
}

bool parseList(const std::string& s, std::vector<int>* out) {
  out->clear();
  if (s.empty()) return true;  // run none of this kind
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    const std::string item = s.substr(pos, comma - pos);
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > 4096) return false;
    out->push_back(static_cast<int>(v));
    pos = comma + 1;
  }
  return true;
}

Result<Options> parseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool hasValue = i + 1 < argc;
    if (a == "--json") {
      o.json = true;
    } else if (a == "--workers" && hasValue) {
      if (!parseList(argv[++i], &o.workers)) return invalidArgument("--workers: a list of counts in 1..4096");
    } else if (a == "--heartbeat-workers" && hasValue) {
      if (!parseList(argv[++i], &o.heartbeatWorkers)) return invalidArgument("--heartbeat-workers: a list of counts in 1..4096");
    } else if (a == "--heartbeat-seconds" && hasValue) {
      o.heartbeatSeconds = std::atoi(argv[++i]);
      if (o.heartbeatSeconds < 1 || o.heartbeatSeconds > 3600) return invalidArgument("--heartbeat-seconds: 1..3600");
    } else if (a == "--controller" && hasValue) {
      o.controller = argv[++i];
    } else if (a == "--heartbeat-csv" && hasValue) {
      o.samplesCsv = argv[++i];
    } else {
      return invalidArgument("unknown or incomplete flag " + a);
    }
  }
  if (o.controller.empty()) {
    const std::string self = selfExe();
    o.controller = self.substr(0, self.rfind('/') + 1) + "ddp-controller";
  }
  return o;
}

// Soft RLIMIT_NOFILE up to the hard limit (the controller inherits it): N sockets on each side.
void raiseFileLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

std::string jobYaml(const std::string& name, int workers) {
  const std::string n = std::to_string(workers);
  // heartbeatMisses 200 (and hangSeconds 250 to keep heartbeatSeconds x misses < hangSeconds <
  // collectiveSeconds): workers that got their assignment early wait, silent, until every worker
  // holds one, which takes minutes at 4096 workers; they must not be declared lost meanwhile
  // (HeartbeatMissed / HeartbeatResumed events for every worker would pollute the window).
  return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata:\n  name: " + name + "\nspec:\n  workers: {count: " + n +
         ", min: " + n + ", max: " + n + "}\n  model: {type: mlp, hidden: [8]}\n" +
         "  data: {dataset: synthetic}\n  steps: 1000\n" +
         "  timeouts: {heartbeatSeconds: 1, heartbeatMisses: 200, hangSeconds: 250}\n";
}

// Submits the job and returns its worker token (read from the job store, never served by the API).
Result<std::string> submitJob(const ControllerLoadProcess& ctl, const std::string& name, int workers) {
  const std::string req = httpRequest("POST", "/v1/jobs", ctl.hostPort(), ctl.token(), "application/yaml",
                                      jobYaml(name, workers));
  DDP_ASSIGN_OR_RETURN(LoadResponse r, ControllerLoadClient::roundTrip(ctl.host(), ctl.port(), req, Deadline::after(kApiTimeout)));
  if (r.status != 201) return unavailable("POST /v1/jobs " + name + ": HTTP " + std::to_string(r.status) + " " + r.body);
  return readJobWorkerToken(ctl.stateDir() + "/jobs.db", name);
}

Status deleteJob(const ControllerLoadProcess& ctl, const std::string& name) {
  const std::string req = httpRequest("DELETE", "/v1/jobs/" + name, ctl.hostPort(), ctl.token());
  DDP_ASSIGN_OR_RETURN(LoadResponse r, ControllerLoadClient::roundTrip(ctl.host(), ctl.port(), req, Deadline::after(kApiTimeout)));
  if (r.status != 200) return unavailable("DELETE /v1/jobs/" + name + ": HTTP " + std::to_string(r.status) + " " + r.body);
  return Status::ok();
}

SimulatedWorkersOptions workerOptions(bool keepSamples = false) {
  SimulatedWorkersOptions o;
  o.keepSamples = keepSamples;
  o.interrupted = [] { return gInterrupted.load(); };
  return o;
}

Result<RendezvousResult> rendezvousRun(const ControllerLoadProcess& ctl, int n) {
  const std::string name = "rdzv-" + std::to_string(n);
  DDP_ASSIGN_OR_RETURN(std::string token, submitJob(ctl, name, n));
  Result<RendezvousResult> res = notFound("");
  {
    SimulatedWorkers workers({ctl.host(), ctl.workerPort(), name, token, n}, workerOptions());
    res = workers.rendezvous([&ctl] { return ctl.cpuSeconds(); });
  }  // connections closed before the delete
  Status del = deleteJob(ctl, name);
  if (!res.isOk()) return res.status().withContext("job " + name);
  if (!del.isOk()) return del;
  return res;
}

Result<std::pair<RendezvousResult, HeartbeatResult>> heartbeatRun(const ControllerLoadProcess& ctl, int n, int seconds,
                                                                  bool keepSamples) {
  const std::string name = "hb-" + std::to_string(n);
  DDP_ASSIGN_OR_RETURN(std::string token, submitJob(ctl, name, n));
  Result<std::pair<RendezvousResult, HeartbeatResult>> res = notFound("");
  {
    SimulatedWorkers workers({ctl.host(), ctl.workerPort(), name, token, n}, workerOptions(keepSamples));
    auto rdzv = workers.rendezvous([&ctl] { return ctl.cpuSeconds(); });
    if (!rdzv.isOk()) {
      res = rdzv.status();
    } else {
      std::fprintf(stderr, "# heartbeat %d workers: rendezvous took %.3f s; beating for %d s\n", n, rdzv->seconds,
                   seconds);
      auto hb = workers.heartbeat(seconds, [&ctl] { return ctl.cpuSeconds(); });
      if (hb.isOk()) res = std::make_pair(*rdzv, *hb);
      else res = hb.status();
    }
  }
  Status del = deleteJob(ctl, name);
  if (!res.isOk()) return res.status().withContext("job " + name);
  if (!del.isOk()) return del;
  return res;
}

void printRendezvous(const Options& o, int n, const RendezvousResult& r, bool header) {
  if (o.json) {
    JsonLine()
        .add("bench", "rendezvous")
        .add("workers", n)
        .add("seconds", r.seconds)
        .add("join_seconds", r.joinSeconds)
        .add("polls", r.polls)
        .add("assignment_mb", static_cast<double>(r.assignmentBytes) / 1e6)
        .add("connect_seconds", r.connectSeconds)
        .add("controller_cpu_seconds", r.controllerCpuSeconds)
        .add("client_cpu_seconds", r.clientCpuSeconds)
        .print();
    return;
  }
  if (header) {
    std::printf("%-11s %8s %10s %10s %8s %14s %10s %10s\n", "rendezvous", "workers", "seconds", "join_s", "polls",
                "assignment_MB", "ctl_cpu_s", "cli_cpu_s");
  }
  std::printf("%-11s %8d %10.4f %10.4f %8lld %14.1f %10.3f %10.3f\n", "", n, r.seconds, r.joinSeconds,
              static_cast<long long>(r.polls), static_cast<double>(r.assignmentBytes) / 1e6, r.controllerCpuSeconds,
              r.clientCpuSeconds);
  std::fflush(stdout);
}

void printHeartbeat(const Options& o, int n, const RendezvousResult& rd, const HeartbeatResult& h, bool header) {
  if (o.json) {
    JsonLine()
        .add("bench", "heartbeat")
        .add("workers", n)
        .add("p50_ms", h.p50Ms)
        .add("p99_ms", h.p99Ms)
        .add("controller_cpu_cores", h.controllerCpuCores)
        .add("errors", h.errors)
        .add("max_ms", h.maxMs)
        .add("mean_ms", h.meanMs)
        .add("requests", h.requests)
        .add("deferred", h.deferred)
        .add("retries", h.retries)
        .add("client_cpu_cores", h.clientCpuCores)
        .add("rendezvous_seconds", rd.seconds)
        .print();
  } else {
    if (header) {
      std::printf("%-11s %8s %8s %8s %8s %9s %7s %9s %9s %9s\n", "heartbeat", "workers", "p50_ms", "p99_ms", "max_ms",
                  "requests", "errors", "ctl_cores", "cli_cores", "rdzv_s");
    }
    std::printf("%-11s %8d %8.3f %8.3f %8.3f %9lld %7lld %9.3f %9.3f %9.3f\n", "", n, h.p50Ms, h.p99Ms, h.maxMs,
                static_cast<long long>(h.requests), static_cast<long long>(h.errors), h.controllerCpuCores,
                h.clientCpuCores, rd.seconds);
    std::fflush(stdout);
  }
  if (!h.firstError.empty()) std::fprintf(stderr, "heartbeat %d workers: first error: %s\n", n, h.firstError.c_str());
}

int runAll(const Options& o, ControllerLoadProcess& ctl) {
  bool header = true;
  for (int n : o.workers) {
    auto r = rendezvousRun(ctl, n);
    if (!r.isOk()) {
      std::fprintf(stderr, "bench_controller: rendezvous of %d workers failed: %s\n", n, r.status().toString().c_str());
      return 1;
    }
    printRendezvous(o, n, *r, header);
    header = false;
  }
  header = true;
  FILE* csv = nullptr;
  if (!o.samplesCsv.empty()) {
    csv = std::fopen(o.samplesCsv.c_str(), "w");
    if (csv == nullptr) {
      std::fprintf(stderr, "bench_controller: cannot write %s: %s\n", o.samplesCsv.c_str(), std::strerror(errno));
      return 1;
    }
    std::fprintf(csv, "workers,sent_s,latency_ms,worker\n");
  }
  for (int n : o.heartbeatWorkers) {
    auto r = heartbeatRun(ctl, n, o.heartbeatSeconds, csv != nullptr);
    if (csv != nullptr && r.isOk()) {
      for (const auto& s : r->second.samples) std::fprintf(csv, "%d,%.6f,%.4f,%d\n", n, s.sentS, s.ms, s.worker);
    }
    if (!r.isOk()) {
      std::fprintf(stderr, "bench_controller: heartbeats of %d workers failed: %s\n", n, r.status().toString().c_str());
      if (csv != nullptr) std::fclose(csv);
      return 1;
    }
    printHeartbeat(o, n, r->first, r->second, header);
    header = false;
  }
  if (csv != nullptr) std::fclose(csv);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto options = parseOptions(argc, argv);
  if (!options.isOk()) {
    std::fprintf(stderr, "bench_controller: %s\n%s", options.status().message().c_str(), usage().c_str());
    return 2;
  }
  raiseFileLimit();
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  ControllerLoadOptions copts;
  copts.binary = options->controller;
  auto ctl = ControllerLoadProcess::start(copts);
  if (!ctl.isOk()) {
    std::fprintf(stderr, "bench_controller: %s\n", ctl.status().toString().c_str());
    return 1;
  }
  int rc = runAll(*options, **ctl);
  if (rc != 0) std::fprintf(stderr, "controller stderr ends:\n%s\n", (*ctl)->logTail().c_str());
  Status st = (*ctl)->stop();
  if (!st.isOk()) {
    std::fprintf(stderr, "bench_controller: %s\n", st.toString().c_str());
    if (rc == 0) rc = 1;
  }
  return rc;
}
