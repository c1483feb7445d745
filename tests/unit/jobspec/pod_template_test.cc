// spec.kubernetes.template (Note [Pod template]): parsed with the rest of a DDPJob, its carried
// Kubernetes objects keeping YAML's types (Note [Carried Kubernetes objects]) and round-tripping
// through toYaml(); every refusal names its field: the controller's names, keys and paths, the
// fields spec.kubernetes sets too, and the shape of each carried object.
#include "common/jobspec/pod_template.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/jobspec/job_spec.h"
#include "tests/unit/jobspec/job_spec_test_util.h"

namespace ddp {
namespace {

using nlohmann::json;
using spec_test::contains;
using spec_test::errorsOf;
using spec_test::find;

constexpr const char* kExample = DDP_SOURCE_DIR "/manifests/examples/ddpjob-pod-template.yaml";

// A job whose spec.kubernetes holds `kubernetes` (lines indented by four spaces).
std::string withKubernetes(const std::string& kubernetes) {
  return spec_test::withSpec("  checkpoint: {dir: /ckpt}\n  kubernetes:\n" + kubernetes);
}
std::string withTemplate(const std::string& body) { return withKubernetes("    template:\n" + body); }

TEST(PodTemplateTest, TheExampleParsesWithEveryFieldAndRoundTrips) {
  auto r = loadJobSpecFile(kExample);
  ASSERT_TRUE(r.isOk()) << r.status();
  const PodTemplateSpec& t = r->kubernetes.podTemplate;
  EXPECT_EQ(t.labels.at("team"), "vision");
  EXPECT_EQ(t.annotations.at("sidecar.istio.io/inject"), "false");
  EXPECT_EQ(t.priorityClassName, "training-high");
  const json env = json::parse(t.env);
  ASSERT_EQ(env.size(), 3u);
  EXPECT_EQ(env[2]["valueFrom"]["secretKeyRef"]["optional"], true);  // a YAML boolean stays one
  const json spread = json::parse(t.topologySpreadConstraints);
  EXPECT_EQ(spread[0]["maxSkew"], 1);
  EXPECT_TRUE(spread[0]["maxSkew"].is_number_integer());
  EXPECT_EQ(json::parse(t.imagePullSecrets), json::parse(R"([{"name":"registry-example-com"}])"));
  EXPECT_EQ(json::parse(t.containerSecurityContext)["capabilities"]["drop"], json::array({"ALL"}));
  auto again = parseJobSpec(r->toYaml());
  ASSERT_TRUE(again.isOk()) << again.status() << "\n" << r->toYaml();
  EXPECT_EQ(*again, *r) << r->toYaml();
}

// Scalars keep the types YAML gives them, as the API server reads the same document: plain
// numbers and booleans are typed, quoted ones strings; a JSON document reads the same.
TEST(PodTemplateTest, CarriedObjectsKeepYamlScalarTypes) {
  auto r = parseJobSpec(withTemplate(
      "      securityContext: {runAsUser: 1000, fsGroup: \"2000\", runAsNonRoot: true, seLinuxOptions: {level: ~},\n"
      "                        sysctls: [{name: net.ipv4.ip_unprivileged_port_start, value: '1024'}], supplementalGroups: [1.5e3]}\n"));
  ASSERT_TRUE(r.isOk()) << r.status();
  const json sc = json::parse(r->kubernetes.podTemplate.securityContext);
  EXPECT_EQ(sc["runAsUser"], 1000);
  EXPECT_EQ(sc["fsGroup"], "2000");
  EXPECT_EQ(sc["runAsNonRoot"], true);
  EXPECT_TRUE(sc["seLinuxOptions"]["level"].is_null());
  EXPECT_EQ(sc["sysctls"][0]["value"], "1024");
  EXPECT_EQ(sc["supplementalGroups"][0], 1500.0);
  auto again = parseJobSpec(r->toYaml());
  ASSERT_TRUE(again.isOk()) << again.status();
  EXPECT_EQ(*again, *r) << r->toYaml();
  auto fromJson = parseJobSpec(
      R"({"apiVersion": "ddp.dev/v1", "kind": "DDPJob", "metadata": {"name": "j"}, "spec": {"model": {"type": "mlp"},
          "data": {"dataset": "synthetic"}, "epochs": 1, "kubernetes": {"template": {"securityContext":
          {"runAsUser": 1000, "fsGroup": "2000", "runAsNonRoot": true}}}}})");
  ASSERT_TRUE(fromJson.isOk()) << fromJson.status();
  const json fromJsonSc = json::parse(fromJson->kubernetes.podTemplate.securityContext);
  EXPECT_EQ(fromJsonSc["runAsUser"], 1000);
  EXPECT_EQ(fromJsonSc["fsGroup"], "2000");
}

TEST(PodTemplateTest, AnAbsentTemplateIsEmptyAndNotWritten) {
  auto r = parseJobSpec(spec_test::kMinimal);
  ASSERT_TRUE(r.isOk()) << r.status();
  EXPECT_EQ(r->kubernetes.podTemplate, PodTemplateSpec{});
  EXPECT_FALSE(contains(r->toYaml(), "template"));
}

