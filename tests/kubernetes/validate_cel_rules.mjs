// The DDPJob CRD's admission rules and field descriptions, checked offline (Note [CRD admission
// rules] in common/jobspec/job_spec_cel_rules.h):
//  - every property of the schema has a description (kubectl explain);
//  - every string a CEL rule reads (through `self.a.b`, and everything under an object or list it
//    reads whole) has maxLength, every list maxItems, and so does every list above the rule's
//    node: a real API server estimates a rule's cost from these and refuses a CRD without them;
//  - each rule evaluated with a CEL evaluator (@bufbuild/cel) on each document, `self` bound to
//    the document's node as the API server types it (integers as CEL int, numbers as double):
//    every rule holds on every valid document, and each invalid document breaks the rule its
//    annotation ddp.dev/violates names;
//  - transition rules (those reading `oldSelf`) as the API server runs them: on updates only,
//    `oldSelf` bound to the node before the update. A document with the annotation ddp.dev/old
//    (a JSON merge patch of it) is an update from that older version, which must itself pass
//    every other rule as a create; any other valid document is checked as a create and as an
//    update that changes nothing.
//   DDP_K8S_MODULES=.tools/k8s/node_modules node validate_cel_rules.mjs CRD \
//       [--valid FILE...] [--invalid FILE...]
// Markdown files among the valid ones contribute their fenced blocks that hold a whole DDPJob.
// Prints one line per document and a summary; exits 1 naming every problem.
import { readFileSync } from "node:fs";
import { importModule, readYamlDocuments } from "./k8s_modules.mjs";

const { run, isCelError } = await importModule("@bufbuild/cel/dist/esm/index.js");
const YAML = await importModule("yaml/dist/index.js");
const parseAll = YAML.parseAllDocuments ?? YAML.default.parseAllDocuments;

const problems = [];

// Calls visit(node, path, arraysAbove) for the schema and every node below it.
function walk(node, path, arraysAbove, visit) {
  visit(node, path, arraysAbove);
  for (const [key, child] of Object.entries(node.properties ?? {})) walk(child, [...path, key], arraysAbove, visit);
  if (node.items) walk(node.items, [...path, "[]"], [...arraysAbove, node], visit);
  if (typeof node.additionalProperties === "object") walk(node.additionalProperties, [...path, "{}"], arraysAbove, visit);
}

const name = (path) => (path.length ? path.join(".") : "(the document)");

// Strings and lists that a rule reading `node` whole reaches, unbounded.
function unbounded(node, path, out) {
  if (node.type === "string" && node.maxLength === undefined) out.push(`${name(path)}: a string without maxLength`);
  if (node.type === "array" && node.maxItems === undefined) out.push(`${name(path)}: a list without maxItems`);
  for (const [key, child] of Object.entries(node.properties ?? {})) unbounded(child, [...path, key], out);
  if (node.items) unbounded(node.items, [...path, "[]"], out);
  if (typeof node.additionalProperties === "object") unbounded(node.additionalProperties, [...path, "{}"], out);
}

