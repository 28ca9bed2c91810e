// Explain: a request form (flavor, extra specs in the resources:
// grammar, cluster, availability zone) sent to POST /v1/explain, the
// code scheduler-manage explain runs. Shows which policy decided, the
// chosen host and alternates, per host the filter that removed it and
// why or each weigher's raw, normalised and multiplied weight, and the
// NoValidHost histogram when nothing fits.
import {call, get} from "./api.js";
import {clearErrors, el, esc, num, showError} from "./dom.js";

function spec(form) {
  const value = (name) => form.elements[name].value.trim();
  const extraSpecs = {};
  for (const line of value("extra_specs").split("\n")) {
    if (!line.trim()) continue;
    const at = line.indexOf("=");
    // Sent as typed: the API names a malformed one.
    if (at < 0) extraSpecs[line.trim()] = "";
    else extraSpecs[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  const asNumber = (name) => (value(name) === "" ? value(name) : Number(value(name)));
  const body = {flavor: {name: "explain", vcpus: asNumber("vcpus"), memory_mb: asNumber("memory_mb"),
    root_gb: asNumber("root_gb"), extra_specs: extraSpecs}};
  if (value("cluster")) body.cluster = value("cluster");
  if (value("availability_zone")) body.availability_zone = value("availability_zone");
  return body;
}

function weighers(document) {
  return [...new Set(document.hosts.flatMap((h) => Object.keys(h.weights)))];
}

function table(document) {
  const names = weighers(document);
  const [chosen, ...alternates] = document.selected;
  const mark = (host) => (host.filtered_by ? "" : host.host === chosen ? "chosen"
    : alternates.includes(host.host) ? "alternate" : "");
  const head = `<tr><th></th><th>host</th><th>weight</th>${names.map((n) => `<th>${esc(n)}<br><small>raw → normalised × multiplier = weighted</small></th>`).join("")}<th>removed by</th><th>why</th></tr>`;
  const rows = document.hosts.map((host) => {
    const terms = names.map((name) => {
      const t = host.weights[name];
      return t ? `<td>${num(t.raw, 3)} → ${num(t.normalized, 3)} × ${num(t.multiplier, 2)} = <b>${num(t.weighted, 3)}</b></td>` : "<td></td>";
    }).join("");
    return `<tr class="${mark(host) || (host.filtered_by ? "filtered" : "")}" data-host="${esc(host.host)}">`
      + `<td>${mark(host)}</td><td>${esc(host.host)}</td><td>${num(host.weight, 3)}</td>${terms}`
      + `<td>${esc(host.filtered_by ?? "")}</td><td>${esc(host.reason ?? "")}${host.detail ? ` <small>${esc(host.detail)}</small>` : ""}</td></tr>`;
  });
  const wrapper = el("div", {class: "scroll"});
  wrapper.innerHTML = `<table class="explain">${head}${rows.join("")}</table>`;
  return wrapper;
}

function result(document) {
  const [chosen, ...alternates] = document.selected;
  return el("div", {id: "decision"},
    el("p", {}, "Policy: ", el("b", {class: "policy", text: document.policy ?? "none (the [filter_scheduler] filters and weighers)"})),
    chosen
      ? el("p", {}, "Chosen: ", el("b", {class: "chosen", text: chosen}),
        alternates.length ? `; alternates: ${alternates.join(", ")}` : "; no alternate")
      : el("div", {}, el("p", {class: "error", text: "No valid host."}),
        el("pre", {class: "histogram", text: document.summary})),
    ...document.warnings.map((w) => el("p", {class: "warning", text: w})),
    table(document));
}

function field(label, name, attrs = {}) {
  return el("label", {}, label, el("input", {name, "data-field": `request_spec.${attrs.path ?? name}`, ...attrs.input}));
}

export async function render(main) {
  const clusters = (await get("/v1/clusters")).data.clusters;
  const out = el("div");
  // novalidate: the API checks, and names the field.
  const form = el("form", {class: "explain-form", novalidate: true},
    field("vCPUs", "vcpus", {path: "flavor.vcpus", input: {type: "number", min: 0, value: 1}}),
    field("RAM (MB)", "memory_mb", {path: "flavor.memory_mb", input: {type: "number", min: 0, value: 1024}}),
    field("Disk (GB)", "root_gb", {path: "flavor.root_gb", input: {type: "number", min: 0, value: 10}}),
    el("label", {}, "Cluster", el("select", {name: "cluster", "data-field": "request_spec.cluster"},
      el("option", {value: "", text: "(any)"}),
      ...clusters.map((c) => el("option", {value: c.name, text: c.name})))),
    field("Availability zone", "availability_zone", {input: {placeholder: "(any)"}}),
    el("label", {class: "wide"}, "Extra specs, one KEY=VALUE a line (e.g. resources:network.rx.bps=<85M)",
      el("textarea", {name: "extra_specs", rows: 3, "data-field": "request_spec.flavor.extra_specs"})),
    el("button", {type: "submit", text: "Explain"}));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    out.replaceChildren(el("p", {text: "Deciding…"}));
    try {
      out.replaceChildren(result((await call("POST", "/v1/explain", spec(form))).data));
    } catch (error) {
      out.replaceChildren();
      showError(form, error);
    }
  });
  main.append(el("h2", {text: "Explain a decision"}), form, out);
}
