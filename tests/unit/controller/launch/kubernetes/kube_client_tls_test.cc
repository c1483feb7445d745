// KubeClient over real TLS: a cpp-httplib SSLServer on loopback with certificates the test makes
// with the openssl command (a cluster CA, a server certificate for 127.0.0.1, and a second CA
// and a certificate for another host). The client connects only when the server's certificate
// chains to the configured CA and names the host it dialled. (Skips when openssl is missing.)
#include "controller/launch/kubernetes/kube_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "tests/support/temp_dir.h"

namespace ddp::controller::kube {
namespace {

bool run(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

// A CA (name.crt / name.key) in `dir`.
bool makeCa(const std::string& dir, const std::string& name) {
  return run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=" + name + " -keyout " + dir + "/" +
             name + ".key -out " + dir + "/" + name + ".crt");
}

// A server certificate (name.crt / name.key) for `san`, signed by CA `ca`.
bool makeServerCert(const std::string& dir, const std::string& name, const std::string& ca, const std::string& san) {
  const std::string d = dir + "/";
  std::ofstream(d + name + ".ext") << "subjectAltName=" << san << "\n";
  return run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=kube-apiserver -keyout " + d + name + ".key -out " + d +
             name + ".csr") &&
         run("openssl x509 -req -in " + d + name + ".csr -CA " + d + ca + ".crt -CAkey " + d + ca +
             ".key -CAcreateserial -days 2 -extfile " + d + name + ".ext -out " + d + name + ".crt");
}

class TlsServer {
 public:
  TlsServer(const std::string& cert, const std::string& key) : server_(cert.c_str(), key.c_str()) {
    server_.Get("/api/v1/namespaces/default/pods/p", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"kind":"Pod","metadata":{"name":"p"}})", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 500 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ~TlsServer() {
    server_.stop();
    thread_.join();
  }
  bool valid() const { return server_.is_valid() && port_ > 0; }
  int port() const { return port_; }

 private:
  httplib::SSLServer server_;
  int port_ = 0;
  std::thread thread_;
};

class KubernetesClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!run("openssl version")) GTEST_SKIP() << "the openssl command is not installed";
    d_ = dir_.path();
    ASSERT_TRUE(makeCa(d_, "cluster-ca"));
    ASSERT_TRUE(makeCa(d_, "other-ca"));
    ASSERT_TRUE(makeServerCert(d_, "apiserver", "cluster-ca", "IP:127.0.0.1"));
    ASSERT_TRUE(makeServerCert(d_, "elsewhere", "cluster-ca", "DNS:api.elsewhere.example"));
  }

  Result<nlohmann::json> getPod(int port, const std::string& ca) {
    KubeConfig c;
    c.server = "https://127.0.0.1:" + std::to_string(port);
    c.caFile = d_ + "/" + ca + ".crt";
    c.requestTimeout = std::chrono::seconds(5);
    auto client = KubeClient::create(c);
    if (!client.isOk()) return client.status();
    return (*client)->get("/api/v1/namespaces/default/pods/p");
  }

  ddp::test::TempDir dir_;
  std::string d_;
};

TEST_F(KubernetesClientTlsTest, VerifiesTheServerAgainstTheClusterCa) {
  TlsServer server(d_ + "/apiserver.crt", d_ + "/apiserver.key");
  ASSERT_TRUE(server.valid());
  auto ok = getPod(server.port(), "cluster-ca");
  ASSERT_TRUE(ok.isOk()) << ok.status();
  EXPECT_EQ((*ok)["metadata"]["name"], "p");
  // A certificate from a CA the client was not given: refused before any request is sent.
  auto untrusted = getPod(server.port(), "other-ca");
  EXPECT_EQ(untrusted.status().code(), StatusCode::kUnavailable) << untrusted.status();
  EXPECT_NE(untrusted.status().message().find("SSLServerVerification"), std::string::npos) << untrusted.status();
}

TEST_F(KubernetesClientTlsTest, RefusesACertificateForAnotherHost) {
  TlsServer server(d_ + "/elsewhere.crt", d_ + "/elsewhere.key");
  ASSERT_TRUE(server.valid());
  auto wrongHost = getPod(server.port(), "cluster-ca");
  EXPECT_EQ(wrongHost.status().code(), StatusCode::kUnavailable) << wrongHost.status();
  EXPECT_NE(wrongHost.status().message().find("SSLServerVerification"), std::string::npos) << wrongHost.status();
}

}  // namespace
}  // namespace ddp::controller::kube
