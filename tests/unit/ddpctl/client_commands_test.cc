// ddpctl's client commands, run in-process against FakeController: an httplib::Server on
// 127.0.0.1 (port 0) that fakes the controller by speaking docs/API.md's user routes from an
// in-memory job map. Time is injected: watch's pauses are recorded, not slept.
#include "tools/ddpctl/client_commands.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "tools/ddpctl/output_format.h"

namespace ddp::ddpctl {
namespace {

constexpr const char* kToken = "0123abcd";
constexpr int64_t kCreated = 1795428000;  // 2026-11-23T10:00:00Z
constexpr size_t kFakeBodyLimit = 4096;

Json errorDoc(const std::string& error) { return {{"error", error}}; }

void reply(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

Json yamlToJson(const YAML::Node& n) {
  if (n.IsMap()) {
    Json o = Json::object();
    for (const auto& kv : n) o[kv.first.as<std::string>()] = yamlToJson(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    Json a = Json::array();
    for (const auto& x : n) a.push_back(yamlToJson(x));
    return a;
  }
  if (!n.IsScalar()) return nullptr;
  int64_t i = 0;
  if (YAML::convert<int64_t>::decode(n, i)) return i;
  return n.as<std::string>();
}

// Fakes the controller (see the file comment). Thread model: the server runs on its own
// threads; jobs_ and the recorded requests are guarded by mu_.
class FakeController {
 public:
  // Called on every GET /v1/jobs/{name} before the answer, with the number of that job's GETs
  // so far (1 for the first): lets a test script a job's progress.
  using OnGet = std::function<void(Json& job, int gets)>;

  FakeController() {
    server_.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
      if (req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
      const std::string auth = req.get_header_value("Authorization");
      if (auth.empty() || auth != std::string("Bearer ") + kToken) {
        reply(res, 401, errorDoc(auth.empty() ? "missing bearer token" : "invalid token"));
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    server_.Post("/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) { submit(req, res); });
    server_.Get("/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) { list(req, res); });
    server_.Get(R"(/v1/jobs/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      Json* job = find(req.matches[1].str());
      if (job == nullptr) return reply(res, 404, errorDoc("job not found"));
      if (onGet_) onGet_(*job, ++gets_[req.matches[1].str()]);
      reply(res, 200, *job);
    });
    server_.Get(R"(/v1/jobs/([^/]+)/events)", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      if (find(req.matches[1].str()) == nullptr) return reply(res, 404, errorDoc("job not found"));
      reply(res, 200, {{"events", Json::array({{{"time", "2026-11-23T10:00:00Z"}, {"type", "Normal"},
                                                {"reason", "Created"}, {"message", "job created"}}})}});
    });
    server_.Get(R"(/v1/jobs/([^/]+)/checkpoints)", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      if (find(req.matches[1].str()) == nullptr) return reply(res, 404, errorDoc("job not found"));
      reply(res, 200, {{"checkpoints", Json::array({{{"step", 100}, {"time", "2026-11-23T10:01:00Z"},
                                                     {"bytes", 2048}, {"worldSize", 2}, {"path", "/ckpt/100"}}})}});
    });
    // On-demand checkpoint (docs/API.md): 202 while Running, 409 otherwise.
    server_.Post(R"(/v1/jobs/([^/]+)/checkpoints)", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      Json* job = find(req.matches[1].str());
      if (job == nullptr) return reply(res, 404, errorDoc("job not found"));
      const std::string phase = (*job)["status"]["phase"].get<std::string>();
      if (phase != "Running") {
        return reply(res, 409, errorDoc("job " + req.matches[1].str() + " is " + phase + "; ask again once it runs"));
      }
      ++checkpointRequests_;
      reply(res, 202, {{"requested", true}, {"afterStep", 42}});
    });
    server_.Post(R"(/v1/jobs/([^/]+)/cancel)", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      Json* job = find(req.matches[1].str());
      if (job == nullptr) return reply(res, 404, errorDoc("job not found"));
      if (isTerminalPhase((*job)["status"]["phase"].get<std::string>())) {
        return reply(res, 409, errorDoc("job already finished"));
      }
      reply(res, 200, *job);
    });
    server_.Delete(R"(/v1/jobs/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      const std::string name = req.matches[1].str();
      if (find(name) == nullptr) return reply(res, 404, errorDoc("job not found"));
      jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(),
                                 [&](const Json& j) { return j["metadata"]["name"] == name; }),
                  jobs_.end());
      reply(res, 200, {{"deleted", name}});
    });
    server_.Get(R"(/v1/jobs/([^/]+)/logs)",
                [this](const httplib::Request& req, httplib::Response& res) { logs(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 500 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  ~FakeController() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      clientSawFirstChunk_ = true;  // release a log stream still waiting
    }
    cv_.notify_all();
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void addJob(const std::string& name, const std::string& phase, Json status = Json::object()) {
    std::lock_guard<std::mutex> lock(mu_);
    status["phase"] = phase;
    jobs_.push_back(newJob(name, {{"workers", {{"count", 2}}}}));
    jobs_.back()["status"].update(status);
  }
  void setOnGet(OnGet f) {
    std::lock_guard<std::mutex> lock(mu_);
    onGet_ = std::move(f);
  }
  std::string lastContentType() {
    std::lock_guard<std::mutex> lock(mu_);
    return lastContentType_;
  }
  std::string lastLogQuery() {
    std::lock_guard<std::mutex> lock(mu_);
    return lastLogQuery_;
  }
  // logs -f: called by the test's output when the first chunk reached it.
  void noteClientSawFirstChunk() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      clientSawFirstChunk_ = true;
    }
    cv_.notify_all();
  }
  bool secondChunkWaitedForClient() {
    std::lock_guard<std::mutex> lock(mu_);
    return secondChunkWaited_;
  }
  int checkpointRequests() {
    std::lock_guard<std::mutex> lock(mu_);
    return checkpointRequests_;
  }

