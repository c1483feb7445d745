// spec.kubernetes: enum spellings, Kubernetes quantities and names, and the checks
// JobSpec::validate() runs on the section.
#include "common/jobspec/job_spec_kubernetes.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_enums.h"

namespace ddp {

const char* cleanPodPolicyName(CleanPodPolicy v) { return enumName(kCleanPodPolicyNames, v); }
const char* imagePullPolicyName(ImagePullPolicy v) { return enumName(kImagePullPolicyNames, v); }
const char* scheduleTimeoutActionName(ScheduleTimeoutAction v) { return enumName(kScheduleTimeoutActionNames, v); }

Result<double> parseKubernetesQuantity(std::string_view text) {
  const std::string s(text);
  auto bad = [&]() -> Result<double> {
    return invalidArgument("'" + s + "' is not a Kubernetes quantity (e.g. 2, 500m, 16Gi, 1e3)");
  };
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t digits = 0;
  bool dot = false;
  for (; i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || (s[i] == '.' && !dot)); ++i) {
    if (s[i] == '.') dot = true; else ++digits;
  }
  if (digits == 0) return bad();
  const double number = std::strtod(s.substr(0, i).c_str(), nullptr);
  const std::string suffix = s.substr(i);
  static const std::vector<std::pair<std::string, double>> kSuffixes = {
      {"", 1},       {"n", 1e-9},   {"u", 1e-6},   {"m", 1e-3},   {"k", 1e3},
      {"M", 1e6},    {"G", 1e9},    {"T", 1e12},   {"P", 1e15},   {"E", 1e18},
      {"Ki", 0x1p10}, {"Mi", 0x1p20}, {"Gi", 0x1p30}, {"Ti", 0x1p40}, {"Pi", 0x1p50}, {"Ei", 0x1p60}};
  for (const auto& [name, scale] : kSuffixes) {
    if (suffix == name) return number * scale;
  }
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    size_t j = 1;
    if (suffix[j] == '+' || suffix[j] == '-') ++j;
    if (j == suffix.size()) return bad();
    for (size_t k = j; k < suffix.size(); ++k) {
      if (!std::isdigit(static_cast<unsigned char>(suffix[k]))) return bad();
    }
    const double v = number * std::pow(10.0, std::atof(suffix.c_str() + 1));
    if (!std::isfinite(v)) return bad();
    return v;
  }
  return bad();
}

