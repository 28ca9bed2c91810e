// Fleet: every host as a tile, by cluster: cpu.percent and
// memory.percent as colour, free vCPU/RAM/disk, metric age (stale
// flagged), pending claims and state. Refreshes itself every
// REFRESH_MS (or ten times the last refresh's time, if longer). The
// tiles are built as one HTML string per cluster: a DOM node per cell
// would cost several times more at 10,000 hosts.
import {get} from "./api.js";
import {el, esc, num} from "./dom.js";
import * as detail from "./hostdetail.js";

const REFRESH_MS = 10000;
const SORTS = {
  name: (a, b) => a.host.localeCompare(b.host) || a.nodename.localeCompare(b.nodename),
  cpu: (a, b) => (b.cpu_percent ?? -1) - (a.cpu_percent ?? -1),
  memory: (a, b) => (b.memory_percent ?? -1) - (a.memory_percent ?? -1),
  ram_free: (a, b) => b.ram_mb_free - a.ram_mb_free,
};

// Colour class of a percentage: h0 (idle) .. h10 (full); hn unknown.
function heat(percent) {
  if (percent === null || percent === undefined) return "hn";
  return `h${Math.max(0, Math.min(10, Math.round(percent / 10)))}`;
}

function age(host) {
  if (host.metric_age_s === null) return `<span class="age none">no metrics</span>`;
  const stale = host.metrics_stale ? " stale" : "";
  const label = host.metrics_stale ? " (stale)" : "";
  return `<span class="age${stale}">${num(host.metric_age_s)} s${label}</span>`;
}

function tile(host) {
  const pending = host.pending_claims
    ? `<span class="pending">${num(host.pending_claims)} pending</span>` : "";
  const name = host.nodename === host.host ? host.host : `${host.host}/${host.nodename}`;
  const why = host.disabled_reason ? `: ${host.disabled_reason}` : "";
  return `<div class="tile ${esc(host.state)}" data-host="${esc(host.nodename)}" title="${esc(`${name} ${host.state}${why}`)}">`
    + `<b>${esc(name)}</b>`
    + `<span class="bars"><i class="cpu ${heat(host.cpu_percent)}">cpu ${num(host.cpu_percent, 0)}%</i>`
    + `<i class="mem ${heat(host.memory_percent)}">mem ${num(host.memory_percent, 0)}%</i></span>`
    + `<span class="free">${num(host.vcpus_free)} vCPU · ${num(host.ram_mb_free / 1024)} GB · ${num(host.disk_gb_free)} GB disk</span>`
    + `${age(host)} <span class="state">${esc(host.state)}</span>${pending}</div>`;
}

function summary(hosts) {
  const count = (test) => hosts.filter(test).length;
  return `${hosts.length} hosts: ${count((h) => h.state === "up")} up, `
    + `${count((h) => h.state === "down")} down, ${count((h) => h.state === "disabled")} disabled; `
    + `${count((h) => h.metrics_stale)} with stale metrics, `
    + `${count((h) => h.pending_claims > 0)} with pending claims`;
}

function draw(view, hosts, query, sort) {
  const shown = hosts.filter((h) => !query || h.host.includes(query) || h.nodename.includes(query));
  shown.sort(SORTS[sort]);
  const byCluster = new Map();
  for (const host of shown) {
    const key = host.cluster ?? "(no cluster)";
    if (!byCluster.has(key)) byCluster.set(key, []);
    byCluster.get(key).push(host);
  }
  const sections = [...byCluster.keys()].sort().map((name) => {
    const members = byCluster.get(name);
    return `<section class="cluster" data-cluster="${esc(name)}"><h3>${esc(name)} `
      + `<small>${members.length} hosts</small></h3><div class="tiles">`
      + members.map(tile).join("") + "</div></section>";
  });
  view.innerHTML = sections.join("") || "<p>No compute node is registered.</p>";
}

export async function render(main) {
  const status = el("p", {class: "summary"});
  const query = el("input", {type: "search", placeholder: "host name contains", "aria-label": "filter hosts"});
  const sort = el("select", {"aria-label": "sort hosts"},
    ...Object.keys(SORTS).map((key) => el("option", {value: key, text: `sort: ${key}`})));
  const stamp = el("span", {class: "stamp"});
  const view = el("div", {id: "fleet"});
  const panel = el("aside", {id: "host-detail", hidden: true});
  // One listener for every tile, however many.
  view.addEventListener("click", (event) => {
    const tile = event.target.closest(".tile");
    if (tile) detail.show(panel, tile.dataset.host);
  });
  main.append(el("h2", {text: "Fleet"}), el("div", {class: "toolbar"}, query, sort, stamp),
    status, el("p", {class: "legend"}, "Colour: ", ...[0, 3, 5, 7, 9, 10].map(
      (h) => el("i", {class: `h${h}`, text: `${h * 10}%`})), " Click a host for its details."), panel, view);
  let hosts = [];
  const redraw = () => draw(view, hosts, query.value.trim(), sort.value);
  async function refresh() {
    try {
      hosts = (await get("/v1/hosts")).data.hosts;
      status.textContent = summary(hosts);
      stamp.textContent = `updated ${new Date().toLocaleTimeString()}`;
      stamp.classList.remove("error");
      redraw();
    } catch (error) {
      stamp.textContent = `refresh failed: ${error.message}`;
      stamp.classList.add("error");
    }
  }
  query.addEventListener("input", redraw);
  sort.addEventListener("change", redraw);
  await refresh();
  // After the browser painted the tiles: what tools/bench_console.py reads.
  requestAnimationFrame(() => setTimeout(() => performance.mark("fleet-rendered"), 0));
  let timer = null;
  let stopped = false;
  const schedule = (lastMs) => {
    // A fleet that takes long to draw is redrawn less often: at most a
    // tenth of the time goes to refreshing.
    timer = setTimeout(async () => {
      const start = performance.now();
      await refresh();
      if (!stopped) schedule(performance.now() - start);
    }, Math.max(REFRESH_MS, 10 * lastMs));
  };
  schedule(0);
  return () => { stopped = true; clearTimeout(timer); };
}
