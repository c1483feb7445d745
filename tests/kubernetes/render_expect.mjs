// Checks values in a rendered manifest (multi-document YAML, as `helm template` writes it):
//   DDP_K8S_MODULES=... node render_expect.mjs MANIFEST OBJECT PATH EXPECTED [OBJECT PATH EXPECTED]...
// OBJECT is Kind/name, or Kind (exactly one object of that kind), or * (every object).
// PATH is dotted (spec.strategy.type, containers[0].args) or a JSON array of keys for keys that
// hold dots (["metadata","labels","app.kubernetes.io/name"]). EXPECTED is JSON, or `absent`
// (the path must not exist), or `~TEXT` (the value, as JSON text, must contain TEXT).
// Prints each check; exits 1 naming every mismatch.
import { readYamlDocuments } from "./k8s_modules.mjs";

const [manifest, ...rest] = process.argv.slice(2);
if (!manifest || rest.length === 0 || rest.length % 3 !== 0) {
  console.error("usage: render_expect.mjs MANIFEST OBJECT PATH EXPECTED [...]");
  process.exit(2);
}
const docs = await readYamlDocuments(manifest);

function keysOf(path) {
  if (path.startsWith("[")) return JSON.parse(path);
  const keys = [];
  for (const part of path.split(".")) {
    const m = part.match(/^([^[]*)((\[\d+\])*)$/);
    if (m[1]) keys.push(m[1]);
    for (const idx of m[2].matchAll(/\[(\d+)\]/g)) keys.push(Number(idx[1]));
  }
  return keys;
}

function select(spec) {
  if (spec === "*") return docs;
  const [kind, name] = spec.split("/");
  const found = docs.filter((d) => d.kind === kind && (name === undefined || d.metadata?.name === name));
  if (name === undefined && found.length !== 1) throw new Error(`${found.length} objects of kind ${kind}, expected 1`);
  if (found.length === 0) throw new Error("no such object");
  return found;
}

// JSON text with object keys sorted, so that key order does not matter.
function canonical(v) {
  return JSON.stringify(v, (k, x) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.keys(x).sort().map((key) => [key, x[key]])) : x);
}

const failures = [];
for (let i = 0; i < rest.length; i += 3) {
  const [spec, path, expected] = rest.slice(i, i + 3);
  const what = `${spec} ${path}`;
  try {
    for (const obj of select(spec)) {
      let v = obj;
      for (const k of keysOf(path)) v = v === undefined || v === null ? undefined : v[k];
      const id = `${obj.kind}/${obj.metadata?.name} ${path}`;
      const got = v === undefined ? "absent" : canonical(v);
      const ok = expected === "absent" ? v === undefined
        : expected.startsWith("~") ? v !== undefined && got.includes(expected.slice(1))
        : v !== undefined && canonical(JSON.parse(expected)) === got;
      if (!ok) throw new Error(`${id}: expected ${expected}, got ${got}`);
    }
    console.log(`ok ${what} = ${expected}`);
  } catch (e) {
    failures.push(`${what}: ${e.message}`);
  }
}
for (const f of failures) console.error(`MISMATCH ${f}`);
process.exit(failures.length ? 1 : 0);