namespace {

bool isAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool isLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// 1-63 characters of alphanumerics, '-', '_', '.', starting and ending alphanumeric (also a
// label value, which may in addition be empty).
bool isNamePart(std::string_view s) {
  if (s.empty() || s.size() > 63 || !isAlnum(s.front()) || !isAlnum(s.back())) return false;
  for (char c : s) {
    if (!isAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

bool isLabelValue(std::string_view s) { return s.empty() || isNamePart(s); }

// An extended resource (nvidia.com/gpu, not cpu, memory or *.kubernetes.io/*): whole numbers,
// and a request equal to its limit.
bool isExtendedResource(const std::string& name) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return false;
  const std::string prefix = name.substr(0, slash);
  const std::string k8s = "kubernetes.io";
  return !(prefix == k8s || (prefix.size() > k8s.size() &&
                             prefix.compare(prefix.size() - k8s.size() - 1, std::string::npos,
                                            "." + k8s) == 0));
}

class KubernetesChecker {
 public:
  KubernetesChecker(const JobSpec& s, std::vector<SpecError>* out) : s_(s), out_(out) {}

  void run() {
    const KubernetesSpec& k = s_.kubernetes;
    const std::string p = "spec.kubernetes.";
    check(k.image.find_first_of(" \t\r\n") == std::string::npos, p + "image",
          "must be an image reference without whitespace (got '" + k.image + "')");
    resources();
    for (const auto& [key, value] : k.nodeSelector) {
      const std::string at = p + "nodeSelector[" + key + "]";
      check(isQualifiedName(key), at, "is not a valid label key");
      check(isLabelValue(value), at,
            "must be a label value: at most 63 characters of alphanumerics, '-', '_' and '.', "
            "starting and ending alphanumeric (got '" + value + "')");
    }
    for (size_t i = 0; i < k.tolerations.size(); ++i) toleration(k.tolerations[i], i);
    if (!k.serviceAccountName.empty()) {
      check(isDnsSubdomain(k.serviceAccountName), p + "serviceAccountName",
            "must be a DNS subdomain name (got '" + k.serviceAccountName + "')");
    }
    if (!k.shmSize.empty()) {
      auto q = parseKubernetesQuantity(k.shmSize);
      if (check(q.isOk(), p + "shmSize", q.isOk() ? "" : q.status().message())) {
        check(*q > 0, p + "shmSize", "must be > 0 (got '" + k.shmSize + "')");
      }
    }
    if (!k.checkpointVolumeClaim.empty()) {
      check(isDnsSubdomain(k.checkpointVolumeClaim), p + "checkpointVolumeClaim",
            "must be a DNS subdomain name (got '" + k.checkpointVolumeClaim + "')");
      check(!s_.checkpoint.dir.empty() && s_.checkpoint.dir.front() == '/', p + "checkpointVolumeClaim",
            "needs spec.checkpoint.dir, an absolute path: the claim is mounted there");
    }
  }

 private:
  bool check(bool ok, const std::string& path, const std::string& message) {
    if (!ok) out_->push_back({path, message});
    return ok;
  }

  // Quantities of one list; returns name -> value for those that parse.
  std::map<std::string, double> quantities(const std::map<std::string, std::string>& list,
                                           const std::string& path) {
    std::map<std::string, double> values;
    for (const auto& [name, text] : list) {
      const std::string at = path + "[" + name + "]";
      if (!check(isQualifiedName(name), at, "is not a valid resource name")) continue;
      auto q = parseKubernetesQuantity(text);
      if (!check(q.isOk(), at, q.isOk() ? "" : q.status().message())) continue;
      if (!check(*q >= 0, at, "must be >= 0 (got '" + text + "')")) continue;
      if (isExtendedResource(name) &&
          !check(*q == std::floor(*q), at, "must be a whole number (an extended resource; got '" + text + "')")) {
        continue;
      }
      values[name] = *q;
    }
    return values;
  }

  void resources() {
    const std::string p = "spec.kubernetes.resources.";
    const auto requests = quantities(s_.kubernetes.resources.requests, p + "requests");
    const auto limits = quantities(s_.kubernetes.resources.limits, p + "limits");
    for (const auto& [name, request] : requests) {
      auto it = limits.find(name);
      if (it == limits.end()) continue;
      const std::string at = p + "requests[" + name + "]";
      if (isExtendedResource(name)) {
        check(request == it->second, at, "must equal its limit (an extended resource cannot be overcommitted)");
      } else {
        check(request <= it->second, at, "must be <= its limit");
      }
    }
    // One GPU per rank: a pod of spec.workers.perPod ranks asks for that many.
    auto gpus = limits.find(kNvidiaGpuResource);
    const bool inLimits = gpus != limits.end();
    if (!inLimits) gpus = requests.find(kNvidiaGpuResource);
    if (gpus == requests.end()) return;
    const std::string at = p + (inLimits ? "limits[" : "requests[") + kNvidiaGpuResource + "]";
    if (s_.device == JobDevice::kCuda) {
      const int perPod = s_.workers.perPod;
      check(gpus->second == perPod, at,
            "must be " + std::to_string(perPod) + ", spec.workers.perPod: each rank trains on one GPU (ask for more "
            "ranks per pod or more pods instead)");
    } else {
      check(gpus->second == 0, at, "asks for a GPU but spec.device is cpu (set spec.device: cuda)");
    }
  }

  void toleration(const TolerationSpec& t, size_t i) {
    const std::string p = "spec.kubernetes.tolerations[" + std::to_string(i) + "].";
    if (!t.key.empty()) check(isQualifiedName(t.key), p + "key", "is not a valid taint key (got '" + t.key + "')");
    if (check(t.op == "Equal" || t.op == "Exists", p + "operator",
              "must be one of Equal, Exists (got '" + t.op + "')")) {
      if (t.op == "Exists") {
        check(t.value.empty(), p + "value", "must be empty when operator is Exists");
      } else {
        check(!t.key.empty(), p + "key", "required when operator is Equal (an empty key needs Exists)");
        check(isLabelValue(t.value), p + "value", "is not a valid taint value (got '" + t.value + "')");
      }
    }
    check(t.effect.empty() || t.effect == "NoSchedule" || t.effect == "PreferNoSchedule" ||
              t.effect == "NoExecute",
          p + "effect", "must be one of NoSchedule, PreferNoSchedule, NoExecute or empty (got '" +
                            t.effect + "')");
    if (t.tolerationSeconds) {
      check(t.effect == "NoExecute", p + "tolerationSeconds", "only valid when effect is NoExecute");
    }
  }


  const JobSpec& s_;
  std::vector<SpecError>* out_;
};

}  // namespace

bool isDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    const std::string_view part = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (part.empty() || !isLowerAlnum(part.front()) || !isLowerAlnum(part.back())) return false;
    for (char c : part) {
      if (!isLowerAlnum(c) && c != '-') return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool isQualifiedName(std::string_view s) {
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos) return isNamePart(s);
  return isDnsSubdomain(s.substr(0, slash)) && isNamePart(s.substr(slash + 1));
}

void validateKubernetesSpec(const JobSpec& spec, std::vector<SpecError>* errors) {
  KubernetesChecker(spec, errors).run();
  validateSchedulingSpec(spec, errors);
}

}  // namespace ddp
