// Reads a Dockerfile's stages for the image checks (image_libraries.mjs): each stage's name,
// base, and instruction lines (continuation lines joined), with what the checks ask of them.
import { readFileSync } from "node:fs";

// Every stage in order: { name, from, lines }. A stage without `AS name` is named by its index.
export function readStages(dockerfile) {
  const lines = readFileSync(dockerfile, "utf8").replace(/\\\n/g, " ").split("\n").map((l) => l.trim());
  const stages = [];
  for (const l of lines) {
    const m = l.match(/^FROM\s+(\S+)(?:\s+AS\s+(\S+))?\s*$/i);
    if (m) stages.push({ name: m[2] ?? String(stages.length), from: m[1], lines: [] });
    else if (stages.length && l && !l.startsWith("#")) stages.at(-1).lines.push(l);
  }
  return stages;
}

export function stageNamed(stages, name, dockerfile) {
  const s = stages.find((st) => st.name === name);
  if (!s) throw new Error(`${dockerfile}: no stage 'FROM ... AS ${name}'`);
  return s;
}

export function aptPackages(stage) {
  const pkgs = [];
  for (const l of stage.lines) {
    for (const m of l.matchAll(/apt-get\s+install\s+([^&;|]*)/g)) {
      for (const w of m[1].split(/\s+/)) if (w && !w.startsWith("-")) pkgs.push(w);
    }
  }
  return pkgs;
}

// The COPY instructions of a stage: { from (a stage or image, or null: the build context),
// sources, dest, line }.
export function copies(stage) {
  const out = [];
  for (const line of stage.lines) {
    if (!/^COPY\s/i.test(line)) continue;
    const words = line.split(/\s+/).slice(1);
    let from = null;
    while (words.length && words[0].startsWith("--")) {
      const flag = words.shift();
      if (flag.startsWith("--from=")) from = flag.slice("--from=".length);
    }
    out.push({ from, sources: words.slice(0, -1), dest: words.at(-1), line });
  }
  return out;
}

// The stage_runtime_libs.sh calls of a stage: { dest, families } (scripts/stage_runtime_libs.sh
// --from SRC... DEST FAMILY...).
export function stagedFamilies(stage) {
  const out = [];
  for (const l of stage.lines) {
    const m = l.match(/stage_runtime_libs\.sh\s+([^&;|]*)/);
    if (!m) continue;
    const words = m[1].trim().split(/\s+/);
    while (words[0] === "--from") words.splice(0, 2);
    out.push({ dest: words[0], families: words.slice(1) });
  }
  return out;
}

// Whether a COPY source's last path element, a glob (*, ?, [...]), matches `name`.
export function globMatches(source, name) {
  const base = source.split("/").filter(Boolean).at(-1) ?? "";
  if (!/[*?[]/.test(base)) return false;
  const re = base.replace(/[.+^${}()|\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
  return new RegExp(`^${re}$`).test(name);
}

// The value of NAME=VALUE in a stage's RUN lines (DDP_WITH_CUDA=OFF, DDP_BUILD_TARGETS="a b").
export function runVariable(stage, name) {
  for (const l of stage.lines) {
    const m = l.match(new RegExp(`(?:^|\\s)${name}=("[^"]*"|\\S+)`));
    if (/^RUN\s/i.test(l) && m) return m[1].replace(/^"|"$/g, "");
  }
  return null;
}