 private:
  static Json newJob(const std::string& name, Json spec) {
    return {{"metadata", {{"name", name}, {"uid", "uid-" + name}, {"creationTimestamp", "2026-11-23T10:00:00Z"},
                          {"labels", Json::object()}}},
            {"spec", std::move(spec)},
            {"status", {{"phase", "Pending"}, {"conditions", Json::array()}, {"generation", 1},
                        {"restarts", 0}, {"workers", Json::array()}, {"progress", nullptr}}}};
  }

  Json* find(const std::string& name) {  // mu_ held
    for (Json& j : jobs_) {
      if (j["metadata"]["name"] == name) return &j;
    }
    return nullptr;
  }

  void submit(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string type = req.get_header_value("Content-Type");
    lastContentType_ = type;
    if (type != "application/yaml" && type != "application/x-yaml" && type != "text/yaml" &&
        type != "application/json") {
      return reply(res, 415, errorDoc("unsupported content type " + type));
    }
    if (req.body.size() > kFakeBodyLimit) {
      return reply(res, 413, errorDoc("body is " + std::to_string(req.body.size()) + " bytes, over the limit of " +
                                      std::to_string(kFakeBodyLimit)));
    }
    YAML::Node doc;
    try {
      doc = YAML::Load(req.body);
    } catch (const YAML::Exception& e) {
      return reply(res, 400, errorDoc(std::string("invalid DDPJob: ") + e.what()));
    }
    Json details = Json::array();
    auto problem = [&](const std::string& path, const std::string& message, const YAML::Node& at) {
      details.push_back({{"path", path}, {"message", message}, {"line", at.Mark().line + 1},
                         {"column", at.Mark().column + 1}});
    };
    const YAML::Node name = doc["metadata"]["name"];
    if (!name.IsScalar()) problem("metadata.name", "required", doc);
    const YAML::Node count = doc["spec"]["workers"]["count"];
    if (count.IsScalar() && count.as<int>() < 1) problem("spec.workers.count", "must be >= 1", count);
    if (doc["spec"]["bogus"]) problem("spec.bogus", "unknown field", doc["spec"]["bogus"]);
    if (!details.empty()) {
      return reply(res, 400, {{"error", "invalid DDPJob: " + std::to_string(details.size()) + " error(s)"},
                              {"details", details}});
    }
    if (find(name.as<std::string>()) != nullptr) {
      return reply(res, 409, errorDoc("job " + name.as<std::string>() + " already exists"));
    }
    jobs_.push_back(newJob(name.as<std::string>(), yamlToJson(doc["spec"])));
    reply(res, 201, jobs_.back());
  }

