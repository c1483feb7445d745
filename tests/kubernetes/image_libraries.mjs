// Checks that the Dockerfile's images provide every shared library their binaries link, without
// building them (no container engine runs here): the runtime stage (ddp-controller, ddp-worker,
// ddpctl with CUDA and NCCL) and the controller stage (ddp-controller and ddpctl, no CUDA). For
// each library ldd resolves: the Debian package that owns it (dpkg -S) must be in the stage's
// apt-get install list, a dependency of one of those (their Depends, read from this machine's
// dpkg database), or part of the base image (kBasePackages). A library no Debian package owns
// must be in the CUDA table (kCudaLibraries), which the runtime stage provides as the table says
// and the controller stage must not need. The runtime stage ships the table's libraries staged
// by scripts/stage_runtime_libs.sh (each file once, links kept) through a directory COPY: no
// shipped stage copies one by a glob, which follows symlinks and stores each library twice. The
// controller stage copies its binaries only from a stage built with DDP_WITH_CUDA=OFF. Also:
// both run as the non-root uid the Helm chart sets and install no compiler or headers.
//   node image_libraries.mjs [--dockerfile FILE] [--values FILE] BIN_DIR
// BIN_DIR: a build's bin/ (a CPU build's binaries stand for the controller stage's exactly).
// Prints what it checked; exits 1 naming every library, package or rule that fails.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import path from "node:path";
import { aptPackages, copies, globMatches, readStages, runVariable, stageNamed, stagedFamilies } from "./dockerfile_stages.mjs";

// What debian:bookworm-slim has before a stage installs anything (priority required).
const kBasePackages = ["libc6", "libgcc-s1", "libstdc++6", "zlib1g", "libzstd1", "liblzma5",
  "libbz2-1.0", "libcrypt1", "libselinux1", "libpcre2-8-0", "libacl1", "libattr1", "libaudit1",
  "libcap-ng0", "libgmp10", "libmd0", "libtinfo6", "debconf", "dpkg", "perl-base", "tar"];

// Libraries that no Debian 12 package owns here, and how the runtime stage provides each: a
// family staged by scripts/stage_runtime_libs.sh, or the driver.
const kCudaLibraries = [
  { soname: /^libcudart\.so\.\d+$/, family: "libcudart" },
  { soname: /^libcublas\.so\.\d+$/, family: "libcublas" },
  { soname: /^libcublasLt\.so\.\d+$/, family: "libcublasLt" },
  { soname: /^libnccl\.so\.\d+$/, family: "libnccl" },
  // The driver: mounted into the container by the NVIDIA container toolkit.
  { soname: /^libcuda\.so\.1$/, driver: true },
];

// The images the checks cover: their stage, binaries, whether they hold the CUDA table's
// libraries, and packages loaded with dlopen (ldd does not see them) that must be listed:
// NCCL's InfiniBand/RoCE transport needs the verbs drivers of ibverbs-providers.
const kImages = [
  { stage: "runtime", binaries: ["ddp-controller", "ddp-worker", "ddpctl"], cuda: true,
    dlopen: ["libibverbs1", "ibverbs-providers"] },
  // ddpctl links the worker's code, so a CUDA build's ddpctl links CUDA; the controller stage
  // builds it with CUDA off (ddp-controller links no CUDA in any build).
  { stage: "controller", binaries: ["ddp-controller", "ddpctl"], cuda: false, dlopen: [],
    cudaOnlyInACudaBuild: ["ddpctl"] },
];
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

// Base image, no compilers, non-root USER equal to the chart's runAsUser, dlopen'ed packages.
function checkBasics(image, stage, chartUid, problems) {
  const listed = aptPackages(stage);
  const where = `${image.stage} stage`;
  for (const p of image.dlopen) {
    if (!listed.includes(p)) problems.push(`${where} must install ${p} (NCCL over InfiniBand/RoCE loads it at run time)`);
  }
  if (!/debian:bookworm-slim/.test(stage.from)) problems.push(`${where} base is not debian:bookworm-slim: ${stage.from}`);
  for (const p of listed) if (kCompilerPackages.test(p)) problems.push(`${where} installs ${p} (no compilers or headers)`);
  const user = stage.lines.filter((l) => /^USER\s/i.test(l)).pop();
  const uid = user?.split(/\s+/)[1]?.split(":")[0];
  if (!uid || uid === "0" || uid === "root") problems.push(`${where} must end as a non-root USER (got ${user ?? "none"})`);
  else if (uid !== chartUid) problems.push(`${where}: USER ${uid} differs from the chart's runAsUser ${chartUid}`);
}

// The CUDA table's families that `stage` ships: staged by stage_runtime_libs.sh in a stage whose
// staging directory it copies whole.
function shippedFamilies(stages, stage) {
  const shipped = new Set();
  for (const c of copies(stage)) {
    const from = stages.find((s) => s.name === c.from);
    if (!from) continue;
    for (const call of stagedFamilies(from)) {
      const dir = call.dest.replace(/\/+$/, "");
      if (c.sources.some((src) => src.replace(/\/+$/, "") === dir)) for (const f of call.families) shipped.add(f);
    }
  }
  return shipped;
}

// No shipped stage copies a CUDA table library by a glob (it follows symlinks: stored twice).
function checkNoGlobCopies(image, stage, problems) {
  for (const c of copies(stage)) {
    for (const src of c.sources) {
      for (const e of kCudaLibraries.filter((x) => x.family)) {
        if (globMatches(src, `${e.family}.so.1`) || globMatches(src, `${e.family}.so.1.2.3`)) {
          problems.push(`${image.stage} stage copies ${e.family} by a glob (${src}), which follows its symlinks and ` +
            `stores it twice: stage it with scripts/stage_runtime_libs.sh and COPY the directory`);
        }
      }
    }
  }
}

