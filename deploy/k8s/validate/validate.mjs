#!/usr/bin/env node
// Offline check of the Kubernetes manifests in deploy/k8s/ (no cluster, no kubectl):
//   1. every document of every *.yaml is built as its kubernetes-models class and
//      validate()d against the Kubernetes OpenAPI schema that package ships; fields the
//      schema does not know (typos such as `readinesProbe`) are reported too;
//   2. MPCache's own rules: probes, non-root, one identity per pod, the key copy into a
//      memory emptyDir (mode 0600), ports and TLS paths agreeing with deploy/config/*.yaml.
// Usage: node validate.mjs [K8S_DIR] [--config-dir DIR]
//   K8S_DIR defaults to the folder above this file, DIR to K8S_DIR/../config.
// Prints one "ok" line per resource and exits 0, or prints the errors and exits 1
// (2: bad usage or unreadable input). Parsed as YAML 1.1 like kubectl (0440 is octal).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import * as coreV1 from "kubernetes-models/v1";
import * as appsV1 from "kubernetes-models/apps/v1";
import * as networkingV1 from "kubernetes-models/networking.k8s.io/v1";
import * as policyV1 from "kubernetes-models/policy/v1";
import * as batchV1 from "kubernetes-models/batch/v1";
import * as rbacV1 from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { checkRules } from "./rules.mjs";

const MODELS = {
  "v1": coreV1,
  "apps/v1": appsV1,
  "networking.k8s.io/v1": networkingV1,
  "policy/v1": policyV1,
  "batch/v1": batchV1,
  "rbac.authorization.k8s.io/v1": rbacV1,
};

// ---- command line ----
const here = path.dirname(fileURLToPath(import.meta.url));
let k8sDir = null;
let configDir = null;
for (let a = process.argv.slice(2); a.length; ) {
  const arg = a.shift();
  if (arg === "--config-dir" && a.length) configDir = a.shift();
  else if (arg === "-h" || arg === "--help") {
    console.log("usage: node validate.mjs [K8S_DIR] [--config-dir DIR]");
    process.exit(0);
  } else if (!arg.startsWith("-") && k8sDir === null) k8sDir = arg;
  else {
    console.error(`validate.mjs: unexpected argument '${arg}' (usage: node validate.mjs [K8S_DIR] [--config-dir DIR])`);
    process.exit(2);
  }
}
k8sDir = path.resolve(k8sDir ?? path.join(here, ".."));
configDir = path.resolve(configDir ?? path.join(k8sDir, "..", "config"));
const show = (p) => {
  const r = path.relative(process.cwd(), p);
  return r && !r.startsWith("..") ? r : p;
};

function modelsVersion() {
  try {
    const require = createRequire(import.meta.url);
    let dir = path.dirname(require.resolve("kubernetes-models/v1"));
    for (; dir !== path.dirname(dir); dir = path.dirname(dir)) {
      const pj = path.join(dir, "package.json");
      if (fs.existsSync(pj)) {
        const p = JSON.parse(fs.readFileSync(pj, "utf8"));
        if (p.name === "kubernetes-models") return p.version;
      }
    }
  } catch { /* only for the summary line */ }
  return "?";
}

// ---- errors ----
const globalErrors = [];
const label = (r) => `${show(r.file)}: document ${r.doc} (line ${r.line}): ${r.kind}/${r.name}`;
const err = (r, msg) => (r ? r.errors.push(msg) : globalErrors.push(msg));

// ---- read the manifests ----
if (!fs.existsSync(k8sDir) || !fs.statSync(k8sDir).isDirectory()) {
  console.error(`validate.mjs: ${k8sDir} is not a folder`);
  process.exit(2);
}
const files = fs.readdirSync(k8sDir).filter((f) => f.endsWith(".yaml")).sort()
  .map((f) => path.join(k8sDir, f));
if (files.length === 0) {
  console.error(`validate.mjs: no *.yaml in ${k8sDir}`);
  process.exit(2);
}

