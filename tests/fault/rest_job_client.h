#pragma once
// The fault tests' view of a controller process over its REST API (the token from its state
// dir): a job's phase, events, workers' pids and restarts, submit and cancel. For tests that
// SIGKILL and restart the controller, where FaultHarness's in-process controller cannot serve.
// Thread model: the test's thread only.

#include <fstream>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace ddp::test {

class RestJobClient {
 public:
  // `url`: "http://host:port" as ControllerProcess::start returns it; `stateDir`: its state dir.
  RestJobClient(const std::string& url, const std::string& stateDir)
      : cli_(hostOf(url), portOf(url)) {
    cli_.set_read_timeout(10, 0);
    std::ifstream tf(stateDir + "/token");
    std::string token;
    std::getline(tf, token);
    auth_ = {{"Authorization", "Bearer " + token}};
  }
  httplib::Client& http() { return cli_; }
  const httplib::Headers& auth() const { return auth_; }

  // The answer's status (0: no answer) and body.
  int submit(const std::string& yaml, std::string* body = nullptr) {
    auto r = cli_.Post("/v1/jobs", auth_, yaml, "application/yaml");
    if (body) *body = r ? r->body : "no answer";
    return r ? r->status : 0;
  }
  int cancel(const std::string& job) {
    auto r = cli_.Post("/v1/jobs/" + job + "/cancel", auth_, "", "application/json");
    return r ? r->status : 0;
  }
  // The job object (null when there is no answer).
  nlohmann::json job(const std::string& job) {
    auto r = cli_.Get("/v1/jobs/" + job, auth_);
    if (!r || r->status != 200) return nullptr;
    return nlohmann::json::parse(r->body, nullptr, false);
  }
  std::string phase(const std::string& name) {
    const nlohmann::json j = job(name);
    return j.is_object() ? j["status"].value("phase", "") : "";
  }
  // The pid of the worker holding `rank` (0 when none).
  int64_t pidOfRank(const std::string& name, int rank) {
    const nlohmann::json j = job(name);
    if (!j.is_object()) return 0;
    for (const auto& w : j["status"]["workers"]) {
      if (w.value("rank", -1) == rank) return w.value("pid", int64_t{0});
    }
    return 0;
  }
  // "  Reason: message" lines, oldest first.
  std::string events(const std::string& name) {
    auto r = cli_.Get("/v1/jobs/" + name + "/events", auth_);
    if (!r || r->status != 200) return "";
    const nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
    if (!j.is_object()) return "";
    std::string out;
    for (const auto& e : j["events"]) out += "  " + e.value("reason", "") + ": " + e.value("message", "") + "\n";
    return out;
  }

 private:
  static std::string hostOf(const std::string& url) {
    const std::string hp = url.substr(url.find("//") + 2);
    return hp.substr(0, hp.rfind(':'));
  }
  static int portOf(const std::string& url) { return std::stoi(url.substr(url.rfind(':') + 1)); }

  httplib::Client cli_;
  httplib::Headers auth_;
};

}  // namespace ddp::test
