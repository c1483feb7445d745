// Checks that the Dockerfile's runtime stage provides every shared library the shipped binaries
// (ddp-controller, ddp-worker, ddpctl) link, without building the image (no container engine
// runs here). For each library ldd resolves: the Debian package that owns it (dpkg -S) must be
// in the runtime stage's apt-get install list, a dependency of one of those (their Depends,
// read from this machine's dpkg database), or part of the base image (kBasePackages). A library
// no Debian package owns must be in the CUDA table (kCudaLibraries), and the runtime stage must
// provide it as the table says. Also: the runtime stage runs as a non-root user, the uid the
// Helm chart sets, and installs no compiler or headers.
//   node image_libraries.mjs [--dockerfile FILE] [--values FILE] BIN_DIR
// Prints what it checked; exits 1 naming every library, package or rule that fails.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import path from "node:path";

// What debian:bookworm-slim has before the runtime stage installs anything (priority required).
const kBasePackages = ["libc6", "libgcc-s1", "libstdc++6", "zlib1g", "libzstd1", "liblzma5",
  "libbz2-1.0", "libcrypt1", "libselinux1", "libpcre2-8-0", "libacl1", "libattr1", "libaudit1",
  "libcap-ng0", "libgmp10", "libmd0", "libtinfo6", "debconf", "dpkg", "perl-base", "tar"];

// Libraries that no Debian 12 package owns here, and how the runtime stage provides each.
const kCudaLibraries = [
  { soname: /^libcudart\.so\.\d+$/, copy: "libcudart.so." },
  { soname: /^libcublas\.so\.\d+$/, copy: "libcublas.so." },
  { soname: /^libcublasLt\.so\.\d+$/, copy: "libcublasLt.so." },
  { soname: /^libnccl\.so\.\d+$/, copy: "libnccl.so." },
  // The driver: mounted into the container by the NVIDIA container toolkit.
  { soname: /^libcuda\.so\.1$/, driver: true },
];

const kBinaries = ["ddp-controller", "ddp-worker", "ddpctl"];
const kCompilerPackages = /^(gcc|g\+\+|cpp|clang|build-essential|cmake|ninja-build|make|cuda-nvcc.*|nvidia-cuda-toolkit)(-\d+)?$|-dev$/;

function args() {
  const a = process.argv.slice(2);
  const out = { dockerfile: null, values: null, binDir: null };
  for (let i = 0; i < a.length; i++) {
    if (a[i] === "--dockerfile") out.dockerfile = a[++i];
    else if (a[i] === "--values") out.values = a[++i];
    else out.binDir = a[i];
  }
  const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
  out.dockerfile ??= path.join(root, "Dockerfile");
  out.values ??= path.join(root, "charts/ddp/values.yaml");
  if (!out.binDir) throw new Error("usage: image_libraries.mjs [--dockerfile F] [--values F] BIN_DIR");
  return out;
}

// The runtime stage: from `FROM ... AS runtime` to the next FROM; continuation lines joined.
function runtimeStage(dockerfile) {
  const lines = readFileSync(dockerfile, "utf8").replace(/\\\n/g, " ").split("\n");
  const start = lines.findIndex((l) => /^FROM\s+\S+\s+AS\s+runtime\s*$/i.test(l.trim()));
  if (start < 0) throw new Error(`${dockerfile}: no stage 'FROM ... AS runtime'`);
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((l) => /^FROM\s/i.test(l.trim()));
  return { from: lines[start].trim(), lines: (end < 0 ? rest : rest.slice(0, end)).map((l) => l.trim()) };
}

function aptPackages(stage) {
  const pkgs = [];
  for (const l of stage.lines) {
    for (const m of l.matchAll(/apt-get\s+install\s+([^&;|]*)/g)) {
      for (const w of m[1].split(/\s+/)) if (w && !w.startsWith("-")) pkgs.push(w);
    }
  }
  return pkgs;
}

