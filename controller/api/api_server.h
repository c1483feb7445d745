#pragma once
// ApiServer: the controller's HTTP routes (docs/API.md) on a ddp::http::Router: the user API
// (jobs, logs, events, checkpoints), the worker API (register, assignment, store, heartbeat)
// and health. It authenticates every /v1 route (controller token for user routes, the job's
// worker token for that job's worker routes, both compared in constant time), parses, calls
// JobManager / StoreService / Launcher, and writes JSON. No decisions live here.
// Thread model: handlers run on the HTTP server's handler threads. Followed logs (`follow=1`)
// are pumped by one thread per follower (at most kMaxFollowers), and DELETE runs on the
// server's own task thread (it waits for workers to stop); stop() joins them all.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/http/http_router.h"
#include "common/http/http_server.h"
#include "common/store/store_service.h"
#include "controller/jobs/job_manager.h"
#include "controller/launch/launcher.h"

namespace ddp::controller {

struct ApiOptions {
  size_t maxJobBytes = 1u << 20;    // POST /v1/jobs body limit (413 above)
  size_t maxSmallBodyBytes = 64u << 10;  // every other non-store route
  int maxFollowers = 64;            // concurrent `logs?follow=1` streams
  Duration deleteTimeout = std::chrono::seconds(15);
  // GET logs: a plain read waits for the log at most logReadTimeout; a follow stream waits
  // followPoll for each chunk, and once the job finished reads what is left for followLastRead.
  Duration logReadTimeout = std::chrono::seconds(5);
  Duration followPoll = std::chrono::milliseconds(250);
  Duration followLastRead = std::chrono::milliseconds(100);
  // Whether this replica is a leader election standby: /readyz answers 200 for it although its
  // job manager refuses changes (Note [Leader label] in controller/kubernetes/leader_elector.h).
  std::function<bool()> standby;
};

class ApiServer {
 public:
  ApiServer(ApiOptions options, std::string controllerToken, JobManager& jobs, Launcher& launcher,
            comm::StoreService& store);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Adds every route to `router`.
  // Every route (the public listener).
  void install(http::Router& router);
  // The workers' routes and the health probes (the worker listener, Note [Two listeners]).
  void installWorkerRoutes(http::Router& router);
  // The body limit of a request by its route (for http::ServerOptions::bodyLimit).
  size_t bodyLimit(const http::Request& head) const;
  // Joins follower and task threads (after the HTTP server stopped).
  void stop();

 private:
  using Handler = std::function<void(http::Request&, std::shared_ptr<http::Responder>)>;
  // `h` behind the bearer middleware (common/http/bearer_auth.h):
  Handler user(Handler h);    // the controller token
  Handler worker(Handler h);  // the job's worker token
  void submit(http::Request& req, std::shared_ptr<http::Responder> res);
  void list(http::Request& req, std::shared_ptr<http::Responder> res);
  void getJob(http::Request& req, std::shared_ptr<http::Responder> res);
  void cancel(http::Request& req, std::shared_ptr<http::Responder> res);
  void suspend(http::Request& req, std::shared_ptr<http::Responder> res);
  void resume(http::Request& req, std::shared_ptr<http::Responder> res);
  void scale(http::Request& req, std::shared_ptr<http::Responder> res);
  void remove(http::Request& req, std::shared_ptr<http::Responder> res);
  void logs(http::Request& req, std::shared_ptr<http::Responder> res);
  void events(http::Request& req, std::shared_ptr<http::Responder> res);
  void checkpoints(http::Request& req, std::shared_ptr<http::Responder> res);
  void requestCheckpoint(http::Request& req, std::shared_ptr<http::Responder> res);
  void flightRecords(http::Request& req, std::shared_ptr<http::Responder> res);
  void registerWorker(http::Request& req, std::shared_ptr<http::Responder> res);
  void assignment(http::Request& req, std::shared_ptr<http::Responder> res);
  void storeOp(http::Request& req, std::shared_ptr<http::Responder> res);
  void heartbeat(http::Request& req, std::shared_ptr<http::Responder> res);
  void checkpointShard(http::Request& req, std::shared_ptr<http::Responder> res);
  void checkpointDecision(http::Request& req, std::shared_ptr<http::Responder> res);
  void checkpointCommit(http::Request& req, std::shared_ptr<http::Responder> res);
  void follow(std::unique_ptr<LogStream> stream, std::string job, std::shared_ptr<http::Responder> res);
  void reapFollowers();  // joins finished followers; mu_ held
  void runTask(std::function<void()> task);

  ApiOptions options_;
  const std::string token_;
  JobManager& jobs_;
  Launcher& launcher_;
  comm::StoreService& store_;

  std::atomic<bool> stopping_{false};
  std::mutex mu_;  // guards followers_, tasks_, activeFollowers_
  struct Follower {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(false);
  };
  std::list<Follower> followers_;  // finished ones are joined when the next one starts
  int activeFollowers_ = 0;
  std::deque<std::function<void()>> tasks_;
  std::condition_variable tasksCv_;
  std::thread taskThread_;
};

// Register, assignment, store and heartbeat routes: they never block (see ApiServer).
bool isWorkerRoute(const http::Request& req);

}  // namespace ddp::controller