const resources = [];
for (const file of files) {
  const text = fs.readFileSync(file, "utf8");
  const lineCounter = new YAML.LineCounter();
  const docs = YAML.parseAllDocuments(text, { version: "1.1", lineCounter, prettyErrors: true });
  const list = Array.isArray(docs) ? docs : [docs];
  list.forEach((doc, i) => {
    const where = { file, doc: i + 1, line: lineCounter.linePos(doc.range?.[0] ?? 0).line };
    const pre = `${show(file)}: document ${where.doc} (line ${where.line})`;
    if (doc.errors.length) {  // the first one: the rest mostly follow from it
      globalErrors.push(`${pre}: YAML: ${doc.errors[0].message.trimEnd()}`);
      return;
    }
    const obj = doc.toJS({ maxAliasCount: 100 });
    if (obj === null || obj === undefined) return;  // an empty document, as kubectl skips it
    if (typeof obj !== "object" || Array.isArray(obj)) {
      globalErrors.push(`${pre}: not a mapping`);
      return;
    }
    const r = { ...where, obj, errors: [], apiVersion: obj.apiVersion, kind: obj.kind,
                name: obj.metadata?.name ?? "(no name)" };
    const mod = MODELS[obj.apiVersion];
    const cls = mod && Object.hasOwn(mod, obj.kind) ? mod[obj.kind] : undefined;
    if (typeof cls !== "function" || cls.kind !== obj.kind || cls.apiVersion !== obj.apiVersion) {
      globalErrors.push(`${pre}: unknown kind '${obj.kind}' (apiVersion '${obj.apiVersion}'): ` +
                        `validate.mjs knows ${Object.keys(MODELS).join(", ")} of kubernetes-models`);
      return;
    }
    r.model = new cls(obj);
    resources.push(r);
  });
}

// ---- 1. the schema ----
// The schema's validator reads exactly the fields it knows; a recording proxy around the
// resource shows those it never read: fields the API server would reject as unknown.
function recordingProxy(root) {
  const seen = new WeakMap();  // target -> Set of keys read
  const proxies = new WeakMap();
  const wrap = (t) => {
    if (t === null || typeof t !== "object") return t;
    if (proxies.has(t)) return proxies.get(t);
    seen.set(t, new Set());
    const p = new Proxy(t, {
      get(target, key, recv) {
        if (typeof key === "string") seen.get(target).add(key);
        return wrap(Reflect.get(target, key, recv));
      },
    });
    proxies.set(t, p);
    return p;
  };
  const unread = () => {
    const out = [];
    const walk = (t, at) => {
      if (t === null || typeof t !== "object") return;
      const keys = seen.get(t);
      if (Array.isArray(t)) t.forEach((v, i) => walk(v, `${at}/${i}`));
      else for (const k of Object.keys(t)) {
        if (!keys || !keys.has(k)) out.push(`${at}/${k}`);
        else walk(t[k], `${at}/${k}`);
      }
    };
    walk(root, "");
    return out;
  };
  return { proxy: wrap(root), unread };
}

for (const r of resources) {
  try {
    r.model.validate();
  } catch (e) {
    const list = Array.isArray(e.errors) && e.errors.length
      ? e.errors.map((x) => `${x.instancePath || "/"} ${x.message}` +
          (x.params && Object.keys(x.params).length ? ` ${JSON.stringify(x.params)}` : ""))
      : [e.message];
    for (const m of list) err(r, `schema: ${m}`);
    continue;
  }
  const rec = recordingProxy(r.model);
  try {
    r.model.validate.call(rec.proxy);
  } catch { /* validated above */ }
  for (const f of rec.unread()) err(r, `schema: unknown field ${f}`);
}

// The rules below read the resources' fields: only once every document is well formed.
if (globalErrors.length || resources.some((r) => r.errors.length)) {
  report("MPCache's own checks not run: fix these first");
}

// ---- 2. MPCache's rules (rules.mjs) ----
checkRules({ resources, err, globalErrors, show, k8sDir, configDir });
report(null);

// Prints "ok" per valid resource and the errors; exits 1 if there are any.
function report(note) {
  let n = globalErrors.length;
  for (const m of globalErrors) console.error(`error: ${m}`);
  for (const r of resources) {
    if (r.errors.length === 0) console.log(`ok ${show(r.file)} ${r.kind}/${r.name}`);
    n += r.errors.length;
    for (const m of r.errors) console.error(`error: ${label(r)}: ${m}`);
  }
  const summary = `${resources.length} resources in ${files.length} files, kubernetes-models ${modelsVersion()}`;
  if (n) {
    console.error(`FAILED: ${n} error(s)${note ? `; ${note}` : ""}; ${summary}`);
    process.exit(1);
  }
  console.log(`all valid: ${summary}`);
}