// Problems with the cost bounds of one rule on `node`.
function costProblems(rule, node, path, arraysAbove) {
  const out = [];
  for (const a of arraysAbove) if (a.maxItems === undefined) out.push(`a list above ${name(path)} has no maxItems`);
  for (const m of rule.matchAll(/(has\(\s*)?(?:oldSelf|self)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)(\s*\()?/g)) {
    const presence = Boolean(m[1]);  // has(self.a.b) tests a field, reads nothing
    let keys = m[2].slice(1).split(".");
    if (m[3]) keys = keys.slice(0, -1);  // self.a.b.size(): a method of self.a.b
    let at = node;
    const p = [...path];
    for (const key of keys) {
      at = at.properties?.[key];
      p.push(key);
      if (!at) {
        out.push(`reads ${name(p)}, which the schema does not have`);
        break;
      }
    }
    if (at && keys.length && !presence) unbounded(at, p, out);
  }
  return [...new Set(out)];
}

// A YAML value as the API server hands it to CEL: objects as maps, integers as int.
function celValue(schema, value) {
  if (value === null || value === undefined) return value;
  if (Array.isArray(value)) return value.map((v) => celValue(schema?.items, v));
  if (typeof value === "object") {
    const m = new Map();
    for (const [k, v] of Object.entries(value)) {
      const child = schema?.properties?.[k] ?? (typeof schema?.additionalProperties === "object" ? schema.additionalProperties : undefined);
      m.set(k, celValue(child, v));
    }
    return m;
  }
  if (typeof value === "number" && schema?.type === "integer") return BigInt(value);
  return value;
}

// The document's values at a schema path (several under a list).
function valuesAt(doc, path) {
  let values = [doc];
  for (const key of path) {
    values = values.flatMap((v) => (key === "[]" ? (Array.isArray(v) ? v : []) : v?.[key] !== undefined ? [v[key]] : []));
  }
  return values;
}

const [crdFile, ...args] = process.argv.slice(2);
const [crd] = await readYamlDocuments(crdFile);
const schema = crd.spec.versions.find((v) => v.storage).schema.openAPIV3Schema;
const rules = [];  // {rule, message, node, path}
let properties = 0;
walk(schema, [], [], (node, path, arraysAbove) => {
  if (path.length && path.at(-1) !== "[]" && path.at(-1) !== "{}") {
    properties++;
    if (!node.description) problems.push(`${name(path)}: no description`);
  }
  for (const r of node["x-kubernetes-validations"] ?? []) {
    for (const p of costProblems(r.rule, node, path, arraysAbove)) problems.push(`rule '${r.rule}': ${p}`);
    const transition = /\boldSelf\b/.test(r.rule);
    if (transition && path.includes("[]")) problems.push(`rule '${r.rule}': a transition rule under a list`);
    rules.push({ ...r, node, path, transition });
  }
});

// The DDPJobs of a file: YAML documents, or the fenced blocks of a markdown file.
async function documentsOf(file) {
  if (!file.endsWith(".md")) return readYamlDocuments(file);
  const blocks = [...readFileSync(file, "utf8").matchAll(/^```[a-z]*\n([\s\S]*?)^```/gm)].map((m) => m[1]);
  return blocks.filter((b) => /^kind: DDPJob$/m.test(b)).flatMap((b) => parseAll(b).map((d) => d.toJS()));
}

// RFC 7386: `patch` applied to a copy of `target`.
function mergePatch(target, patch) {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return patch;
  const out = target !== null && typeof target === "object" && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

// The rules a document breaks, by message; an evaluation error is a problem of the rule. `old`:
// the version the document updates (undefined: a create, which runs no transition rule).
function broken(doc, id, old) {
  const out = [];
  for (const r of rules) {
    if (r.transition && old === undefined) continue;
    const olds = r.transition ? valuesAt(old, r.path) : [];
    for (const v of valuesAt(doc, r.path)) {
      if (r.transition && olds.length !== 1) continue;  // the node is new: nothing to compare
      const vars = { self: celValue(r.node, v) };
      if (r.transition) vars.oldSelf = celValue(r.node, olds[0]);
      const result = run(r.rule, vars);
      if (isCelError(result) || typeof result !== "boolean") {
        problems.push(`${id}: rule '${r.rule}' did not evaluate to a bool: ${result?.message ?? result}`);
      } else if (!result) {
        out.push(r.message);
      }
    }
  }
  return out;
}

let mode = "--valid";
let valid = 0, refused = 0;
for (const arg of args) {
  if (arg === "--valid" || arg === "--invalid") {
    mode = arg;
    continue;
  }
  for (const doc of await documentsOf(arg)) {
    const id = `${doc.metadata?.name} (${arg})`;
    const patch = doc.metadata?.annotations?.["ddp.dev/old"];
    const old = patch === undefined ? undefined : mergePatch(doc, JSON.parse(patch));
    if (old !== undefined) {
      const before = broken(old, `${id} before the update`);
      if (before.length) problems.push(`${id}: the version before the update breaks: ${before.join("; ")}`);
    }
    const failed = old !== undefined ? broken(doc, id, old) : [...broken(doc, id), ...broken(doc, id, doc)];
    if (mode === "--valid") {
      if (failed.length) problems.push(`${id}: a valid job breaks: ${failed.join("; ")}`);
      else console.log(`ok ${id}`);
      valid++;
      continue;
    }
    const expect = doc.metadata?.annotations?.["ddp.dev/violates"];
    // The generator ends each message with "(rule ID)" (job_spec_cel_rules.h).
    const rule = rules.find((r) => failed.includes(r.message) && r.message.endsWith(`(rule ${expect})`));
    if (!expect) problems.push(`${id}: no ddp.dev/violates annotation`);
    else if (!rule) problems.push(`${id}: not refused by rule ${expect} (broken: ${failed.join("; ") || "none"})`);
    else {
      console.log(`refused ${id}: ${rule.message}`);
      refused++;
    }
  }
}

for (const p of problems) console.error(`FAIL ${p}`);
console.log(`${properties} properties, ${rules.length} rules (${rules.filter((r) => r.transition).length} ` +
            `transition); ${valid} valid documents pass every rule, ` +
            `${refused} invalid documents refused by their rule; ${problems.length} problems`);
process.exit(problems.length || rules.length === 0 ? 1 : 0);
