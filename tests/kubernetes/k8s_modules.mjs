// Loads the node modules that scripts/k8s_tools.sh installed into a tools folder outside the
// source tree (.tools/k8s/node_modules), by file path: a script here cannot resolve bare package
// names from there.
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

export function modulesDir() {
  const dir = process.env.DDP_K8S_MODULES;
  if (!dir) throw new Error("DDP_K8S_MODULES is not set (the node_modules folder of scripts/k8s_tools.sh)");
  return dir;
}

// Imports a file inside the modules folder ("kubernetes-models/apps/v1/Deployment.js").
export async function importModule(relative) {
  return import(pathToFileURL(path.join(modulesDir(), relative)).href);
}

// YAML documents of a file, as plain objects (empty documents dropped).
export async function readYamlDocuments(file) {
  const YAML = await importModule("yaml/dist/index.js");
  const parse = YAML.parseAllDocuments ?? YAML.default.parseAllDocuments;
  const docs = parse(readFileSync(file, "utf8"));
  const out = [];
  for (const d of docs) {
    if (d.errors.length) throw new Error(`${file}: ${d.errors.map((e) => e.message).join("; ")}`);
    const obj = d.toJS();
    if (obj !== null && obj !== undefined) out.push(obj);
  }
  return out;
}
