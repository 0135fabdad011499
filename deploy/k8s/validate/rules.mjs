// MPCache's own rules for the manifests in deploy/k8s/ (validate.mjs runs them once every
// document passed the Kubernetes schema): probes, non-root, one identity per pod, the key
// copy into a memory emptyDir (mode 0600), ports, Services and NetworkPolicies agreeing
// with deploy/config/*.yaml. Errors go to err(resource, message) or to globalErrors.
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";

const UID = 10001;
const NAMESPACE = "mpcache";
const SECRET_MODE = 0o440;  // group-readable (fsGroup) for the init container only
const oct = (m) => "0" + m.toString(8);

// resources: [{file, doc, line, kind, name, obj, errors}]; show(file) shortens a path.
export function checkRules({ resources, err, globalErrors, show, k8sDir, configDir }) {
  const byKind = (k) => resources.filter((r) => r.kind === k && r.errors.length === 0);
  const isSubset = (sel, labels) =>
    Object.entries(sel ?? {}).every(([k, v]) => (labels ?? {})[k] === v);
  const hostPort = (s) => {
    const m = /^(.*):(\d+)$/.exec(String(s ?? ""));
    return m ? { host: m[1], port: Number(m[2]) } : null;
  };
  const under = (p, dir) => {
    const rel = path.posix.relative(dir, p);
    return rel !== "" && !rel.startsWith("..") && !path.posix.isAbsolute(rel);
  };

  // Namespace: one `mpcache`, every other resource in it.
  if (!resources.some((r) => r.kind === "Namespace" && r.name === NAMESPACE)) {
    globalErrors.push(`no Namespace '${NAMESPACE}' in ${show(k8sDir)}`);
  }
  for (const r of resources) {
    if (r.kind !== "Namespace" && r.obj.metadata?.namespace !== NAMESPACE) {
      err(r, `metadata.namespace is '${r.obj.metadata?.namespace}', not '${NAMESPACE}'`);
    }
  }

  // The daemons' configs.
  const configs = {};
  function loadConfig(role) {
    if (role in configs) return configs[role];
    const file = path.join(configDir, `${role}.yaml`);
    let cfg = null;
    try {
      const doc = YAML.parseDocument(fs.readFileSync(file, "utf8"));
      if (doc.errors.length) globalErrors.push(`${show(file)}: YAML: ${doc.errors[0].message}`);
      else cfg = doc.toJS();
    } catch (e) {
      globalErrors.push(`${show(file)}: cannot read: ${e.message}`);
    }
    return (configs[role] = cfg ? { file, cfg } : null);
  }

  // Every Deployment; the roles come from the names (party<i>, dealer).
  const deployments = {};  // role -> {r, pod, labels, main, ports}
  for (const r of byKind("Deployment")) {
    const role = r.name;
    const partyMatch = /^party(\d+)$/.exec(role);
    if (!partyMatch && role !== "dealer") {
      err(r, "unknown role: a Deployment is named party<i> or dealer (deploy/config/<name>.yaml)");
      continue;
    }
    const party = partyMatch ? Number(partyMatch[1]) : null;
    const spec = r.obj.spec;
    const tmpl = spec.template ?? {};
    const pod = tmpl.spec ?? {};
    const labels = tmpl.metadata?.labels ?? {};
    const psc = pod.securityContext ?? {};
    const conf = loadConfig(role);
    const cfg = conf?.cfg;
    const cfgName = conf ? show(conf.file) : `${role}.yaml`;

    if ((spec.replicas ?? 1) !== 1) err(r, `replicas is ${spec.replicas}: one pod per identity (replicas: 1)`);
    if (party !== null && spec.strategy?.type !== "Recreate") {
      err(r, "strategy.type must be Recreate: two pods of one party must never run at once");
    }
    if (!spec.selector?.matchLabels || !isSubset(spec.selector.matchLabels, labels)) {
      err(r, "spec.selector.matchLabels does not match the pod template's labels");
    }
    if (party !== null && (labels.role !== "party" || labels.party !== String(party))) {
      err(r, `pod labels must include role: party, party: "${party}"`);
    }
    if (role === "dealer" && labels.role !== "dealer") err(r, "pod labels must include role: dealer");
    if (cfg && party !== null && cfg.party_id !== party) {
      err(r, `${cfgName} has party_id ${cfg.party_id}, not ${party}`);
    }

    // Non-root, read-only, no capabilities: the pod and each container (init ones too).
    if (psc.fsGroup !== UID) err(r, `pod securityContext.fsGroup must be ${UID} (the Secret's files readable by the init container)`);
    const inits = pod.initContainers ?? [];
    const mains = pod.containers ?? [];
    for (const c of [...inits, ...mains]) {
      const sc = c.securityContext ?? {};
      const cn = `container '${c.name}'`;
      if ((sc.runAsNonRoot ?? psc.runAsNonRoot) !== true) err(r, `${cn}: runAsNonRoot must be true`);
      if ((sc.runAsUser ?? psc.runAsUser) !== UID) err(r, `${cn}: runAsUser must be ${UID}`);
      if (sc.readOnlyRootFilesystem !== true) err(r, `${cn}: securityContext.readOnlyRootFilesystem must be true`);
      if (sc.allowPrivilegeEscalation !== false) err(r, `${cn}: securityContext.allowPrivilegeEscalation must be false`);
      if (sc.privileged === true) err(r, `${cn}: must not be privileged`);
      if (!(sc.capabilities?.drop ?? []).includes("ALL")) err(r, `${cn}: securityContext.capabilities.drop must contain ALL`);
      if ((sc.capabilities?.add ?? []).length) err(r, `${cn}: adds capabilities ${sc.capabilities.add.join(",")}`);
    }
    if (mains.length !== 1) {
      err(r, `expected one container, found ${mains.length}`);
      continue;
    }
    const main = mains[0];
    const mn = `container '${main.name}'`;
    for (const c of inits) {
      if (c.image !== main.image) err(r, `init container '${c.name}' runs ${c.image}, not the daemon's image ${main.image}`);
    }

    // Ports: names -> numbers; probes on /healthz at the metrics port of the config.
    const ports = {};
    for (const p of main.ports ?? []) if (p.name) ports[p.name] = p.containerPort;
    const portOf = (v) => (typeof v === "string" ? ports[v] : v);
    const metrics = cfg?.metrics?.port;
    if (cfg && typeof metrics !== "number") err(r, `${cfgName} sets no metrics.port (the probes need it)`);
    if (ports.metrics === undefined) err(r, `${mn}: no containerPort named metrics`);
    else if (cfg && ports.metrics !== metrics) {
      err(r, `${mn}: metrics containerPort ${ports.metrics} is not metrics.port ${metrics} of ${cfgName}`);
    }
    for (const kind of ["readinessProbe", "livenessProbe"]) {
      const pr = main[kind];
      if (!pr) { err(r, `${mn}: no ${kind}`); continue; }
      if (!pr.httpGet) { err(r, `${mn}: ${kind} must be httpGet /healthz on the metrics port`); continue; }
      if (pr.httpGet.path !== "/healthz") err(r, `${mn}: ${kind} path is ${pr.httpGet.path}, not /healthz`);
      const pp = portOf(pr.httpGet.port);
      if (pp === undefined || pp !== ports.metrics) {
        err(r, `${mn}: ${kind} port ${pr.httpGet.port} is not the metrics port (${ports.metrics})`);
      }
      if ((pr.httpGet.scheme ?? "HTTP") !== "HTTP") err(r, `${mn}: ${kind} scheme must be HTTP (the metrics endpoint is plain HTTP)`);
    }
    const ann = tmpl.metadata?.annotations ?? {};
    if (ann["prometheus.io/scrape"] !== "true" || ann["prometheus.io/port"] !== String(ports.metrics)) {
      err(r, `pod annotations prometheus.io/scrape must be "true" and prometheus.io/port "${ports.metrics}"`);
    }

    // Secrets: the pod refers to exactly its own (volumes, projected volumes, env).
    const own = `mpcache-certs-${role}`;
    const volumes = pod.volumes ?? [];
    const vol = Object.fromEntries(volumes.map((v) => [v.name, v]));
    const secretRefs = [];
    for (const v of volumes) {
      if (v.secret) secretRefs.push({ name: v.secret.secretName, volume: v.name });
      for (const s of v.projected?.sources ?? []) if (s.secret) secretRefs.push({ name: s.secret.name, volume: v.name });
    }
    for (const c of [...inits, ...mains]) {
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef;
        if (ref) secretRefs.push({ name: ref.name, env: `${c.name}.${e.name}` });
      }
      for (const e of c.envFrom ?? []) if (e.secretRef) secretRefs.push({ name: e.secretRef.name, env: `${c.name}.envFrom` });
    }
    for (const s of secretRefs) {
      if (s.name !== own) {
        err(r, `refers to Secret ${s.name} (${s.volume ? `volume ${s.volume}` : `env ${s.env}`}): ` +
               `${role} holds only its own identity, ${own}`);
      }
      if (s.env) err(r, `Secret ${s.name} read into env ${s.env}: certificates come as files`);
    }
    const secretVols = volumes.filter((v) => v.secret || v.projected?.sources?.some((s) => s.secret));
    if (!secretVols.some((v) => v.secret?.secretName === own)) err(r, `no volume of Secret ${own}`);
    if (secretVols.length !== 1) err(r, `${secretVols.length} Secret volumes: one, of ${own}`);
    const sv = secretVols.find((v) => v.secret?.secretName === own);

    // The key copy: the Secret only in an init container, which installs its files 0600
    // into a memory emptyDir; the daemon mounts that read-only and finds its TLS files there.
    const isSecret = (name) => secretVols.some((v) => v.name === name);
    for (const m of main.volumeMounts ?? []) {
      if (isSecret(m.name)) {
        err(r, `${mn} mounts the Secret volume ${m.name} directly: the daemon (uid ${UID}) cannot read its ` +
               `root-owned files at 0400 and refuses a key at 0440; mount the emptyDir the init container fills`);
      }
    }
    let copier = null;
    let copyDir = null;
    if (sv) {
      const mode = sv.secret.defaultMode;
      if (mode !== SECRET_MODE) {
        err(r, `volume ${sv.name}: secret.defaultMode is ${mode === undefined ? "unset (0644)" : oct(mode)}, ` +
               `want ${oct(SECRET_MODE)} (group ${UID} via fsGroup may read, others not)`);
      }
      for (const it of sv.secret.items ?? []) {
        if (it.mode !== undefined && (it.mode & ~SECRET_MODE) !== 0) err(r, `volume ${sv.name}: item ${it.key} mode ${oct(it.mode)} is wider than ${oct(SECRET_MODE)}`);
      }
      const readers = inits.filter((c) => (c.volumeMounts ?? []).some((m) => m.name === sv.name));
      if (readers.length !== 1) err(r, `the Secret volume ${sv.name} must be mounted by exactly one init container (found ${readers.length})`);
      for (const c of readers) {
        const sm = c.volumeMounts.find((m) => m.name === sv.name);
        if (sm.readOnly !== true) err(r, `init container '${c.name}': mount of ${sv.name} must be readOnly`);
        const script = [...(c.command ?? []), ...(c.args ?? [])].join(" ");
        const targets = (c.volumeMounts ?? []).filter((m) => m.name !== sv.name && vol[m.name]?.emptyDir && m.readOnly !== true);
        const target = targets.find((m) => script.includes(m.mountPath));
        if (!/\binstall\b/.test(script) || !/(?:-m\s*|--mode[= ])0?600\b/.test(script)) {
          err(r, `init container '${c.name}' must copy the files with 'install -m 0600' (the daemon refuses a key group or others can access); command: ${script}`);
        }
        if (!script.includes(sm.mountPath)) err(r, `init container '${c.name}': its command does not read ${sm.mountPath} (the Secret)`);
        if (!target) err(r, `init container '${c.name}': its command writes to no writable emptyDir it mounts`);
        else { copier = c; copyDir = target; }
      }
    }
    const certsVolume = copyDir ? vol[copyDir.name] : null;
    if (certsVolume && certsVolume.emptyDir?.medium !== "Memory") {
      err(r, `volume ${certsVolume.name}: the key copy belongs on emptyDir {medium: Memory} (never on disk)`);
    }
    const mainCerts = certsVolume ? (main.volumeMounts ?? []).find((m) => m.name === certsVolume.name) : null;
    if (copier && !mainCerts) err(r, `${mn} does not mount ${certsVolume.name}, where '${copier.name}' puts the certificates`);
    if (mainCerts && mainCerts.readOnly !== true) err(r, `${mn}: mount of ${mainCerts.name} must be readOnly`);

    // The config file and its TLS paths lie under the container's mounts.
    const cmd = [...(main.command ?? []), ...(main.args ?? [])];
    const ci = cmd.indexOf("--config");
    const cfgPath = ci >= 0 ? cmd[ci + 1] : undefined;
    const mountOf = (p) => (main.volumeMounts ?? []).filter((m) => under(p, m.mountPath))
      .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
    if (!cfgPath) err(r, `${mn}: command has no --config FILE`);
    else {
      const m = mountOf(cfgPath);
      if (!m || !vol[m.name]?.configMap) err(r, `${mn}: --config ${cfgPath} is not under a ConfigMap mount`);
      if (path.posix.basename(cfgPath) !== `${role}.yaml`) err(r, `${mn}: --config ${cfgPath} is not ${role}.yaml`);
    }
    if (cfg) {
      for (const k of ["cert", "key", "ca"]) {
        const p = cfg.tls?.[k];
        if (typeof p !== "string" || !p.startsWith("/")) { err(r, `${cfgName}: tls.${k} must be an absolute path (found ${p})`); continue; }
        const m = mountOf(p);
        if (!m) { err(r, `tls.${k} ${p} of ${cfgName} is under no mount of ${mn}`); continue; }
        if (mainCerts && m.name !== mainCerts.name) err(r, `tls.${k} ${p} of ${cfgName} is under ${m.mountPath} (volume ${m.name}), not the certificates copied by the init container (${mainCerts.mountPath})`);
      }
      for (const [k, ext] of [["cert", "crt"], ["key", "key"]]) {
        const p = cfg.tls?.[k];
        if (typeof p === "string" && path.posix.basename(p) !== `${role}.${ext}`) err(r, `tls.${k} ${p} of ${cfgName} is not ${role}'s own ${role}.${ext}`);
      }
    }

    // Ports of the config: party i's own mesh entry, client port; the dealer's listen port.
    if (cfg && party !== null) {
      const self = hostPort(cfg.network?.parties?.[party]);
      if (!self) err(r, `${cfgName}: network.parties[${party}] is not host:port`);
      else if (ports.mesh !== self.port) err(r, `${mn}: mesh containerPort ${ports.mesh} is not ${self.port}, network.parties[${party}] of ${cfgName}`);
      const cl = hostPort(cfg.network?.client_listen);
      if (cl && ports.client !== cl.port) err(r, `${mn}: client containerPort ${ports.client} is not ${cl.port}, network.client_listen of ${cfgName}`);
    }
    if (cfg && role === "dealer") {
      const l = hostPort(cfg.network?.listen);
      if (!l) err(r, `${cfgName}: network.listen is not host:port`);
      else if (!Object.values(ports).includes(l.port)) err(r, `${mn}: no containerPort ${l.port} (network.listen of ${cfgName})`);
    }
    deployments[role] = { r, party, labels, ports, cfg, cfgName };
  }
  for (const role of ["party0", "party1", "party2", "dealer"]) {
    if (!deployments[role] && !resources.some((r) => r.kind === "Deployment" && r.name === role)) {
      globalErrors.push(`no Deployment ${role} in ${show(k8sDir)}`);
    }
  }

  // Services: each selects exactly one Deployment's pods; its targets are that pod's ports.
  const services = {};  // name -> {r, dep, ports: Map(port -> containerPort)}
  for (const r of byKind("Service")) {
    const sel = r.obj.spec?.selector;
    const deps = Object.values(deployments).filter((d) => sel && Object.keys(sel).length && isSubset(sel, d.labels));
    if (deps.length !== 1) {
      err(r, `selector ${JSON.stringify(sel)} selects ${deps.length} Deployments' pods (${deps.map((d) => d.r.name).join(", ") || "none"}), want exactly one`);
      continue;
    }
    const dep = deps[0];
    const map = new Map();
    for (const p of r.obj.spec.ports ?? []) {
      const t = p.targetPort ?? p.port;
      const cp = typeof t === "string" ? dep.ports[t] : t;
      if (cp === undefined || !Object.values(dep.ports).includes(cp)) {
        err(r, `port ${p.name ?? p.port}: targetPort ${t} is no containerPort of ${dep.r.name}`);
      } else map.set(p.port, cp);
    }
    services[r.name] = { r, dep, ports: map };
  }
  for (const d of Object.values(deployments)) {
    const svc = services[d.r.name];
    if (!svc || svc.dep !== d) { err(d.r, `no Service ${d.r.name} selecting its pods`); continue; }
    const exposed = [...svc.ports.values()];
    const want = d.party !== null ? ["mesh", "client"] : Object.keys(d.ports).filter((n) => n !== "metrics");
    for (const n of want) {
      if (d.ports[n] !== undefined && !exposed.includes(d.ports[n])) {
        err(svc.r, `does not expose ${d.r.name}'s ${n} port ${d.ports[n]}`);
      }
    }
  }
  // What each party dials: network.parties[k] = service:port reaching party k's mesh port;
  // network.dealer = service:port reaching the dealer's listen port.
  for (const d of Object.values(deployments)) {
    if (d.party === null || !d.cfg) continue;
    (d.cfg.network?.parties ?? []).forEach((entry, k) => {
      if (k === d.party) return;
      const hp = hostPort(entry);
      const peer = deployments[`party${k}`];
      const svc = hp && services[hp.host];
      if (!hp) err(d.r, `${d.cfgName}: network.parties[${k}] '${entry}' is not host:port`);
      else if (!svc) err(d.r, `${d.cfgName}: network.parties[${k}] '${entry}': no Service ${hp.host}`);
      else if (!peer || svc.dep !== peer) err(d.r, `${d.cfgName}: network.parties[${k}] '${entry}': Service ${hp.host} does not select party${k}`);
      else if (svc.ports.get(hp.port) !== peer.ports.mesh) err(svc.r, `port ${hp.port} (network.parties[${k}] of ${d.cfgName}) does not reach party${k}'s mesh port ${peer.ports.mesh}`);
    });
    const hp = hostPort(d.cfg.network?.dealer);
    const dealer = deployments.dealer;
    if (!hp) err(d.r, `${d.cfgName}: network.dealer is not host:port`);
    else if (dealer?.cfg) {
      const svc = services[hp.host];
      const listen = hostPort(dealer.cfg.network?.listen)?.port;
      if (!svc || svc.dep !== dealer) err(d.r, `${d.cfgName}: network.dealer '${d.cfg.network.dealer}': no Service ${hp.host} selecting the dealer`);
      else if (svc.ports.get(hp.port) !== listen) err(svc.r, `port ${hp.port} (network.dealer of ${d.cfgName}) does not reach the dealer's listen port ${listen}`);
    }
  }

  // NetworkPolicies: where a policy selects a pod, the ports it serves must stay reachable:
  // a party's mesh port and the dealer's port from the other parties, the others from somewhere.
  const policies = byKind("NetworkPolicy").map((r) => r.obj);
  const selects = (np, labels) => {
    const s = np.spec?.podSelector ?? {};
    return isSubset(s.matchLabels, labels) && !(s.matchExpressions ?? []).length;
  };
  const portMatches = (rule, port, ports) => !rule.ports || rule.ports.length === 0 ||
    rule.ports.some((p) => (p.port === undefined) || (typeof p.port === "string" ? ports[p.port] === port
      : port >= p.port && port <= (p.endPort ?? p.port)));
  const fromMatches = (rule, fromLabels) => !rule.from || rule.from.length === 0 || fromLabels === null ||
    rule.from.some((peer) => peer.podSelector && !peer.namespaceSelector && !peer.ipBlock &&
      isSubset(peer.podSelector.matchLabels, fromLabels));
  for (const d of Object.values(deployments)) {
    const mine = policies.filter((np) => selects(np, d.labels) && (np.spec?.policyTypes ?? ["Ingress"]).includes("Ingress"));
    if (mine.length === 0) continue;  // no policy: everything may connect
    const allowed = (port, fromLabels) => mine.some((np) => (np.spec.ingress ?? []).some(
      (rule) => portMatches(rule, port, d.ports) && fromMatches(rule, fromLabels)));
    const others = Object.values(deployments).filter((o) => o.party !== null && o !== d);
    for (const [n, port] of Object.entries(d.ports)) {
      // from each other party: a party's mesh port, the dealer's ports but metrics; else from anywhere
      const fromParties = (d.party !== null && n === "mesh") || (d.party === null && n !== "metrics");
      const from = fromParties ? others : [null];
      for (const o of from) {
        if (!allowed(port, o ? o.labels : null)) {
          err(d.r, `the NetworkPolicies selecting its pods (${mine.map((np) => np.metadata.name).join(", ")}) ` +
                   `block its ${n} port ${port}${o ? ` from ${o.r.name}` : ""}`);
        }
      }
    }
  }
}