// Values of the wrong kind are refused by the parser, with the line and column.
TEST(PodTemplateTest, TheParserRefusesTheWrongKindOfValue) {
  auto errors = errorsOf(withTemplate("      env: {name: A, value: b}\n"));
  const SpecError* e = find(errors, "spec.kubernetes.template.env");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(contains(e->message, "expected a sequence of mappings")) << e->message;
  EXPECT_EQ(e->line, 14);
  errors = errorsOf(withTemplate("      imagePullSecrets: [registry]\n"));
  ASSERT_NE(find(errors, "spec.kubernetes.template.imagePullSecrets[0]"), nullptr);
  errors = errorsOf(withTemplate("      affinity: [nodeAffinity]\n"));
  ASSERT_NE(find(errors, "spec.kubernetes.template.affinity"), nullptr);
  // Container resources stay in spec.kubernetes.resources: the template has none.
  errors = errorsOf(withTemplate("      resources: {limits: {rdma/ib: 1}}\n"));
  ASSERT_NE(find(errors, "spec.kubernetes.template.resources"), nullptr);
}

struct Refusal {
  std::string kubernetes;  // spec.kubernetes's lines
  std::string path;
  std::string words;       // in the message
};

void PrintTo(const Refusal& r, std::ostream* os) { *os << r.path; }

class PodTemplateRefusalTest : public testing::TestWithParam<Refusal> {};

TEST_P(PodTemplateRefusalTest, IsRefusedNamingTheField) {
  const Refusal& r = GetParam();
  const auto errors = errorsOf(withKubernetes(r.kubernetes));
  const SpecError* e = find(errors, r.path);
  ASSERT_NE(e, nullptr) << "no error at " << r.path << "; got: " << (errors.empty() ? "" : errors[0].toString());
  EXPECT_TRUE(contains(e->message, r.words)) << e->toString();
}

const char* kT = "    template:\n";

