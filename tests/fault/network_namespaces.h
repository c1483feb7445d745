#pragma once
// Network namespaces as separate nodes for fault tests: namespace i gets a veth pair to the root
// namespace on its own /30 (root side .1, the namespace's eth0 .2), `lo` up and a default route
// via the root side; IPv4 forwarding is on in the root namespace (its previous value restored),
// so the namespaces reach each other through it, and reach whatever listens in the root
// namespace on their gateway address. cut(i) takes node i's link down on the root side (a pulled
// cable: the node keeps its address and routes, nothing gets through either way); restore(i)
// brings it back. Every `ip` command runs under `timeout` (kCommandSeconds).
// Needs root (or CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2: where a namespace cannot be
// made, ok() is false and error() says why (the caller skips).
// Cleanup: the destructor deletes the namespaces (which deletes their veth pairs) and restores
// ip_forward, whatever state a failed test left them in.
// Thread model: the test's thread only.

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace ddp::test {

class NetworkNamespaces {
 public:
  static constexpr int kCommandSeconds = 10;
  static constexpr int kMaxNodes = 63;  // /30s in 10.X.0.0/24

  // `count`: 1 to kMaxNodes namespaces.
  explicit NetworkNamespaces(int count) : tag_(std::to_string(::getpid())) {
    if (count < 1 || count > kMaxNodes) {
      error_ = "count " + std::to_string(count) + ": must be 1 to " + std::to_string(kMaxNodes);
      return;
    }
    // The probe: the first namespace (its error is the skip reason).
    const std::string first = "ddpt" + tag_ + "n0";
    if (!run("ip netns add " + first)) {
      error_ = "`ip netns add` failed (it needs root, or CAP_SYS_ADMIN and CAP_NET_ADMIN, and iproute2): " + output_;
      return;
    }
    names_.push_back(first);
    for (int i = 1; i < count; ++i) {
      names_.push_back("ddpt" + tag_ + "n" + std::to_string(i));
      if (!run("ip netns add " + names_.back())) {
        fail("ip netns add");
        return;
      }
    }
    if (!pickSubnet()) return;
    for (int i = 0; i < count; ++i) {
      if (!link(i)) return;
    }
    if (!enableForwarding()) return;
    ok_ = true;
  }
  ~NetworkNamespaces() {
    for (const auto& ns : names_) run("ip netns delete " + ns);
    if (!forwardBefore_.empty()) {
      std::ofstream(kForwardPath) << forwardBefore_;
    }
  }
  NetworkNamespaces(const NetworkNamespaces&) = delete;
  NetworkNamespaces& operator=(const NetworkNamespaces&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const std::string& name(int i) const { return names_[i]; }
  std::string address(int i) const { return host(i, 2); }  // node i's own address
  std::string gateway(int i) const { return host(i, 1); }  // the root namespace, seen from node i
  // The argv prefix that runs a program in node i (`ip netns exec` execs it: same pid).
  std::vector<std::string> execPrefix(int i) const { return {"ip", "netns", "exec", names_[i]}; }
  bool cut(int i) { return run("ip link set " + rootSide(i) + " down"); }
  bool restore(int i) { return run("ip link set " + rootSide(i) + " up"); }
  // The output of the last command that failed.
  const std::string& lastOutput() const { return output_; }

 private:
  static constexpr const char* kForwardPath = "/proc/sys/net/ipv4/ip_forward";

  std::string rootSide(int i) const { return "vd" + tag_ + "n" + std::to_string(i); }
  std::string host(int i, int last) const {
    return "10." + std::to_string(second_) + ".0." + std::to_string(4 * i + last);
  }
  std::string prefix(int i) const { return host(i, 0) + "/30"; }

  // 10.X.0.0/16 with X from this pid, skipping any X this namespace already has addresses or
  // routes in (another test's leftovers, the machine's own networks).
  bool pickSubnet() {
    if (!run("ip -4 -o addr show; ip -4 route show table all")) return fail("ip addr/route show");
    const std::string taken = " " + output_;
    for (int k = 0; k < 100; ++k) {
      second_ = 100 + (::getpid() + k) % 100;
      const std::string net = "10." + std::to_string(second_) + ".";
      bool used = false;
      for (size_t at = taken.find(net); at != std::string::npos && !used; at = taken.find(net, at + 1)) {
        used = !std::isdigit(static_cast<unsigned char>(taken[at - 1]));
      }
      if (!used) return true;
    }
    error_ = "no free 10.X.0.0/16 for the test's links";
    return false;
  }
  bool link(int i) {
    const std::string ns = names_[i];
    const std::string in = "ip -n " + ns + " ";
    return (run("ip link add " + rootSide(i) + " type veth peer name eth0 netns " + ns) &&
            run("ip addr add " + gateway(i) + "/30 dev " + rootSide(i)) && run("ip link set " + rootSide(i) + " up") &&
            run(in + "addr add " + address(i) + "/30 dev eth0") && run(in + "link set eth0 up") &&
            run(in + "link set lo up") && run(in + "route add default via " + gateway(i))) ||
           fail("veth for " + ns + " (" + prefix(i) + ")");
  }
  bool enableForwarding() {
    std::ifstream in(kForwardPath);
    std::string before;
    if (!(in >> before)) return fail(std::string("cannot read ") + kForwardPath);
    if (before == "1") return true;
    std::ofstream out(kForwardPath);
    if (!(out << "1\n" << std::flush)) return fail(std::string("cannot write 1 to ") + kForwardPath);
    forwardBefore_ = before + "\n";
    return true;
  }
  bool fail(const std::string& what) {
    error_ = what + " failed: " + output_;
    return false;
  }
  // Runs `command` through the shell under `timeout`; its merged output goes to output_.
  bool run(const std::string& command) {
    output_.clear();
    const std::string wrapped = "timeout " + std::to_string(kCommandSeconds) + " sh -c '" + command + "' 2>&1";
    FILE* p = ::popen(wrapped.c_str(), "r");
    if (p == nullptr) {
      output_ = "popen failed";
      return false;
    }
    char buf[512];
    while (std::fgets(buf, sizeof(buf), p) != nullptr) output_ += buf;
    return ::pclose(p) == 0;
  }

  std::string tag_;  // this process's pid: names unique to it
  bool ok_ = false;
  std::string error_;
  std::string output_;
  std::vector<std::string> names_;  // created, deleted by the destructor
  int second_ = 0;                  // X of 10.X.0.0/16
  std::string forwardBefore_;       // ip_forward's value to restore ("": leave it)
};

}  // namespace ddp::test
