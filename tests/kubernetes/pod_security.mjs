// A hand-written checker of the Pod Security Standards (https://kubernetes.io/docs/concepts/
// security/pod-security-standards/, policy version latest): every pod, and every pod template
// of a Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob, in the given YAML files
// is checked against the baseline rules and, at --level restricted (the default), the
// restricted ones too; at --level privileged nothing is refused (the level allows every pod;
// the pods are still counted, so a file without one fails). No npm package implements the standards; this reading of the
// documentation's table is independent of the fake API server's (tests/unit/controller/
// kubernetes/fake_pod_security.cc), which the C++ tests run.
//   DDP_K8S_MODULES=.tools/k8s/node_modules node pod_security.mjs [--level privileged|baseline|restricted] FILE...
// Prints one line per pod and "N pods meet LEVEL"; exits 1 naming each violation.
import { readYamlDocuments } from "./k8s_modules.mjs";

const BASELINE_CAPS = new Set(["AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
  "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"]);
const SAFE_SYSCTLS = new Set(["kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
  "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
  "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
  "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"]);
const RESTRICTED_VOLUMES = new Set(["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
  "persistentVolumeClaim", "projected", "secret"]);
const SELINUX_TYPES = new Set([undefined, "", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"]);

function containers(spec) {
  return [...(spec.initContainers ?? []), ...(spec.containers ?? []), ...(spec.ephemeralContainers ?? [])];
}

function baseline(spec, out) {
  for (const host of ["hostNetwork", "hostPID", "hostIPC"]) if (spec[host]) out.push(`host namespaces: ${host}=true`);
  for (const v of spec.volumes ?? []) if (v.hostPath) out.push(`hostPath volume "${v.name}"`);
  const podSc = spec.securityContext ?? {};
  if (podSc.seccompProfile?.type === "Unconfined") out.push("pod seccompProfile Unconfined");
  for (const s of podSc.sysctls ?? []) if (!SAFE_SYSCTLS.has(s.name)) out.push(`unsafe sysctl ${s.name}`);
  if (podSc.windowsOptions?.hostProcess) out.push("hostProcess");
  if (!SELINUX_TYPES.has(podSc.seLinuxOptions?.type) || podSc.seLinuxOptions?.user || podSc.seLinuxOptions?.role) {
    out.push("pod seLinuxOptions");
  }
  for (const c of containers(spec)) {
    const sc = c.securityContext ?? {};
    const who = `container "${c.name}"`;
    if (sc.privileged) out.push(`${who}: privileged`);
    for (const cap of sc.capabilities?.add ?? []) {
      if (!BASELINE_CAPS.has(cap)) out.push(`${who}: capability ${cap} added (baseline allows only the default set)`);
    }
    for (const p of c.ports ?? []) if (p.hostPort) out.push(`${who}: hostPort ${p.hostPort}`);
    if (sc.seccompProfile?.type === "Unconfined") out.push(`${who}: seccompProfile Unconfined`);
    if (sc.procMount && sc.procMount !== "Default") out.push(`${who}: procMount ${sc.procMount}`);
    if (sc.windowsOptions?.hostProcess) out.push(`${who}: hostProcess`);
    if (!SELINUX_TYPES.has(sc.seLinuxOptions?.type) || sc.seLinuxOptions?.user || sc.seLinuxOptions?.role) {
      out.push(`${who}: seLinuxOptions`);
    }
  }
}

function restricted(spec, out) {
  for (const v of spec.volumes ?? []) {
    if (!Object.keys(v).some((k) => RESTRICTED_VOLUMES.has(k))) out.push(`volume "${v.name}" of a restricted type`);
  }
  const podSc = spec.securityContext ?? {};
  const podSeccomp = ["RuntimeDefault", "Localhost"].includes(podSc.seccompProfile?.type);
  if (podSc.runAsUser === 0) out.push("pod runAsUser 0");
  for (const c of containers(spec)) {
    const sc = c.securityContext ?? {};
    const who = `container "${c.name}"`;
    if (sc.allowPrivilegeEscalation !== false) out.push(`${who}: allowPrivilegeEscalation must be false`);
    if (!(sc.capabilities?.drop ?? []).includes("ALL")) out.push(`${who}: capabilities.drop must include ALL`);
    for (const cap of sc.capabilities?.add ?? []) {
      if (cap !== "NET_BIND_SERVICE") out.push(`${who}: capability ${cap} added (restricted allows only NET_BIND_SERVICE)`);
    }
    const nonRoot = sc.runAsNonRoot ?? podSc.runAsNonRoot;
    if (nonRoot !== true) out.push(`${who}: runAsNonRoot must be true (container or pod)`);
    if (sc.runAsUser === 0) out.push(`${who}: runAsUser 0`);
    const seccomp = sc.seccompProfile?.type;
    if (seccomp ? !["RuntimeDefault", "Localhost"].includes(seccomp) : !podSeccomp) {
      out.push(`${who}: seccompProfile must be RuntimeDefault or Localhost (container or pod)`);
    }
  }
}

function podSpecOf(obj) {
  if (obj.kind === "Pod") return obj.spec;
  if (obj.kind === "CronJob") return obj.spec?.jobTemplate?.spec?.template?.spec;
  if (["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"].includes(obj.kind)) return obj.spec?.template?.spec;
  return undefined;
}

const args = process.argv.slice(2);
let level = "restricted";
if (args[0] === "--level") {
  level = args[1];
  args.splice(0, 2);
}
if (!["privileged", "baseline", "restricted"].includes(level)) {
  console.error(`pod_security.mjs: --level must be privileged, baseline or restricted, not ${level}`);
  process.exit(2);
}
let pods = 0;
const failures = [];
for (const file of args) {
  for (const obj of await readYamlDocuments(file)) {
    const spec = podSpecOf(obj);
    if (!spec) continue;
    pods++;
    const out = [];
    if (level !== "privileged") baseline(spec, out);
    if (level === "restricted") restricted(spec, out);
    const id = `${obj.kind}/${obj.metadata?.name} (${file})`;
    if (out.length) failures.push(`${id} violates PodSecurity "${level}": ${out.join("; ")}`);
    else console.log(`ok ${id}`);
  }
}
for (const f of failures) console.error(`FORBIDDEN ${f}`);
console.log(`${pods - failures.length} pods meet ${level}, ${failures.length} do not`);
process.exit(failures.length || pods === 0 ? 1 : 0);
