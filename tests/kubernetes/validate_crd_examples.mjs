// Validates DDPJob documents against the CRD's own schema (charts/ddp/crds/ddpjobs.ddp.dev.yaml)
// with ajv, as the API server would at admission with kubectl's strict field validation:
// the OpenAPI v3.0 schema is turned into JSON Schema (nullable, boolean exclusiveMinimum and exclusiveMaximum) and
// every object that lists its properties refuses others (the API server rejects unknown fields
// under --validate=strict, kubectl's default).
//   DDP_K8S_MODULES=.tools/k8s/node_modules node validate_crd_examples.mjs CRD FILE...
// Prints one line per document and "N documents valid"; exits 1 naming each invalid one.
import { importModule, readYamlDocuments } from "./k8s_modules.mjs";

function toJsonSchema(s) {
  if (Array.isArray(s)) return s.map(toJsonSchema);
  if (s === null || typeof s !== "object") return s;
  const out = {};
  for (const [k, v] of Object.entries(s)) {
    if (k.startsWith("x-kubernetes-") || k === "nullable") continue;
    out[k] = k === "enum" || k === "required" ? v : toJsonSchema(v);
  }
  if (s.nullable && typeof out.type === "string") out.type = [out.type, "null"];
  if (s.exclusiveMinimum === true) {
    out.exclusiveMinimum = s.minimum;
    delete out.minimum;
  }
  if (s.exclusiveMaximum === true) {
    out.exclusiveMaximum = s.maximum;
    delete out.maximum;
  }
  if (out.type === "object" && out.properties && out.additionalProperties === undefined) {
    out.additionalProperties = false;
  }
  return out;
}

const [crdFile, ...files] = process.argv.slice(2);
const [crd] = await readYamlDocuments(crdFile);
const version = crd.spec.versions.find((v) => v.storage);
const schema = toJsonSchema(version.schema.openAPIV3Schema);
// metadata is the API server's ObjectMeta: the CRD may only bound its name (for the admission
// rules' cost), and every other field of ObjectMeta stays allowed.
if (schema.properties?.metadata) delete schema.properties.metadata.additionalProperties;
const group = crd.spec.group;
const Ajv = (await importModule("ajv/dist/ajv.js")).default;
const addFormats = (await importModule("ajv-formats/dist/index.js")).default;
const ajv = new Ajv({ allErrors: true, strict: false });
(addFormats.default ?? addFormats)(ajv);
const validate = ajv.compile(schema);

let valid = 0;
const failures = [];
for (const file of files) {
  for (const doc of await readYamlDocuments(file)) {
    const id = `${doc.kind}/${doc.metadata?.name} (${file})`;
    const errors = [];
    if (doc.apiVersion !== `${group}/${version.name}`) errors.push(`apiVersion must be ${group}/${version.name}`);
    if (doc.kind !== crd.spec.names.kind) errors.push(`kind must be ${crd.spec.names.kind}`);
    if (!validate(doc)) {
      for (const e of validate.errors) {
        const extra = e.params?.additionalProperty ? ` '${e.params.additionalProperty}'` : "";
        errors.push(`${e.instancePath || "/"} ${e.message}${extra}`);
      }
    }
    if (errors.length) failures.push(`${id}: ${errors.join("; ")}`);
    else {
      valid++;
      console.log(`ok ${id}`);
    }
  }
}
for (const f of failures) console.error(`INVALID ${f}`);
console.log(`${valid} documents valid, ${failures.length} invalid`);
process.exit(failures.length || valid === 0 ? 1 : 0);