function sh(cmd, argv) {
  try {
    return execFileSync(cmd, argv, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch {
    return null;
  }
}

// The installed Debian package owning each file (tried as given, resolved, and across the /usr
// merge), from one dpkg -S call: file -> package, or no entry.
function owners(files) {
  const candidates = new Map();  // candidate path -> the file it stands for
  for (const file of files) {
    const paths = new Set([file]);
    try { paths.add(realpathSync(file)); } catch {}
    for (const c of [...paths]) paths.add(c.startsWith("/usr/") ? c.slice(4) : "/usr" + c);
    for (const c of paths) candidates.set(c, file);
  }
  // dpkg -S exits 1 when some path is not owned; its output still lists the others.
  let out = "";
  try {
    out = execFileSync("dpkg", ["-S", ...candidates.keys()], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  } catch (e) {
    out = e.stdout ?? "";
  }
  const result = new Map();
  for (const line of out.split("\n")) {
    const m = line.match(/^([^:,\s]+)(?::\S+)?: (\S+)$/);
    if (m && candidates.has(m[2]) && !result.has(candidates.get(m[2]))) result.set(candidates.get(m[2]), m[1]);
  }
  return result;
}

// Packages reachable from `roots` through Depends / Pre-Depends of installed packages (one
// dpkg-query call for the whole database).
function dependencyClosure(roots) {
  const deps = new Map();
  const out = sh("dpkg-query", ["-W", "-f=${Package}\t${Pre-Depends}, ${Depends}\n"]) ?? "";
  for (const line of out.split("\n")) {
    const [pkg, list] = line.split("\t");
    if (!pkg) continue;
    const names = [];
    for (const dep of (list ?? "").split(",")) {
      for (const alt of dep.split("|")) {
        const name = alt.trim().split(/[\s(:]/)[0];
        if (name) names.push(name);
      }
    }
    deps.set(pkg, names);
  }
  const seen = new Set();
  const stack = [...roots];
  while (stack.length) {
    const p = stack.pop();
    if (seen.has(p)) continue;
    seen.add(p);
    for (const d of deps.get(p) ?? []) if (!seen.has(d)) stack.push(d);
  }
  return seen;
}

function linkedLibraries(binary) {
  const out = sh("ldd", [binary]);
  if (out === null) throw new Error(`ldd ${binary} failed`);
  const libs = [];
  for (const line of out.split("\n")) {
    const m = line.match(/^\s*(\S+)\s+=>\s+(\S+|not found)/);
    if (m) libs.push({ soname: m[1], file: m[2] });
  }
  return libs;
}

const a = args();
const stage = runtimeStage(a.dockerfile);
const listed = aptPackages(stage);
const provided = dependencyClosure([...listed, ...kBasePackages]);
const problems = [];

// Loaded with dlopen (ldd does not see them): NCCL's InfiniBand/RoCE transport needs the verbs
// drivers of ibverbs-providers beside libibverbs.
for (const p of ["libibverbs1", "ibverbs-providers"]) {
  if (!listed.includes(p)) problems.push(`runtime stage must install ${p} (NCCL over InfiniBand/RoCE loads it at run time)`);
}
if (!/debian:bookworm-slim/.test(stage.from)) problems.push(`runtime stage base is not debian:bookworm-slim: ${stage.from}`);
for (const p of listed) if (kCompilerPackages.test(p)) problems.push(`runtime stage installs ${p} (no compilers or headers)`);
const user = stage.lines.filter((l) => /^USER\s/i.test(l)).pop();
const uid = user?.split(/\s+/)[1]?.split(":")[0];
const chartUid = readFileSync(a.values, "utf8").match(/runAsUser:\s*(\d+)/)?.[1];
if (!uid || uid === "0" || uid === "root") problems.push(`runtime stage must end as a non-root USER (got ${user ?? "none"})`);
else if (uid !== chartUid) problems.push(`runtime USER ${uid} differs from the chart's runAsUser ${chartUid}`);

const seenLibs = new Map();
for (const b of kBinaries) {
  const file = path.join(a.binDir, b);
  if (!existsSync(file)) {
    problems.push(`${file} is missing (build it first)`);
    continue;
  }
  for (const lib of linkedLibraries(file)) {
    if (!seenLibs.has(lib.soname)) seenLibs.set(lib.soname, { ...lib, by: [] });
    seenLibs.get(lib.soname).by.push(b);
  }
}
const owned = owners([...seenLibs.values()].filter((l) => l.file !== "not found").map((l) => l.file));
for (const lib of seenLibs.values()) {
  const by = lib.by.join(", ");
  if (lib.file === "not found") {
    problems.push(`${lib.soname} (${by}): not found by ldd`);
    continue;
  }
  const pkg = owned.get(lib.file);
  if (pkg) {
    const how = listed.includes(pkg) ? "listed" : kBasePackages.includes(pkg) ? "base image" : provided.has(pkg) ? "dependency" : null;
    if (how) console.log(`ok ${lib.soname} (${by}) -> ${pkg} (${how})`);
    else problems.push(`${lib.soname} (${by}) comes from Debian package ${pkg}, which the runtime stage does not install`);
    continue;
  }
  const entry = kCudaLibraries.find((e) => e.soname.test(lib.soname));
  if (!entry) {
    problems.push(`${lib.soname} (${by}, ${lib.file}): no Debian package owns it and it is not in the CUDA table`);
  } else if (entry.driver) {
    const ok = stage.lines.some((l) => /NVIDIA_DRIVER_CAPABILITIES=\S*compute/.test(l));
    if (ok) console.log(`ok ${lib.soname} (${by}) -> the NVIDIA container toolkit (driver)`);
    else problems.push(`${lib.soname} (${by}): the driver library needs NVIDIA_DRIVER_CAPABILITIES with compute`);
  } else {
    const ok = stage.lines.some((l) => /^COPY\s+--from=/.test(l) && l.includes(entry.copy));
    if (ok) console.log(`ok ${lib.soname} (${by}) -> copied from the CUDA image`);
    else problems.push(`${lib.soname} (${by}): in the CUDA table but the runtime stage copies no ${entry.copy}*`);
  }
}
for (const p of problems) console.error(`MISSING ${p}`);
console.log(`${seenLibs.size} libraries checked, ${problems.length} problems`);
process.exit(problems.length || seenLibs.size === 0 ? 1 : 0);