  void list(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string phase = req.get_param_value("phase");
    static const std::set<std::string> kPhases = {"",          "Pending", "Running",  "Restarting",
                                                  "Succeeded", "Failed",  "Cancelled"};
    if (kPhases.count(phase) == 0) return reply(res, 400, errorDoc("unknown phase '" + phase + "'"));
    Json out = Json::array();
    for (const Json& j : jobs_) {
      if (phase.empty() || j["status"]["phase"] == phase) out.push_back(j);
    }
    reply(res, 200, {{"jobs", out}});
  }

  // Without follow: two lines. With follow=1: a chunk, then (once the client wrote it out, or
  // after 5 s) another, then the end of the stream, as when the job ends.
  void logs(const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (find(req.matches[1].str()) == nullptr) return reply(res, 404, errorDoc("job not found"));
      std::string q;
      for (const char* k : {"rank", "tail", "follow"}) {
        if (req.has_param(k)) q += std::string(q.empty() ? "" : "&") + k + "=" + req.get_param_value(k);
      }
      lastLogQuery_ = q;
    }
    if (req.has_param("rank") && std::stoi(req.get_param_value("rank")) >= 2) {
      const std::string worker = req.matches[1].str() + "-w" + req.get_param_value("rank");
      return reply(res, 404, errorDoc("no log for worker " + worker));
    }
    if (req.get_param_value("follow") != "1") {
      res.set_content("[rank 0] epoch 1\n[rank 1] epoch 1\n", "text/plain");
      return;
    }
    res.set_chunked_content_provider("text/plain", [this](size_t offset, httplib::DataSink& sink) {
      if (offset == 0) {
        const std::string first = "[rank 0] step 1\n";
        sink.write(first.data(), first.size());
        return true;
      }
      std::unique_lock<std::mutex> lock(mu_);
      secondChunkWaited_ = cv_.wait_for(lock, std::chrono::seconds(5), [&] { return clientSawFirstChunk_; });
      lock.unlock();
      const std::string second = "[rank 0] step 2\n";
      sink.write(second.data(), second.size());
      sink.done();
      return true;
    });
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Json> jobs_;
  std::map<std::string, int> gets_;
  OnGet onGet_;
  std::string lastContentType_;
  std::string lastLogQuery_;
  bool clientSawFirstChunk_ = false;
  bool secondChunkWaited_ = false;
  int checkpointRequests_ = 0;
};

// A string stream that calls `onWrite` after each write (to see chunks arrive).
class WatchedBuf : public std::stringbuf {
 public:
  std::function<void()> onWrite;

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::streamsize r = std::stringbuf::xsputn(s, n);
    if (onWrite) onWrite();
    return r;
  }
};

using Env = std::map<std::string, std::string>;

// One command's run: its streams, environment and recorded pauses.
class ClientRun {
 public:
  explicit ClientRun(Env env = {}) : env_(std::move(env)) {}

  int run(const std::string& command, std::vector<std::string> args, std::string stdinText = "") {
    in_.str(std::move(stdinText));
    ClientIo io{
        .out = out_,
        .err = err_,
        .in = in_,
        .env = [this](const std::string& k) -> std::optional<std::string> {
          auto it = env_.find(k);
          return it == env_.end() ? std::nullopt : std::optional<std::string>(it->second);
        },
        .outIsTty = tty,
        .sleep = [this](Duration d) { sleeps.push_back(d); },
        .nowUnixSeconds = [] { return kCreated + 65; },
    };
    return runClientCommand(command, std::move(args), io);
  }

  std::string out() const { return outBuf.str(); }
  std::string err() const { return err_.str(); }