INSTANTIATE_TEST_SUITE_P(
    Template, PodTemplateRefusalTest,
    testing::Values(
        // What the controller owns.
        Refusal{std::string(kT) + "      env: [{name: A, value: a}, {name: B, value: b}, {name: DDP_RANK, value: '3'}]\n",
                "spec.kubernetes.template.env[2].name", "DDP_RANK is set by the controller"},
        Refusal{std::string(kT) + "      labels: {ddp.dev/job: other}\n", "spec.kubernetes.template.labels[ddp.dev/job]",
                "ddp.dev/job is set by the controller"},
        Refusal{std::string(kT) + "      labels: {app.kubernetes.io/name: mine}\n",
                "spec.kubernetes.template.labels[app.kubernetes.io/name]", "is set by the controller"},
        Refusal{std::string(kT) + "      labels: {kueue.x-k8s.io/queue-name: research}\n",
                "spec.kubernetes.template.labels[kueue.x-k8s.io/queue-name]", "from the DDPJob's own metadata.labels"},
        Refusal{std::string(kT) + "      annotations: {kueue.x-k8s.io/pod-group-total-count: '9'}\n",
                "spec.kubernetes.template.annotations[kueue.x-k8s.io/pod-group-total-count]", "is set by the controller"},
        Refusal{std::string(kT) + "      envFrom: [{prefix: DDP_, configMapRef: {name: c}}]\n",
                "spec.kubernetes.template.envFrom[0].prefix", "set by the controller"},
        Refusal{std::string(kT) + "      volumes: [{name: dshm, emptyDir: {}}]\n", "spec.kubernetes.template.volumes[0].name",
                "dshm is the controller's volume"},
        Refusal{std::string(kT) + "      volumes: [{name: d, emptyDir: {}}]\n      volumeMounts: [{name: d, mountPath: /dev/shm/}]\n",
                "spec.kubernetes.template.volumeMounts[0].mountPath", "/dev/shm is the controller's"},
        Refusal{"    checkpointVolumeClaim: ckpt\n" + std::string(kT) +
                    "      volumes: [{name: d, emptyDir: {}}]\n      volumeMounts: [{name: d, mountPath: /ckpt}]\n",
                "spec.kubernetes.template.volumeMounts[0].mountPath", "spec.checkpoint.dir"},
        // Set in spec.kubernetes and in the template.
        Refusal{"    nodeSelector: {pool: a}\n" + std::string(kT) + "      nodeSelector: {pool: b}\n",
                "spec.kubernetes.template.nodeSelector", "together with spec.kubernetes.nodeSelector"},
        Refusal{"    tolerations: [{key: a, operator: Exists}]\n" + std::string(kT) + "      tolerations: [{key: b, operator: Exists}]\n",
                "spec.kubernetes.template.tolerations", "together with spec.kubernetes.tolerations"},
        Refusal{"    serviceAccountName: a\n" + std::string(kT) + "      serviceAccountName: b\n",
                "spec.kubernetes.template.serviceAccountName", "together with spec.kubernetes.serviceAccountName"},
        Refusal{"    capSysNice: true\n" + std::string(kT) + "      containerSecurityContext: {runAsNonRoot: true}\n",
                "spec.kubernetes.template.containerSecurityContext.runAsNonRoot", "spec.kubernetes.capSysNice"},
        // Shapes.
        Refusal{std::string(kT) + "      env: [{name: A, value: a}, {name: A, value: b}]\n", "spec.kubernetes.template.env[1].name",
                "duplicate variable A (also spec.kubernetes.template.env[0])"},
        Refusal{std::string(kT) + "      env: [{value: a}]\n", "spec.kubernetes.template.env[0].name", "required field is missing"},
        Refusal{std::string(kT) + "      env: [{name: A, vaule: a}]\n", "spec.kubernetes.template.env[0].vaule", "unknown field"},
        Refusal{std::string(kT) + "      env: [{name: A, value: a, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]\n",
                "spec.kubernetes.template.env[0].valueFrom", "not with value"},
        Refusal{std::string(kT) + "      env: [{name: A, valueFrom: {fieldRef: {}, secretKeyRef: {}}}]\n",
                "spec.kubernetes.template.env[0].valueFrom", "exactly one"},
        Refusal{std::string(kT) + "      envFrom: [{prefix: X_}]\n", "spec.kubernetes.template.envFrom[0]",
                "exactly one of configMapRef, secretRef"},
        Refusal{std::string(kT) + "      volumes: [{name: d, persistentVolumeClam: {claimName: c}}]\n",
                "spec.kubernetes.template.volumes[0].persistentVolumeClam", "is not a volume source"},
        Refusal{std::string(kT) + "      volumes: [{name: d, emptyDir: {}, hostPath: {path: /x}}]\n",
                "spec.kubernetes.template.volumes[0]", "exactly one volume source"},
        Refusal{std::string(kT) + "      volumes: [{name: Data, emptyDir: {}}]\n", "spec.kubernetes.template.volumes[0].name",
                "must be a DNS label"},
        Refusal{std::string(kT) + "      volumeMounts: [{name: nowhere, mountPath: /x}]\n",
                "spec.kubernetes.template.volumeMounts[0].name", "names no volume of spec.kubernetes.template.volumes"},
        Refusal{std::string(kT) + "      volumes: [{name: d, emptyDir: {}}]\n      volumeMounts: [{name: d, mountPath: data}]\n",
                "spec.kubernetes.template.volumeMounts[0].mountPath", "must be an absolute path"},
        Refusal{std::string(kT) + "      securityContext: {capabilities: {add: [IPC_LOCK]}}\n",
                "spec.kubernetes.template.securityContext.capabilities", "unknown field"},
        Refusal{"    capSysNice: false\n" + std::string(kT) + "      containerSecurityContext: {capabilities: {add: IPC_LOCK}}\n",
                "spec.kubernetes.template.containerSecurityContext.capabilities.add", "sequence of capability names"},
        Refusal{std::string(kT) + "      affinity: {nodeAfinity: {}}\n", "spec.kubernetes.template.affinity.nodeAfinity",
                "unknown field"},
        Refusal{std::string(kT) + "      topologySpreadConstraints: [{topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]\n",
                "spec.kubernetes.template.topologySpreadConstraints[0].maxSkew", "an integer >= 1"},
        Refusal{std::string(kT) + "      topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Never}]\n",
                "spec.kubernetes.template.topologySpreadConstraints[0].whenUnsatisfiable", "DoNotSchedule, ScheduleAnyway"},
        Refusal{std::string(kT) + "      priorityClassName: High_Priority\n", "spec.kubernetes.template.priorityClassName",
                "DNS subdomain"},
        Refusal{std::string(kT) + "      imagePullSecrets: [{name: a, namespace: b}]\n",
                "spec.kubernetes.template.imagePullSecrets[0].namespace", "unknown field"},
        Refusal{std::string(kT) + "      tolerations: [{key: a, operator: Exist}]\n", "spec.kubernetes.template.tolerations[0].operator",
                "must be one of Equal, Exists"},
        Refusal{std::string(kT) + "      labels: {team: 'a b'}\n", "spec.kubernetes.template.labels[team]", "label value"}));

// The CRD keeps the carried objects' fields (x-kubernetes-preserve-unknown-fields) and types
// the rest.
TEST(PodTemplateTest, TheCrdCarriesTheObjectsAsTheyAre) {
  const YAML::Node crd = YAML::LoadFile(DDP_SOURCE_DIR "/charts/ddp/crds/ddpjobs.ddp.dev.yaml");
  const YAML::Node t = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
                          ["kubernetes"]["properties"]["template"]["properties"];
  ASSERT_TRUE(t.IsMap());
  EXPECT_TRUE(t["affinity"]["x-kubernetes-preserve-unknown-fields"].as<bool>());
  EXPECT_EQ(t["affinity"]["type"].as<std::string>(), "object");
  EXPECT_EQ(t["env"]["type"].as<std::string>(), "array");
  EXPECT_TRUE(t["env"]["items"]["x-kubernetes-preserve-unknown-fields"].as<bool>());
  EXPECT_EQ(t["labels"]["additionalProperties"]["type"].as<std::string>(), "string");
  EXPECT_EQ(t["priorityClassName"]["type"].as<std::string>(), "string");
}

}  // namespace
}  // namespace ddp
