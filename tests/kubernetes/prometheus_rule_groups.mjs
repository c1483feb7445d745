// Writes the rule groups of the PrometheusRule objects in a rendered manifest as a plain
// Prometheus rules file (what `promtool check rules` and `promtool test rules` read): the
// PrometheusRule's spec is that file's content. Exits 1 when the manifest has none.
//   DDP_K8S_MODULES=.tools/k8s/node_modules node prometheus_rule_groups.mjs MANIFEST OUT.yaml
import { writeFileSync } from "node:fs";
import { importModule, readYamlDocuments } from "./k8s_modules.mjs";

const [manifest, out] = process.argv.slice(2);
if (!manifest || !out) {
  console.error("usage: prometheus_rule_groups.mjs MANIFEST OUT.yaml");
  process.exit(2);
}
const groups = [];
for (const obj of await readYamlDocuments(manifest)) {
  if (obj.kind === "PrometheusRule") groups.push(...(obj.spec?.groups ?? []));
}
if (groups.length === 0) {
  console.error(`${manifest}: no PrometheusRule with rule groups`);
  process.exit(1);
}
const YAML = await importModule("yaml/dist/index.js");
writeFileSync(out, (YAML.stringify ?? YAML.default.stringify)({ groups }));
console.log(`${groups.length} rule group(s) written to ${out}`);