  bool tty = false;
  std::vector<Duration> sleeps;
  WatchedBuf outBuf;

 private:
  Env env_;
  std::ostream out_{&outBuf};
  std::ostringstream err_;
  std::istringstream in_;
};

class ClientCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "ddpctl_client_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
    tokenFile_ = write("token", std::string(kToken) + "\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  // The global options that reach the fake, then `args`.
  std::vector<std::string> withServer(std::vector<std::string> args) {
    args.insert(args.end(), {"--server", fake_.url(), "--token-file", tokenFile_});
    return args;
  }

  FakeController fake_;
  std::string dir_;
  std::string tokenFile_;
};

constexpr const char* kJobYaml =
    "apiVersion: ddp.dev/v1\n"
    "kind: DDPJob\n"
    "metadata: {name: mnist}\n"
    "spec:\n"
    "  workers: {count: 2}\n"
    "  epochs: 1\n";

TEST_F(ClientCommandsTest, SubmitCreatesTheJobAsYaml) {
  ClientRun r;
  EXPECT_EQ(r.run("submit", withServer({write("job.yaml", kJobYaml)})), kClientOk) << r.err();
  EXPECT_EQ(r.out(), "job mnist created\n");
  EXPECT_EQ(fake_.lastContentType(), "application/yaml");
  ClientRun get;
  EXPECT_EQ(get.run("get", withServer({"mnist", "-o", "json"})), kClientOk) << get.err();
  EXPECT_EQ(Json::parse(get.out())["spec"]["epochs"], 1);
}

TEST_F(ClientCommandsTest, SubmitFromStdinSniffsJson) {
  ClientRun r;
  const std::string json = R"({"apiVersion": "ddp.dev/v1", "kind": "DDPJob", "metadata": {"name": "from-stdin"},
                               "spec": {"workers": {"count": 1}, "epochs": 1}})";
  EXPECT_EQ(r.run("submit", withServer({"-"}), json), kClientOk) << r.err();
  EXPECT_EQ(r.out(), "job from-stdin created\n");
  EXPECT_EQ(fake_.lastContentType(), "application/json");
}

TEST_F(ClientCommandsTest, SubmitInvalidPrintsEveryDetailAndExits2) {
  ClientRun r;
  const std::string bad = "metadata: {name: bad}\nspec:\n  workers:\n    count: 0\n  bogus: 1\n";
  EXPECT_EQ(r.run("submit", withServer({write("bad.yaml", bad)})), kClientUsage);
  EXPECT_EQ(r.err(),
            "ddpctl: invalid DDPJob: 2 error(s)\n"
            "  spec.workers.count (line 4, column 12): must be >= 1\n"
            "  spec.bogus (line 5, column 10): unknown field\n");
  EXPECT_EQ(r.out(), "");
}

TEST_F(ClientCommandsTest, SubmitExistingNameIs409) {
  const std::string file = write("job.yaml", kJobYaml);
  ClientRun first, second;
  ASSERT_EQ(first.run("submit", withServer({file})), kClientOk) << first.err();
  EXPECT_EQ(second.run("submit", withServer({file})), kClientFailed);
  EXPECT_EQ(second.err(), "ddpctl: job mnist already exists\n");
}

TEST_F(ClientCommandsTest, SubmitTooLargeShowsTheServersMessage) {
  ClientRun r;
  std::string big = kJobYaml + std::string("# ") + std::string(kFakeBodyLimit, 'x') + "\n";
  EXPECT_EQ(r.run("submit", withServer({write("big.yaml", big)})), kClientFailed);
  EXPECT_NE(r.err().find("over the limit of 4096 (413)"), std::string::npos) << r.err();
}

TEST_F(ClientCommandsTest, SubmitUnreadableFileIsAUsageError) {
  ClientRun r;
  EXPECT_EQ(r.run("submit", withServer({dir_ + "/missing.yaml"})), kClientUsage);
  EXPECT_NE(r.err().find("cannot read"), std::string::npos) << r.err();
}

