// Validates every Kubernetes object in the given YAML files (multi-document, as `helm template`
// writes them) offline against the Kubernetes OpenAPI schemas that the npm package
// kubernetes-models carries (and @kubernetes-models/prometheus-operator for ServiceMonitor).
// An object of a kind neither knows is an error too, as is one without metadata.name.
//   DDP_K8S_MODULES=.tools/k8s/node_modules node validate_objects.mjs FILE...
// Prints one line per object and "N objects valid"; exits 1 naming each invalid object.
import { importModule, readYamlDocuments } from "./k8s_modules.mjs";

function modelFile(apiVersion, kind) {
  if (apiVersion === "monitoring.coreos.com/v1") {
    return `@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/${kind}.js`;
  }
  const slash = apiVersion.indexOf("/");
  const groupVersion = slash < 0 ? apiVersion : `${apiVersion.slice(0, slash)}/${apiVersion.slice(slash + 1)}`;
  return `kubernetes-models/${groupVersion}/${kind}.js`;
}

let valid = 0;
const failures = [];
for (const file of process.argv.slice(2)) {
  for (const obj of await readYamlDocuments(file)) {
    const id = `${obj.kind}/${obj.metadata?.name} (${file})`;
    try {
      if (!obj.apiVersion || !obj.kind) throw new Error("apiVersion and kind are required");
      if (!obj.metadata?.name) throw new Error("metadata.name is required");
      let mod;
      try {
        mod = await importModule(modelFile(obj.apiVersion, obj.kind));
      } catch {
        throw new Error(`unknown kind ${obj.apiVersion} ${obj.kind}`);
      }
      const Model = mod[obj.kind];
      new Model(obj).validate();
      valid++;
      console.log(`ok ${obj.apiVersion} ${id}`);
    } catch (e) {
      failures.push(`${id}: ${e.message}`);
    }
  }
}
for (const f of failures) console.error(`INVALID ${f}`);
console.log(`${valid} objects valid, ${failures.length} invalid`);
process.exit(failures.length || valid === 0 ? 1 : 0);
