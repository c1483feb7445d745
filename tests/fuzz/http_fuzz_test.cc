// Hostile input against a real controller (in process: its two HTTP listeners on loopback, its
// SQLite job table, its local launcher): invalid UTF-8, nesting and alias bombs, request
// smuggling patterns, oversized heads and bodies, slow and idle connections, and a few hundred
// seeded mutations of a valid job. No answer may be a 500, nothing may crash or hang, every
// refused job leaves nothing stored, and both listeners keep serving (issue: 173 malformed
// requests found a 500). Faked: nothing. Label fuzz (tests/fuzz/), bounded: about 20 s.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "controller/jobs/job_manager.h"
#include "controller/service/controller.h"
#include "tests/support/stand_in_controller.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/http/raw_http_client.h"

namespace ddp::controller {
namespace {

using http::testing::RawConnection;

const std::string kJob =
    "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata:\n  name: fuzzed\nspec:\n  workers: {count: 1}\n"
    "  model: {type: mlp, hidden: [8]}\n  data: {dataset: synthetic, batchSize: 8}\n  steps: 10\n";

class HttpFuzzTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ctl = test::startStandInController(
        dir_.path(), [](ControllerConfig& c) { c.requestTimeout = std::chrono::milliseconds(800); });
    ASSERT_TRUE(ctl.isOk()) << ctl.status();
    ctl_ = std::move(*ctl);
  }
  void TearDown() override {
    if (ctl_) test::stopStandInController(*ctl_);
  }
  // Sends `bytes` on a fresh connection and returns the answer's status (0: the server closed
  // the connection without one).
  int exchange(int port, const std::string& bytes, Duration wait = std::chrono::seconds(5)) {
    RawConnection c(port);
    EXPECT_TRUE(c.ok());
    (void)c.send(bytes);
    auto r = c.readResponse(wait);
    return r ? r->status : 0;
  }
  std::string post(const std::string& body, const std::string& type = "application/yaml") {
    return "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ctl_->token() + "\r\nContent-Type: " + type +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  }
  std::string get(const std::string& target) {
    return "GET " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ctl_->token() + "\r\n\r\n";
  }
  void expectServing() {
    for (int port : {ctl_->port(), ctl_->workerPort()}) {
      EXPECT_EQ(exchange(port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), 200) << "port " << port;
    }
  }

  test::TempDir dir_;
  std::unique_ptr<Controller> ctl_;
};

struct Case {
  std::string name;
  std::string bytes;
  std::set<int> allowed;
};

TEST_F(HttpFuzzTest, HostileRequestsGetTheirFourHundredsAndNothingElse) {
  std::string aliasBomb = "a: &a [x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    aliasBomb += std::string(1, c) + ": &" + c + " [*" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + "]\n";
  }
  const std::vector<Case> cases = {
      {"invalid UTF-8 in the name", post(std::string(kJob).replace(kJob.find("fuzzed"), 6, "fu\xFFzz")), {400}},
      {"invalid UTF-8 in a key", post(kJob + "  \xC0\xAF: 1\n"), {400}},
      {"a surrogate in JSON", post("{\"metadata\": {\"name\": \"\xED\xA0\x80\"}}", "application/json"), {400}},
      {"invalid UTF-8 in the path", get("/v1/jobs/%FF%FE"), {400}},
      {"invalid UTF-8 in the query", get("/v1/jobs?phase=%C3"), {400}},
      {"a nesting bomb", post(std::string(100000, '[') + std::string(100000, ']')), {400}},
      {"a nesting bomb of maps", post(std::string(50000, '{') + std::string(50000, '}')), {400}},
      {"an alias bomb", post(aliasBomb + kJob), {400}},
      {"two documents", post(kJob + "---\n" + kJob), {400}},
      {"a JSON nesting bomb", post(std::string(100000, '[') + std::string(100000, ']'), "application/json"), {400}},
      {"two Content-Lengths", "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 40\r\n\r\nabc", {400}},
      {"chunked and a length", "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", {400, 411}},
      {"a negative length", "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", {400}},
      {"a length in hex", "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 0x10\r\n\r\n", {400}},
      {"an obsolete line fold", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  folded\r\n\r\n", {400, 200}},
      {"a NUL in a header", std::string("GET /healthz HTTP/1.1\r\nHost: x\0y\r\n\r\n", 36), {400, 200}},
      {"a bare LF request", "GET /healthz HTTP/1.1\nHost: x\n\n", {400, 200}},
      {"HTTP/2.0", "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", {505}},
      {"an absolute-form target", "GET http://evil/v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n", {400, 401, 404}},
      {"a lowercase method", "get /healthz HTTP/1.1\r\nHost: x\r\n\r\n", {400, 404, 405}},
      {"garbage", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 TLS hello", {400, 408, 0}},
      {"an oversized head", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n", {431}},
      {"an oversized body", post(std::string(2u << 20, '#')), {413}},
      {"no token", "GET /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n", {401}},
      {"a bad token", "GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xFF\r\n\r\n", {401}},
      {"a worker route without a token",
       "POST /v1/jobs/x/generations/1/heartbeat HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", {401}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const int status = exchange(ctl_->port(), c.bytes);
    EXPECT_TRUE(c.allowed.count(status)) << c.name << ": got " << status;
  }
  expectServing();
  EXPECT_TRUE(ctl_->jobs().list()->empty()) << "no refused job was stored";
}

TEST_F(HttpFuzzTest, SlowAndIdleConnectionsAreTimedOutAndOthersServed) {
  RawConnection slow(ctl_->port());
  ASSERT_TRUE(slow.send("GET /healthz HTTP/1.1\r\nHo"));
  RawConnection idle(ctl_->port());
  RawConnection slowBody(ctl_->port());
  ASSERT_TRUE(slowBody.send("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc"));
  expectServing();  // meanwhile
  for (RawConnection* c : {&slow, &slowBody}) {
    auto r = c->readResponse(std::chrono::seconds(5));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 408);
  }
  EXPECT_TRUE(slow.waitForClose());
  expectServing();
}

// A thousand mutations of a valid job (seeded: the same every run): flipped bytes, cuts,
// inserted bytes of every value. Each is a 201 or a 4xx naming what is wrong, never a 500.
TEST_F(HttpFuzzTest, MutatedJobDocumentsAreAcceptedOrRefusedNeverAFiveHundred) {
  std::mt19937 rng(20261127);
  int created = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string doc = kJob;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !doc.empty(); ++e) {
      const size_t at = rng() % doc.size();
      switch (rng() % 4) {
        case 0: doc[at] = static_cast<char>(rng() % 256); break;
        case 1: doc.erase(at, 1 + rng() % 8); break;
        case 2: doc.insert(at, 1, static_cast<char>(rng() % 256)); break;
        case 3: doc.insert(at, std::string(1 + rng() % 3, "[{&*!|>'\"%@`#-:?"[rng() % 17])); break;
      }
    }
    const int status = exchange(ctl_->port(), post(doc));
    ASSERT_TRUE(status == 201 || status == 400 || status == 409 || status == 415) << "mutation " << i << ": " << status
                                                                                    << "\n" << doc;
    created += status == 201;
    if (status == 201) (void)ctl_->launcher().forgetJob("fuzzed");
  }
  expectServing();
  RecordProperty("created", std::to_string(created));
}

}  // namespace
}  // namespace ddp::controller