TEST_F(ClientCommandsTest, GetPrintsTheTable) {
  fake_.addJob("alpha", "Running",
               {{"workers", Json::array({{{"rank", 0}, {"state", "Running"}}, {{"rank", 1}, {"state", "Running"}}})},
                {"progress", {{"step", 50}, {"totalSteps", 200}, {"loss", 0.25}, {"testAccuracy", nullptr}}}});
  fake_.addJob("beta", "Succeeded", {{"progress", {{"step", 200}, {"totalSteps", 200}, {"loss", 0.1},
                                                   {"testAccuracy", 0.912}}}});
  ClientRun r;
  EXPECT_EQ(r.run("get", withServer({})), kClientOk) << r.err();
  EXPECT_EQ(r.out(),
            "NAME    PHASE       WORKERS   STEP      PROGRESS   LOSS     ACCURACY   AGE\n"
            "alpha   Running     2/2       50/200    25%        0.2500   -          1m\n"
            "beta    Succeeded   0/2       200/200   100%       0.1000   91.2%      1m\n");

  ClientRun phase;
  EXPECT_EQ(phase.run("get", withServer({"--phase", "Succeeded", "-o", "wide"})), kClientOk) << phase.err();
  EXPECT_EQ(phase.out().find("alpha"), std::string::npos) << phase.out();
  EXPECT_NE(phase.out().find("GENERATION   RESTARTS   ETA"), std::string::npos) << phase.out();

  ClientRun yaml;
  EXPECT_EQ(yaml.run("get", withServer({"-oyaml"})), kClientOk) << yaml.err();
  EXPECT_EQ(YAML::Load(yaml.out())["jobs"].size(), 2u);

  ClientRun none;
  EXPECT_EQ(none.run("get", withServer({"--phase", "Failed"})), kClientOk);
  EXPECT_EQ(none.err(), "No jobs found in phase Failed.\n");

  ClientRun badPhase;
  EXPECT_EQ(badPhase.run("get", withServer({"--phase", "Sleeping"})), kClientUsage);
  EXPECT_EQ(badPhase.err(), "ddpctl: unknown phase 'Sleeping'\n");
}

// A language model's validation loss gets a column of its own, only while a listed job has one;
// -o wide adds its tokens/s and MFU.
TEST_F(ClientCommandsTest, GetShowsTheValidationLossOfALanguageModel) {
  fake_.addJob("gpt", "Running",
               {{"progress", {{"step", 50}, {"totalSteps", 200}, {"loss", 2.5}, {"testAccuracy", nullptr},
                              {"valLoss", 2.25}, {"perplexity", 9.487735836}, {"tokensPerSecond", 81920.0},
                              {"mfu", 0.42}}}});
  fake_.addJob("mlp", "Succeeded", {{"progress", {{"step", 200}, {"totalSteps", 200}, {"loss", 0.1},
                                                  {"testAccuracy", 0.912}, {"valLoss", nullptr}}}});
  ClientRun r;
  EXPECT_EQ(r.run("get", withServer({})), kClientOk) << r.err();
  EXPECT_EQ(r.out(),
            "NAME   PHASE       WORKERS   STEP      PROGRESS   LOSS     VAL-LOSS   ACCURACY   AGE\n"
            "gpt    Running     0/2       50/200    25%        2.5000   2.2500     -          1m\n"
            "mlp    Succeeded   0/2       200/200   100%       0.1000   -          91.2%      1m\n");
  ClientRun wide;
  EXPECT_EQ(wide.run("get", withServer({"-o", "wide"})), kClientOk) << wide.err();
  EXPECT_NE(wide.out().find("GENERATION   RESTARTS   ETA   TOKENS/S   MFU\n"), std::string::npos) << wide.out();
  EXPECT_NE(wide.out().find("81920      42.0%\n"), std::string::npos) << wide.out();

  ClientRun one;
  EXPECT_EQ(one.run("get", withServer({"mlp"})), kClientOk) << one.err();
  EXPECT_EQ(one.out().find("VAL-LOSS"), std::string::npos) << "no column without a language model: " << one.out();
}

