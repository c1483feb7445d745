#!/usr/bin/env bash
# Renders manifests/install.yaml from the Helm chart (charts/ddp): the CRD, a ddp-system
# Namespace and the controller with default values (the controller creates its API token
# Secret on its first start: no token in a shared file). tests/kubernetes/check.sh install-manifest
# fails when the committed file differs from what this writes.
# First it regenerates what the job spec's field table gives (tools/jobspec, built in
# ${BUILD_DIR:-build}): the CRD charts/ddp/crds/ddpjobs.ddp.dev.yaml and the field table of
# docs/JOB_SPEC.md (JobSpecSchemaTest fails when either is out of date).
#   scripts/render_manifests.sh            # writes manifests/install.yaml
#   scripts/render_manifests.sh OUT.yaml   # writes OUT.yaml instead
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/manifests/install.yaml}"
build="${BUILD_DIR:-$root/build}"
cmake --build "$build" --target ddp-jobspec-schema >/dev/null
schema="$build/bin/ddp-jobspec-schema"
"$schema" crd "$root/tools/jobspec/ddpjob_crd.template.yaml" >"$root/charts/ddp/crds/ddpjobs.ddp.dev.yaml.tmp"
mv "$root/charts/ddp/crds/ddpjobs.ddp.dev.yaml.tmp" "$root/charts/ddp/crds/ddpjobs.ddp.dev.yaml"
"$schema" docs "$root/docs/JOB_SPEC.md" >"$root/docs/JOB_SPEC.md.tmp"
mv "$root/docs/JOB_SPEC.md.tmp" "$root/docs/JOB_SPEC.md"
tools="$("$root/scripts/k8s_tools.sh")"
{
  cat <<'HEADER'
# ddp: the DDPJob CRD and the controller, in namespace ddp-system. Generated from charts/ddp by
# scripts/render_manifests.sh (do not edit; a test keeps it in step with the chart).
#   kubectl apply --server-side -f manifests/install.yaml
# The controller creates the API token Secret ddp-api-token (key token) on its first start;
# to choose the token, create that Secret before applying.
# The images are ddp-service-controller:<appVersion> (the controller: docker build --target
# controller) and ddp-service:<appVersion> (the workers: docker build): build them from the
# Dockerfile and push them where the cluster pulls from (or install with helm and
# --set controller.image.repository=... --set image.repository=...). GPU nodes need NVIDIA
# driver 580 or newer (CUDA 13).
---
apiVersion: v1
kind: Namespace
metadata:
  name: ddp-system
  labels:
    app.kubernetes.io/part-of: ddp
HEADER
  "$tools/bin/helm" template ddp "$root/charts/ddp" --namespace ddp-system --include-crds --skip-tests
} >"$out.tmp"
mv "$out.tmp" "$out"