// The controller image: its binaries come from a stage built with DDP_WITH_CUDA=OFF.
function checkCpuBuild(image, stages, stage, problems) {
  let built = [];
  for (const c of copies(stage)) {
    if (c.from === null) continue;
    const from = stages.find((s) => s.name === c.from);
    if (!from || runVariable(from, "DDP_WITH_CUDA") !== "OFF") {
      problems.push(`${image.stage} stage copies from ${c.from}, which is not a stage built with DDP_WITH_CUDA=OFF`);
      continue;
    }
    built = built.concat((runVariable(from, "DDP_BUILD_TARGETS") ?? "").split(/\s+/));
  }
  for (const b of image.binaries) {
    if (!built.includes(b)) problems.push(`${image.stage} stage: no DDP_WITH_CUDA=OFF stage it copies from builds ${b}`);
  }
}

function linkedBy(binDir, binaries, problems) {
  const seen = new Map();
  for (const b of binaries) {
    const file = path.join(binDir, b);
    if (!existsSync(file)) {
      problems.push(`${file} is missing (build it first)`);
      continue;
    }
    for (const lib of linkedLibraries(file)) {
      if (!seen.has(lib.soname)) seen.set(lib.soname, { ...lib, by: [] });
      seen.get(lib.soname).by.push(b);
    }
  }
  return seen;
}

// Every library the image's binaries link: from a listed package, a dependency of one, the base
// image, or (the runtime image only) the CUDA table.
function checkLibraries(image, binDir, stage, shipped, problems) {
  const listed = aptPackages(stage);
  const provided = dependencyClosure([...listed, ...kBasePackages]);
  const libs = linkedBy(binDir, image.binaries, problems);
  const owned = owners([...libs.values()].filter((l) => l.file !== "not found").map((l) => l.file));
  const ok = (lib, by, how) => console.log(`ok ${image.stage}: ${lib.soname} (${by}) -> ${how}`);
  for (const lib of libs.values()) {
    const by = lib.by.join(", ");
    const pkg = lib.file === "not found" ? null : owned.get(lib.file);
    if (lib.file === "not found") {
      problems.push(`${lib.soname} (${by}): not found by ldd`);
    } else if (pkg) {
      const how = listed.includes(pkg) ? "listed" : kBasePackages.includes(pkg) ? "base image" : provided.has(pkg) ? "dependency" : null;
      if (how) ok(lib, by, `${pkg} (${how})`);
      else problems.push(`${lib.soname} (${by}) comes from Debian package ${pkg}, which the ${image.stage} stage does not install`);
    } else {
      const entry = kCudaLibraries.find((e) => e.soname.test(lib.soname));
      if (!entry) problems.push(`${lib.soname} (${by}, ${lib.file}): no Debian package owns it and it is not in the CUDA table`);
      else if (!image.cuda) {
        // BIN_DIR from a CUDA build: what the stage's CPU-only build of a binary would not link
        // is not the stage's (a CPU build's bin/ checks it exactly).
        const stage = lib.by.filter((b) => !(image.cudaOnlyInACudaBuild ?? []).includes(b));
        if (stage.length === 0) ok(lib, by, "not linked by the stage's CUDA-off build of it");
        else problems.push(`${lib.soname} (${stage.join(", ")}): the ${image.stage} image holds no CUDA or NCCL library`);
      }
      else if (entry.driver) ok(lib, by, "the NVIDIA container toolkit (driver)");
      else if (shipped.has(entry.family)) ok(lib, by, "staged from the CUDA image");
      // else: checkCudaTable names the family that is not shipped.
    }
  }
  return libs.size;
}

// The runtime image: every family of the table staged and copied, the driver's capabilities set.
function checkCudaTable(image, stage, shipped, problems) {
  for (const e of kCudaLibraries) {
    if (e.driver) {
      if (!stage.lines.some((l) => /NVIDIA_DRIVER_CAPABILITIES=\S*compute/.test(l))) {
        problems.push(`${image.stage} stage: the driver library needs NVIDIA_DRIVER_CAPABILITIES with compute`);
      }
    } else if (!shipped.has(e.family)) {
      problems.push(`${e.family} (CUDA table): the ${image.stage} stage copies no directory that scripts/stage_runtime_libs.sh stages it into`);
    } else {
      console.log(`ok ${image.stage}: ${e.family}.so.* staged (links kept) and copied as a directory`);
    }
  }
}

const a = args();
const stages = readStages(a.dockerfile);
const chartUid = readFileSync(a.values, "utf8").match(/runAsUser:\s*(\d+)/)?.[1];
const problems = [];
let checked = 0;
for (const image of kImages) {
  let stage;
  try {
    stage = stageNamed(stages, image.stage, a.dockerfile);
  } catch (e) {
    problems.push(e.message);
    continue;
  }
  const shipped = shippedFamilies(stages, stage);
  checkBasics(image, stage, chartUid, problems);
  checkNoGlobCopies(image, stage, problems);
  if (image.cuda) checkCudaTable(image, stage, shipped, problems);
  else checkCpuBuild(image, stages, stage, problems);
  if (!image.cuda && shipped.size) problems.push(`${image.stage} stage copies staged CUDA libraries (${[...shipped].join(", ")})`);
  checked += checkLibraries(image, a.binDir, stage, shipped, problems);
}
for (const p of problems) console.error(`MISSING ${p}`);
console.log(`${checked} libraries checked over ${kImages.length} images, ${problems.length} problems`);
process.exit(problems.length || checked === 0 ? 1 : 0);