TEST_F(ClientCommandsTest, MissingJobIs404WithItsName) {
  for (const char* cmd : {"get", "describe", "logs", "cancel", "delete", "watch", "checkpoints"}) {
    ClientRun r;
    EXPECT_EQ(r.run(cmd, withServer({"nope"})), kClientFailed) << cmd;
    EXPECT_EQ(r.err(), "ddpctl: job nope not found\n") << cmd;
  }
}

TEST_F(ClientCommandsTest, RefusedTokenIs401) {
  ClientRun wrong(Env{{"DDP_TOKEN", "not-the-token"}});
  EXPECT_EQ(wrong.run("get", {"--server", fake_.url()}), kClientFailed);
  EXPECT_EQ(wrong.err(), "ddpctl: the controller refused the token (401): check --token-file / DDP_TOKEN_FILE\n");

  ClientRun none;
  EXPECT_EQ(none.run("get", {"--server", fake_.url()}), kClientFailed);
  EXPECT_NE(none.err().find("(401)"), std::string::npos);
}

TEST_F(ClientCommandsTest, ServerAndTokenComeFromTheEnvironment) {
  fake_.addJob("alpha", "Pending");
  ClientRun byToken(Env{{"DDP_SERVER", fake_.url()}, {"DDP_TOKEN", kToken}});
  EXPECT_EQ(byToken.run("get", {}), kClientOk) << byToken.err();
  EXPECT_NE(byToken.out().find("alpha"), std::string::npos);
  ClientRun byFile(Env{{"DDP_SERVER", fake_.url()}, {"DDP_TOKEN_FILE", tokenFile_}});
  EXPECT_EQ(byFile.run("get", {"alpha"}), kClientOk) << byFile.err();
}

TEST_F(ClientCommandsTest, UnreachableServerIsReportedWithinTheTimeout) {
  // A port with nothing listening: refused at once.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string closed = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  ClientRun refused;
  EXPECT_EQ(refused.run("get", {"--server", closed, "--token-file", tokenFile_, "--timeout", "2"}), kClientFailed);
  EXPECT_EQ(refused.err().rfind("ddpctl: cannot reach the controller at " + closed + ": ", 0), 0u) << refused.err();
  EXPECT_NE(refused.err().find("(is ddp-controller running? set --server or DDP_SERVER)\n"), std::string::npos);
  ClientRun watch;  // never reached: reported at once, no retries
  EXPECT_EQ(watch.run("watch", {"x", "--server", closed, "--token-file", tokenFile_}), kClientFailed);
  EXPECT_EQ(watch.err().rfind("ddpctl: cannot reach the controller at " + closed + ": ", 0), 0u) << watch.err();
  EXPECT_TRUE(watch.sleeps.empty());

  // A socket that listens but never answers: the client gives up after --timeout.
  ASSERT_EQ(::listen(fd, 4), 0);
  ClientRun silent;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(silent.run("get", {"--server", closed, "--token-file", tokenFile_, "--timeout", "0.5"}), kClientFailed);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(3));
  EXPECT_EQ(silent.err().rfind("ddpctl: cannot reach the controller at " + closed + ": ", 0), 0u) << silent.err();
  EXPECT_NE(silent.err().find("500ms"), std::string::npos) << silent.err();
  ::close(fd);
}

