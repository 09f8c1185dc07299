// The cluster page: polls /api/v1/status (the document mfscli -j prints)
// once a second and draws it. It asks the master it was loaded from first
// and, when that one does not answer, every other master the last document
// named, as mfscli does: the page keeps working while its own master is
// down. Read-only: it sends nothing but GETs of the status.
"use strict";

const POLL_MS = 1000;    // a change shows within this much of the answer
const TIMEOUT_MS = 900;  // one master's answer; then the next is asked
const httpPort = location.port || (location.protocol === "https:" ? "443" : "80");

const sources = [location.host]; // host:port of every master's HTTP server, this one first
let current = 0;                   // the one that answered last
let lastOK = 0;                    // when an answer last came

function hostPort(ip, port) { return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`; }

// el builds an element; children are nodes or text (never parsed as HTML:
// what the masters report is shown as text).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function replace(id, ...nodes) {
  const e = document.getElementById(id);
  e.replaceChildren(...nodes.filter(n => n !== null && n !== undefined && n !== false));
  return e;
}

// stateClass is the colour class of a state word, as mfscli colours it.
function stateClass(s) {
  s = s || "";
  if (s.startsWith("transition")) return "s-transition";
  if (s.startsWith("LEADER")) return "s-leader";
  if (s.startsWith("ELECT")) return "s-elect";
  if (s.startsWith("DEPUTY")) return "s-deputy";
  if (s.startsWith("UNREACHABLE")) return "s-unreachable";
  if (s.startsWith("BUSY")) return "s-busy";
  if (s.startsWith("DUMMY")) return "s-dummy";
  if (s.startsWith("FOLLOWER") || s.startsWith("USURPER")) return s.includes("(") ? "s-desync" : "s-follower";
  return "";
}
function stateSpan(s) { return el("span", { class: "state " + stateClass(s) }, s || "-"); }
function levelClass(l) { return l === "flag" ? "bad" : l === "warn" ? "warn" : ""; }
function yesNo(b) { return b ? "yes" : "no"; }
function gib(n) { return (n / (1 << 30)).toFixed(1) + " GiB"; }
function clock(ms) { return new Date(ms).toLocaleTimeString(); }
function ago(s) {
  if (!s) return "unknown";
  if (s < 120) return s.toFixed(0) + " s ago";
  if (s < 7200) return (s / 60).toFixed(0) + " min ago";
  return (s / 3600).toFixed(1) + " h ago";
}
function table(id, head, rows) {
  return replace(id, el("thead", {}, el("tr", {}, head.map(h => el("th", {}, h)))), el("tbody", {}, rows));
}

function drawSummary(d) {
  const s = d.summary || {};
  const states = Object.entries(s.states || {}).map(([k, v]) => `${v} ${k}`).join(", ");
  replace("summary",
    el("span", {}, "LEADER ", s.leader ? el("span", { class: "state s-leader" }, s.leader) : el("span", { class: "bad" }, "none"),
      s.epoch ? ` (epoch ${s.epoch})` : ""),
    el("span", {}, `masters ${s.masters || 0}`, states ? ` (${states})` : ""),
    el("span", {}, `chunkservers ${s.chunkservers_connected || 0} of ${s.chunkservers_registered || 0} connected`),
    el("span", {}, `locations ${s.locations_on || 0} of ${s.locations || 0} on`),
    el("span", { class: s.quorum_held ? "good" : "bad" }, s.quorum_held ? "quorum held" : "no quorum"),
    el("span", { class: "muted" }, "last LEADER change " + ago(s.last_leader_change_ago)));
}

function drawVerdict(d) {
  const q = d.quorum || {};
  const who = q.master && q.master.ip ? [" ", el("span", { class: "muted" }, "(count of "), stateSpan(q.master.state), el("span", { class: "muted" }, ` ${q.master.ip})`)] : [];
  const change = q.config_in_force < q.config_version
    ? el("div", { class: "warn" }, `registry change in flight: version ${q.config_version}, version ${q.config_in_force} in force; both counts must be won`)
    : null;
  const v = replace("verdict", q.verdict || "-", ...who, change);
  v.className = "verdict " + (q.held ? "good" : "bad");
}

// drawWarnings: the alarms (each with its kind, as mfs_cluster_alarm and
// mfscli -j name it) and what the masters leave unauthenticated.
function drawWarnings(d) {
  const out = [];
  for (const w of d.warnings || []) out.push(el("div", { class: "warning", "data-kind": w.kind }, w.text));
  if (d.security && d.security.warning) out.push(el("div", { class: "warning" }, d.security.warning));
  replace("warnings", out.length ? el("h2", {}, "Alarms") : null, ...out);
}

function drawMasters(d) {
  const rows = (d.masters || []).map(m => {
    const flags = [];
    if (m.keep_leadership) flags.push(el("span", { class: "tag" }, "KEEP"));
    if (m.yielded) flags.push(el("span", { class: "tag" }, "yielded"));
    if (m.placed_by_admin) flags.push(el("span", { class: "tag" }, "placed"));
    if (m.metadata_id_differs) flags.push(el("span", { class: "tag bad" }, "other metadata id"));
    if (m.witness && m.witness.held) flags.push(el("span", { class: "tag good" }, "witness lease"));
    if (!m.strver) {
      return el("tr", {}, el("td", {}, m.ip), el("td", {}, stateSpan(m.state)), el("td", { colspan: "9", class: "muted" }, m.error || ""));
    }
    return el("tr", {},
      el("td", {}, m.ip),
      el("td", {}, stateSpan(m.state), flags),
      el("td", {}, m.strver),
      el("td", { class: "num" }, m.epoch),
      el("td", { class: "num" }, m.metadata_version),
      el("td", { class: "num " + levelClass(m.metadata_delay_level) }, m.metadata_delay.toFixed(1)),
      el("td", { class: "num " + levelClass(m.time_offset_level) }, m.time_offset_ms),
      el("td", {}, yesNo(m.holds_quorum)),
      el("td", { class: "num" }, m.votes_counted),
      el("td", { class: "num" }, `${m.chunkservers_connected}/${m.chunkservers_registered}`),
      el("td", { class: "muted" }, m.metadata_id || "-"));
  });
  table("masters", ["IP", "state", "version", "epoch", "metadata version", "delay (s)", "time offset (ms)", "holds quorum", "votes", "chunkservers", "metadata id"], rows);
}

function drawLocations(d) {
  const locs = d.locations || [];
  const newest = Math.max(0, ...locs.map(l => l.config));
  const byName = new Map(locs.filter(l => l.config === newest).map(l => [l.name, l]));
  const cs = d.chunkservers || [];
  for (const c of cs) if (!byName.has(c.location)) byName.set(c.location, { name: c.location, registered: 0 });
  const names = [...byName.keys()].sort();
  const parts = [];
  for (const name of names) {
    const l = byName.get(name);
    const mine = cs.filter(c => c.location === name);
    if (mine.length === 0 && !l.registered) continue;
    const marks = [];
    if (l.default) marks.push("default");
    if (l.on === false) marks.push("OFF");
    let count = "";
    if (l.votes !== undefined) count = ` · votes ${l.votes} of ${l.registered} (reach ${l.reach})`;
    const carried = l.carried === undefined ? null : el("span", { class: l.carried ? "good" : "bad" }, l.carried ? " · carried" : " · not carried");
    parts.push(el("h3", {}, name, marks.length ? ` (${marks.join(", ")})` : "", count, carried));
    const rows = mine.map(c => el("tr", {},
      el("td", { class: "num" }, c.csid),
      el("td", {}, hostPort(c.ip, c.port)),
      el("td", { class: c.connected ? "" : "bad" }, c.connected ? "connected" : "disconnected"),
      el("td", {}, (c.vote_counted_by || []).map(r => el("span", { class: "tag" }, r.ip, " ", stateSpan(r.state)))),
      el("td", {}, c.voter_only ? "voter only" : gib(c.used_space) + " of " + gib(c.total_space)),
      el("td", {}, c.maintenance ? el("span", { class: "tag warn" }, "maintenance") : "",
        (c.left_out_by || []).length ? el("span", { class: "tag warn" }, "left out") : ""),
      el("td", { class: "muted" }, c.labels || "")));
    parts.push(el("div", { class: "scroll" }, el("table", {},
      el("thead", {}, el("tr", {}, ["id", "address", "connection", "vote counted by", "disks", "marks", "labels"].map(h => el("th", {}, h)))),
      el("tbody", {}, rows))));
  }
  replace("locations", ...parts);
}

// drawWitness: the object-store witness (quorum.witness, the line under
// mfscli -SIM and -SLQ, and each master's masters[].witness), shown only
// while the registry names one. Who holds the lease comes from the
// masters' fenced "held" alone (held_by): the lease object's own state
// ("record") is what a master last read, not a claim that anyone counts it.
const WITNESS_HEAD = ["master", "store", "self-test", "lease", "record", "last call", "latency", "last write", "failing for"];
const WITNESS_LABELLED = new Set(["store", "self-test", "lease", "record", "last call", "latency", "last write", "failing for"]);
function size(n) {
  for (const [u, d] of [["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]]) if (n >= d) return (n / d).toFixed(1) + " " + u;
  return n + " B";
}
// storeLogText: the store as a stand-in replica, as -SIM's witness line
// says it (clusterview StoreLogView.Text).
function storeLogText(l) {
  let t = "store log: ";
  if (l.snapshot) t += `a snapshot at ${l.snapshot} and `;
  if (l.objects || l.snapshot) t += `${l.objects} object(s), ${size(l.bytes)}, changes ${l.base + 1}..${l.last}, oldest ${ago(l.oldest_age).replace(/ ago$/, "")}`;
  else t += "empty";
  if (l.acks_on_store) t += " · the LEADER's acknowledgements rest on it";
  else if (l.stands_in) t += " · it stands in for missing follower masters";
  if (l.waiting_for) t += ` · changes have waited ${secs(l.waiting_for)} for a copy`;
  if (l.error) t += ` · last error: ${l.error}`;
  return t;
}
function secs(s) { return s >= 1 ? s.toFixed(1) + " s" : (s * 1000).toFixed(0) + " ms"; }
function recordText(r, absent) {
  if (absent) return "absent";
  if (!r) return "-";
  return `${r.state} lease_epoch ${r.lease_epoch}` + (r.state === "held" ? ` by ${who(r.holder, r.holder_id)}` : "");
}
function witnessRow(m) {
  const w = m.witness;
  // A cell with nothing to say is the string "-" (left out on a phone).
  const test = !w.self_test ? "-"
    : el("span", { class: w.self_test !== "passed" && w.self_test !== "running" ? "bad" : "" }, w.self_test);
  const call = !w.last_op ? "-"
    : el("span", { class: w.last_result !== "ok" && w.last_result !== "absent" ? "warn" : "" },
      `${w.last_op} ${w.last_result}`, w.last_error ? `: ${w.last_error}` : "");
  const cells = [
    [m.ip, " ", stateSpan(m.state)],
    w.store || "none",
    test,
    el("span", { class: w.held ? "good" : "" }, w.held ? "held" : w.waiting ? "waiting" : "not held"),
    recordText(w.record, w.record_absent),
    call,
    w.last_op ? secs(w.last_latency || 0) : "-",
    w.last_write_age ? ago(w.last_write_age) : "-",
    w.failing_for ? el("span", { class: "bad" }, secs(w.failing_for)) : "-",
  ];
  return el("tr", {}, cells.map((c, i) => {
    const attrs = { class: c === "-" ? "none" : "" };
    if (WITNESS_LABELLED.has(WITNESS_HEAD[i])) attrs["data-label"] = WITNESS_HEAD[i];
    return el("td", attrs, c);
  }));
}
function drawWitness(d) {
  const v = (d.quorum || {}).witness;
  document.getElementById("witness").hidden = !(v && v.configured);
  if (!v || !v.configured) return;
  replace("witnessid", v.witness_id, v.store ? ` · ${v.store}` : "");
  const facts = [];
  facts.push(v.held_by
    ? el("span", { class: "good" }, `lease held by ${v.held_by} · lease_epoch ${v.lease_epoch}`)
    : el("span", { class: "warn" }, "lease not held"));
  facts.push(el("span", {}, v.last_write_by ? `last write ${ago(v.last_write_age)} by ${v.last_write_by}` : "no write since the masters started"));
  if (v.held_by && v.last_latency) facts.push(el("span", {}, `last call ${secs(v.last_latency)}`));
  const ms = (d.masters || []).filter(m => m.witness);
  const ok = ms.filter(m => m.witness.self_test === "passed" && !m.witness.failing_for).length;
  facts.push(el("span", { class: ok === ms.length ? "" : "bad" }, `store usable by ${ok} of ${ms.length} masters`));
  const l = v.store_log;
  if (l) facts.push(el("span", { class: l.waiting_for ? "bad" : l.acks_on_store ? "warn" : "" }, storeLogText(l)));
  replace("witnessfacts", ...facts);
  table("witnesstable", WITNESS_HEAD, ms.map(witnessRow));
  replace("witnessproblems", ...(v.problems || []).map(p => el("div", { class: "warning" }, p)));
}

// drawHistory: the newest records of the election history, newest first
// (mfscli -SLH lists them oldest first, as a log; here the top of the page
// is where the eye is), the LEADER changes by cause, and the masters whose
// role changes are not in it yet. /api/v1/status carries the newest 20.
// On a phone each record is one wrapped block: the cells carry their
// column's name (data-label) for it, and "-" cells are left out there.
const HISTORY_ROWS = 20;
const HISTORY_HEAD = ["time", "master", "change", "epoch", "reason", "votes", "deposed", "why"];
const HISTORY_LABELLED = new Set(["epoch", "votes", "deposed", "why"]); // named on a phone
function who(ip, id) { return ip || (id ? `id ${id}` : "-"); }
function votesText(vs) { return (vs || []).map(v => `${v.location} ${v.votes}/${v.voters}`).join(" ") || "-"; }
// The witness's part in a record, as mfscli -SLH prints it: in the votes
// where the change relied on its lease or had an exact half without it,
// and in the reason of a LEADER that left on half without the lease.
function recordVotes(r) {
  const w = r.witness === "relied" ? `+ witness lease_epoch ${r.lease_epoch}` : r.witness === "no-lease" ? "+ no witness lease" : "";
  const v = votesText(r.votes);
  return w ? (v === "-" ? w : `${v} ${w}`) : v;
}
function reasonText(r) {
  const s = [r.reason, r.section].filter(Boolean).join(" ") || "-";
  return r.from === "LEADER" && r.witness === "no-lease" ? `${s}: half, no witness lease` : s;
}
function stamp(ms) {
  return new Date(ms).toLocaleString(undefined, { year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit", fractionalSecondDigits: 3 });
}
function historyRow(r) {
  const cells = [
    r.time_ms ? stamp(r.time_ms) : "-",
    who(r.ip, r.master_id),
    [stateSpan(r.from), " -> ", stateSpan(r.to)],
    r.epoch,
    reasonText(r),
    recordVotes(r),
    who(r.deposed_ip, r.deposed_id),
    r.why || "-",
  ];
  return el("tr", {}, cells.map((c, i) => {
    const attrs = { class: (HISTORY_HEAD[i] === "epoch" ? "num" : "") + (c === "-" ? " none" : "") };
    if (HISTORY_LABELLED.has(HISTORY_HEAD[i])) attrs["data-label"] = HISTORY_HEAD[i];
    return el("td", attrs, c);
  }));
}
function drawHistory(d) {
  const h = d.election_history_info || {};
  const recs = (d.election_history || []).slice(-HISTORY_ROWS).reverse();
  const rows = recs.map(historyRow);
  if (rows.length === 0) rows.push(el("tr", {}, el("td", { colspan: "8", class: "muted" }, "no role change recorded")));
  table("history", HISTORY_HEAD, rows);
  const held = h.records_held || 0;
  const count = recs.length < held ? `newest ${recs.length} of ${held} records` : held === 1 ? "1 record" : `${held} records`;
  const src = h.source && h.source.ip ? [" · held by ", stateSpan(h.source.state), ` ${h.source.ip}`] : [];
  replace("historysource", `newest first · ${count}`, ...src);
  const counts = h.leader_changes || {};
  const causes = Object.keys(counts).filter(k => counts[k] > 0)
    .sort((a, b) => counts[b] - counts[a] || (a < b ? -1 : a > b ? 1 : 0));
  replace("historyinfo",
    el("div", {}, "LEADER changes by cause: ",
      causes.length ? `${causes.map(k => `${k} ${counts[k]}`).join(", ")} (${h.leader_changes_total || 0} in all)` : "none recorded"),
    h.note ? el("div", { class: "warning" }, h.note) : null);
}

function drawClones(d) {
  const cl = d.refused_clones || [];
  document.getElementById("clones").hidden = cl.length === 0;
  table("clonetable", ["id", "from", "id held by", "refused by", "times", "last"],
    cl.map(c => el("tr", {}, el("td", { class: "num" }, c.csid), el("td", {}, c.ip), el("td", {}, c.holder_ip),
      el("td", {}, c.refused_by), el("td", { class: "num" }, c.count), el("td", {}, clock(c.last_seen_ms)))));
}

function render(doc, from) {
  const d = doc.dataset || {};
  drawSummary(d);
  drawVerdict(d);
  drawWarnings(d);
  drawMasters(d);
  drawWitness(d);
  drawLocations(d);
  drawHistory(d);
  drawClones(d);
  replace("errors", ...(doc.errors || []).map(e => el("div", {}, e)));
  replace("source", `from ${from} · ${clock(doc.timestamp * 1000)}`);
  document.getElementById("stale").hidden = true;
}

async function fetchDoc(host) {
  const ctl = new AbortController();
  const t = setTimeout(() => ctl.abort(), TIMEOUT_MS);
  try {
    const r = await fetch(`${location.protocol}//${host}/api/v1/status`, { signal: ctl.signal, cache: "no-store" });
    if (!r.ok) throw new Error(`${host}: ${r.status}`);
    return await r.json();
  } finally {
    clearTimeout(t);
  }
}

// learn adds every master the document names to the masters asked.
function learn(doc) {
  for (const m of (doc.dataset && doc.dataset.masters) || []) {
    const h = hostPort(m.ip, httpPort);
    if (!sources.includes(h)) sources.push(h);
  }
}

async function poll() {
  for (let k = 0; k < sources.length; k++) {
    const i = (current + k) % sources.length;
    let doc;
    try {
      doc = await fetchDoc(sources[i]);
    } catch (e) {
      continue; // the next master
    }
    current = i;
    lastOK = Date.now();
    learn(doc);
    render(doc, sources[i]);
    setTimeout(poll, POLL_MS);
    return;
  }
  const s = document.getElementById("stale");
  s.hidden = false;
  s.textContent = lastOK ? `No master answered since ${clock(lastOK)}: what is shown is older.` : "No master answered yet.";
  setTimeout(poll, POLL_MS);
}

poll();
