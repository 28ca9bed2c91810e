// One node in full (GET /v1/hosts/{name}, scheduler-manage hosts show's
// document), shown beside the fleet when its tile is clicked: every
// metric with its age and source, the pending-adjusted value where
// claims move it, and what the node runs.
import {get} from "./api.js";
import {el, num} from "./dom.js";

function row(label, value) {
  return el("tr", {}, el("th", {text: label}), el("td", {text: value}));
}

export async function show(panel, name) {
  panel.replaceChildren(el("p", {text: `Loading ${name}…`}));
  panel.hidden = false;
  let host;
  try {
    host = (await get(`/v1/hosts/${encodeURIComponent(name)}`)).data;
  } catch (error) {
    panel.replaceChildren(el("p", {class: "error", role: "alert", text: error.message}));
    return;
  }
  const metrics = host.metrics.map((m) => el("tr", {"data-metric": m.name},
    el("td", {text: m.name}), el("td", {text: num(m.value, 3)}),
    el("td", {text: m.adjusted === null ? "" : num(m.adjusted, 3)}),
    el("td", {text: num(m.age_s)}), el("td", {text: m.source ?? ""})));
  const reported = host.metric_age_s === null ? "never"
    : `${num(host.metric_age_s)} s ago${host.metrics_stale ? " (stale)" : ""}`;
  panel.replaceChildren(
    el("button", {type: "button", class: "close", text: "×", "aria-label": "close", onclick: () => { panel.hidden = true; }}),
    el("h3", {text: host.nodename === host.host ? host.host : `${host.host} / ${host.nodename}`}),
    el("table", {class: "list"},
      row("state", host.disabled_reason ? `${host.state} (${host.disabled_reason})` : host.state),
      row("metrics reported", reported),
      row("cluster / AZ", `${host.cluster ?? "–"} / ${host.availability_zone ?? "–"}`),
      row("free vCPU", `${num(host.vcpus_free)} of ${num(host.vcpus_total)}`),
      row("free RAM (MB)", `${num(host.ram_mb_free)} of ${num(host.ram_mb_total)}`),
      row("free disk (GB)", `${num(host.disk_gb_free)} of ${num(host.disk_gb_total)}`),
      row("pending claims", `${host.pending_claims} (${host.pending_vcpus} vCPU, ${host.pending_ram_mb} MB)`),
      row("instances", host.instances.length),
      row("bad metrics", host.bad_metrics.join(", ") || "none")),
    el("table", {class: "list metrics"},
      el("tr", {}, ...["metric", "value", "with pending", "age (s)", "source"].map((h) => el("th", {text: h}))),
      ...metrics));
}