TEST_F(ClientCommandsTest, WatchExits0OnSucceededWithTheAccuracy) {
  fake_.addJob("mnist", "Pending");
  fake_.setOnGet([](Json& job, int gets) {
    Json& st = job["status"];
    if (gets == 1) return;  // still Pending
    st["phase"] = gets < 4 ? "Running" : "Succeeded";
    st["progress"] = {{"step", std::min(gets, 4) * 25}, {"totalSteps", 100}, {"loss", 1.0 / gets},
                      {"samplesPerSecond", 1000.0}, {"etaSeconds", 10.0 * (4 - gets)},
                      {"testAccuracy", gets < 4 ? Json(nullptr) : Json(0.873)}};
  });
  ClientRun r;
  EXPECT_EQ(r.run("watch", withServer({"mnist"})), kClientOk) << r.err();
  const std::string out = r.out();
  EXPECT_NE(out.find("Pending    waiting for workers (0/2 running)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("50/100"), std::string::npos) << out;
  EXPECT_NE(out.find("\njob mnist Succeeded: step 100/100, loss 0.2500, test accuracy 87.3%\n"), std::string::npos)
      << out;
  EXPECT_EQ(out.find('\r'), std::string::npos);  // not a terminal: one line per update
  ASSERT_EQ(r.sleeps.size(), 3u);
  EXPECT_EQ(r.sleeps[0], kWatchPendingInterval);
  EXPECT_EQ(r.sleeps[1], kWatchInterval);
}

TEST_F(ClientCommandsTest, WatchExits1OnFailedAnd3OnCancelled) {
  for (const auto& [phase, code] : {std::pair<std::string, int>{"Failed", kClientFailed},
                                    std::pair<std::string, int>{"Cancelled", kClientCancelled}}) {
    const std::string name = "job-" + std::string(1, static_cast<char>(std::tolower(phase[0])));
    fake_.addJob(name, "Running", {{"progress", {{"step", 10}, {"totalSteps", 100}}}});
    fake_.setOnGet([phase = phase](Json& job, int gets) {
      if (gets < 2) return;
      job["status"]["phase"] = phase;
      job["status"]["conditions"].push_back({{"type", phase}, {"status", "True"}, {"message", "rank 1 exited 3"}});
    });
    ClientRun r;
    r.tty = true;
    EXPECT_EQ(r.run("watch", withServer({name})), code) << phase << r.err();
    EXPECT_NE(r.out().find("\r"), std::string::npos);  // redrawn in place on a terminal
    EXPECT_NE(r.out().find("\njob " + name + " " + phase + ": step 10/100"), std::string::npos) << r.out();
    EXPECT_NE(r.out().find("(rank 1 exited 3)\n"), std::string::npos) << r.out();
  }
}

TEST_F(ClientCommandsTest, LogsFollowStreamsChunksAsTheyArrive) {
  fake_.addJob("mnist", "Running");
  ClientRun r;
  r.outBuf.onWrite = [&] {
    if (r.outBuf.str().find("step 1\n") != std::string::npos) fake_.noteClientSawFirstChunk();
  };
  EXPECT_EQ(r.run("logs", withServer({"mnist", "-f", "--rank", "0"})), kClientOk) << r.err();
  EXPECT_EQ(r.out(), "[rank 0] step 1\n[rank 0] step 2\n");
  EXPECT_TRUE(fake_.secondChunkWaitedForClient()) << "the first chunk reached the output only at the end";
  EXPECT_EQ(fake_.lastLogQuery(), "rank=0&follow=1");

  ClientRun tail;
  EXPECT_EQ(tail.run("logs", withServer({"mnist", "--tail", "5"})), kClientOk) << tail.err();
  EXPECT_EQ(tail.out(), "[rank 0] epoch 1\n[rank 1] epoch 1\n");
  EXPECT_EQ(fake_.lastLogQuery(), "tail=5");

  ClientRun bad;
  EXPECT_EQ(bad.run("logs", withServer({"mnist", "--rank", "-1"})), kClientUsage);

  ClientRun noRank;  // the job exists, the rank's log does not: say that, not "job not found"
  EXPECT_EQ(noRank.run("logs", withServer({"mnist", "--rank", "7"})), kClientFailed);
  EXPECT_EQ(noRank.err(), "ddpctl: no log for worker mnist-w7 (404)\n");
}

TEST_F(ClientCommandsTest, DescribeCancelDeleteAndCheckpoints) {
  fake_.addJob("mnist", "Running");
  ClientRun describe;
  EXPECT_EQ(describe.run("describe", withServer({"mnist"})), kClientOk) << describe.err();
  EXPECT_NE(describe.out().find("Name:           mnist\n"), std::string::npos) << describe.out();
  EXPECT_NE(describe.out().find("  Normal   Created   1m    job created\n"), std::string::npos) << describe.out();

  ClientRun checkpoints;
  EXPECT_EQ(checkpoints.run("checkpoints", withServer({"mnist"})), kClientOk) << checkpoints.err();
  EXPECT_EQ(checkpoints.out(),
            "STEP   TIME                   BYTES   WORLD-SIZE   PATH\n"
            "100    2026-11-23T10:01:00Z   2048    2            /ckpt/100\n");

  ClientRun cancel;
  EXPECT_EQ(cancel.run("cancel", withServer({"mnist"})), kClientOk) << cancel.err();
  EXPECT_EQ(cancel.out(), "job mnist cancelling (the workers checkpoint, then stop)\n");

  fake_.addJob("done", "Succeeded");
  ClientRun late;
  EXPECT_EQ(late.run("cancel", withServer({"done"})), kClientFailed);
  EXPECT_EQ(late.err(), "ddpctl: cannot cancel job done: job already finished\n");

  ClientRun del;
  EXPECT_EQ(del.run("delete", withServer({"mnist"})), kClientOk) << del.err();
  EXPECT_EQ(del.out(), "job mnist deleted\n");
  ClientRun gone;
  EXPECT_EQ(gone.run("get", withServer({"mnist"})), kClientFailed);
}

// ddpctl checkpoint NAME: POST /v1/jobs/NAME/checkpoints; 202 prints what happens next, 409 the
// controller's reason, 404 the missing job, 401 the token hint.
TEST_F(ClientCommandsTest, CheckpointAsksTheRunningJobOrSaysWhyNot) {
  fake_.addJob("mnist", "Running");
  ClientRun ok;
  EXPECT_EQ(ok.run("checkpoint", withServer({"mnist"})), kClientOk) << ok.err();
  EXPECT_EQ(ok.out(),
            "checkpoint of job mnist requested: the workers write it at the next step they all agree on "
            "(see `ddpctl checkpoints mnist`)\n");
  EXPECT_EQ(fake_.checkpointRequests(), 1);

  fake_.addJob("early", "Pending");
  ClientRun pending;
  EXPECT_EQ(pending.run("checkpoint", withServer({"early"})), kClientFailed);
  EXPECT_EQ(pending.err(), "ddpctl: cannot checkpoint job early: job early is Pending; ask again once it runs\n");

  ClientRun missing;
  EXPECT_EQ(missing.run("checkpoint", withServer({"nope"})), kClientFailed);
  EXPECT_EQ(missing.err(), "ddpctl: job nope not found\n");

  ClientRun refused(Env{{"DDP_TOKEN", "not-the-token"}});
  EXPECT_EQ(refused.run("checkpoint", {"--server", fake_.url(), "mnist"}), kClientFailed);
  EXPECT_NE(refused.err().find("(401)"), std::string::npos) << refused.err();

  ClientRun usage;
  EXPECT_EQ(usage.run("checkpoint", withServer({})), kClientUsage);
  EXPECT_EQ(fake_.checkpointRequests(), 1) << "only the accepted request counted";
}

TEST_F(ClientCommandsTest, UsageErrorsExit2) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"get", {"-o", "table"}},         {"get", {"a", "b"}},          {"describe", {}},
      {"logs", {"x", "--tail", "many"}}, {"get", {"--bogus"}},          {"get", {"--timeout", "0"}},
      {"get", {"--server"}},            {"get", {"--server", "ftp://x"}}, {"get", {"--token-file", "/nonexistent"}},
      {"get", {"x", "--phase", "Running"}},
  };
  for (const auto& [cmd, args] : cases) {
    ClientRun r;
    EXPECT_EQ(r.run(cmd, args), kClientUsage) << cmd << " " << args.size();
    EXPECT_EQ(r.err().rfind("ddpctl " + cmd + ": ", 0), 0u) << r.err();
  }
  ClientRun help;
  EXPECT_EQ(help.run("logs", {"--help"}), kClientOk);
  EXPECT_EQ(help.out().rfind("usage: ddpctl logs NAME", 0), 0u) << help.out();
}

}  // namespace
}  // namespace ddp::ddpctl
